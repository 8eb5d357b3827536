"""Causal abstraction by interchange interventions on the context vector.

The task's algorithm (pipeline/tasks/lesson.py) has one intermediate variable:
X = r_m, the marked step's reading, then Z = [X > threshold], then Y = Z. Setting X
or Z to its value on a source input gives the same counterfactual output, the
source's label, since Y is a function of Z alone: the test below holds for both.

Geiger et al. (NeurIPS 2021, "Causal Abstractions of Neural Networks") define the
interchange intervention: run the network on a base input, replace a hidden
representation by its value on a source input, and compare the output with the
algorithm's output when its variable takes the source's value; the share of
(base, source) pairs where they agree is the interchange-intervention accuracy
(IIA). Distributed alignment search (Geiger et al., CLeaR 2024, "Finding
Alignments Between Interpretable Causal Variables and Distributed Neural
Representations") learns where the variable lives: a rotation R of the hidden
vector h, the variable aligned with its first k coordinates, and the intervention
h' = R^T [ (R h_source)_{:k}, (R h_base)_{k:} ]; pyvene's
`RotatedSpaceIntervention` is this, with R kept orthogonal by a parametrisation
and trained on the counterfactual labels' cross-entropy.

Sutter et al. (NeurIPS 2025, arXiv 2507.08802) replace R by an invertible
non-linear map phi (a reversible residual network, RevNet) and show that such
maps align even randomly initialised networks with an algorithm. Here phi is R
followed by additive coupling blocks (Dinh et al. 2015, the RevNet's blocks): with
z = (u, v) = (z_{:k}, z_{k:}), u <- u + F(v), then v <- v + G(u), F and G each a
one-hidden-layer tanh MLP. Every block inverts exactly (v <- v - G(u), then
u <- u - F(v)), so the intervention h' = phi^{-1}([phi(h_s)_{:k}, phi(h_b)_{k:}])
is defined as for R; with F = G = 0 it is R.

The hidden vector is the lesson model's context c = sum_t a_t V_t (d_v = 3); "the
rest of the model" is its readout, logit = w . c + b. Every function is seed-batched:
tensors carry the runs first, (S, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pipeline.analysis import stats
from pipeline.core import ties
from pipeline.core.errors import DivergenceError
from pipeline.core.precision import DECIMALS, settle
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.threads import check_stopped


def context_vectors(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """c = sum_t a_t Wv x_t of a one-head pooling over the inputs: (S, N, d_v)."""
    weights = interface.head_weights(params, inputs)[..., 0, :]  # (S, N, T)
    return torch.einsum("snt,sdc,ntc->snd", weights, params.named["Wv"], inputs)


def readout(params: Params, context: torch.Tensor) -> torch.Tensor:
    """The rest of the model after the context: w . c + b, (S, ...) for c (S, ..., d_v)."""
    bias = params.named["b"].reshape(-1, *([1] * (context.dim() - 2)))
    return torch.einsum("s...d,sd->s...", context, params.named["w"]) + bias


@dataclass(frozen=True)
class AlignmentMap:
    """phi = coupling blocks after a rotation R = exp(A - A^T), for S runs.

    `skew`: A (S, d, d); `blocks`: per block (F1, f1, F2, G1, g1, G2), the coupling
    MLPs F: (d-k) -> h -> k and G: k -> h -> (d-k) (weights (S, out, in), biases
    (S, h)). No blocks: the linear map (DAS's rotation)."""

    skew: torch.Tensor
    blocks: tuple[tuple[torch.Tensor, ...], ...]
    dims: int  # k: the aligned coordinates

    def tensors(self) -> list[torch.Tensor]:
        return [self.skew, *(t for block in self.blocks for t in block)]


def rotation(skew: torch.Tensor) -> torch.Tensor:
    """exp(A - A^T): orthogonal for every A, so gradient steps stay on rotations."""
    return torch.linalg.matrix_exp(skew - skew.transpose(-1, -2))


def _mlp(x: torch.Tensor, first: torch.Tensor, bias: torch.Tensor, second: torch.Tensor):
    """second . tanh(first . x + bias) per run: x (S, ..., in) -> (S, ..., out). Sums of
    broadcast products, like `pooling.project`: elementwise, so a run's numbers do not
    depend on how many runs share the batch (as fast as einsum at these sizes)."""
    shape = (bias.shape[0],) + (1,) * (x.dim() - 2)
    pre = bias.reshape(*shape, -1)
    for i in range(x.shape[-1]):
        pre = pre + x[..., i : i + 1] * first[:, :, i].reshape(*shape, -1)
    hidden = torch.tanh(pre)  # (S, ..., h)
    outs = [(hidden * second[:, o].reshape(*shape, -1)).sum(-1) for o in range(second.shape[1])]
    return torch.stack(outs, -1)


def align(phi: AlignmentMap, hidden: torch.Tensor) -> torch.Tensor:
    """phi(h): (S, ..., d) -> (S, ..., d), the variable in the first `dims` coordinates."""
    z = torch.einsum("sij,s...j->s...i", rotation(phi.skew), hidden)
    u, v = z[..., : phi.dims], z[..., phi.dims :]
    for f1, f, f2, g1, g, g2 in phi.blocks:
        u = u + _mlp(v, f1, f, f2)
        v = v + _mlp(u, g1, g, g2)
    return torch.cat([u, v], -1)


def unalign(phi: AlignmentMap, z: torch.Tensor) -> torch.Tensor:
    """phi^{-1}(z): the blocks undone in reverse order, then R^T."""
    u, v = z[..., : phi.dims], z[..., phi.dims :]
    for f1, f, f2, g1, g, g2 in reversed(phi.blocks):
        v = v - _mlp(u, g1, g, g2)
        u = u - _mlp(v, f1, f, f2)
    return torch.einsum("sji,s...j->s...i", rotation(phi.skew), torch.cat([u, v], -1))


def interchange(phi: AlignmentMap, base: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """The hidden vector with the aligned coordinates taken from the source:
    phi^{-1}([phi(source)_{:k}, phi(base)_{k:}]), for broadcastable (S, ..., d) inputs."""
    z_base, z_source = align(phi, base), align(phi, source)
    z_base, z_source = torch.broadcast_tensors(z_base, z_source)
    swapped = torch.cat([z_source[..., : phi.dims], z_base[..., phi.dims :]], -1)
    return unalign(phi, swapped)


def initial_map(
    seeds: list[int], map_seed: int, d: int, dims: int, hidden: int, blocks: int
) -> AlignmentMap:
    """Each run's map drawn from numpy's default_rng([map_seed, run seed]): A first
    (so the linear and non-linear maps of a run start from the same rotation), then
    each block's F and G: inner weights N(0, 1/in), biases N(0, 1), outer weights
    N(0, 0.01/h), so that phi starts close to R."""
    shapes, scales = [(d, d)], [1.0]
    for _ in range(blocks):
        for inner, outer in ((d - dims, dims), (dims, d - dims)):  # F, then G
            shapes += [(hidden, inner), (hidden,), (outer, hidden)]
            scales += [inner**-0.5, 1.0, 0.1 * hidden**-0.5]
    draws = [np.random.default_rng([map_seed, seed]) for seed in seeds]
    tensors = [
        torch.tensor(np.stack([rng.standard_normal(shape) for rng in draws])) * scale
        for shape, scale in zip(shapes, scales, strict=True)
    ]
    blocks_ = tuple(tuple(tensors[1 + 6 * b : 7 + 6 * b]) for b in range(blocks))
    return AlignmentMap(tensors[0], blocks_, dims)


def linear_part(phi: AlignmentMap) -> AlignmentMap:
    """The rotation alone: DAS's linear map."""
    return AlignmentMap(phi.skew, (), phi.dims)


def intervened_logits(
    params: Params, phi: AlignmentMap, base: torch.Tensor, source: torch.Tensor
) -> torch.Tensor:
    """The readout of the intervened context, for contexts (S, ..., d)."""
    return readout(params, interchange(phi, base, source))


def fit(
    params: Params,
    phi: AlignmentMap,
    base: torch.Tensor,
    source: torch.Tensor,
    target: torch.Tensor,
    epochs: int,
    lr: float,
) -> AlignmentMap:
    """Train phi on training pairs (contexts (S, P, d), counterfactual labels (P,)):
    full-batch Adam on the sum over runs of each run's mean binary cross-entropy, so
    each run's gradient is its own (Adam is elementwise). The model stays fixed.

    Every step's map is settled at the written precision (pipeline/core/precision.py), as
    the debate's training is: the non-linear map's fit amplifies a last bit into
    another map (docs/field.md, "A chaotic fit"), so another CPU's last bits must not
    outlive a step. A map that reaches NaN or inf raises DivergenceError."""
    tensors = [settle(t).detach().clone().requires_grad_(True) for t in phi.tensors()]
    optimizer = torch.optim.Adam(tensors, lr=lr)
    labels = target.to(base.dtype).expand(base.shape[:-1])
    for _ in range(epochs):
        check_stopped()  # a SIGTERM ends the stage within a step, not after the fit
        optimizer.zero_grad()
        current = _with_tensors(phi, tensors)
        logits = intervened_logits(params, current, base, source)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, labels, reduction="none"
        )
        loss.mean(-1).sum().backward()
        optimizer.step()
        with torch.no_grad():
            for tensor in tensors:
                tensor.copy_(settle(tensor))
    fitted = _with_tensors(phi, [t.detach() for t in tensors])
    check_finite_map(fitted, lr)
    return fitted


def check_finite_map(phi: AlignmentMap, lr: float) -> None:
    """A diverged fit is refused, not scored: its IIA would be a constant's."""
    finite = torch.stack([t.isfinite().flatten(1).all(1) for t in phi.tensors()]).all(0)
    if not bool(finite.all()):
        raise DivergenceError(
            f"the alignment map's fit diverged: {int((~finite).sum())} of {finite.numel()} "
            f"runs reached NaN or inf (abstraction.lr={lr}); lower abstraction.lr"
        )


def _with_tensors(phi: AlignmentMap, tensors: list[torch.Tensor]) -> AlignmentMap:
    blocks = tuple(tuple(tensors[1 + 6 * b : 7 + 6 * b]) for b in range(len(phi.blocks)))
    return AlignmentMap(tensors[0], blocks, phi.dims)


def interchange_accuracy(
    params: Params, phi: AlignmentMap, context: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """IIA over every ordered (base, source) pair of N examples, (S,) twice: over all
    N^2 pairs, and over the pairs whose labels differ (where the intervention must
    flip the output). The counterfactual label is the source's label; the output is
    logit > 0 beyond a tie (pipeline/core/ties.py). Contexts (S, N, d), labels (N,)."""
    with torch.no_grad():
        logits = intervened_logits(params, phi, context[:, :, None], context[:, None])
    correct = ties.above(logits, 0.0) == (labels[None, None, :] > 0.5)  # (S, base, source)
    differ = (labels[:, None] > 0.5) != (labels[None, :] > 0.5)
    correct = correct.to(torch.float64)
    changed = (correct * differ).sum((1, 2)) / differ.sum()
    return correct.mean((1, 2)), changed


def training_pairs(examples: int, pairs: int, pair_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(base, source) indices of `pairs` pairs drawn with replacement from
    numpy's default_rng(pair_seed), the same for every run."""
    rng = np.random.default_rng(pair_seed)
    return rng.integers(examples, size=pairs), rng.integers(examples, size=pairs)


# --- the measurement: trained runs and the same runs at their init, both maps ----------

MAPS = ("linear", "nonlinear")
LAYOUT = ["Wk", "Wv", "q", "w", "b"]  # the lesson's parameters: one pooling over the inputs
CONDITIONS = ("trained", "random")  # each run after training, and at its init
NUDGE = 10.0**-DECIMALS  # one unit of the written precision


@dataclass(frozen=True)
class Split:
    inputs: torch.Tensor  # (N, T, C)
    labels: torch.Tensor  # (N,)


def measure_runs(
    params: Params, seeds: list[int], train: Split, heldout: Split, settings
) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """{map: (IIA, IIA on pairs whose labels differ, IIA's move)}, (S,) each, for S
    runs: each map fitted on `settings.pairs` training pairs, scored on every held-out
    pair; the move is |IIA - IIA of the same fit from a start nudged by one unit of
    the written precision| (`nudged_start`), the seed's sensitivity to a last bit
    that survived settling. `settings`: the abstraction config (dims, hidden, blocks,
    pairs, pair_seed, map_seed, epochs, lr)."""
    fitted_on = context_vectors(params, train.inputs)  # (S, N_train, d)
    scored_on = context_vectors(params, heldout.inputs)
    base, source = training_pairs(train.labels.shape[0], settings.pairs, settings.pair_seed)
    start = initial_map(
        seeds,
        settings.map_seed,
        fitted_on.shape[-1],
        settings.dims,
        settings.hidden,
        settings.blocks,
    )
    nudged = nudged_start(start, seeds, settings.map_seed)

    def score(phi: AlignmentMap) -> tuple[torch.Tensor, torch.Tensor]:
        phi = fit(
            params,
            phi,
            fitted_on[:, base],
            fitted_on[:, source],
            train.labels[source],  # the counterfactual label: the source's
            settings.epochs,
            settings.lr,
        )
        return interchange_accuracy(params, phi, scored_on, heldout.labels)

    scores = {}
    for name, phi, moved in zip(
        MAPS, (linear_part(start), start), (linear_part(nudged), nudged), strict=True
    ):
        iia, changed = score(phi)
        scores[name] = (iia, changed, (iia - score(moved)[0]).abs())
    return scores


def nudged_start(phi: AlignmentMap, seeds: list[int], map_seed: int) -> AlignmentMap:
    """phi with every entry moved by NUDGE, up or down by a coin of the run's own
    default_rng([map_seed, run seed, 1]): the smallest change a settled map can show,
    as a last bit that crossed a rounding boundary on another machine would make."""
    draws = [np.random.default_rng([map_seed, seed, 1]) for seed in seeds]
    moved = [
        t + NUDGE * torch.tensor(np.stack([rng.choice([-1.0, 1.0], t.shape[1:]) for rng in draws]))
        for t in phi.tensors()
    ]
    return _with_tensors(phi, moved)


def join_blocks(
    blocks: list[dict[str, tuple[torch.Tensor, ...]]],
) -> dict[str, tuple[torch.Tensor, ...]]:
    """`measure_runs`' results of consecutive blocks of runs as one."""
    return {
        name: tuple(
            torch.cat(parts) for parts in zip(*(block[name] for block in blocks), strict=True)
        )
        for name in MAPS
    }


def heldout_accuracy(params: Params, heldout: Split) -> torch.Tensor:
    """Per run, the share of held-out examples with logit > 0 (beyond a tie) iff y = 1."""
    logits, _ = interface.forward(params, heldout.inputs)
    right = ties.above(logits, 0.0) == (heldout.labels > 0.5)
    return right.to(torch.float64).mean(-1)


def seed_interval(values: torch.Tensor, resamples: int, bootstrap_seed: int) -> dict[str, float]:
    """describe(values) and the 95% percentile interval of their mean over runs
    resampled with replacement (torch.Generator seeded with bootstrap_seed): each
    run's IIA is already a mean over every held-out pair."""
    generator = torch.Generator().manual_seed(bootstrap_seed)
    counts = stats.resample_counts(values.shape[0], resamples, generator)  # (B, S)
    low, high = stats.interval(counts @ stats.on_host(values) / values.shape[0])
    return {**stats.describe(values), "ci95_low": low, "ci95_high": high}


def summary(
    scores: dict[str, dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]],
    accuracy: dict[str, torch.Tensor],
    seeds: list[int],
    settings,
    resamples: int,
    bootstrap_seed: int,
) -> dict:
    """The document: per condition (trained, random) its held-out accuracy and per map
    the IIA over runs (all pairs, and pairs whose labels differ), the share of runs
    at abstraction.implements or above, the chaotic runs (an IIA that a NUDGE of the
    map's start moves) and the non-linear map's paired gain; then the same means over
    the stable runs (chaotic under neither map), which the headline reports, so that
    no chaotic run decides it."""
    document: dict = {"seeds": seeds, "implements": settings.implements, "conditions": {}}
    for condition, maps in scores.items():
        entry: dict = {
            "heldout_accuracy": seed_interval(accuracy[condition], resamples, bootstrap_seed),
            "per_seed_heldout_accuracy": accuracy[condition].tolist(),
        }
        stable = torch.ones(len(seeds), dtype=torch.bool)
        for name, (iia, changed, moved) in maps.items():
            implements = ~ties.below(iia, settings.implements)
            chaotic = ties.above(moved, 0.0)
            stable &= ~chaotic
            entry[name] = {
                "iia": seed_interval(iia, resamples, bootstrap_seed),
                "iia_changed": seed_interval(changed, resamples, bootstrap_seed),
                "share_implements": float(implements.to(torch.float64).mean()),
                "chaotic_seeds": [
                    seed for seed, bad in zip(seeds, chaotic.tolist(), strict=True) if bad
                ],
                "max_iia_moved": float(moved.max()),
                "per_seed_iia": iia.tolist(),
                "per_seed_iia_changed": changed.tolist(),
                "per_seed_iia_moved": moved.tolist(),
            }
        gain = maps["nonlinear"][0] - maps["linear"][0]
        entry["nonlinear_gain"] = seed_interval(gain, resamples, bootstrap_seed)
        entry["stable"] = stable_means(maps, stable, seeds)
        document["conditions"][condition] = entry
    return document


def stable_means(
    maps: dict[str, tuple[torch.Tensor, ...]], stable: torch.Tensor, seeds: list[int]
) -> dict:
    """The runs chaotic under neither map: their seeds, and per map their mean IIA and
    the non-linear map's mean gain (None where no run is stable)."""
    runs = int(stable.sum())

    def mean(values: torch.Tensor) -> float | None:
        return float(values[stable].mean()) if runs else None

    return {
        "seeds": [seed for seed, keep in zip(seeds, stable.tolist(), strict=True) if keep],
        **{f"iia_{name}": mean(iia) for name, (iia, *_) in maps.items()},
        "nonlinear_gain": mean(maps["nonlinear"][0] - maps["linear"][0]),
    }
