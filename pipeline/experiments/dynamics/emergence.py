"""When the mechanism emerges over training, seed by seed: pure functions over tensors.

A run's rationale (hit@1) and its accuracy are read at every epoch; these
functions say when each settles, which settles first, how the settling epochs
spread over seeds, and how well a per-seed score separates two groups of seeds
(the area under the ROC curve), with bootstrap intervals over seeds.
"""

from __future__ import annotations

import torch
from scipy.stats import rankdata

from pipeline.analysis import stats
from pipeline.core import ties

NEVER = -1
# Scores are rounded to this many decimals before ranking: the last bits of a float
# never decide a count (pipeline/core/ties.py), so scores that differ only by float
# noise tie and count one half.
SCORE_DECIMALS = 12


def settled_epoch(values: torch.Tensor, threshold: float) -> torch.Tensor:
    """(S,) int64: per seed (column of `values`, (E, S), row e = epoch e), the first
    epoch from which the value stays at or above `threshold` (within the tie
    tolerance) to the last epoch; NEVER (-1) where the last epoch is below it.

    A value that dips below after first reaching the threshold has not settled,
    so the epoch is one past the last dip."""
    reached = ~ties.below(stats.on_host(values), threshold)
    epochs = reached.shape[0]
    # Trailing run of reached epochs: a cumulative product from the last epoch back.
    trailing = reached.flip(0).to(torch.int64).cumprod(0).sum(0)
    return torch.where(trailing > 0, epochs - trailing, torch.full_like(trailing, NEVER))


def never_share(epochs: torch.Tensor) -> float:
    """Share of seeds whose settled epoch is NEVER."""
    return float((epochs == NEVER).to(torch.float64).mean())


def phase_order(rationale: torch.Tensor, accuracy: torch.Tensor) -> dict[str, int]:
    """Over seeds where both the rationale and the accuracy settle ((S,) epochs
    from `settled_epoch`): how many settle rationale first, together, or accuracy
    first, and how many such seeds there are."""
    both = (rationale != NEVER) & (accuracy != NEVER)
    rationale, accuracy = rationale[both], accuracy[both]
    return {
        "rationale_first": int((rationale < accuracy).sum()),
        "together": int((rationale == accuracy).sum()),
        "accuracy_first": int((rationale > accuracy).sum()),
        "seeds": int(both.sum()),
    }


def median_interval(
    values: torch.Tensor, resamples: int, generator: torch.Generator, level: float = 0.95
) -> tuple[float, float, float]:
    """(median, low, high) of a 1-D tensor: the median interpolates linearly like
    `stats.describe`, the interval is the percentile bootstrap of the median over
    `resamples` draws with replacement."""
    values = stats.on_host(values)
    if values.numel() == 0:
        raise ValueError("median_interval needs at least one value")
    picks = torch.randint(values.numel(), (resamples, values.numel()), generator=generator)
    medians = torch.quantile(values[picks], 0.5, dim=1)
    low, high = stats.interval(medians, level)
    return float(torch.quantile(values, 0.5)), low, high


def _rounded(scores: torch.Tensor) -> torch.Tensor:
    """Scores on the host, rounded so that float noise ties (SCORE_DECIMALS)."""
    return torch.round(stats.on_host(scores), decimals=SCORE_DECIMALS)


def _auc_rows(scores: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """(B,) AUC of each row of (B, S) rounded scores and labels; NaN where a row
    lacks a class. Mann-Whitney: the positives' rank sum less its minimum, over the
    number of (positive, negative) pairs; average ranks make a tie count one half."""
    # In integers: average ranks are halves, so twice them are whole, and every count
    # and sum is exact on any machine; one division gives the area.
    twice_ranks = torch.from_numpy(2 * rankdata(scores.numpy(), axis=1)).round().to(torch.int64)
    positive = positive.to(torch.int64)
    count = positive.sum(1)
    pairs = count * (scores.shape[1] - count)
    twice_wins = (twice_ranks * positive).sum(1) - count * (count + 1)
    areas = twice_wins.to(torch.float64) / (2 * pairs).to(torch.float64)
    return torch.where(pairs > 0, areas, torch.full_like(areas, float("nan")))


def auc(scores: torch.Tensor, positive: torch.Tensor) -> float:
    """Area under the ROC curve of `scores` (S,) for the labels `positive` (S,):
    the probability that a random positive scores above a random negative, ties
    counting one half. NaN if either class is empty."""
    return float(_auc_rows(_rounded(scores)[None], positive.to("cpu", torch.bool)[None])[0])


def auc_interval(
    scores: torch.Tensor,
    positive: torch.Tensor,
    resamples: int,
    generator: torch.Generator,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """(auc, low, high): the percentile bootstrap of the AUC over seeds drawn with
    replacement. Resamples that lack a class have no AUC and are left out; NaN
    bounds if none has both."""
    scores, positive = _rounded(scores), positive.to("cpu", torch.bool)
    picks = torch.randint(scores.numel(), (resamples, scores.numel()), generator=generator)
    areas = _auc_rows(scores[picks], positive[picks])
    areas = areas[~areas.isnan()]
    point = float(_auc_rows(scores[None], positive[None])[0])
    if areas.numel() == 0:
        return point, float("nan"), float("nan")
    low, high = stats.interval(areas, level)
    return point, low, high
