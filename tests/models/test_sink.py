"""The sink kind (pipeline/models/sink.py): at minus infinity it is the lesson; its
mass is the sink's share of the softmax."""

from __future__ import annotations

import math

import torch

from pipeline.analysis import metrics
from pipeline.config import ModelConfig
from pipeline.models import interface, sink
from pipeline.models import lesson as lesson_kind
from pipeline.models.pooling import channels, key_direction, lesson_head, project
from tests.models.helpers import STEPS, lesson_part, random_inputs, random_params


def test_sink_at_minus_infinity_is_the_lesson():
    params = random_params(ModelConfig(kind="sink"), 3, seed=3)
    params.named["sink"].fill_(-math.inf)
    inputs = random_inputs(9, STEPS, seed=4)
    ours, theirs = params, lesson_part(params)
    for got, want in zip(
        interface.forward(ours, inputs), lesson_kind.forward(theirs, inputs), strict=True
    ):
        assert torch.equal(got, want)
    assert torch.equal(
        metrics.ablation_effects(ours, inputs), metrics.ablation_effects(theirs, inputs)
    )
    assert float(sink.sink_mass(ours, inputs).abs().max()) == 0.0


def test_sink_mass_is_the_sinks_softmax_share():
    params = random_params(ModelConfig(kind="sink"), 2, seed=5)
    inputs = random_inputs(4, STEPS, seed=6)
    scores = project(channels(inputs), key_direction(lesson_head(params)))  # (S, N, T)
    sink_logit = params.named["sink"][:, None]
    by_hand = sink_logit.exp() / (scores.exp().sum(-1) + sink_logit.exp())
    torch.testing.assert_close(sink.sink_mass(params, inputs), by_hand, rtol=1e-13, atol=0)
    weights = interface.forward(params, inputs)[1]
    torch.testing.assert_close(weights.sum(-1), 1 - by_hand, rtol=1e-13, atol=1e-15)
