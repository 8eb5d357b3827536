"""The disagreement problem's metrics: Krishna et al., "The Disagreement Problem in
Explainable Machine Learning: A Practitioner's Perspective" (TMLR 2024), section 3.

Two explanations a, b of one example give each of its T steps a signed attribution.
As in the paper, steps are ranked by |attribution| (descending; ties by step index,
`ties.descending_order`), and the sign is the attribution's (an explainer that
scores magnitudes only is positive everywhere). top_k(a) holds a's k first steps
(a k above T counts as T: every step).

- feature agreement FA@k = |top_k(a) & top_k(b)| / k
- rank agreement RA@k = |{f in both: same position in both top-k lists}| / k
- sign agreement SA@k = |{f in both: sign_a(f) = sign_b(f)}| / k
- signed rank agreement SRA@k = |{f in both: same position and same sign}| / k
- rank correlation: Spearman's rho of the |attributions| over all T steps (the
  paper's features of interest F = every step); tied values take their average rank
- pairwise rank agreement PRA: over the T(T-1)/2 pairs of steps, the share whose
  relative order (above, below, tied) is the same in a and b

Against the true rationale R (a set, not an order: `rationale_*`): FA at k = |R|
(the share of R in a's top-|R|), Spearman against R's indicator (1 on R, 0 elsewhere,
ties averaged), and PRA over the pairs R orders (one step in R, one outside).
Comparisons go through `pipeline.core.ties`, so float noise never moves a rank.
"""

from __future__ import annotations

import torch

from pipeline.core import ties
from pipeline.core.ranking import order_positions, rationale_mask


def top_k(attributions: torch.Tensor, k: int) -> torch.Tensor:
    """(..., k) long: the k steps of largest |attribution|, in rank order (k <= T)."""
    return ties.descending_order(attributions.abs())[..., :k]


def _k(attributions: torch.Tensor, k: int) -> int:
    """k, at most the T steps there are."""
    return min(k, attributions.shape[-1])


def _shared(a: torch.Tensor, b: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For each of a's top-k steps, by rank: is it in b's top-k, and at the same rank."""
    top_a, top_b = top_k(a, k), top_k(b, k)
    in_both = (top_a[..., :, None] == top_b[..., None, :]).any(-1)  # (..., k)
    return in_both, top_a == top_b


def _same_sign(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """For each of a's top-k steps: a and b give it the same sign."""
    steps = top_k(a, k)
    return torch.sign(a.gather(-1, steps)) == torch.sign(b.gather(-1, steps))


def feature_agreement(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """FA@k: (...)."""
    k = _k(a, k)
    in_both, _ = _shared(a, b, k)
    return in_both.sum(-1).to(a.dtype) / k


def rank_agreement(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """RA@k: (...)."""
    k = _k(a, k)
    _, same_rank = _shared(a, b, k)
    return same_rank.sum(-1).to(a.dtype) / k


def sign_agreement(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """SA@k: (...)."""
    k = _k(a, k)
    in_both, _ = _shared(a, b, k)
    return (in_both & _same_sign(a, b, k)).sum(-1).to(a.dtype) / k


def signed_rank_agreement(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """SRA@k: (...)."""
    k = _k(a, k)
    _, same_rank = _shared(a, b, k)
    return (same_rank & _same_sign(a, b, k)).sum(-1).to(a.dtype) / k


def average_ranks(values: torch.Tensor) -> torch.Tensor:
    """1-based ranks over the last dim, ascending, tied values (`ties.signs`) sharing
    their average rank (scipy.stats.rankdata's 'average'): (..., T)."""
    signs = ties.signs(values)  # [.., i, j] = sign(x_i - x_j)
    below = (signs > 0).sum(-1)
    tied_others = (signs == 0).sum(-1) - 1
    return (1 + below + tied_others / 2).to(values.dtype)


def spearman(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman's rho of |a| and |b| over the last dim: (...); nan where one is constant
    (as scipy.stats.spearmanr)."""
    ra, rb = average_ranks(a.abs()), average_ranks(b.abs())
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    return (ra * rb).sum(-1) / ((ra * ra).sum(-1) * (rb * rb).sum(-1)).sqrt()


def pairwise_rank_agreement(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """PRA over all T(T-1)/2 pairs of steps: (...)."""
    same = ties.signs(a.abs()) == ties.signs(b.abs())  # (..., T, T), symmetric
    steps = a.shape[-1]
    pairs = torch.ones(steps, steps, dtype=torch.bool, device=a.device).triu(1)
    return (same & pairs).sum((-2, -1)).to(a.dtype) / (steps * (steps - 1) / 2)


def rationale_feature_agreement(a: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """FA@|R| against the rationale: the share of R among a's |R| first steps: (...)."""
    mask = rationale_mask(rationale, a.shape[-1]).expand(a.shape)
    size = mask.sum(-1, keepdim=True)
    top = order_positions(ties.descending_order(a.abs())) < size
    return (top & mask).sum(-1).to(a.dtype) / size.squeeze(-1).to(a.dtype)


def rationale_spearman(a: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """Spearman's rho of |a| and R's indicator: (...)."""
    mask = rationale_mask(rationale, a.shape[-1]).expand(a.shape)
    return spearman(a, mask.to(a.dtype))


def rationale_pairwise_agreement(a: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """PRA over the pairs R orders, (r in R, j outside R): the share with |a_r| above
    |a_j| beyond a tie: (...); nan where R is every step."""
    mask = rationale_mask(rationale, a.shape[-1]).expand(a.shape)
    above = ties.signs(a.abs()) > 0  # [.., i, j]: |a_i| above |a_j|
    ordered = mask[..., :, None] & ~mask[..., None, :]
    return (above & ordered).sum((-2, -1)).to(a.dtype) / ordered.sum((-2, -1)).to(a.dtype)


def point_biserial(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Pearson's r of x and a 0/1 y over the last dim: (...); nan where either is
    constant. Here: a pair's agreement against 'both explainers miss the rationale'."""
    x, y = x - x.mean(-1, keepdim=True), y - y.mean(-1, keepdim=True)
    return (x * y).sum(-1) / ((x * x).sum(-1) * (y * y).sum(-1)).sqrt()
