"""Posenc: the lesson's pooling over x_t + p_t, with p (T, C) learned or sinusoidal.

Sinusoidal: p_{t,2i} = sin(t / 10000^(2i/C)), p_{t,2i+1} = cos(...); with C = 2,
[sin t, cos t]. A learned P draws its init after the lesson's parameters.
"""

from __future__ import annotations

import torch

from pipeline.config import ModelConfig
from pipeline.models import cuda_launch
from pipeline.models.parameters import (
    CHANNELS,
    LESSON_GROUPS,
    Groups,
    Layout,
    Params,
    lesson_layout,
)
from pipeline.models.pooling import attend as pool
from pipeline.models.pooling import (
    channels,
    head_gradients,
    lesson_head,
)
from pipeline.models.pooling_gradients import (
    bce_heads,
    loss_head,
    one_head,
    one_head_weights,
    runs_last_gradients,
)

OWN_KEYS = ("positional",)  # the model.* key this kind alone reads (kind.py)

# Runs per pass of training on the CPU (pipeline/models/pooling_gradients.py):
# a pass's (N, T, heads, runs) temporaries stay in cache (sized on the 2-core
# machine: docs/speed.md).
POSENC_BLOCK = 50


def layout(cfg: ModelConfig, steps: int) -> Layout:
    learned = [("P", (steps, CHANNELS))] if cfg.positional == "learned" else []
    return lesson_layout(cfg) + learned


def randomisation_groups(cfg: ModelConfig) -> Groups:
    """A learned encoding is added to the inputs, before everything: the last group."""
    return LESSON_GROUPS + ([("positions", ("P",))] if cfg.positional == "learned" else [])


def sinusoidal_encoding(steps: int, channels: int, dtype: torch.dtype) -> torch.Tensor:
    """(T, C): p_{t,2i} = sin(t / 10000^(2i/C)), p_{t,2i+1} = cos(t / 10000^(2i/C))."""
    position = torch.arange(steps, dtype=dtype)[:, None]
    rates = 10000.0 ** (-(torch.arange(channels) // 2 * 2).to(dtype) / channels)
    angles = position * rates  # (T, C)
    even = torch.arange(channels) % 2 == 0
    return torch.where(even, angles.sin(), angles.cos())


def encoding(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """p: (S, T, C) learned, or (T, C) sinusoidal."""
    if params.cfg.positional == "learned":
        return params.named["P"]
    steps, width = inputs.shape[-2:]
    return sinusoidal_encoding(steps, width, inputs.dtype).to(inputs.device)


def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
    p = encoding(params, inputs)
    if p.dim() == 3:
        p = p[:, None]  # (S, 1, T, C): one per run
    pooled = [x + p[..., c] for c, x in enumerate(channels(inputs))]
    return pool(pooled, [lesson_head(params)], params.named["b"], dropped)


def training_block(inputs: torch.Tensor) -> tuple[int, bool] | None:
    return (POSENC_BLOCK, False) if inputs.device.type == "cpu" else None


def gradient_step(inputs: torch.Tensor, labels: torch.Tensor):
    """Training's fast path: hand-derived gradients (pipeline/models/pooling_gradients.py),
    with p as the offsets of every example's steps."""
    return pooling_step(inputs, bce_heads(labels))


def fused_training(inputs: torch.Tensor, labels: torch.Tensor):
    """On cuda, the whole training in one fused kernel (pipeline/models/cuda_pooling.py),
    p learned per run or the sinusoid shared by all; None elsewhere."""
    if not cuda_launch.on_cuda(inputs):
        return None
    from pipeline.models.cuda_pooling import Pooling, training  # numba: loaded on use

    def pooling(params: Params) -> Pooling:
        if params.cfg.positional == "learned":
            return Pooling(learned_offsets=True)
        return Pooling(fixed_offsets=encoding(params, inputs))

    return training(inputs, labels, pooling)


def loss_step(inputs: torch.Tensor, loss, fixed: torch.Tensor | None = None):
    """The same on any loss on the pooling (pipeline/experiments/debate/training.py)."""
    return pooling_step(inputs, one_head(loss_head(loss, one_head_weights(fixed))))


def pooling_step(inputs: torch.Tensor, head_loss):
    """`train.descend`'s step on `head_loss` (`pooling_gradients.runs_last_gradients`)."""

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        learned = params.cfg.positional == "learned"
        p = encoding(params, inputs)
        offsets = p.transpose(0, 1) if learned else p[:, None]  # (T, S or 1, C)
        head, bias = lesson_head(params), params.named["b"]
        grads = runs_last_gradients(inputs, [head], bias, head_loss, offsets, learned)
        gradients = [*head_gradients(head, grads.keys[0], grads.values[0]), grads.bias]
        if learned:
            gradients.append(grads.offsets.transpose(0, 1))
        return grads.logits, gradients

    return step
