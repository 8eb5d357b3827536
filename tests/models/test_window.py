"""The sliding-window kind (pipeline/models/window.py): a self-attention layer
before the lesson's pooling, against the lesson and plain masked attention."""

from __future__ import annotations

import pytest
import torch
from glossary import scaled_dot_product_attention, sliding_window_mask

from pipeline.config import ModelConfig
from pipeline.models import interface
from pipeline.models import lesson as lesson_kind
from pipeline.models import window as window_kind
from pipeline.models.parameters import Params
from tests.models.helpers import F64, STEPS, is_lesson, lesson_part, random_inputs, random_params


def test_window_with_zero_layer_values_is_the_lesson():
    assert is_lesson("window", zeroed="Wv_layer", seed=11)


def test_window_of_one_is_the_lesson_on_a_linear_map():
    """A token that sees only itself gets h = (I + Wv_layer) x: the lesson with
    Wk (I + Wv_layer) and Wv (I + Wv_layer)."""
    params = random_params(ModelConfig(kind="window", window=1), 2, seed=13)
    inputs = random_inputs(6, STEPS, seed=14)
    mapping = torch.eye(2, dtype=F64) + params.named["Wv_layer"]  # (S, C, C)
    base = lesson_part(params).named
    folded = Params(
        ModelConfig(),
        dict(
            zip(
                ["Wk", "Wv", "q", "w", "b"],
                [base["Wk"] @ mapping, base["Wv"] @ mapping, base["q"], base["w"], base["b"]],
                strict=True,
            )
        ),
    )
    for got, want in zip(
        interface.forward(params, inputs), lesson_kind.forward(folded, inputs), strict=True
    ):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("window", [1, 3, 4, 12])
def test_banded_window_layer_equals_full_masked_attention(window):
    """The banded layer against plain attention with seed 003's (T, T) sliding-window mask."""
    params = random_params(ModelConfig(kind="window", window=window), 2, seed=15)
    inputs = random_inputs(5, STEPS, seed=16)
    n = params.named
    x = inputs.expand(2, *inputs.shape)  # (S, N, T, C)
    queries = x @ n["Wq_layer"].transpose(-1, -2)[:, None]
    keys = x @ n["Wk_layer"].transpose(-1, -2)[:, None]
    values = x @ n["Wv_layer"].transpose(-1, -2)[:, None]
    context, _ = scaled_dot_product_attention(
        queries, keys, values, sliding_window_mask(STEPS, window)
    )
    torch.testing.assert_close(
        window_kind.layer(params, inputs), x + context, rtol=1e-12, atol=1e-13
    )
