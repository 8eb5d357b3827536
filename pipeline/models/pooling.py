"""Single-query attention pooling, the part every model kind shares.

Per run and head h: a step's score is q_h . (Wk_h x_t) / sqrt(d_k) and its readout
w_h . (Wv_h x_t). Inputs have two channels, so q . (Wk x) = (Wk^T q) . x: the math
works with two C-vectors per head and run (`key_direction`, `value_direction`)
instead of materialising K and V. What a kind pools over (x, x + p, a layer's h)
comes as channel slabs (..., N, T) or (..., S, N, T), one per channel.

`attend` (runs first, (..., S, N, H, T)) is what the metrics read and what
training's reference differentiates; the fast paths lay the same operations out
with the runs innermost (pipeline/models/pooling_gradients.py, the window kernel).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from pipeline.models.attention import attention_weights, drop_steps_mask
from pipeline.models.parameters import Params


@dataclass(frozen=True)
class Head:
    """One single-query pooling head of S runs."""

    key_proj: torch.Tensor  # Wk (S, d_k, C)
    value_proj: torch.Tensor  # Wv (S, d_v, C)
    query: torch.Tensor  # q (S, d_k)
    readout: torch.Tensor  # w (S, d_v)


def lesson_head(params: Params) -> Head:
    """The head of a kind that extends the lesson (its Wk, Wv, q, w)."""
    n = params.named
    return Head(n["Wk"], n["Wv"], n["q"], n["w"])


def key_direction(head: Head) -> torch.Tensor:
    """Wk^T q / sqrt(d_k): (S, C); a step's score is this vector dotted with its input."""
    direction = torch.einsum("sic,si->sc", head.key_proj, head.query)
    return direction / math.sqrt(head.query.shape[1])


def value_direction(head: Head) -> torch.Tensor:
    """Wv^T w: (S, C); a step's contribution to the logit is this dotted with its input."""
    return torch.einsum("sic,si->sc", head.value_proj, head.readout)


def head_gradients(
    head: Head, dkey: torch.Tensor, dvalue: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """dL/d(Wk, Wv, q, w) of one head from dL/d its key direction Wk^T q / sqrt(d_k)
    and value direction Wv^T w (S, C) each."""
    dkey = dkey / math.sqrt(head.query.shape[1])
    return (
        head.query[:, :, None] * dkey[:, None, :],
        head.readout[:, :, None] * dvalue[:, None, :],
        torch.einsum("sic,sc->si", head.key_proj, dkey),
        torch.einsum("sic,sc->si", head.value_proj, dvalue),
    )


def total(terms: Iterable[torch.Tensor]) -> torch.Tensor:
    """t1 + t2 + ... in order, without `sum`'s extra pass for its 0 start."""
    terms = iter(terms)
    out = next(terms)
    for term in terms:
        out = out + term
    return out


def project(channels: list[torch.Tensor], direction: torch.Tensor) -> torch.Tensor:
    """Per-step dot products: channel slabs (..., N, T) each, direction (S, C) ->
    (..., S, N, T). A sum of C broadcast products: elementwise, so a run's numbers do
    not depend on how many runs share the batch, and no (..., S, N, T, C) intermediate."""
    return total(x * direction[:, c, None, None] for c, x in enumerate(channels))


def channels(inputs: torch.Tensor) -> list[torch.Tensor]:
    """Inputs (..., N, T, C) as C slabs (..., N, T)."""
    return list(inputs.unbind(-1))


def attend(
    pooled: list[torch.Tensor],
    heads: list[Head],
    bias: torch.Tensor,
    dropped: torch.Tensor | None = None,
    sink: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits (..., S, N), per-head weights and readouts (..., S, N, H, T).

    `dropped` (bool, broadcastable against (S, N, T), True = removed) takes steps out
    of every head's softmax and renormalises the rest: the step ablation; extra
    leading dims of the mask become leading dims of the outputs. `sink` (S,): one
    value-less logit per run in the softmax.
    """
    scores = [project(pooled, key_direction(head)) for head in heads]
    readouts = [project(pooled, value_direction(head)) for head in heads]
    if len(heads) == 1:  # a view, not a copy: one head is most kinds
        scores, readouts = scores[0].unsqueeze(-2), readouts[0].unsqueeze(-2)
    else:
        scores, readouts = torch.stack(scores, -2), torch.stack(readouts, -2)
    mask = None if dropped is None else drop_steps_mask(dropped, scores.dtype).unsqueeze(-2)
    sink = None if sink is None else sink[:, None, None]  # (S, 1, 1): one per run
    weights = attention_weights(scores, mask, sink)
    logits = (weights * readouts).sum((-2, -1)) + bias[:, None]
    return logits, weights, readouts


def probability(logits: torch.Tensor) -> torch.Tensor:
    """P(y=1): sigmoid with the lesson's clamp of the logit to [-30, 30]."""
    return torch.sigmoid(logits.clamp(-30.0, 30.0))


def runs_last(directions: torch.Tensor, pooled: list[torch.Tensor]) -> torch.Tensor:
    """`project` with the runs last: channel slabs (N, T, ...) and directions (..., C)
    -> sum_c pooled[c] * directions[..., c]."""
    return total(x * directions[..., c] for c, x in enumerate(pooled))
