"""Permuted attention (pipeline/experiments/debate/permutation.py) on hand-worked cases."""

from __future__ import annotations

import math

import torch

from pipeline.experiments.debate.permutation import permutation_orders, permuted_output_change


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_orders_are_permutations_fixed_by_the_seed():
    orders = permutation_orders(5, 100, 12, seed=3)
    assert orders.shape == (5, 100, 12)
    assert torch.equal(orders.sort(-1).values, torch.arange(12).expand(5, 100, 12))
    assert torch.equal(orders, permutation_orders(5, 100, 12, seed=3))
    assert not torch.equal(orders, permutation_orders(5, 100, 12, seed=4))


def test_uniform_weights_never_move():
    weights = torch.full((2, 3, 1, 4), 0.25, dtype=torch.float64)
    readouts = torch.randn(2, 3, 1, 4, dtype=torch.float64)
    change = permuted_output_change(
        weights, readouts, torch.zeros(2, 1), permutation_orders(3, 9, 4, 0)
    )
    # 0 up to the rounding of two summation orders
    assert change.abs().max() <= 1e-15


def test_one_hot_weights_move_by_the_readout_they_land_on():
    """a = e_0 and r = (0, 4, 4): a shuffle that leaves the mass on step 0 changes
    nothing, any other moves p from 1/2 to sigmoid(4). Two thirds of the shuffles move
    it, so the median over 101 is sigmoid(4) - 1/2 (and with 100 draws and a seed
    where fewer than half stay, also)."""
    weights = torch.tensor([[[[1.0, 0.0, 0.0]]]], dtype=torch.float64)
    readouts = torch.tensor([[[[0.0, 4.0, 4.0]]]], dtype=torch.float64)
    orders = permutation_orders(1, 101, 3, seed=0)
    stayed = int((orders[0, :, 0] == 0).sum())
    assert stayed < 50  # else the median would be 0
    change = permuted_output_change(weights, readouts, torch.zeros(1, 1), orders)
    assert float(change) == sigmoid(4) - 0.5


def test_the_median_of_an_even_count_is_the_mean_of_the_middle_two():
    """T = 2, a = (1, 0), r = (0, 2): each order keeps (change 0) or swaps (change
    sigmoid(2) - 1/2); with as many of each, the median is half the swap's change."""
    weights = torch.tensor([[[[1.0, 0.0]]]], dtype=torch.float64)
    readouts = torch.tensor([[[[0.0, 2.0]]]], dtype=torch.float64)
    orders = torch.tensor([[[0, 1], [1, 0], [0, 1], [1, 0]]])
    change = permuted_output_change(weights, readouts, torch.zeros(1, 1), orders)
    assert float(change) == (sigmoid(2) - 0.5) / 2


def test_one_order_moves_every_head_s_steps_together():
    """Two heads, T = 2, a_1 = (1, 0) with r_1 = (0, 2) and a_2 = (0, 1) with
    r_2 = (3, 0): the logit is 0 now; the swap puts head 1's mass on r = 2 and head
    2's on r = 3, logit 5, so every swap moves p by sigmoid(5) - 1/2."""
    weights = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]], dtype=torch.float64)
    readouts = torch.tensor([[[[0.0, 2.0], [3.0, 0.0]]]], dtype=torch.float64)
    orders = torch.tensor([[[1, 0], [1, 0], [1, 0]]])
    change = permuted_output_change(weights, readouts, torch.zeros(1, 1), orders)
    assert float(change) == sigmoid(5) - 0.5
