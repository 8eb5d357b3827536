"""What the rest of the pipeline calls on a model, whatever its kind.

Each function looks up the kind's module (pipeline/models/__init__.py) and calls
it, or falls back to what a kind that only defines `attend` implies: the weights
the metrics read are the mean over heads (one head: the weights themselves), a
step's value norm is sum_h a_{h,t} |w_h . V_{h,t}|, training runs autograd
through the forward.
"""

from __future__ import annotations

import torch

from pipeline.config import ModelConfig
from pipeline.models import kind_module
from pipeline.models import params as layouts
from pipeline.models.params import Layout, Params


def layout(cfg: ModelConfig, steps: int) -> Layout:
    return kind_module(cfg.kind).layout(cfg, steps)


def parameter_count(cfg: ModelConfig, steps: int) -> int:
    return layouts.parameter_count(layout(cfg, steps))


def flat_names(cfg: ModelConfig, steps: int) -> list[str]:
    return layouts.flat_names(layout(cfg, steps))


def from_flat(flat: torch.Tensor, cfg: ModelConfig, steps: int) -> Params:
    return layouts.from_flat(flat, cfg, layout(cfg, steps))


def init_params(
    data_seed: int,
    run_seeds: list[int],
    cfg: ModelConfig,
    steps: int,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> Params:
    """Run k starts from stream(data_seed + k)."""
    shapes = layout(cfg, steps)
    rows = [layouts.init_run(data_seed + k, shapes, cfg.init_scale) for k in run_seeds]
    return layouts.from_flat(torch.tensor(rows, dtype=dtype, device=device), cfg, shapes)


def forward(
    params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (..., S, N) and the pooling weights the metrics read (..., S, N, T).

    `dropped` (bool, broadcastable against (S, N, T), True = removed) takes steps
    out of the pooling softmax (every head's) and renormalises the rest: the step
    ablation. Extra leading dims of the mask become leading dims of the outputs.
    """
    kind = kind_module(params.cfg.kind)
    if hasattr(kind, "forward"):
        return kind.forward(params, inputs, dropped)
    logits, weights, _ = kind.attend(params, inputs, dropped)
    if weights.shape[-2] == 1:
        return logits, weights.squeeze(-2)  # the mean over one head, without a pass
    return logits, weights.mean(-2)


def head_weights(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Each head's pooling weights (..., S, N, H, T)."""
    kind = kind_module(params.cfg.kind)
    if hasattr(kind, "head_weights"):
        return kind.head_weights(params, inputs)
    return kind.attend(params, inputs)[1]


def value_norm(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """sum_h a_{h,t} |w_h . V_{h,t}|: how much step t moves the logit through its
    value (the lesson's a_t |w . V_t|; V read from what the pooling attends over):
    (S, N, T)."""
    kind = kind_module(params.cfg.kind)
    if hasattr(kind, "value_norm"):
        return kind.value_norm(params, inputs)
    _, weights, readouts = kind.attend(params, inputs)
    return (weights * readouts.abs()).sum(-2)


def extra_values(
    params: Params, inputs: torch.Tensor, marked: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The kind's own per-example numbers (S, N) on held-out inputs; none by default."""
    kind = kind_module(params.cfg.kind)
    if hasattr(kind, "extra_values"):
        return kind.extra_values(params, inputs, marked)
    return {}


def training_logits(
    params: Params, inputs: torch.Tensor, threads: int | None = None
) -> torch.Tensor:
    """The logits (S, N) of `forward` on inputs (N, T, C), in the kind's layout for
    training when it has one (equal up to float rounding; tests/test_models.py)."""
    kind = kind_module(params.cfg.kind)
    if hasattr(kind, "training_logits"):
        return kind.training_logits(params, inputs, threads)
    return forward(params, inputs)[0]


def training_block(params: Params, inputs: torch.Tensor) -> tuple[int, bool] | None:
    """(runs per training pass, whether the kind computes on threads of its own), or
    None for the default: the fast path's one pass, autograd's `train.AUTOGRAD_BLOCK`."""
    kind = kind_module(params.cfg.kind)
    return kind.training_block(inputs) if hasattr(kind, "training_block") else None


def gradient_step(params: Params, inputs: torch.Tensor, labels: torch.Tensor):
    """The kind's hand-derived `train.descend` step, or None (autograd)."""
    kind = kind_module(params.cfg.kind)
    return kind.gradient_step(inputs, labels) if hasattr(kind, "gradient_step") else None


def pooling_heads(cfg: ModelConfig) -> int:
    """Heads whose per-step numbers the kind keeps (the memory estimate's factor)."""
    kind = kind_module(cfg.kind)
    return kind.pooling_heads(cfg) if hasattr(kind, "pooling_heads") else 1


def layer_values(cfg: ModelConfig) -> int:
    """Per-step values of a layer before the pooling (the memory estimate's factor)."""
    kind = kind_module(cfg.kind)
    return kind.layer_values(cfg) if hasattr(kind, "layer_values") else 0
