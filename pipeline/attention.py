"""Scaled dot-product attention with additive masks and an optional sink logit.

The classifier in `pipeline.model` normalises its scores with `attention_weights`;
the other glossary seeds (000 attention, 002 sinks, 003 sliding windows) use the
same functions, so every mask kind goes through one softmax.
"""

from __future__ import annotations

import math

import torch


def attention_weights(
    scores: torch.Tensor,
    additive_mask: torch.Tensor | None = None,
    sink_logit: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """Softmax over the last dim of `scores` (..., T).

    `additive_mask` (broadcastable, 0 keeps a step, -inf drops it) removes steps
    and renormalises the rest. `sink_logit` adds one value-less slot to the
    softmax: it takes weight but contributes nothing, so the returned weights
    over the T real steps sum to less than one.
    """
    if additive_mask is not None:
        scores = scores + additive_mask.to(scores.dtype)
    if sink_logit is None:
        return torch.softmax(scores, dim=-1)
    sink = torch.as_tensor(sink_logit, dtype=scores.dtype, device=scores.device)
    sink = sink.expand(scores.shape[:-1]).unsqueeze(-1)
    return torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    additive_mask: torch.Tensor | None = None,
    sink_logit: torch.Tensor | float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d)) v for query (..., L, d), key (..., T, d), value (..., T, d_v).

    Returns the output (..., L, d_v) and the weights (..., L, T).
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    weights = attention_weights(scores, additive_mask, sink_logit)
    return weights @ value, weights


def drop_steps_mask(dropped: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Additive mask from a boolean `dropped` (..., T): True removes the step."""
    zeros = torch.zeros(dropped.shape, dtype=dtype, device=dropped.device)
    return zeros.masked_fill(dropped, float("-inf"))


def causal_mask(length: int) -> torch.Tensor:
    """(L, L) additive mask: token i sees tokens 0..i."""
    future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)
    return drop_steps_mask(future)


def sliding_window_mask(length: int, window: int) -> torch.Tensor:
    """(L, L) additive mask: token i sees the `window` tokens i-window+1..i."""
    offset = torch.arange(length).unsqueeze(1) - torch.arange(length).unsqueeze(0)
    return drop_steps_mask((offset < 0) | (offset >= window))


def receptive_field(window: int, layers: int) -> int:
    """Tokens the last token can reach after stacking `layers` sliding-window layers."""
    return layers * (window - 1) + 1
