"""pipeline.analysis.stats: distribution numbers, the multi-bootstrap and exact pair gaps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from pipeline.analysis import stats


def test_describe_matches_numpy():
    values = torch.rand(101, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    got = stats.describe(values)
    array = values.numpy()
    assert got["mean"] == pytest.approx(array.mean(), abs=1e-15)
    assert got["std"] == pytest.approx(array.std(ddof=0), abs=1e-15)  # population std
    assert (got["min"], got["max"]) == (array.min(), array.max())
    for name, level in stats.QUANTILES.items():
        assert got[name] == pytest.approx(np.quantile(array, level), abs=1e-15), name


def brute_force_pair_gap(accuracy: list[float], observed: float) -> tuple[float, float]:
    gaps = [abs(a - b) for a, b in itertools.combinations(accuracy, 2)]
    return sum(gaps) / len(gaps), sum(g >= observed - 1e-9 for g in gaps) / len(gaps)


@pytest.mark.parametrize("observed_index", [0, 1, 2])
def test_pair_gap_matches_brute_force(observed_index):
    generator = torch.Generator().manual_seed(observed_index)
    # Multiples of 1/180 with many ties, as held-out accuracies are.
    accuracy = torch.randint(100, 181, (60,), generator=generator).to(torch.float64) / 180
    observed = [0.0, 19 / 180, (180 - 161) / 180 + 1 / 180][observed_index]
    got = stats.pair_gap(accuracy, observed)
    mean, share = brute_force_pair_gap(accuracy.tolist(), observed)
    assert got["mean"] == pytest.approx(mean, rel=1e-12)
    assert got["p_at_least_observed"] == share
    assert got["observed"] == observed


def test_pair_gap_counts_equal_differences_as_equal():
    # 0.9944 - 0.8889 computed two ways differs in the last bit; both count.
    accuracy = torch.tensor([160 / 180, 179 / 180, 141 / 180, 160 / 180], dtype=torch.float64)
    observed = 179 / 180 - 160 / 180
    got = stats.pair_gap(accuracy, observed)
    assert got["p_at_least_observed"] == brute_force_pair_gap(accuracy.tolist(), observed)[1]
    assert got["p_at_least_observed"] == 5 / 6  # every pair but the tie 160, 160


def test_pair_gap_distribution_adds_up():
    accuracy = torch.tensor([0.5, 0.5, 0.75, 1.0, 1.0, 1.0], dtype=torch.float64)
    gaps, pairs = stats.pair_gap_counts(accuracy)
    assert gaps.tolist() == [0.0, 0.25, 0.5]
    assert pairs.tolist() == [1 + 3, 2 + 3, 6]  # ties, then 0.25 apart, then 0.5 apart
    brute = [abs(a - b) for a, b in itertools.combinations(accuracy.tolist(), 2)]
    assert sum(pairs.tolist()) == len(brute)


def test_multi_bootstrap_means_match_an_explicit_resample():
    generator = torch.Generator().manual_seed(0)
    values = torch.rand(5, 7, generator=generator, dtype=torch.float64)
    seed_counts = stats.resample_counts(5, 4, generator)
    example_counts = stats.resample_counts(7, 4, generator)
    assert seed_counts.sum(1).tolist() == [5.0] * 4 and example_counts.sum(1).tolist() == [7.0] * 4
    got = stats.multi_bootstrap_means(values, seed_counts, example_counts)
    for b in range(4):
        seeds = torch.repeat_interleave(torch.arange(5), seed_counts[b].long())
        examples = torch.repeat_interleave(torch.arange(7), example_counts[b].long())
        expected = values[seeds][:, examples].mean()
        assert float(got[b]) == pytest.approx(float(expected), abs=1e-14)


def bootstrap_interval(values: torch.Tensor, seed: int) -> tuple[float, float]:
    generator = torch.Generator().manual_seed(seed)
    seed_counts = stats.resample_counts(values.shape[0], 1000, generator)
    example_counts = stats.resample_counts(values.shape[1], 1000, generator)
    return stats.interval(stats.multi_bootstrap_means(values, seed_counts, example_counts))


def test_bootstrap_is_deterministic_per_seed():
    values = torch.rand(50, 30, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert bootstrap_interval(values, 7) == bootstrap_interval(values, 7)
    assert bootstrap_interval(values, 7) != bootstrap_interval(values, 8)


def test_bootstrap_interval_covers_a_known_mean():
    """Seeds with their own offsets around 0.7 and noisy examples: the true mean is
    0.7, and a 95% interval from one sample should contain it and the sample mean."""
    generator = torch.Generator().manual_seed(11)
    seed_effect = 0.05 * torch.randn(300, 1, generator=generator, dtype=torch.float64)
    example_effect = 0.05 * torch.randn(1, 200, generator=generator, dtype=torch.float64)
    noise = 0.1 * torch.randn(300, 200, generator=generator, dtype=torch.float64)
    values = 0.7 + seed_effect + example_effect + noise
    low, high = bootstrap_interval(values, 0)
    assert low < float(values.mean()) < high
    assert low < 0.7 < high
    # Both sources of variance count: wider than a seeds-only interval would be.
    seeds_only = 1.96 * float(values.mean(1).std()) / 300**0.5
    assert high - low > 2 * seeds_only


def test_share_strictly_below_ignores_rounding_ties():
    values = torch.tensor([0.5, 0.6, 0.7 - 1e-15, 0.7, 0.9], dtype=torch.float64)
    assert stats.share_strictly_below(values, 0.7) == 0.4
