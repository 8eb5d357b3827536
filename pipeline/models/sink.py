"""Sink: the lesson plus one learned, value-less sink logit per run in the softmax.

From the glossary's seed 002 (gpt-oss): the sink takes weight but contributes
nothing, so the weights over the real steps sum to 1 - sink mass. The sink logit
draws its init after the lesson's parameters; step ablation cannot drop it.
"""

from __future__ import annotations

import torch

from pipeline.config import ModelConfig
from pipeline.models.params import Layout, Params, lesson_layout
from pipeline.models.pooling import (
    POOLING_BLOCK,
    channels,
    key_direction,
    lesson_head,
    project,
    runs_last_logits,
)
from pipeline.models.pooling import attend as pool
from pipeline.models.pooling_gradients import head_gradients, runs_last_gradients


def layout(cfg: ModelConfig, steps: int) -> Layout:
    return [*lesson_layout(cfg), ("sink", ())]


def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
    n = params.named
    return pool(channels(inputs), [lesson_head(params)], n["b"], dropped, n["sink"])


def training_logits(params: Params, inputs: torch.Tensor, threads: int | None = None):
    xs = [x[..., None] for x in channels(inputs)]  # (N, T, 1) each
    n = params.named
    return runs_last_logits(xs, [lesson_head(params)], n["b"], n["sink"])


def training_block(inputs: torch.Tensor) -> tuple[int, bool] | None:
    return (POOLING_BLOCK, False) if inputs.device.type == "cpu" else None


def gradient_step(inputs: torch.Tensor, labels: torch.Tensor):
    """Training's fast path: hand-derived gradients (pipeline/models/pooling_gradients.py)."""

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        n, head = params.named, lesson_head(params)
        grads = runs_last_gradients(inputs, [head], n["b"], labels, sink=n["sink"])
        return grads.logits, [*head_gradients(head, grads.keys[0], grads.values[0]),
                              grads.bias, grads.sink]  # fmt: skip

    return step


def sink_mass(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """The weight each example puts on the sink, its share of the softmax (1 - sum_t a_t
    up to rounding): (S, N)."""
    scores = project(channels(inputs), key_direction(lesson_head(params))).unsqueeze(
        -2
    )  # (S, N, 1, T)
    sink = params.named["sink"][:, None, None].expand(scores.shape[:-1]).unsqueeze(-1)
    return torch.softmax(torch.cat([scores, sink], -1), -1)[..., -1].sum(-1)


def extra_values(params: Params, inputs: torch.Tensor, marked: torch.Tensor):
    """Per held-out example: the weight on the sink."""
    return {"sink_mass": sink_mass(params, inputs)}
