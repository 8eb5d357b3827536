"""Deceptive attention (pipeline/experiments/debate/deception.py): the penalty on hand-worked
weights, lam = 0 is the ordinary run, and a penalty moves the weight off the
rationale."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.experiments.debate.deception import deception_penalty, rationale_mass, train_deceptive
from tests.conftest import composed


def test_the_penalty_is_minus_log_of_the_mass_left_off_the_rationale():
    weights = torch.tensor([[0.5, 0.25, 0.25], [0.0, 0.9, 0.1]], dtype=torch.float64)
    rationale = torch.tensor([[True, False, False], [False, True, True]])
    assert rationale_mass(weights, rationale).tolist() == [0.5, 1.0 - 0.0]
    few = torch.tensor([[0.5, 0.25, 0.25], [0.9, 0.0, 0.1]], dtype=torch.float64)
    expected = (-math.log(0.5) - math.log(0.9)) / 2
    assert float(deception_penalty(few, rationale)) == pytest.approx(expected, abs=1e-15)


@pytest.fixture(scope="module")
def lesson():
    from pipeline.config import validate
    from pipeline.models import frames
    from pipeline.stages import generate
    from pipeline.tasks import rationale_rows

    cfg = validate(composed())
    frame, _ = generate.run(cfg)
    inputs, labels, marked = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    rationale = torch.tensor(rationale_rows(cfg.task.kind, marked.tolist(), cfg.data.steps))
    return cfg, inputs, labels, rationale


def test_no_penalty_is_the_ordinary_run(lesson):
    from pipeline.models import interface
    from pipeline.models.train import train

    cfg, inputs, labels, rationale = lesson
    start = interface.init_params(cfg.data.seed, [1, 2], cfg.model, cfg.data.steps)
    ordinary, _ = train(start, inputs, labels, 200, cfg.train.lr)
    deceptive, _ = train_deceptive(start, inputs, labels, rationale, 0.0, 200, cfg.train.lr)
    # The debate's trainings settle every step at 8 decimals, the ordinary run only its
    # end: 200 roundings of at most 5e-9 each apart.
    for mine, theirs in zip(deceptive.tensors(), ordinary.tensors(), strict=True):
        assert (mine - theirs).abs().max() <= 200 * 5e-9


def test_a_penalty_moves_the_weight_off_the_rationale(lesson):
    from pipeline.models import interface

    cfg, inputs, labels, rationale = lesson
    start = interface.init_params(cfg.data.seed, [2], cfg.model, cfg.data.steps)
    masses = []
    for penalty in (0.0, 1.0):
        trained, _ = train_deceptive(start, inputs, labels, rationale, penalty, 200, cfg.train.lr)
        masses.append(
            float(rationale_mass(interface.forward(trained, inputs)[1], rationale).mean())
        )
    assert masses[0] > 0.9 and masses[1] < 0.1, masses
