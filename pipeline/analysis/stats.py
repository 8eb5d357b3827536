"""How a per-seed number spreads over many seeds: pure functions over tensors.

Used by the seed study: distribution statistics, the multi-bootstrap interval
of a mean (Sellam et al. 2022, MultiBERTs), and the exact pair-gap counts.
"""

from __future__ import annotations

import torch

from pipeline.core import ties

QUANTILES = {"median": 0.5, "q05": 0.05, "q95": 0.95}
# Accuracies are multiples of 1/N: equal gaps may differ by rounding (pipeline/core/ties.py).
GAP_TOLERANCE = ties.tolerance(1.0)


def on_host(values: torch.Tensor) -> torch.Tensor:
    """`values` on the CPU in float64. Every summary here is computed there, whatever
    device trained the runs: a few numbers per seed, the bootstrap's counts come
    from a CPU generator, and the CPU's reductions give every machine's bytes."""
    return values.detach().to("cpu", torch.float64)


def describe(values: torch.Tensor) -> dict[str, float]:
    """mean, population std, min, max, median, q05, q95 of a 1-D tensor.

    Quantiles interpolate linearly between order statistics (numpy's default).
    """
    values = on_host(values)
    numbers = {
        "mean": values.mean(),
        "std": values.std(correction=0),
        "min": values.min(),
        "max": values.max(),
    }
    levels = torch.tensor(list(QUANTILES.values()), dtype=values.dtype)
    numbers.update(zip(QUANTILES, torch.quantile(values, levels), strict=True))
    return {name: float(value) for name, value in numbers.items()}


def resample_counts(size: int, resamples: int, generator: torch.Generator) -> torch.Tensor:
    """(resamples, size) float64: how often each item is drawn in each bootstrap
    resample of `size` items with replacement."""
    picks = torch.randint(size, (resamples, size), generator=generator)
    counts = torch.zeros(resamples, size, dtype=torch.float64)
    return counts.scatter_add_(1, picks, torch.ones_like(counts))


def multi_bootstrap_means(
    values: torch.Tensor, seed_counts: torch.Tensor, example_counts: torch.Tensor
) -> torch.Tensor:
    """The mean of `values` (S seeds, N examples) in each joint resample: (B,).

    Resample b draws seeds with multiplicities seed_counts[b] (B, S) and,
    independently, examples with multiplicities example_counts[b] (B, N); its
    statistic is the mean over every (drawn seed, drawn example) pair. One
    matmul per axis instead of a Python loop over resamples.
    """
    seeds, examples = values.shape
    per_seed = on_host(values) @ example_counts.T  # (S, B)
    return (per_seed * seed_counts.T).sum(0) / (seeds * examples)


def interval(statistics: torch.Tensor, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap statistics."""
    tail = (1 - level) / 2
    statistics = on_host(statistics)
    bounds = torch.quantile(statistics, torch.tensor([tail, 1 - tail], dtype=statistics.dtype))
    return float(bounds[0]), float(bounds[1])


def pair_gap(accuracy: torch.Tensor, observed: float) -> dict[str, float]:
    """Over all unordered pairs of distinct seeds: the mean |acc_i - acc_j| and the
    share with |acc_i - acc_j| >= observed (within GAP_TOLERANCE).

    Exact, by sorting and counting in O(N log N): with sorted values a_0 <= ... <=
    a_{n-1}, the gaps to a_j from below sum to j a_j - (a_0 + ... + a_{j-1}), and
    the partners far enough below a_j are a searchsorted away.
    """
    ordered, _ = torch.sort(on_host(accuracy))
    count = ordered.numel()
    below = torch.arange(count, dtype=torch.float64)
    gap_sum = (below * ordered - (ordered.cumsum(0) - ordered)).sum()
    reach = torch.searchsorted(ordered, ordered - observed + GAP_TOLERANCE, right=True)
    far_enough = torch.minimum(reach, torch.arange(count)).sum()
    pairs = count * (count - 1) // 2
    return {
        "observed": float(observed),
        "mean": float(gap_sum) / pairs,
        "p_at_least_observed": int(far_enough) / pairs,
    }


def pair_gap_counts(accuracy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distribution of |acc_i - acc_j| over all unordered pairs of distinct
    seeds, as (gaps, pair counts), from the counts of each distinct accuracy."""
    values, counts = torch.unique(on_host(accuracy), return_counts=True)
    counts = counts.to(torch.float64)
    gaps = (values[:, None] - values[None, :]).abs()
    pairs = torch.outer(counts, counts).triu(1)
    pairs.diagonal().copy_(counts * (counts - 1) / 2)
    keys, inverse = torch.unique(gaps.round(decimals=9), return_inverse=True)
    totals = torch.zeros_like(keys).scatter_add_(0, inverse.reshape(-1), pairs.reshape(-1))
    return keys, totals


def share_strictly_below(values: torch.Tensor, value: float) -> float:
    """Share of `values` strictly below `value` (the lesson seeds' percentile)."""
    return float((on_host(values) < value - GAP_TOLERANCE).to(torch.float64).mean())
