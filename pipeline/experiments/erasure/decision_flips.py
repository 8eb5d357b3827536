"""Erasure and decision flips: Serrano & Smith, "Is Attention Interpretable?" (ACL 2019).

An erased step leaves the pooling softmax and the other weights renormalise
(`interface.forward`'s `dropped` mask: the lesson's step ablation). The decision is
logit > 0, beyond a tie (`pipeline.core.ties.above`).

- Single erasure: erase the top-weight step (first max on ties) and record whether the
  decision flips; the reference is a random *other* step, whose flip probability is
  the exact mean of the single-step flips over the T-1 other steps (no sampling).
- Flip curves: erase steps one by one in descending order of a ranking (ties by step
  index, `ties.descending_order`) until the decision flips. k steps erased at the first
  flip, k in 1..T-1 (one step always stays); the share of steps removed is k / T. An
  example that no k flips "never flips".
- The known rationale: the step whose erasure completed the flip (the k-th of the
  order), and the top-weight step when its erasure flips, each in the rationale or not.
"""

from __future__ import annotations

import torch

from pipeline.core import ties
from pipeline.core.ranking import order_positions, rationale_mask, top_k_masks
from pipeline.models.interface import forward
from pipeline.models.parameters import Params


def decisions(logits: torch.Tensor) -> torch.Tensor:
    """The predicted class, logit > 0 beyond a tie: bool, logits' shape."""
    return ties.above(logits, 0.0)


def single_flips(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Bool (S, N, T): erasing step t alone flips the decision. One pass with a leading
    dim of T masks."""
    steps = inputs.shape[1]
    logits, _ = forward(params, inputs)  # (S, N)
    one_step = torch.eye(steps, dtype=torch.bool, device=inputs.device)[:, None, None, :]
    erased, _ = forward(params, inputs, dropped=one_step)  # (T, S, N)
    return (decisions(erased) != decisions(logits)).permute(1, 2, 0)


def top_and_other(flips: torch.Tensor, weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """(S, N) each: `top_flip` (1 where erasing the first-max-weight step flips) and
    `other_flip` (the exact expected flip over a uniformly drawn other step:
    (#flipping steps - top_flip) / (T - 1))."""
    steps = weights.shape[-1]
    top = ties.first_max(weights, keepdim=True)  # (S, N, 1)
    top_flip = flips.gather(-1, top).squeeze(-1).to(weights.dtype)
    other = (flips.sum(-1).to(weights.dtype) - top_flip) / (steps - 1)
    return {"top_flip": top_flip, "other_flip": other}


def top_flip_marked(
    flips: torch.Tensor, weights: torch.Tensor, rationale: torch.Tensor
) -> torch.Tensor:
    """(S, N): 1 where the top-weight step's erasure flips and that step is in the
    rationale, 0 where it flips and is not, nan where it does not flip."""
    top = ties.first_max(weights, keepdim=True)
    mask = rationale_mask(rationale, weights.shape[-1]).expand(weights.shape)
    marked = mask.gather(-1, top).squeeze(-1).to(weights.dtype)
    flipped = flips.gather(-1, top).squeeze(-1)
    return torch.where(flipped, marked, torch.nan)


def rationale_flip(
    flips: torch.Tensor, rationale: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """(S, N): 1 where erasing some rationale step alone flips the decision."""
    mask = rationale_mask(rationale, flips.shape[-1])
    return (flips & mask).any(-1).to(dtype)


def first_flips(params: Params, inputs: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """(S, N) long: k, the steps of `order` (S, N, T) erased when the decision first
    flips, k in 1..T-1; 0 where no k flips it."""
    logits, _ = forward(params, inputs)
    erased, _ = forward(params, inputs, dropped=top_k_masks(order_positions(order)))  # (T-1, S, N)
    flipped = decisions(erased) != decisions(logits)
    # argmax returns the first True; a row with none is told apart by `any`.
    return torch.where(flipped.any(0), flipped.to(torch.uint8).argmax(0) + 1, 0)


def flip_curve(
    first: torch.Tensor, order: torch.Tensor, rationale: torch.Tensor, dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    """(S, N) each, from `first_flips`: `removed` (k / T, nan where never), `never`
    (1 where no k flips) and `flip_marked` (1 where the k-th erased step is in the
    rationale, nan where never)."""
    steps = order.shape[-1]
    flips = first > 0
    removed = torch.where(flips, first.to(dtype) / steps, torch.nan)
    last = order.gather(-1, (first - 1).clamp(min=0)[..., None])  # the k-th erased step
    mask = rationale_mask(rationale, steps).expand(order.shape)
    marked = mask.gather(-1, last).squeeze(-1).to(dtype)
    return {
        "removed": removed,
        "never": (~flips).to(dtype),
        "flip_marked": torch.where(flips, marked, torch.nan),
    }
