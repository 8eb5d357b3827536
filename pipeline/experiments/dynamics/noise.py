"""Is the run-to-run gap test-set noise?

Jordan 2024 ("On the Variance of Neural Network Training with respect to Test
Sets and Distributions", ICLR 2024): if the held-out examples were independent
across runs, the variance of held-out accuracy over runs would follow from each
example's accuracy rate alone. The ratio of the observed variance to that
prediction says how far the runs' examples move together (ratio 1: independent,
test-set noise; ratio N: all examples move as one).

Summers & Dinneen 2021 ("Nondeterminism and Instability in Neural Network
Optimization", ICML 2021): flipping the last bit of one initial weight is enough
to change a trained network as much as a new seed does. `flip_last_bit` makes
that perturbation and `flip_changes` counts what it changed.
"""

from __future__ import annotations

from math import nan

import torch

from pipeline.analysis.stats import describe, interval, on_host, resample_counts
from pipeline.core import ties

STORY_THRESHOLD = 0.9
# A variance of held-out accuracy below this is no variance: the smallest real one,
# one sequence of N apart in one run of S, is about 1/(N^2 S) (3e-8 for 180 sequences
# and 1000 runs), while identical runs give 0 or a last bit's noise (1e-17).
NO_VARIANCE = 1e-12


def _checked(correct: torch.Tensor) -> torch.Tensor:
    correct = on_host(correct)
    if correct.dim() != 2 or correct.shape[0] < 2:
        raise ValueError(f"correct must be (runs >= 2, examples), got {tuple(correct.shape)}")
    return correct


def _predicted(rates: torch.Tensor, runs: int) -> torch.Tensor:
    """sum_i p_i (1 - p_i) S/(S-1) / N^2 over the last dim of the (..., N) rates."""
    examples = rates.shape[-1]
    return (rates * (1 - rates)).sum(-1) * runs / (runs - 1) / examples**2


def predicted_variance(correct: torch.Tensor) -> float:
    """The variance of held-out accuracy over runs if examples were independent
    (Jordan 2024): sum_i p_i (1 - p_i) / N^2 over the (S, N) 0/1 `correct`, p_i the
    share of runs that get example i right.

    Each example's Bernoulli variance is estimated unbiased, p_i (1 - p_i) S/(S-1):
    the plug-in p_i (1 - p_i) underestimates it by the factor (S-1)/S with S runs,
    and `observed_variance` is unbiased too, so the ratio of the two is 1 in
    expectation for independent examples.
    """
    correct = _checked(correct)
    return float(_predicted(correct.mean(0), correct.shape[0]))


def observed_variance(correct: torch.Tensor) -> float:
    """The unbiased variance (correction 1) over the S runs of the per-run held-out
    accuracy of the (S, N) 0/1 `correct`."""
    correct = _checked(correct)
    return float(correct.mean(1).var(correction=1))


def variance_ratio(correct: torch.Tensor, resamples: int, generator: torch.Generator) -> dict:
    """Observed over predicted variance of held-out accuracy (Jordan 2024), with a
    95% percentile interval of the ratio from a bootstrap over runs: each resample
    draws S runs with replacement and recomputes both variances.

    The ratio is NaN where no example varies over the runs (predicted 0), and
    resamples where none varies are left out of the interval. Each resample is a
    weighting of the runs by their draw counts, so the bootstrap
    is two matmuls instead of a (resamples, S, N) gather.
    """
    correct = _checked(correct)
    runs = correct.shape[0]
    observed, predicted = observed_variance(correct), predicted_variance(correct)
    counts = resample_counts(runs, resamples, generator)  # (B, S)
    accuracy = correct.mean(1)  # (S,)
    mean = counts @ accuracy / runs  # (B,)
    spread = (counts * (accuracy[None, :] - mean[:, None]) ** 2).sum(1) / (runs - 1)
    predictions = _predicted(counts @ correct / runs, runs)
    defined = predictions > NO_VARIANCE  # a resample where no example varies has no ratio
    low, high = interval((spread / predictions)[defined]) if defined.any() else (nan, nan)
    return {
        "observed": observed,
        "predicted": predicted,
        "ratio": observed / predicted if predicted > NO_VARIANCE else nan,
        "ci95_low": low,
        "ci95_high": high,
    }


def gap_in_stds(gap: float, variance: float) -> float:
    """How many standard deviations of the difference of two independent runs,
    sqrt(2 * variance), the accuracy gap `gap` is (NaN where the runs do not vary)."""
    return gap / (2 * variance) ** 0.5 if variance > NO_VARIANCE else nan


def flip_last_bit(values: torch.Tensor, index: int) -> torch.Tensor:
    """A copy of the float64 (S, P) `values` whose column `index` has the least
    significant mantissa bit flipped in every row: a one-ulp change of one weight
    (Summers & Dinneen 2021)."""
    if values.dtype != torch.float64:
        raise ValueError(f"flip_last_bit needs float64 values, got {values.dtype}")
    flipped = values.clone()
    bits = flipped.view(torch.int64)
    bits[:, index] ^= 1
    return flipped


def flip_changes(
    before: dict[str, torch.Tensor],
    after: dict[str, torch.Tensor],
    threshold: float = STORY_THRESHOLD,
) -> dict:
    """What a last-bit flip changed per seed (Summers & Dinneen 2021).

    `before` and `after` hold per-seed "heldout_accuracy" (S,) and "argmax_hit" (S,).
    A seed's story is whether its argmax hit reaches `threshold`; a story or an
    accuracy changed where it differs beyond a tie (pipeline/core/ties.py).
    """
    hit_before, hit_after = on_host(before["argmax_hit"]), on_host(after["argmax_hit"])
    story_before = ~ties.below(hit_before, threshold)
    story_after = ~ties.below(hit_after, threshold)
    change = on_host(after["heldout_accuracy"]) - on_host(before["heldout_accuracy"])
    return {
        "share_story_changed": float((story_before != story_after).to(torch.float64).mean()),
        "share_accuracy_changed": float(ties.above(change.abs(), 0.0).to(torch.float64).mean()),
        "accuracy_change": describe(change),
        "mean_abs_accuracy_change": float(change.abs().mean()),
    }
