"""How many seeds a claim needs (pipeline/experiments/dynamics/seeds_needed.py) on
hand-worked cases."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import binomtest

from pipeline.experiments.dynamics.seeds_needed import (
    K_GRID,
    agreement_probability,
    metrics_disagree,
    seeds_needed,
    seeds_table,
    two_heads_beat_one,
    unlucky,
    weight_not_effect,
    wilson_interval,
)


def studies(*rows: list) -> torch.Tensor:
    """(B, k, C) float64 from B studies of k seeds with C columns each."""
    return torch.tensor(rows, dtype=torch.float64)


def mean_at_least_half(values: torch.Tensor) -> torch.Tensor:
    return values[..., 0].mean(-1) >= 0.5


def test_a_claim_every_seed_reaches_agrees_at_every_k():
    # Every seed scores 0.9 > 0.5, so no study's seed is below the run: share 0 < 0.1,
    # the full sample's verdict and every study's.
    accuracy = torch.full((7,), 0.9, dtype=torch.float64)
    table = seeds_table(accuracy, unlucky(0.5), torch.Generator().manual_seed(0), resamples=50)
    assert table["seeds"] == 7
    assert table["probability"] == {k: 1.0 for k in K_GRID}
    # With 50 of 50 the Wilson bounds are (0.929, 1): the lower bound misses 0.95 at
    # every k, so the cautious end is None.
    assert (table["k"], table["k_low"], table["k_high"]) == (1, 1, None)


def test_two_seeds_zero_and_one():
    # Population [0, 1]: mean 0.5 >= 0.5, so the full verdict is True.
    # k = 1: the study is one seed, mean 0 or 1, True with probability 1/2.
    # k = 2: draws (0,0) (0,1) (1,0) (1,1), means 0 .5 .5 1, True with probability 3/4.
    # 20000 resamples: Monte-Carlo std sqrt(1/4 / 20000) = 0.0035, tolerance 0.02.
    values = torch.tensor([0.0, 1.0], dtype=torch.float64)
    generator = torch.Generator().manual_seed(1)
    one = agreement_probability(values, mean_at_least_half, 1, 20000, generator)
    two = agreement_probability(values, mean_at_least_half, 2, 20000, generator)
    assert one == pytest.approx(0.5, abs=0.02)
    assert two == pytest.approx(0.75, abs=0.02)


def test_wilson_interval_of_8_of_10():
    # z = 1.96: centre (0.8 + 0.192) / 1.384 = 0.7167, half 1.96 * 0.1600 / 1.384 = 0.2266.
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


@pytest.mark.parametrize(("successes", "trials"), [(0, 10), (3, 7), (95, 100), (100, 100)])
def test_wilson_interval_matches_scipy(successes, trials):
    expected = binomtest(successes, trials).proportion_ci(0.95, method="wilson")
    low, high = wilson_interval(successes, trials)
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


def test_seeds_needed_on_a_hand_grid():
    # Wilson bounds over 100 studies (z = 1.96):
    #   k=2  94/100: (0.875, 0.972)  upper reaches 0.95 -> k_low = 2
    #   k=5  95/100: (0.888, 0.978)  p = 0.95 reaches 0.95 (a tie counts) -> k = 5
    #   k=10 99/100: (0.946, 0.998)  lower misses 0.95
    #   k=25 100/100: (0.963, 1.0)   lower reaches 0.95 -> k_high = 25
    probabilities = {25: 1.0, 1: 0.5, 2: 0.94, 5: 0.95, 10: 0.99}
    assert seeds_needed(probabilities, resamples=100) == {"k": 5, "k_low": 2, "k_high": 25}


def test_seeds_needed_looks_past_a_dip():
    # k=1 reaches 0.95 by luck, k=2 and k=5 fall below, k=10 on stay above: k is 10.
    probabilities = {1: 0.97, 2: 0.9, 5: 0.7, 10: 0.96, 25: 0.99}
    assert seeds_needed(probabilities, resamples=100_000)["k"] == 10


def test_seeds_needed_none_when_no_k_reaches_the_target():
    assert seeds_needed({1: 0.2, 2: 0.3}, resamples=100) == {
        "k": None,
        "k_low": None,
        "k_high": None,
    }


def test_unlucky():
    # Run at 0.8. Study 1: 0.7 is strictly below, 1/4 = 0.25 not below 0.1: False.
    # Study 2: 0.8 - 1e-15 ties 0.8, so no seed is below: share 0 < 0.1: True.
    values = studies([[0.7], [0.8], [0.9], [0.95]], [[0.8], [0.85], [0.9], [0.8 - 1e-15]])
    assert unlucky(0.8)(values).tolist() == [False, True]


def test_metrics_disagree():
    # Columns (hit@1, tau_loo). Study 1: hit mean 0.5 (at least 0.5), tau mean 0.3: True.
    # Study 2: hit mean 0.4: False. Study 3: tau mean 0.5 is not below 0.5: False.
    values = studies(
        [[0.6, 0.2], [0.4, 0.4]],
        [[0.4, 0.1], [0.4, 0.1]],
        [[1.0, 0.5], [1.0, 0.5]],
    )
    assert metrics_disagree()(values).tolist() == [True, False, False]


def test_weight_not_effect():
    # Study 1: counts 0 1 2 0, two of four seeds have one: 0.5 >= 0.5: True.
    # Study 2: counts 0 0 3 0, one of four: 0.25: False.
    values = studies([[0.0], [1.0], [2.0], [0.0]], [[0.0], [0.0], [3.0], [0.0]])
    assert weight_not_effect()(values).tolist() == [True, False]


def test_two_heads_beat_one():
    # Study 1: gains 0.9 - 0.8 and 0.7 - 0.8, mean -5e-17 in floats: a tie with 0, not above.
    # Study 2: gains 0.1 and -0.05, mean 0.025 > 0: True.
    values = studies([[0.9, 0.8], [0.7, 0.8]], [[0.9, 0.8], [0.75, 0.8]])
    assert two_heads_beat_one()(values).tolist() == [False, True]
