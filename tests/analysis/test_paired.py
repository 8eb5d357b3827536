"""pipeline.analysis.paired: MultiBERTs' paired multi-bootstrap of two explainers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline.analysis import paired, stats


def counts_from_picks(picks: np.ndarray, size: int) -> torch.Tensor:
    """(B, size) multiplicities from explicit draws (B, size) of indices."""
    return torch.from_numpy(np.stack([np.bincount(row, minlength=size) for row in picks])).to(
        torch.float64
    )


def multibootstrap_loop(values: np.ndarray, seed_picks: np.ndarray, example_picks: np.ndarray):
    """multibootstrap.py's statistic, literally: per resample, the mean over the drawn
    seeds (with repeats) of each seed's mean over the drawn examples (nan left out)."""
    return np.array(
        [
            np.mean([np.nanmean(values[seed, examples]) for seed in seeds])
            for seeds, examples in zip(seed_picks, example_picks, strict=True)
        ]
    )


def test_resampled_means_are_the_literal_multibootstrap_with_nan_examples_left_out():
    rng = np.random.default_rng(0)
    values = rng.random((7, 11))
    values[rng.random(values.shape) < 0.15] = np.nan  # tau_b's nan examples
    seed_picks = rng.integers(0, 7, (40, 7))
    example_picks = rng.integers(0, 11, (40, 11))
    got = paired.resampled_means(
        torch.from_numpy(values),
        counts_from_picks(seed_picks, 7),
        counts_from_picks(example_picks, 11),
    )
    np.testing.assert_allclose(
        got.numpy(), multibootstrap_loop(values, seed_picks, example_picks), rtol=1e-12
    )


def test_without_nan_it_is_the_study_s_multi_bootstrap_mean():
    generator = torch.Generator().manual_seed(1)
    values = torch.rand(9, 13, generator=generator, dtype=torch.float64)
    seeds = stats.resample_counts(9, 50, generator)
    examples = stats.resample_counts(13, 50, generator)
    torch.testing.assert_close(
        paired.resampled_means(values, seeds, examples),
        stats.multi_bootstrap_means(values, seeds, examples),
        rtol=1e-12,
        atol=0,
    )


def test_a_side_one_better_everywhere_wins_by_one_on_every_seed():
    generator = torch.Generator().manual_seed(2)
    second = torch.rand(5, 6, generator=generator, dtype=torch.float64)
    first = second + 1.0
    document = paired.paired_comparisons(
        {"a": {"m": first}, "b": {"m": second}}, {"m": [("a", "b")]}, {"m": True}, 200, 0
    )
    entry = document["m"]["a vs b"]
    assert entry["difference"] == pytest.approx(1.0, abs=1e-12)
    assert entry["ci95_low"] == pytest.approx(1.0, abs=1e-12)
    assert entry["ci95_high"] == pytest.approx(1.0, abs=1e-12)
    assert entry["p"] == 0.0  # no resample where a is not better
    assert (entry["share_first_better"], entry["share_second_better"]) == (1.0, 0.0)
    # Where lower is better, the same numbers make b the better one on every count.
    lower = paired.paired_comparisons(
        {"a": {"m": first}, "b": {"m": second}}, {"m": [("a", "b")]}, {"m": False}, 200, 0
    )["m"]["a vs b"]
    assert lower["difference"] == entry["difference"]
    assert lower["p"] == 1.0
    assert (lower["share_first_better"], lower["share_second_better"]) == (0.0, 1.0)


def test_identical_sides_differ_by_nothing_and_tie_on_every_seed():
    values = torch.rand(6, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    noisy = values + 1e-16 * torch.randn(6, 8, generator=torch.Generator().manual_seed(4))
    entry = paired.paired_comparisons(
        {"a": {"m": values}, "b": {"m": noisy}}, {"m": [("a", "b")]}, {"m": True}, 100, 0
    )["m"]["a vs b"]
    assert abs(entry["ci95_low"]) < 1e-14 and abs(entry["ci95_high"]) < 1e-14
    assert entry["p"] == 1.0  # float noise is no evidence that a is better
    assert (entry["share_first_better"], entry["share_second_better"]) == (0.0, 0.0)


def test_a_seed_that_fails_badly_can_outweigh_many_slightly_ahead():
    # Hand case: on 9 of 10 seeds a leads by 0.01, on one it trails by 0.5: a wins most
    # seeds, yet its mean is lower by (0.5 - 9 * 0.01) / 10 = 0.041.
    second = torch.full((10, 4), 0.5, dtype=torch.float64)
    first = second + 0.01
    first[3] = 0.0
    entry = paired.paired_comparisons(
        {"a": {"m": first}, "b": {"m": second}}, {"m": [("a", "b")]}, {"m": True}, 500, 0
    )["m"]["a vs b"]
    assert entry["difference"] == pytest.approx(-0.041, abs=1e-12)
    assert entry["share_first_better"] == pytest.approx(0.9)
    assert entry["share_second_better"] == pytest.approx(0.1)


def test_one_draw_serves_every_pair_and_repeats_from_its_seed():
    generator = torch.Generator().manual_seed(5)
    table = {
        row: {"m": torch.rand(8, 9, generator=generator, dtype=torch.float64)} for row in "abc"
    }
    pairs = {"m": [("a", "b"), ("a", "c"), ("b", "c")]}
    first = paired.paired_comparisons(table, pairs, {"m": True}, 300, 7)
    assert first == paired.paired_comparisons(table, pairs, {"m": True}, 300, 7)
    assert first != paired.paired_comparisons(table, pairs, {"m": True}, 300, 8)
    assert list(first["m"]) == ["a vs b", "a vs c", "b vs c"]
