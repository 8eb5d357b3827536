"""The lesson's single-query attention classifier, S independent runs at once.

Per run: keys K_t = Wk x_t, values V_t = Wv x_t, one learned query q,
weights a = softmax(q . K_t / sqrt(d_k)), logit o = w . sum_t a_t V_t + b.
Every parameter carries a leading seed dimension S.

Inputs have two channels, so q . (Wk x) = (Wk^T q) . x and w . (Wv x) =
(Wv^T w) . x: the forward pass works with these two 2-vectors per run
(`key_direction`, `value_direction`) instead of materialising K and V.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from pipeline.attention import attention_weights, drop_steps_mask
from pipeline.config import ModelConfig
from pipeline.data import stream

CHANNELS = 2  # reading, marked-step indicator


@dataclass(frozen=True)
class Params:
    """Parameters of S runs. The field order is the lesson's initialisation order."""

    key_proj: torch.Tensor  # Wk (S, d_k, C)
    value_proj: torch.Tensor  # Wv (S, d_v, C)
    query: torch.Tensor  # q (S, d_k)
    readout: torch.Tensor  # w (S, d_v)
    bias: torch.Tensor  # b (S,)

    @property
    def runs(self) -> int:
        return self.bias.shape[0]

    def tensors(self) -> list[torch.Tensor]:
        return [getattr(self, f.name) for f in fields(self)]

    def map(self, fn) -> Params:
        return Params(*(fn(t) for t in self.tensors()))


def parameter_count(cfg: ModelConfig) -> int:
    return (cfg.d_k + cfg.d_v) * CHANNELS + cfg.d_k + cfg.d_v + 1


def init_run(seed: int, cfg: ModelConfig) -> list[float]:
    """The lesson's init of one run: (u1 + u2 + u3 - 1.5) * scale from stream(seed).

    Drawn in the order Wk row-major, Wv row-major, q, w; the bias starts at 0.
    """
    draw = stream(seed)
    count = parameter_count(cfg) - 1
    return [(draw() + draw() + draw() - 1.5) * cfg.init_scale for _ in range(count)] + [0.0]


def from_flat(flat: torch.Tensor, cfg: ModelConfig) -> Params:
    """(S, P) rows in init order -> Params."""
    sizes = [cfg.d_k * CHANNELS, cfg.d_v * CHANNELS, cfg.d_k, cfg.d_v, 1]
    key, value, query, readout, bias = flat.split(sizes, dim=1)
    runs = flat.shape[0]
    return Params(
        key.reshape(runs, cfg.d_k, CHANNELS).contiguous(),
        value.reshape(runs, cfg.d_v, CHANNELS).contiguous(),
        query.contiguous(),
        readout.contiguous(),
        bias.reshape(runs).contiguous(),
    )


def to_flat(params: Params) -> torch.Tensor:
    """Params -> (S, P) rows in init order."""
    return torch.cat([t.reshape(params.runs, -1) for t in params.tensors()], dim=1)


def flat_names(cfg: ModelConfig) -> list[str]:
    def matrix(name: str, rows: int) -> list[str]:
        return [f"{name}_{i}{c}" for i in range(rows) for c in range(CHANNELS)]

    return [
        *matrix("Wk", cfg.d_k),
        *matrix("Wv", cfg.d_v),
        *(f"q_{i}" for i in range(cfg.d_k)),
        *(f"w_{i}" for i in range(cfg.d_v)),
        "b",
    ]


def init_params(
    data_seed: int,
    run_seeds: list[int],
    cfg: ModelConfig,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> Params:
    """Run k starts from stream(data_seed + k)."""
    rows = [init_run(data_seed + k, cfg) for k in run_seeds]
    return from_flat(torch.tensor(rows, dtype=dtype, device=device), cfg)


def key_direction(params: Params) -> torch.Tensor:
    """Wk^T q / sqrt(d_k): (S, C); a step's score is this vector dotted with its input."""
    direction = torch.einsum("sic,si->sc", params.key_proj, params.query)
    return direction / math.sqrt(params.query.shape[1])


def value_direction(params: Params) -> torch.Tensor:
    """Wv^T w: (S, C); a step's contribution to the logit is this dotted with its input."""
    return torch.einsum("sic,si->sc", params.value_proj, params.readout)


def project(inputs: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """Per-step dot products: inputs (N, T, C), direction (S, C) -> (S, N, T).

    A sum of C broadcast products: elementwise, so a run's numbers do not depend
    on how many runs share the batch, and no (S, N, T, C) intermediate.
    """
    out = inputs[..., 0] * direction[:, 0, None, None]
    for c in range(1, inputs.shape[-1]):
        out = out + inputs[..., c] * direction[:, c, None, None]
    return out


def forward(
    params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (..., S, N) and attention weights (..., S, N, T).

    `dropped` (bool, broadcastable against (S, N, T), True = removed) takes steps
    out of the softmax and renormalises the rest: the step ablation. Extra
    leading dims of the mask become leading dims of the outputs.
    """
    scores = project(inputs, key_direction(params))  # (S, N, T)
    mask = None if dropped is None else drop_steps_mask(dropped, scores.dtype)
    weights = attention_weights(scores, mask)  # (..., S, N, T)
    step_values = project(inputs, value_direction(params))  # (S, N, T)
    logits = (weights * step_values).sum(-1) + params.bias[:, None]
    return logits, weights


def probability(logits: torch.Tensor) -> torch.Tensor:
    """sigmoid with the lesson's clamp of the logit to [-30, 30]."""
    return torch.sigmoid(logits.clamp(-30.0, 30.0))
