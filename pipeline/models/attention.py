"""The softmax every model kind pools with: additive step masks, an optional sink logit.

Step ablation drops a step through `drop_steps_mask`; the sink kind adds its
value-less slot through `sink_logit`. The glossary's other functions (SDPA, causal
and sliding-window masks, receptive fields) live with their checks in
tests/glossary.py: no model uses them.
"""

from __future__ import annotations

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


def drop_steps_mask(dropped: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Additive mask from a boolean `dropped` (..., T): True removes the step."""
    zeros = torch.zeros(dropped.shape, dtype=dtype, device=dropped.device)
    return zeros.masked_fill(dropped, float("-inf"))
