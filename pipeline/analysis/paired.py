"""Paired comparisons of two explainers on the same seeds and examples, with intervals.

The definition is MultiBERTs' paired multi-bootstrap (Sellam et al., "The MultiBERTs:
BERT Reproductions for Robustness Analysis", ICLR 2022; `multibootstrap.py`'s
`multibootstrap(..., paired_seeds=True)` and `report_ci`):

- every resample draws seeds with replacement, the same seeds for both sides, and
  held-out examples with replacement, the same examples for both;
- a side's statistic is the mean over the drawn seeds of its mean over the drawn
  examples (a seed drawn twice counts twice, a macro-average over seeds);
- the difference's interval is the 2.5% and 97.5% quantiles of the resampled
  differences, and its p-value the share of resamples on which the first side is
  not better (report_ci's `mean(deltas <= 0)`, oriented by the metric's better
  direction).

Reported beside it: the observed difference (the difference of the two means the
study table shows) and the share of seeds on which each side has the better run
mean. A per-example value that is nan (tau_b where a score vector is constant) is
left out of its seed's mean, as the study table leaves it out.
"""

from __future__ import annotations

import torch

from pipeline.analysis import stats
from pipeline.core import ties


def seed_means(values: torch.Tensor, example_counts: torch.Tensor) -> torch.Tensor:
    """Each seed's mean over the drawn examples of each resample, nan-aware: values
    (S, N), example_counts (B, N) -> (S, B) (nan where a resample drew none of the
    seed's valid examples)."""
    valid = ~values.isnan()
    totals = torch.where(valid, values, 0.0).to(torch.float64) @ example_counts.T
    drawn = valid.to(torch.float64) @ example_counts.T
    return totals / drawn


def resampled_means(
    values: torch.Tensor, seed_counts: torch.Tensor, example_counts: torch.Tensor
) -> torch.Tensor:
    """One side's statistic in each joint resample: (S, N) -> (B,), the mean over the
    drawn seeds (seed_counts (B, S)) of each seed's mean over the drawn examples."""
    per_seed = seed_means(values, example_counts)  # (S, B)
    weights = seed_counts.T * per_seed.isfinite()
    return (per_seed.nan_to_num() * weights).sum(0) / weights.sum(0)


def run_means(values: torch.Tensor) -> torch.Tensor:
    """Each seed's mean over its examples, nan left out: (S, N) -> (S,)."""
    return values.to(torch.float64).nanmean(-1)


def compare(
    first: torch.Tensor,
    second: torch.Tensor,
    resampled_first: torch.Tensor,
    resampled_second: torch.Tensor,
    higher_is_better: bool,
) -> dict[str, float]:
    """first - second, per-example values (S, N) of each side and their resampled
    statistics (B,): the observed difference of the means, its 95% interval, the
    p-value that the first is no better, and each side's share of seeds won."""
    deltas = resampled_first - resampled_second
    sign = 1.0 if higher_is_better else -1.0
    low, high = stats.interval(deltas)
    per_seed = sign * (run_means(first) - run_means(second))  # > 0: first better
    return {
        "difference": float(run_means(first).mean() - run_means(second).mean()),
        "ci95_low": low,
        "ci95_high": high,
        "p": float((~ties.above(sign * deltas, 0.0)).to(torch.float64).mean()),
        "share_first_better": float(ties.above(per_seed, 0.0).to(torch.float64).mean()),
        "share_second_better": float(ties.below(per_seed, 0.0).to(torch.float64).mean()),
    }


def pair_key(first: str, second: str) -> str:
    return f"{first} vs {second}"


def paired_comparisons(
    table: dict[str, dict[str, torch.Tensor]],
    pairs: dict[str, list[tuple[str, str]]],
    higher: dict[str, bool],
    resamples: int,
    bootstrap_seed: int,
) -> dict[str, dict[str, dict[str, float]]]:
    """{metric: {"<a> vs <b>": compare(a, b)}} for each pair (a, b) of `pairs[metric]`,
    from per-example values {row: {metric: (S, N)}}.

    One draw serves every metric and pair: seeds (B, S), then examples (B, N), from
    torch.Generator(bootstrap_seed).
    """
    first_row = next(iter(table.values()))
    runs, examples = next(iter(first_row.values())).shape
    generator = torch.Generator().manual_seed(bootstrap_seed)
    seed_counts = stats.resample_counts(runs, resamples, generator)
    example_counts = stats.resample_counts(examples, resamples, generator)
    document: dict[str, dict[str, dict[str, float]]] = {}
    for metric, metric_pairs in pairs.items():
        rows = dict.fromkeys(row for pair in metric_pairs for row in pair)
        resampled = {
            row: resampled_means(table[row][metric].cpu(), seed_counts, example_counts)
            for row in rows
        }
        document[metric] = {
            pair_key(a, b): compare(
                table[a][metric].cpu(),
                table[b][metric].cpu(),
                resampled[a],
                resampled[b],
                higher[metric],
            )
            for a, b in metric_pairs
        }
    return document
