"""The positional-encoding kind (pipeline/models/posenc.py): with a zero encoding
it is the lesson; learned and sinusoidal encodings add to the inputs."""

from __future__ import annotations

import math

import torch

from pipeline.config import ModelConfig
from pipeline.models import interface, posenc
from pipeline.models import lesson as lesson_kind
from tests.models.helpers import F64, STEPS, is_lesson, lesson_part, random_inputs, random_params


def test_posenc_with_a_zero_encoding_is_the_lesson():
    assert is_lesson("posenc", zeroed="P", seed=7)


def test_posenc_adds_the_encoding_to_the_inputs():
    for positional in ("learned", "sinusoidal"):
        cfg = ModelConfig(kind="posenc", positional=positional)
        params = random_params(cfg, 2, seed=9)
        inputs = random_inputs(5, STEPS, seed=10)
        if positional == "learned":
            shifted = inputs + params.named["P"][:, None]  # (S, N, T, C)
        else:
            steps = torch.arange(STEPS, dtype=F64)
            shifted = inputs + torch.stack([steps.sin(), steps.cos()], -1)
        logits, weights = lesson_kind.forward(lesson_part(params), shifted)
        torch.testing.assert_close(interface.forward(params, inputs)[0], logits, rtol=0, atol=0)
        torch.testing.assert_close(interface.forward(params, inputs)[1], weights, rtol=0, atol=0)


def test_sinusoidal_encoding_by_hand():
    encoding = posenc.sinusoidal_encoding(3, 4, F64)
    t = 2.0
    expected = [math.sin(t), math.cos(t), math.sin(t / 100), math.cos(t / 100)]
    torch.testing.assert_close(encoding[2], torch.tensor(expected, dtype=F64))
