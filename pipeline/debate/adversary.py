"""Adversarial attention solved exactly (Jain & Wallace, "Attention is not
Explanation", NAACL 2019, section 4.2): per example, the pooling distribution a'
furthest from the learned one a in Jensen-Shannon divergence whose output stays
within eps of the model's, |p(a') - p(a)| <= eps.

The papers search for a' by gradient ascent. Here the output's logit is
sum_t a'_t r_t + b with the readouts r_t = w . V_t fixed, so the feasible set is
the simplex cut by a slab, lo <= r . a' <= hi (p is the sigmoid of the clamped
logit: monotone, so a band of p is a band of the logit). JSD(., a) is convex, so
its maximum over that polytope sits at one of its vertices: a simplex vertex e_t
inside the slab, or a point where an edge [e_i, e_j] of the simplex crosses a face
of the slab. There are at most T + T(T - 1) of them, and each one's JSD has a closed
form in two coordinates, so the maximum is enumerated, not searched for.

JSD uses the natural log, so it is at most ln 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pipeline.debate.pooling import one_head
from pipeline.errors import ConfigError
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability

LOGIT_CLAMP = 30.0  # the lesson's clamp of the logit (pooling.probability)
# A crossing a hair outside its edge (rounding in the division) still counts.
EDGE_SLACK = 1e-12


def jsd_terms(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Each coordinate's share of JSD(x, y), natural log: 0.5 x ln(2x / (x + y)) +
    0.5 y ln(2y / (x + y)), with 0 ln 0 = 0."""
    total = x + y
    safe = torch.where(total > 0, total, torch.ones_like(total))
    return 0.5 * (torch.xlogy(x, 2 * x / safe) + torch.xlogy(y, 2 * y / safe))


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence between distributions on the last dim, natural log."""
    return jsd_terms(p, q).sum(-1)


def logit_band(logits: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits z' whose clamped probability is within eps of `logits`': an interval
    [lo, hi], infinite on a side where the band reaches past the clamp."""
    p = probability(logits)
    floor, ceiling = (
        torch.sigmoid(torch.tensor(v, dtype=p.dtype)) for v in (-LOGIT_CLAMP, LOGIT_CLAMP)
    )
    low, high = p - eps, p + eps
    lo = torch.where(low <= floor, -math.inf, torch.logit(low.clamp(min=floor)))
    hi = torch.where(high >= ceiling, math.inf, torch.logit(high.clamp(max=ceiling)))
    return lo, hi


@dataclass(frozen=True)
class Adversary:
    """Per example: the largest JSD reachable within eps, and the distribution that
    reaches it (..., T)."""

    max_jsd: torch.Tensor
    weights: torch.Tensor


def exact_adversary(
    weights: torch.Tensor, readouts: torch.Tensor, bias: torch.Tensor, eps: float
) -> Adversary:
    """The exact maximum of JSD(a', a) over distributions a' with |p(a') - p(a)| <= eps.

    `weights` a and `readouts` r are (..., T), `bias` b broadcasts against (...): the
    logit is r . a + b. Enumerates the feasible polytope's vertices (module
    docstring); a, which is feasible, keeps the maximum at or above 0.
    """
    steps = weights.shape[-1]
    lo, hi = logit_band((weights * readouts).sum(-1) + bias, eps)
    lo, hi = lo - bias, hi - bias  # the band of the context r . a'

    # Simplex vertices: all the mass on one step.
    inside = (readouts >= lo[..., None]) & (readouts <= hi[..., None])
    at_vertex = 0.5 * math.log(2) * (1 - weights) + jsd_terms(torch.ones_like(weights), weights)
    at_vertex = torch.where(inside, at_vertex, -math.inf)

    # Edge crossings: lam on step i, 1 - lam on step j, with lam r_i + (1 - lam) r_j on
    # a face; every other step's term is 0.5 ln 2 a_t.
    first, second = torch.triu_indices(steps, steps, 1, device=weights.device)
    r_i, r_j = readouts[..., first], readouts[..., second]  # (..., P)
    a_i, a_j = weights[..., first], weights[..., second]
    faces = torch.stack([lo, hi])[..., None]  # (2, ..., 1)
    spread = r_i - r_j
    lam = (faces - r_j) / torch.where(spread == 0, torch.ones_like(spread), spread)
    crosses = (spread != 0) & torch.isfinite(faces) & (lam >= -EDGE_SLACK) & (lam <= 1 + EDGE_SLACK)
    lam = lam.clamp(0, 1)
    at_edge = 0.5 * math.log(2) * (1 - a_i - a_j) + jsd_terms(lam, a_i) + jsd_terms(1 - lam, a_j)
    at_edge = torch.where(crosses, at_edge, -math.inf)  # (2, ..., P)

    candidates = torch.cat([at_vertex, at_edge[0], at_edge[1]], -1)  # (..., T + 2P)
    best, choice = candidates.max(-1)
    return Adversary(best, _candidate_weights(choice, lam, first, second, steps))


def _candidate_weights(
    choice: torch.Tensor,
    lam: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    steps: int,
) -> torch.Tensor:
    """The distribution (..., T) of each example's chosen candidate: index < T is the
    vertex e_index, then the edge crossings on the lower face, then the upper."""
    pairs = first.numel()
    out = torch.zeros(*choice.shape, steps, dtype=lam.dtype, device=lam.device)
    is_vertex = choice < steps
    vertex = choice.clamp(max=steps - 1)
    out.scatter_(-1, vertex[..., None], is_vertex[..., None].to(out.dtype))
    edge = (choice - steps).clamp(min=0)
    face, pair = edge // pairs, edge % pairs
    share = torch.where(face == 0, lam[0].gather(-1, pair[..., None])[..., 0], 0)
    share = torch.where(face == 1, lam[1].gather(-1, pair[..., None])[..., 0], share)
    on_edge = (~is_vertex).to(out.dtype)
    out.scatter_add_(-1, first[pair][..., None], (on_edge * share)[..., None])
    out.scatter_add_(-1, second[pair][..., None], (on_edge * (1 - share))[..., None])
    return out


def runs_adversary(params: Params, inputs: torch.Tensor, eps: float) -> Adversary:
    """`exact_adversary` for every run and example (S, N) of a kind whose logit is its
    one head's pooling, r . a + b, with a a distribution over the steps, or over the
    steps and a value-less sink: the sink is one more slot with readout 0, so the
    adversary may move mass onto it or off it, and its JSD counts the slot. The
    weights it returns are the steps' (S, N, T).

    Multihead (a product of simplices, the same vertex structure) is not covered yet:
    refused by name.
    """
    terms = one_head(params, inputs, "the exact adversary")
    weights, readouts, steps = terms.weights, terms.readouts, terms.weights.shape[-1]
    if "sink" in params.named:  # the kind's layout has the sink's logit
        weights = torch.cat([weights, 1 - weights.sum(-1, keepdim=True)], -1)
        readouts = torch.cat([readouts, torch.zeros_like(readouts[..., :1])], -1)
    if not torch.allclose(weights.sum(-1), torch.ones((), dtype=weights.dtype)):
        raise ConfigError(
            f"invalid config value model.kind={params.cfg.kind}: the exact adversary "
            "needs one head whose weights are a distribution over the steps"
        )
    found = exact_adversary(weights, readouts, terms.bias, eps)
    return Adversary(found.max_jsd, found.weights[..., :steps])
