"""The mechanism over training (pipeline/experiments/dynamics/emergence.py) on hand-worked cases."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.experiments.dynamics.emergence import (
    auc,
    auc_interval,
    median_interval,
    never_share,
    phase_order,
    settled_epoch,
)


def columns(*seeds: list[float]) -> torch.Tensor:
    """(E, S) float64 from one list of epochs per seed."""
    return torch.tensor(seeds, dtype=torch.float64).T


def test_a_seed_settles_after_its_last_dip_and_never_if_it_ends_below():
    # Seed 0 dips to 0.5 at epoch 2, so it settles at 3; seed 1 is above from epoch 0;
    # seed 2 ends at 0.2, so it never settles.
    values = columns(
        [0.1, 0.95, 0.5, 0.92, 0.99], [0.95, 0.95, 0.95, 0.95, 0.95], [0.95] * 4 + [0.2]
    )
    epochs = settled_epoch(values, 0.9)
    assert epochs.dtype == torch.int64
    assert epochs.tolist() == [3, 0, -1]
    assert settled_epoch(columns([0.95, 0.95]), 0.9).tolist() == [0]
    assert settled_epoch(columns([0.95, 0.2]), 0.9).tolist() == [-1]


def test_a_value_within_float_noise_of_the_threshold_reaches_it():
    # 0.9 - 1e-15 is 0.9 up to noise: it reaches 0.9 at epoch 1; 0.9 - 1e-6 does not.
    values = columns([0.5, 0.9 - 1e-15, 0.9], [0.5, 0.9, 0.9 - 1e-6])
    assert settled_epoch(values, 0.9).tolist() == [1, -1]


def test_never_share_counts_the_seeds_that_never_settle():
    assert never_share(torch.tensor([3, -1, 0, -1])) == 0.5
    assert never_share(torch.tensor([0, 1])) == 0.0


def test_phase_order_counts_the_seeds_where_both_settle():
    # Seed 0: rationale 2 < accuracy 5; seed 1: 4 == 4; seed 2: 6 > 3; seed 3: the
    # rationale never settles, so it is left out.
    rationale = torch.tensor([2, 4, 6, -1])
    accuracy = torch.tensor([5, 4, 3, 1])
    assert phase_order(rationale, accuracy) == {
        "rationale_first": 1,
        "together": 1,
        "accuracy_first": 1,
        "seeds": 3,
    }


def test_median_interval_holds_the_median_and_repeats_with_its_seed():
    values = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    median, low, high = median_interval(values, 200, torch.Generator().manual_seed(0))
    assert median == 2.5  # halfway between the middle two
    assert 1.0 <= low <= median <= high <= 4.0
    again = median_interval(values, 200, torch.Generator().manual_seed(0))
    assert again == (median, low, high)


def test_median_interval_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        median_interval(torch.tensor([], dtype=torch.float64), 10, torch.Generator().manual_seed(0))


def labels(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool)


def test_auc_of_a_perfect_and_a_reversed_separation():
    scores = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    assert auc(scores, labels(0, 0, 1, 1)) == 1.0
    assert auc(scores, labels(1, 1, 0, 0)) == 0.0


def test_auc_by_hand():
    # Positives 0.35 and 0.8 against negatives 0.1 and 0.4: 0.35 beats 0.1 only,
    # 0.8 beats both, so 3 of 4 pairs.
    scores = torch.tensor([0.1, 0.4, 0.35, 0.8], dtype=torch.float64)
    assert auc(scores, labels(0, 0, 1, 1)) == 0.75
    # Positives 0.4 and 0.8 against negatives 0.1 and 0.4: 0.4 beats 0.1 and ties
    # 0.4 (one half), 0.8 beats both, so 3.5 of 4 pairs.
    scores = torch.tensor([0.1, 0.4, 0.4, 0.8], dtype=torch.float64)
    assert auc(scores, labels(0, 0, 1, 1)) == 0.875
    # The same, with the tie only up to float noise: still a tie.
    scores = torch.tensor([0.1, 0.4, 0.4 + 1e-15, 0.8], dtype=torch.float64)
    assert auc(scores, labels(0, 0, 1, 1)) == 0.875


def test_auc_of_all_tied_is_one_half_and_of_one_class_is_nan():
    scores = torch.full((5,), 0.3, dtype=torch.float64)
    assert auc(scores, labels(1, 0, 1, 0, 0)) == 0.5
    assert math.isnan(auc(scores, labels(1, 1, 1, 1, 1)))
    assert math.isnan(auc(scores, labels(0, 0, 0, 0, 0)))


def test_auc_matches_the_count_over_every_pair():
    generator = torch.Generator().manual_seed(7)
    # Scores on a coarse grid so that many pairs tie.
    scores = torch.randint(10, (40,), generator=generator).to(torch.float64) / 10
    positive = torch.rand(40, generator=generator) < 0.4
    wins = 0.0
    for p in scores[positive].tolist():
        for n in scores[~positive].tolist():
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    pairs = int(positive.sum()) * int((~positive).sum())
    assert auc(scores, positive) == pytest.approx(wins / pairs, abs=1e-15)


def test_auc_interval_holds_the_auc_and_repeats_with_its_seed():
    scores = torch.tensor([0.1, 0.4, 0.35, 0.8, 0.2, 0.6, 0.5, 0.9], dtype=torch.float64)
    positive = labels(0, 0, 1, 1, 0, 1, 0, 1)
    area, low, high = auc_interval(scores, positive, 300, torch.Generator().manual_seed(0))
    assert area == auc(scores, positive)
    assert 0.0 <= low <= area <= high <= 1.0
    again = auc_interval(scores, positive, 300, torch.Generator().manual_seed(0))
    assert again == (area, low, high)


def test_auc_interval_without_both_classes_has_nan_bounds():
    scores = torch.tensor([0.1, 0.4], dtype=torch.float64)
    area, low, high = auc_interval(scores, labels(1, 1), 50, torch.Generator().manual_seed(0))
    assert math.isnan(area) and math.isnan(low) and math.isnan(high)
