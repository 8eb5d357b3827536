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

With several heads (multihead), the logit is sum_h r_h . a'_h + b and a' ranges over a
product of simplices, one per head, cut by the same slab. The adversary's JSD is the
mean over heads of JSD(a'_h, a_h): convex, so again the maximum is at a vertex. The
product's vertices are one vertex per head; its edges move one head along an edge
of its simplex with the others at vertices. So the candidates are the T^H vertex
combinations inside the slab, and for each head h, each edge of h's simplex and
each combination of the other heads' vertices, the points where that edge crosses a
face: T^H + H T^(H-1) T(T - 1) in all, enumerated for heads <= MAX_HEADS. By the
joint convexity of JSD, the mean of the heads' JSDs is at least the JSD of their
mean weights, the distribution the seed variance compares (pooling.with_sink_slot).

A sink (pipeline/models/sink.py) is one more slot of each head with readout 0: the
adversary may move mass onto it or off it, and its JSD counts the slot.

JSD uses the natural log, so it is at most ln 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pipeline.core.errors import ConfigError
from pipeline.core.kinds import DEBATE_MAX_HEADS
from pipeline.experiments.debate.pooling import pooling_terms
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability

LOGIT_CLAMP = 30.0  # the lesson's clamp of the logit (pooling.probability)
# A crossing a hair outside its edge (rounding in the division) still counts.
EDGE_SLACK = 1e-12
# A crossing is computed unless its bound is this far below the best vertex: rounding
# in the bound can never drop one that would win.
PRUNE_SLACK = 1e-9
# Heads the enumeration covers (kinds.DEBATE_MAX_HEADS, which the config check reads):
# T^H + H T^(H-1) T(T - 1) candidates per example (memory.candidate_count), 3312 for
# two heads over the lesson's 12 steps, 933k for four.
MAX_HEADS = DEBATE_MAX_HEADS


def jsd_logs(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ln(2x / (x + y)) and ln(2y / (x + y)), each 0 where its own x (y) is 0."""
    total = x + y
    safe = torch.where(total > 0, total, torch.ones_like(total))
    return (torch.log(torch.where(v > 0, 2 * v / safe, 1.0)) for v in (x, y))


def jsd_terms(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Each coordinate's share of JSD(x, y), natural log: 0.5 x ln(2x / (x + y)) +
    0.5 y ln(2y / (x + y)), with 0 ln 0 = 0 (torch's vectorised log: xlogy's scalar
    one took most of the model-consistent adversary's step)."""
    log_x, log_y = jsd_logs(x, y)
    return 0.5 * (x * log_x + y * log_y)


class JensenShannon(torch.autograd.Function):
    """JSD with its gradient in closed form: d/dx_t = 0.5 ln(2 x_t / (x_t + y_t)), and
    0 where x_t = 0 (0 ln 0 = 0, as in the value). Autograd through xlogy gave
    0 * inf = NaN where a weight underflowed to 0: at lam 100 the model-consistent
    adversary drives weights there (a softmax's score gradient, a_t times that, is 0
    in the limit)."""

    @staticmethod
    def forward(ctx, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        log_p, log_q = jsd_logs(p, q)
        ctx.save_for_backward(log_p, log_q)
        return (0.5 * (p * log_p + q * log_q)).sum(-1)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        log_p, log_q = ctx.saved_tensors
        half = 0.5 * grad[..., None]
        return half * log_p, half * log_q


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence between distributions on the last dim, natural log."""
    return JensenShannon.apply(p, q)


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
    reaches it (..., H, K)."""

    max_jsd: torch.Tensor
    weights: torch.Tensor


def vertex_combinations(values: torch.Tensor) -> torch.Tensor:
    """sum_h values[..., h, k_h] for every combination (k_0, ..., k_{H-1}) (..., K^H),
    head 0's index the slowest; () heads give the one empty combination, 0."""
    combined = values.new_zeros(values.shape[:-2] + (1,))
    for head in values.unbind(-2):
        combined = (combined[..., :, None] + head[..., None, :]).flatten(-2)
    return combined


def exact_adversary(
    weights: torch.Tensor, readouts: torch.Tensor, bias: torch.Tensor, eps: float
) -> Adversary:
    """The exact maximum of mean_h JSD(a'_h, a_h) over per-head distributions a' with
    |p(a') - p(a)| <= eps.

    `weights` a and `readouts` r are (..., H, K), `bias` b broadcasts against (...):
    the logit is sum_h r_h . a_h + b. Enumerates the feasible polytope's vertices
    (module docstring); a, which is feasible, keeps the maximum at or above 0.
    """
    heads, slots = weights.shape[-2:]
    lo, hi = logit_band((weights * readouts).sum((-2, -1)) + bias, eps)
    lo, hi = lo - bias, hi - bias  # the band of the context sum_h r_h . a'_h
    # JSD(e_k, a_h) / H: head h's share of the mean with all its mass on slot k.
    at_vertex = 0.5 * math.log(2) * (1 - weights) + jsd_terms(torch.ones_like(weights), weights)
    at_vertex = at_vertex / heads

    # Vertex combinations inside the slab.
    context = vertex_combinations(readouts)
    inside = (context >= lo[..., None]) & (context <= hi[..., None])
    candidates = [torch.where(inside, vertex_combinations(at_vertex), -math.inf)]

    # Edge crossings of head h: lam on slot i, 1 - lam on slot j, the other heads at
    # vertices (their context and JSD share `others_*`, (..., M)); every other slot of
    # h adds 0.5 ln 2 a_t / H. JSD is convex along the edge, so a crossing's share is at
    # most its better end's: crossings whose bound is below the best vertex inside the
    # slab cannot win, and only the others (`live`) are computed.
    floor = candidates[0].max(-1).values - PRUNE_SLACK  # -inf where no vertex is inside
    first, second = torch.triu_indices(slots, slots, 1, device=weights.device)
    faces = torch.stack([lo, hi])[..., None, None]  # (2, ..., 1, 1)
    for head in range(heads):
        rest = [h for h in range(heads) if h != head]
        others_context = vertex_combinations(readouts[..., rest, :])[..., None]  # (..., M, 1)
        others_jsd = vertex_combinations(at_vertex[..., rest, :])[..., None]
        r_i, r_j = (readouts[..., head, pick][..., None, :] for pick in (first, second))
        a_i, a_j = (weights[..., head, pick][..., None, :] for pick in (first, second))
        v_i, v_j = (at_vertex[..., head, pick][..., None, :] for pick in (first, second))
        live = others_jsd + torch.maximum(v_i, v_j) >= floor[..., None, None]  # (..., M, P)
        shape, flat = live.shape, live.flatten().nonzero().squeeze(-1)

        def live_values(t: torch.Tensor, shape=shape, flat=flat) -> torch.Tensor:
            return t.expand(shape).flatten()[flat]

        face = faces.expand(2, *shape).flatten(1)[:, flat]
        lam = _crossing(face - live_values(others_context), live_values(r_i), live_values(r_j))
        live_i, live_j = live_values(a_i), live_values(a_j)  # (L,); lam (2, L), nan if none
        share = (
            0.5 * math.log(2) * (1 - live_i - live_j)
            + jsd_terms(lam, live_i)
            + jsd_terms(1 - lam, live_j)
        )
        value = torch.where(lam.isnan(), -math.inf, live_values(others_jsd) + share / heads)
        at_edge = weights.new_full((2, live.numel()), -math.inf)
        at_edge[:, flat] = value
        at_edge = at_edge.reshape(2, *shape)
        candidates.append(at_edge.movedim(0, -3).flatten(-3))  # (..., 2 M P): face, m, pair

    best, choice = torch.cat(candidates, -1).max(-1)
    found = _candidate_weights(choice, readouts, lo, hi, first, second)
    return Adversary(best, found)


def _crossing(face: torch.Tensor, r_i: torch.Tensor, r_j: torch.Tensor) -> torch.Tensor:
    """The share lam of slot i where the edge lam e_i + (1 - lam) e_j reaches `face`
    (the context left to this head), clamped to [0, 1]; nan where the edge does not
    cross it (parallel, or the face infinite or beyond the edge's ends)."""
    spread = r_i - r_j
    lam = (face - r_j) / torch.where(spread == 0, torch.ones_like(spread), spread)
    crosses = (spread != 0) & torch.isfinite(face) & (lam >= -EDGE_SLACK) & (lam <= 1 + EDGE_SLACK)
    return torch.where(crosses, lam.clamp(0, 1), math.nan)


def _digits(index: torch.Tensor, base: int, count: int) -> list[torch.Tensor]:
    """`index` written in `count` digits of `base`, the most significant first."""
    return [(index // base ** (count - 1 - d)) % base for d in range(count)]


def _candidate_weights(
    choice: torch.Tensor,
    readouts: torch.Tensor,
    lo: torch.Tensor,
    hi: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
) -> torch.Tensor:
    """The per-head distributions (..., H, K) of each example's chosen candidate, in
    `exact_adversary`'s order: the K^H vertex combinations, then for each head the
    edge crossings (face, the other heads' combination m, the pair). An edge's lam is
    computed again from the decoded indices."""
    heads, slots = readouts.shape[-2:]
    pairs, combos = first.numel(), slots ** (heads - 1)
    vertices, per_head = slots**heads, 2 * combos * pairs
    is_vertex = choice < vertices
    edge = (choice - vertices).clamp(min=0)
    moving = torch.where(is_vertex, -1, edge // per_head)  # the head on an edge, or -1
    edge = edge % per_head
    face, other, pair = edge // (combos * pairs), (edge // pairs) % combos, edge % pairs
    at_vertex = _digits(choice.clamp(max=vertices - 1), slots, heads)
    # The other heads' slots, in head order without the moving one (one 0 if none).
    others = torch.stack(_digits(other, slots, heads - 1) or [torch.zeros_like(other)], -1)
    picked = []  # each head's vertex slot (the moving head's is not read)
    for head in range(heads):
        position = (head - (moving < head).long()).clamp(0, others.shape[-1] - 1)
        among_others = others.gather(-1, position[..., None])[..., 0]
        picked.append(torch.where(is_vertex, at_vertex[head], among_others))
    picked = torch.stack(picked, -1)  # (..., H)
    chosen = readouts.gather(-1, picked[..., None])[..., 0]  # (..., H)
    moving_mask = torch.arange(heads, device=choice.device) == moving[..., None]
    others_context = torch.where(moving_mask, 0, chosen).sum(-1)
    mover = moving.clamp(min=0)[..., None, None].expand(*moving.shape, 1, slots)
    mover_readouts = readouts.gather(-2, mover)[..., 0, :]  # (..., K)
    i, j = first[pair], second[pair]
    r_i = mover_readouts.gather(-1, i[..., None])[..., 0]
    r_j = mover_readouts.gather(-1, j[..., None])[..., 0]
    face_value = torch.where(face == 0, lo, hi)
    lam = _crossing(face_value - others_context, r_i, r_j).nan_to_num(0)

    out = torch.zeros(*readouts.shape, dtype=readouts.dtype, device=readouts.device)
    vertex_mass = (~moving_mask).to(out.dtype)
    out.scatter_(-1, picked[..., None], vertex_mass[..., None])
    on_edge = moving_mask.to(out.dtype)
    share_i, share_j = (
        (on_edge * lam[..., None])[..., None],
        (on_edge * (1 - lam[..., None]))[..., None],
    )
    out.scatter_add_(-1, i[..., None, None].expand(*i.shape, heads, 1), share_i)
    out.scatter_add_(-1, j[..., None, None].expand(*j.shape, heads, 1), share_j)
    return out


def runs_adversary(
    params: Params, inputs: torch.Tensor, eps: float, examples: int | None = None
) -> Adversary:
    """`exact_adversary` for every run and example (S, N) of a kind whose logit is
    linear in its heads' pooling weights (pooling.py), `examples` examples a pass (all
    by default: memory.adversary_pass sizes it); the weights it returns are each
    head's over the steps and the sink slot (S, N, H, K)."""
    terms = pooling_terms(params, inputs)
    heads = terms.weights.shape[-2]
    if heads > MAX_HEADS:
        raise ConfigError(
            f"invalid config value model.heads={heads}: the exact adversary enumerates "
            f"steps^heads vertex combinations, at most {MAX_HEADS} heads"
        )
    size = examples or inputs.shape[0]
    blocks = [slice(n, n + size) for n in range(0, inputs.shape[0], size)]
    parts = [
        exact_adversary(terms.weights[:, b], terms.readouts[:, b], terms.bias[:, b], eps)
        for b in blocks
    ]
    return Adversary(
        torch.cat([part.max_jsd for part in parts], 1),
        torch.cat([part.weights for part in parts], 1),
    )
