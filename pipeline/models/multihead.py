"""Multihead: `heads` single-query heads h, each with its own Wk_h, Wv_h, q_h.

Their contexts are concatenated and read out by one w (heads * d_v) and b. The
per-head tensors are laid out head-major (Wk of all heads, then Wv, q), so with
heads = 1 the init is the lesson's. The weights the metrics read are the mean over
heads; each head's marker mass and argmax hit are numbers of their own.
"""

from __future__ import annotations

import torch

from pipeline.config import ModelConfig
from pipeline.core import ties
from pipeline.models import cuda_launch
from pipeline.models.lesson import TrainingSet, moment_gradients
from pipeline.models.parameters import CHANNELS, Layout, Params
from pipeline.models.pooling import (
    Head,
    channels,
    head_gradients,
    key_direction,
    value_direction,
)
from pipeline.models.pooling import attend as pool

OWN_KEYS = ("heads",)  # the model.* key this kind alone reads (kind.py)


def layout(cfg: ModelConfig, steps: int) -> Layout:
    h, d_k, d_v = cfg.heads, cfg.d_k, cfg.d_v
    return [
        ("Wk", (h, d_k, CHANNELS)),
        ("Wv", (h, d_v, CHANNELS)),
        ("q", (h, d_k)),
        ("w", (h * d_v,)),
        ("b", ()),
    ]


def pooling_heads(cfg: ModelConfig) -> int:
    return cfg.heads


def heads(params: Params) -> list[Head]:
    n, d_v = params.named, params.cfg.d_v
    return [
        Head(n["Wk"][:, h], n["Wv"][:, h], n["q"][:, h], n["w"][:, h * d_v : (h + 1) * d_v])
        for h in range(params.cfg.heads)
    ]


def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
    return pool(channels(inputs), heads(params), params.named["b"], dropped)


def gradient_step(inputs: torch.Tensor, labels: torch.Tensor):
    """Training's fast path: the lesson's moments for every head at once, heads side by
    side with the runs (`lesson.moment_gradients`)."""
    batch = TrainingSet.build(inputs, labels)

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        each, count = heads(params), params.cfg.heads
        keys = torch.cat([key_direction(head) for head in each])  # (H * S, C)
        values = torch.cat([value_direction(head) for head in each])
        logits, dkeys, dvalues, dbias, _ = moment_gradients(
            keys, values, params.named["b"], batch, heads=count
        )
        per_head = [
            head_gradients(head, dkey, dvalue)
            for head, dkey, dvalue in zip(
                each, dkeys.chunk(count), dvalues.chunk(count), strict=True
            )
        ]
        d_key_proj, d_value_proj, d_query, d_readout = zip(*per_head, strict=True)
        return logits, [
            torch.stack(d_key_proj, 1),
            torch.stack(d_value_proj, 1),
            torch.stack(d_query, 1),
            torch.cat(d_readout, 1),
            dbias,
        ]

    return step


def fused_training(inputs: torch.Tensor, labels: torch.Tensor):
    """On cuda, the whole training in one fused kernel (pipeline/models/cuda_pooling.py),
    every head in the run's thread; None elsewhere."""
    if not cuda_launch.on_cuda(inputs):
        return None
    from pipeline.models.cuda_pooling import Pooling, training  # numba: loaded on use

    return training(inputs, labels, lambda params: Pooling(heads=params.cfg.heads))


def extra_values(params: Params, inputs: torch.Tensor, marked: torch.Tensor):
    """Per held-out example and head h = 1..heads: the weight on the marked step and
    whether the head's largest weight sits there."""
    weights = attend(params, inputs)[1]  # (S, N, H, T)
    values = {}
    for h in range(weights.shape[-2]):
        head = weights[..., h, :]
        on_marked = head.gather(-1, marked.expand(head.shape[:-1]).unsqueeze(-1)).squeeze(-1)
        values[f"head_{h + 1}_marker_mass"] = on_marked
        values[f"head_{h + 1}_argmax_hit"] = (ties.first_max(head) == marked).to(head.dtype)
    return values
