"""The model-consistent adversary (pipeline/experiments/debate/consistent.py): its loss on
hand-worked numbers, the base run is where it stays without a reward for moving, and
a larger reward moves the attention further."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.experiments.debate.consistent import (
    adversary_start,
    consistency_loss,
    train_consistent,
)
from tests.conftest import composed


def test_the_loss_is_the_mean_tvd_less_lam_times_the_mean_jsd():
    probabilities = torch.tensor([[0.2, 0.6]], dtype=torch.float64)
    base = torch.tensor([[0.1, 0.6]], dtype=torch.float64)
    weights = torch.tensor([[[0.5, 0.5], [1.0, 0.0]]], dtype=torch.float64)
    same = consistency_loss(probabilities, weights, base, weights, penalty=3.0)
    assert float(same) == pytest.approx(0.05, abs=1e-15)  # equal weights: JSD 0
    disjoint = torch.tensor([[[0.5, 0.5], [0.0, 1.0]]], dtype=torch.float64)
    moved = consistency_loss(probabilities, disjoint, base, weights, penalty=3.0)
    assert float(moved) == pytest.approx(0.05 - 3.0 * math.log(2) / 2, abs=1e-15)


@pytest.fixture(scope="module")
def lesson():
    from pipeline.config import validate
    from pipeline.models import frames, interface
    from pipeline.models.train import train
    from pipeline.stages import generate

    cfg = validate(composed())
    frame, _ = generate.run(cfg)
    inputs, labels, _ = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    start = interface.init_params(cfg.data.seed, [1, 2, 3, 4], cfg.model, cfg.data.steps)
    base, _ = train(start, inputs, labels, cfg.train.epochs, cfg.train.lr)
    return cfg, inputs, labels, base, start


def test_without_a_reward_for_moving_the_base_run_stays_where_it_is(lesson):
    """At the base, |p - p_base| has torch's zero subgradient and JSD its minimum: no
    step moves it."""
    cfg, inputs, labels, base, _ = lesson
    stayed, _ = train_consistent(base, inputs, labels, base, 0.0, 20, cfg.train.lr)
    for a, b in zip(stayed.tensors(), base.tensors(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_a_larger_reward_moves_the_attention_further(lesson):
    from pipeline.experiments.debate.adversary import jsd
    from pipeline.models import interface

    cfg, inputs, labels, base, init = lesson
    base_weights = interface.forward(base, inputs)[1]
    start = adversary_start(base, init, cfg.debate.consistent_start)
    moved = []
    for penalty in (1.0, 10.0):
        trained, _ = train_consistent(start, inputs, labels, base, penalty, 100, cfg.train.lr)
        moved.append(float(jsd(interface.forward(trained, inputs)[1], base_weights).mean()))
    assert 0 < moved[0] < moved[1]
