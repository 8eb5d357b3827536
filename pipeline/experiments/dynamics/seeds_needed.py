"""How many seeds a claim needs: the chance that a study of k seeds reaches the
verdict that all S seeds reach.

Dodge et al. 2020 ("Fine-Tuning Pretrained Language Models: Weight
Initializations, Data Orders, and Early Stopping") and Bouthillier et al. 2021
("Accounting for Variance in Machine Learning Benchmarks") show that a
conclusion drawn from a few seeds can flip with the next few; MultiBERTs
(Sellam et al. 2022) used 25 seeds and PolyPythias (van der Wal et al. 2025) 10
per size. With 1000 seeds at hand, a smaller study is a resample of them: draw
k seeds with replacement many times, apply the claim, and count how often it
agrees with the full sample.

A claim is a verdict function: (B, k, C) per-seed values of B studies of k seeds
(C columns of per-seed numbers) -> (B,) bool, whether each study reaches it.
Every threshold is compared through pipeline/core/ties.py, so float noise never
decides a verdict.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from scipy.stats import norm

from pipeline.analysis.stats import on_host
from pipeline.core import ties

Verdict = Callable[[torch.Tensor], torch.Tensor]

K_GRID = (1, 2, 5, 10, 25, 50, 100)
TARGET = 0.95

# The report's claims' thresholds.
UNLUCKY = 0.1  # a run is unlucky when under this share of seeds score below it
DISAGREE_HIT = 0.5  # mean attention hit@1 at least this ...
DISAGREE_TAU = 0.5  # ... while mean attention tau_loo is below this
WEIGHT_NOT_EFFECT = 0.5  # share of seeds with a high-weight-low-effect example
TWO_HEADS_MARGIN = 0.0  # mean paired gain of two heads over one above this


def _columns(values: torch.Tensor) -> torch.Tensor:
    """`values` as (S, C) float64 on the CPU; a 1-D tensor is one column."""
    values = on_host(values)
    return values[:, None] if values.dim() == 1 else values


def agreement_probability(
    values: torch.Tensor, verdict: Verdict, k: int, resamples: int, generator: torch.Generator
) -> float:
    """Share of `resamples` studies of k seeds, drawn with replacement from the S
    rows of `values` ((S, C), or (S,) as one column), whose verdict equals the
    verdict of all S seeds."""
    values = _columns(values)
    full = bool(verdict(values[None])[0])
    picks = torch.randint(values.shape[0], (resamples, k), generator=generator)
    studies = verdict(values[picks])
    return float((studies == full).to(torch.float64).mean())


def wilson_interval(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (Wilson 1927): unlike the
    normal interval it stays inside [0, 1] and keeps its coverage near 0 and 1,
    where agreement probabilities live."""
    if trials < 1:
        raise ValueError(f"wilson_interval needs at least one trial, got {trials}")
    z = float(norm.ppf(1 - (1 - level) / 2))
    share = successes / trials
    scale = 1 + z * z / trials
    center = (share + z * z / (2 * trials)) / scale
    half = z * (share * (1 - share) / trials + z * z / (4 * trials * trials)) ** 0.5 / scale
    return max(0.0, center - half), min(1.0, center + half)


def _reaches(probability: float, target: float) -> bool:
    """probability >= target, a tie counting as reached."""
    return not bool(ties.below(torch.tensor(probability, dtype=torch.float64), target))


def _smallest(ks: list[int], passes: list[bool]) -> int | None:
    """The smallest k from which every larger k of the grid passes too: a claim whose
    probability dips again (a single seed can land on the right verdict for the wrong
    reason) needs the k past the dip."""
    needed = None
    for k, ok in reversed(list(zip(ks, passes, strict=True))):
        if not ok:
            break
        needed = k
    return needed


def seeds_needed(
    probabilities: dict[int, float], resamples: int, target: float = TARGET
) -> dict[str, int | None]:
    """The smallest k whose agreement probability reaches `target`, with an interval
    from each probability's Monte-Carlo error (its Wilson interval over
    `resamples` studies, successes = round(p * resamples)).

    "k": the smallest k with p >= target there and at every larger k of the grid;
    "k_low": the same with each Wilson upper bound (the optimistic end); "k_high":
    with each Wilson lower bound (the cautious end). None where the largest k fails. k is
    searched only over the given grid (the keys, ascending): the answer is a grid
    point, not the exact smallest integer.
    """
    ks = sorted(probabilities)
    bounds = [wilson_interval(round(probabilities[k] * resamples), resamples) for k in ks]
    return {
        "k": _smallest(ks, [_reaches(probabilities[k], target) for k in ks]),
        "k_low": _smallest(ks, [_reaches(high, target) for _, high in bounds]),
        "k_high": _smallest(ks, [_reaches(low, target) for low, _ in bounds]),
    }


def seeds_table(
    values: torch.Tensor, verdict: Verdict, generator: torch.Generator, resamples: int
) -> dict:
    """The agreement probability at each k of K_GRID and the seeds the claim needs.

    k may exceed the S seeds at hand: a study of k seeds is drawn with replacement,
    so a large k asks how a study of that size would go if the S seeds were the
    population. "seeds" is S.
    """
    values = _columns(values)
    probability = {
        k: agreement_probability(values, verdict, k, resamples, generator) for k in K_GRID
    }
    return {
        "seeds": values.shape[0],
        "probability": probability,
        **seeds_needed(probability, resamples),
    }


def unlucky(run_accuracy: float) -> Verdict:
    """Claim: a run of held-out accuracy `run_accuracy` is unlucky, i.e. under
    UNLUCKY of the study's seeds have a held-out accuracy strictly below it (below
    beyond a tie, like pipeline.analysis.stats.share_strictly_below).

    Column 0: held-out accuracy.
    """

    def verdict(values: torch.Tensor) -> torch.Tensor:
        below = ties.below(values[..., 0], run_accuracy).to(torch.float64).mean(-1)
        return ties.below(below, UNLUCKY)

    return verdict


def metrics_disagree() -> Verdict:
    """Claim: the faithfulness metrics disagree about attention, i.e. its mean hit@1
    over the study's seeds is at least DISAGREE_HIT while its mean tau_loo is below
    DISAGREE_TAU.

    Columns: (attention hit@1, attention tau_loo).
    """

    def verdict(values: torch.Tensor) -> torch.Tensor:
        means = values.mean(-2)
        return ~ties.below(means[..., 0], DISAGREE_HIT) & ties.below(means[..., 1], DISAGREE_TAU)

    return verdict


def weight_not_effect() -> Verdict:
    """Claim: high attention weight is not high effect, i.e. at least WEIGHT_NOT_EFFECT
    of the study's seeds have at least one high-weight-low-effect example.

    Column 0: the per-seed count of high-weight-low-effect examples.
    """

    def verdict(values: torch.Tensor) -> torch.Tensor:
        some = (~ties.below(values[..., 0], 1.0)).to(torch.float64).mean(-1)
        return ~ties.below(some, WEIGHT_NOT_EFFECT)

    return verdict


def two_heads_beat_one() -> Verdict:
    """Claim: two heads beat one, i.e. the mean over the study's paired seeds of
    (two-head - one-head) held-out accuracy is above TWO_HEADS_MARGIN.

    Columns: (two-head held-out accuracy, one-head held-out accuracy), one row per
    seed pair.
    """

    def verdict(values: torch.Tensor) -> torch.Tensor:
        gain = (values[..., 0] - values[..., 1]).mean(-1)
        return ties.above(gain, TWO_HEADS_MARGIN)

    return verdict
