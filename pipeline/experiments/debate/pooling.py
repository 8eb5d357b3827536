"""What every experiment of the debate reads off a kind: its logit is
sum_h sum_k a_{h,k} r_{h,k} + b, linear in each head's pooling weights a_h, a
distribution over the slots k of that head's softmax: the steps, then the sink
where the kind has one (`sink_slot` in pipeline/models/kind.py: its weight is
1 - sum_t a_{h,t}, its readout 0)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from pipeline.config import ModelConfig
from pipeline.models import interface
from pipeline.models.parameters import Params


class Pooling(NamedTuple):
    logits: torch.Tensor  # (S, N)
    weights: torch.Tensor  # (S, N, H, K): per head, over the steps then the sink slot
    readouts: torch.Tensor  # (S, N, H, K): the sink slot's is 0
    bias: torch.Tensor  # (S, N): b, whatever the kind's layout names it
    steps: int  # T: the first T slots are the steps


def pooling_terms(params: Params, inputs: torch.Tensor) -> Pooling:
    """The kind's pooling terms, each head's weights a distribution over its slots."""
    logits, weights, readouts = interface.kind(params.cfg.kind).attend(params, inputs)
    steps = weights.shape[-1]
    weights = with_sink_slot(weights, params.cfg)
    if weights.shape[-1] > steps:  # the sink's slot reads 0
        readouts = torch.cat([readouts, torch.zeros_like(readouts[..., :1])], -1)
    bias = logits - (weights * readouts).sum((-2, -1))
    return Pooling(logits, weights, readouts, bias, steps)


def with_sink_slot(weights: torch.Tensor, cfg: ModelConfig) -> torch.Tensor:
    """Weights over the steps (..., T) as a distribution over the slots (..., K): the
    sink's share appended where the kind has one. Each head's (pooling_terms), or the
    metrics' mean over heads, which the seed variance and the model-consistent
    adversary compare (heads are not matched across seeds)."""
    if not interface.sink_slot(cfg):
        return weights
    return torch.cat([weights, 1 - weights.sum(-1, keepdim=True)], -1)


def fixed_logits(params: Params, inputs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Logits (S, N) with the steps' `weights` (broadcasting against (S, N, H, T)) in
    place of the pooling's (fixed attention)."""
    terms = pooling_terms(params, inputs)
    return (weights * terms.readouts[..., : terms.steps]).sum((-2, -1)) + terms.bias
