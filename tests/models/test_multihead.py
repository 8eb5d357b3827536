"""The multihead kind (pipeline/models/multihead.py): with one head it is the
lesson, trained or not; its weights are the heads' mean, its logit and value norm
their sum."""

from __future__ import annotations

import torch

from pipeline.analysis import explainers
from pipeline.config import ModelConfig
from pipeline.models import interface, train
from pipeline.models import lesson as lesson_kind
from pipeline.models.parameters import to_flat
from tests.models.helpers import (
    STEPS,
    kind_init_run,
    lesson_init_run,
    lesson_part,
    random_inputs,
    random_params,
    small_set,
)


def test_multihead_with_one_head_is_the_lesson():
    cfg = ModelConfig(kind="multihead", heads=1)
    assert kind_init_run(20260219, cfg) == lesson_init_run(20260219)
    params = random_params(cfg, 3, seed=1)
    inputs = random_inputs(9, STEPS, seed=2)
    the_lesson = interface.from_flat(to_flat(params), ModelConfig(), STEPS)
    for got, want in zip(
        interface.forward(params, inputs), lesson_kind.forward(the_lesson, inputs), strict=True
    ):
        assert torch.equal(got, want)


def test_trained_one_head_multihead_is_the_trained_lesson():
    (train_x, train_y), _ = small_set()
    heads = interface.init_params(4242, [1, 2], ModelConfig(kind="multihead", heads=1), STEPS)
    plain = interface.init_params(4242, [1, 2], ModelConfig(), STEPS)
    got, _ = train.train(heads, train_x, train_y, 10, 0.6)
    want, _ = train.train(plain, train_x, train_y, 10, 0.6, autograd=True)
    # multihead sums its one head in the pooling's order: equal up to float rounding
    torch.testing.assert_close(to_flat(got), to_flat(want), rtol=1e-12, atol=1e-14)


def test_multihead_weights_are_the_mean_over_heads():
    cfg = ModelConfig(kind="multihead", heads=3)
    params = random_params(cfg, 2, seed=17)
    inputs = random_inputs(7, STEPS, seed=18)
    heads = interface.head_weights(params, inputs)  # (S, N, H, T)
    assert heads.shape == (2, 7, 3, STEPS)
    torch.testing.assert_close(interface.forward(params, inputs)[1], heads.mean(-2))
    # Each head is a lesson classifier's attention with that head's Wk, q.
    for h in range(3):
        view = lesson_part(params, h)
        torch.testing.assert_close(heads[:, :, h], lesson_kind.forward(view, inputs)[1])
    # The logit adds every head's context through its slice of w, plus one bias.
    contexts = [lesson_kind.forward(lesson_part(params, h), inputs)[0] for h in range(3)]
    expected = sum(c - params.named["b"][:, None] for c in contexts) + params.named["b"][:, None]
    torch.testing.assert_close(interface.forward(params, inputs)[0], expected)


def test_value_norm_of_a_variant_sums_its_heads():
    params = random_params(ModelConfig(kind="multihead", heads=2), 2, seed=23)
    inputs = random_inputs(3, STEPS, seed=24)
    expected = 0
    for h in range(2):
        view = lesson_part(params, h)
        expected = expected + explainers.value_norm(view, inputs)
    torch.testing.assert_close(explainers.value_norm(params, inputs), expected)
