"""The glossary seeds' attention (000 SDPA, 003 sliding windows), as the seeds write it.

No model kind pools this way (they are single-query and banded, pipeline/models);
tests/models/test_attention.py checks these against torch and by hand, and
tests/models/test_window.py checks the window kind against them.
"""

from __future__ import annotations

import math

import torch

from pipeline.models.attention import attention_weights, drop_steps_mask


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
