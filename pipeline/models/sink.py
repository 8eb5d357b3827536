"""Sink: the lesson plus one learned, value-less sink logit per run in the softmax.

From the glossary's seed 002 (gpt-oss): the sink takes weight but contributes
nothing, so the weights over the real steps sum to 1 - sink mass. The sink logit
draws its init after the lesson's parameters; step ablation cannot drop it.
"""

from __future__ import annotations

import torch

from pipeline.config import ModelConfig
from pipeline.models import cuda_launch
from pipeline.models.lesson import TrainingSet, moment_gradients
from pipeline.models.parameters import LESSON_GROUPS, Groups, Layout, Params, lesson_layout
from pipeline.models.pooling import attend as pool
from pipeline.models.pooling import (
    channels,
    head_gradients,
    key_direction,
    lesson_head,
    project,
    value_direction,
)


def layout(cfg: ModelConfig, steps: int) -> Layout:
    return [*lesson_layout(cfg), ("sink", ())]


def sink_slot(cfg: ModelConfig) -> bool:
    return True


def randomisation_groups(cfg: ModelConfig) -> Groups:
    """The sink's logit sets the weights with the keys and the query."""
    readout, values, (keys, names) = LESSON_GROUPS
    return [readout, values, (keys, (*names, "sink"))]


def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
    n = params.named
    return pool(channels(inputs), [lesson_head(params)], n["b"], dropped, n["sink"])


def gradient_step(inputs: torch.Tensor, labels: torch.Tensor):
    """Training's fast path: the lesson's moments with the sink in every softmax sum
    (`lesson.moment_gradients`)."""
    batch = TrainingSet.build(inputs, labels)

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        n, head = params.named, lesson_head(params)
        logits, dkey, dvalue, dbias, dsink = moment_gradients(
            key_direction(head), value_direction(head), n["b"], batch, sink=n["sink"]
        )
        return logits, [*head_gradients(head, dkey, dvalue), dbias, dsink]

    return step


def fused_training(inputs: torch.Tensor, labels: torch.Tensor):
    """On cuda, the whole training in one fused kernel (pipeline/models/cuda_pooling.py),
    the sink in every softmax sum; None elsewhere."""
    if not cuda_launch.on_cuda(inputs):
        return None
    from pipeline.models.cuda_pooling import Pooling, training  # numba: loaded on use

    return training(inputs, labels, lambda params: Pooling(sink=True))


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
