"""Test-set noise and last-bit flips (pipeline/experiments/dynamics/noise.py) on
hand-worked cases."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.experiments.dynamics.noise import (
    flip_changes,
    flip_last_bit,
    gap_in_stds,
    observed_variance,
    predicted_variance,
    variance_ratio,
)


def test_predicted_and_observed_variance_by_hand():
    # Runs [1 0] and [1 1]: p = (1, 0.5); p(1-p) S/(S-1) = (0, 0.5); sum / N^2 = 0.5 / 4.
    # Accuracies 0.5 and 1: mean 0.75, unbiased variance 2 * 0.25^2 / 1 = 0.125.
    one_varies = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    assert predicted_variance(one_varies) == pytest.approx(0.125, abs=1e-15)
    assert observed_variance(one_varies) == pytest.approx(0.125, abs=1e-15)
    # Runs [1 0] and [0 1]: p = (0.5, 0.5), predicted (0.5 + 0.5) / 4 = 0.25; both
    # accuracies are 0.5, observed 0: anti-correlated examples.
    opposite = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    assert predicted_variance(opposite) == pytest.approx(0.25, abs=1e-15)
    assert observed_variance(opposite) == 0.0


def test_independent_examples_give_a_ratio_near_one():
    # 4000 runs x 50 independent examples: the ratio's sampling std is about
    # sqrt(2 / 3999) = 0.022, so 0.1 is over four of them.
    generator = torch.Generator().manual_seed(0)
    rates = torch.linspace(0.1, 0.9, 50, dtype=torch.float64)
    correct = (torch.rand(4000, 50, generator=generator, dtype=torch.float64) < rates).double()
    result = variance_ratio(correct, resamples=200, generator=generator)
    assert result["ratio"] == pytest.approx(1.0, abs=0.1)
    assert result["ci95_low"] < result["ratio"] < result["ci95_high"]
    assert result["ci95_high"] - result["ci95_low"] < 0.3


def test_perfectly_correlated_examples_give_a_ratio_of_n():
    # 7 runs right on all 5 examples, 3 wrong on all: accuracy 1 or 0.
    # observed = 0.7 * 0.3 * 10/9; predicted = 5 * 0.7 * 0.3 * 10/9 / 25: ratio 5 = N,
    # in every resample that has both kinds of run (those with one kind are left out).
    correct = torch.cat([torch.ones(7, 5), torch.zeros(3, 5)]).double()
    result = variance_ratio(correct, resamples=100, generator=torch.Generator().manual_seed(0))
    assert result["observed"] == pytest.approx(0.21 * 10 / 9, abs=1e-15)
    assert result["ratio"] == pytest.approx(5.0, abs=1e-12)
    assert result["ci95_low"] == pytest.approx(5.0, abs=1e-12)
    assert result["ci95_high"] == pytest.approx(5.0, abs=1e-12)


def test_no_varying_example_has_no_ratio():
    result = variance_ratio(torch.ones(4, 3).double(), 10, torch.Generator().manual_seed(0))
    assert result["predicted"] == 0.0
    assert math.isnan(result["ratio"]) and math.isnan(result["ci95_low"])


def test_gap_in_stds():
    # variance 2e-4: the difference of two runs has std sqrt(4e-4) = 0.02.
    assert gap_in_stds(0.02, 2e-4) == pytest.approx(1.0, abs=1e-12)
    assert gap_in_stds(0.06, 2e-4) == pytest.approx(3.0, abs=1e-12)


def test_flip_last_bit_moves_one_column_by_one_ulp():
    values = torch.tensor(
        [[1.0, 0.3, 7.0], [-2.5, 0.1, 8.0], [0.0, 1.7, 9.0], [0.1, -3.3, 1.0]],
        dtype=torch.float64,
    )
    original = values.clone()
    flipped = flip_last_bit(values, 1)
    assert torch.equal(values.view(torch.int64), original.view(torch.int64))  # a copy
    up = torch.nextafter(values[:, 1], torch.tensor(math.inf, dtype=torch.float64))
    down = torch.nextafter(values[:, 1], torch.tensor(-math.inf, dtype=torch.float64))
    assert bool(((flipped[:, 1] == up) | (flipped[:, 1] == down)).all())
    assert not bool((flipped[:, 1] == values[:, 1]).any())
    others = [0, 2]
    assert torch.equal(flipped[:, others].view(torch.int64), values[:, others].view(torch.int64))
    # 1.0 has an even last bit: the flip raises it to the next double, 1 + 2^-52.
    assert float(flip_last_bit(values, 0)[0, 0]) == 1.0 + 2.0**-52
    twice = flip_last_bit(flipped, 1)
    assert torch.equal(twice.view(torch.int64), values.view(torch.int64))


def test_flip_last_bit_refuses_float32():
    with pytest.raises(ValueError, match="float64"):
        flip_last_bit(torch.zeros(2, 2), 0)


def test_flip_changes_by_hand():
    # Stories (hit >= 0.9): before T F T(0.9) F; after F F T(0.9 - 1e-15 ties 0.9) T.
    # Seeds 0 and 3 change: 2/4. Accuracy changes 0, +0.05, 1e-16 (a tie), -0.05:
    # two of four changed, mean |change| 0.025, mean change 0.
    before = {
        "argmax_hit": torch.tensor([0.95, 0.85, 0.9, 0.5], dtype=torch.float64),
        "heldout_accuracy": torch.tensor([0.8, 0.7, 0.6, 0.9], dtype=torch.float64),
    }
    after = {
        "argmax_hit": torch.tensor([0.85, 0.85, 0.9 - 1e-15, 0.95], dtype=torch.float64),
        "heldout_accuracy": torch.tensor([0.8, 0.75, 0.6 + 1e-16, 0.85], dtype=torch.float64),
    }
    result = flip_changes(before, after)
    assert result["share_story_changed"] == 0.5
    assert result["share_accuracy_changed"] == 0.5
    assert result["mean_abs_accuracy_change"] == pytest.approx(0.025, abs=1e-12)
    assert result["accuracy_change"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert result["accuracy_change"]["min"] == pytest.approx(-0.05, abs=1e-12)
    assert result["accuracy_change"]["max"] == pytest.approx(0.05, abs=1e-12)
