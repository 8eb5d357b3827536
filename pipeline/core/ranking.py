"""Rankings of steps by a score, against the steps that decide the label.

Pure functions over tensors, shared by every experiment that scores an explanation
against the task's rationale. Ties follow `pipeline.core.ties`: the first maximum wins
and values closer than float noise are equal.
"""

from __future__ import annotations

import torch

from pipeline.core import ties


def order_positions(order: torch.Tensor) -> torch.Tensor:
    """Inverse permutation: the 0-based position of every step in `order`: (..., T)."""
    positions = torch.empty_like(order)
    ranks = torch.arange(order.shape[-1], device=order.device).expand_as(order)
    return positions.scatter_(-1, order, ranks)


def top_k_masks(positions: torch.Tensor) -> torch.Tensor:
    """Bool (T-1, ..., T): entry k-1 marks the top k steps, k = 1..T-1."""
    ks = torch.arange(1, positions.shape[-1], device=positions.device)
    return positions.unsqueeze(0) < ks.reshape(-1, *([1] * positions.dim()))


def kendall_tau_b(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Kendall tau_b over the last dim, batched: (..., T) x2 -> (...).

    (n_c - n_d) / sqrt((n_0 - n_x) (n_0 - n_y)) with n_x, n_y the pairs tied in x,
    in y (scipy.stats.kendalltau's default variant). nan where x or y is constant.
    Ties are scipy's exact ties plus values closer than float noise (`ties.signs`).
    """
    dx, dy = ties.signs(x), ties.signs(y)
    # Over all ordered pairs: every pair counted twice, which the ratio cancels.
    concordance = (dx * dy).sum((-2, -1))
    untied = (dx.abs().sum((-2, -1)) * dy.abs().sum((-2, -1))).sqrt()
    return concordance / untied


def rationale_mask(rationale: torch.Tensor, steps: int) -> torch.Tensor:
    """The steps that decide each label as a bool (N, T) mask: a mask as it is, or the
    one-hot of marked steps (N,) (the lesson's rationale)."""
    if rationale.dim() == 2:
        return rationale.to(torch.bool)
    return torch.nn.functional.one_hot(rationale, steps).to(torch.bool)


def hit_at_1(scores: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """1 where the first-max-wins top step is in the rationale: (S, N)."""
    mask = rationale_mask(rationale, scores.shape[-1]).expand(scores.shape)
    return mask.gather(-1, ties.first_max(scores, keepdim=True)).squeeze(-1).to(scores.dtype)


def marked_rank(scores: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """How far down the ranking the whole rationale R is: |R| + the number of other
    steps scoring strictly above R's lowest step (one marked step m: 1 + the number
    of steps strictly above m, so a tie is not counted against it): (S, N)."""
    mask = rationale_mask(rationale, scores.shape[-1])
    # [.., j, r] > 0: s_j above s_r beyond a tie; above R's lowest = above some r of R.
    above = ((ties.signs(scores) > 0) & mask[..., None, :]).any(-1) & ~mask
    return (mask.sum(-1) + above.sum(-1)).to(scores.dtype)


def average_precision(scores: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """Average precision against the rationale, scikit-learn's: the mean over its steps
    r of #(rationale steps scoring >= r's) / #(steps scoring >= r's); with one marked
    step, 1 / #(score >= marked's): (S, N)."""
    mask = rationale_mask(rationale, scores.shape[-1])
    at_least = ties.signs(scores) <= 0  # [.., r, j]: s_j >= s_r, ties included
    precision = (at_least & mask[..., None, :]).sum(-1).to(scores.dtype) / at_least.sum(-1).to(
        scores.dtype
    )
    return (precision * mask).sum(-1) / mask.sum(-1).to(scores.dtype)
