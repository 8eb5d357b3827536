"""The variance across seeds (pipeline/experiments/debate/seed_variance.py) on hand-worked cases."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.experiments.debate.seed_variance import pair_divergence, seed_pairs


def test_pairs_are_disjoint_and_an_odd_run_is_left_out():
    assert seed_pairs(5).tolist() == [[0, 1], [2, 3]]


def test_equal_runs_are_at_zero_and_disjoint_weights_at_ln2():
    weights = torch.tensor(
        [[[0.5, 0.5, 0.0]], [[0.5, 0.5, 0.0]], [[1.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]]],
        dtype=torch.float64,
    )
    probabilities = torch.tensor([[0.3], [0.3], [0.9], [0.2]], dtype=torch.float64)
    divergence, distance = pair_divergence(weights, probabilities, seed_pairs(4))
    assert divergence[0, 0] == 0 and distance[0, 0] == 0
    assert float(divergence[1, 0]) == pytest.approx(math.log(2), abs=1e-15)
    assert float(distance[1, 0]) == pytest.approx(0.7, abs=1e-15)
