"""Attention held fixed while the rest trains (pipeline/experiments/debate/fixed_attention.py):
uniform weights against their closed form, and what stays untrained."""

from __future__ import annotations

import pytest
import torch

from pipeline.core.precision import settle
from pipeline.experiments.debate.fixed_attention import train_fixed, uniform_weights
from pipeline.experiments.debate.pooling import fixed_logits
from tests.conftest import composed

EPOCHS, LR = 200, 0.6


@pytest.fixture(scope="module")
def lesson():
    from pipeline.config import validate
    from pipeline.models import frames
    from pipeline.stages import generate

    cfg = validate(composed())
    frame, _ = generate.run(cfg)
    train = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    heldout = frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)
    return cfg, train, heldout


def init(cfg, kind: str = "lesson"):
    from pipeline.config import ModelConfig
    from pipeline.models import interface

    model = ModelConfig(kind=kind) if kind != "lesson" else cfg.model
    return interface.init_params(cfg.data.seed, [1, 2], model, cfg.data.steps)


def test_uniform_attention_is_a_readout_of_the_sequence_means(lesson):
    """With a_t = 1/T, the lesson's logit is w . Wv mean_t(x_t) + b: trained by plain
    gradient descent on that closed form from the same init, the parameters agree."""
    cfg, (inputs, labels, _), _ = lesson
    start = init(cfg)
    steps = inputs.shape[1]
    trained, _ = train_fixed(start, inputs, labels, uniform_weights(len(labels), steps), EPOCHS, LR)

    means = inputs.mean(1)  # (N, C)
    value, readout, bias = (start.named[k].clone().requires_grad_(True) for k in ("Wv", "w", "b"))
    for _ in range(EPOCHS):
        logits = torch.einsum("nc,sic,si->sn", means, value, readout) + bias[:, None]
        loss = (
            torch.nn.functional.binary_cross_entropy_with_logits(
                logits, labels.expand_as(logits), reduction="none"
            )
            .mean(1)
            .sum()
        )
        grads = torch.autograd.grad(loss, (value, readout, bias))
        with torch.no_grad():
            for tensor, grad in zip((value, readout, bias), grads, strict=True):
                tensor.copy_(settle(tensor - LR * grad))  # the debate settles every step
    # Both settle each step at 8 decimals (pipeline/core/precision.py): equal, unless float
    # noise put a value within an ulp of a rounding boundary, one step of 1e-8 apart.
    for name, tensor in (("Wv", value), ("w", readout), ("b", bias)):
        assert (trained.named[name] - tensor.detach()).abs().max() <= 2e-8, name
    # The keys and the query get no gradient: they stay at their (settled) init.
    for name in ("Wk", "q"):
        assert torch.equal(trained.named[name], settle(start.named[name])), name


def test_two_sequences_with_the_same_means_read_alike_under_uniform_attention(lesson):
    cfg, (inputs, labels, _), _ = lesson
    params = init(cfg)
    shuffled = inputs[
        :, torch.randperm(inputs.shape[1], generator=torch.Generator().manual_seed(0))
    ]
    uniform = uniform_weights(len(labels), inputs.shape[1])
    assert torch.allclose(
        fixed_logits(params, inputs, uniform), fixed_logits(params, shuffled, uniform)
    )


def test_a_kind_s_own_weights_give_its_own_logits(lesson):
    """Each head's learned weights on the steps, fixed, give the kind's logits: a
    sink's share adds nothing, and multihead's heads each keep their own."""
    from pipeline.experiments.debate.fixed_attention import step_weights
    from pipeline.models import interface

    cfg, _, (heldout, _, _) = lesson
    for kind in ("lesson", "sink", "multihead", "posenc", "window"):
        params = init(cfg, kind)
        logits, _ = interface.forward(params, heldout)
        weights = step_weights(params, heldout)
        assert weights.shape[-2] == (2 if kind == "multihead" else 1), kind
        assert torch.allclose(fixed_logits(params, heldout, weights), logits, atol=1e-12), kind


def test_uniform_attention_reaches_every_head(lesson):
    """With a_{h,t} = 1/T the two-head model reads sum_h w_h . mean_t V_{h,t} + b."""
    from pipeline.experiments.debate.pooling import pooling_terms

    cfg, (inputs, labels, _), _ = lesson
    params = init(cfg, "multihead")
    readouts = pooling_terms(params, inputs).readouts  # (S, N, H, T)
    expected = readouts.mean(-1).sum(-1) + params.named["b"][:, None]
    got = fixed_logits(params, inputs, uniform_weights(len(labels), inputs.shape[1]))
    assert torch.allclose(got, expected, atol=1e-12)
