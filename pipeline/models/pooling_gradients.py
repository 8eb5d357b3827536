"""Hand-derived gradients of the single-query pooling over any inputs: training's fast
path for posenc, whose steps carry p (sink and multihead, over the lesson's inputs,
take the lesson's cheaper moments: `lesson.moment_gradients`).

Why: 1000 seeds of a grid cell should train in 60 s on 2 cores. Autograd through a
runs-innermost forward kept some 30 (N, T, H, runs) temporaries an epoch; this
keeps a handful, and every sum over examples and steps of an input channel is one
matrix-vector product. Laid out example-major, runs innermost. Per head h, with
scores s_t = u_h . x_t, readouts z_t = v_h . x_t, weights a = softmax(s), context
c_h = sum_t a_t z_t, logit o = sum_h c_h + b and g = dL/do = (p(o) - y) / N (the
lesson's clamp in p):

    dz_t = g a_t,  ds_t = g a_t (z_t - c_h),
    du_h = sum_t ds_t x_t,  dv_h = sum_t dz_t x_t,  dx_t = sum_h ds_t u_h + dz_t v_h.

Posenc pools over x_t + p_t: p enters as `offsets`, shared by every example, so its
part of each sum is taken once per step, not once per example.
tests/test_models.py checks every kind's gradients against autograd through
`forward`, the definition.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pipeline.models.pooling import Head, key_direction, probability, runs_last, value_direction


@dataclass(frozen=True)
class PoolingGradients:
    logits: torch.Tensor  # (S, N)
    keys: torch.Tensor  # (H, S, C): dL/du_h
    values: torch.Tensor  # (H, S, C): dL/dv_h
    bias: torch.Tensor  # (S,)
    offsets: torch.Tensor | None  # (T, S, C): dL/dp, when asked for


def runs_last_gradients(
    inputs: torch.Tensor,
    heads: list[Head],
    bias: torch.Tensor,
    labels: torch.Tensor,
    offsets: torch.Tensor,
    offset_gradients: bool,
) -> PoolingGradients:
    """The logits and mean-BCE gradients of the pooling over inputs (N, T, C) plus
    `offsets` (T, S or 1, C) at every example's steps; dL/doffsets if asked for."""
    examples, steps, _ = inputs.shape
    xs = [x[:, :, None, None] for x in inputs.unbind(-1)]  # (N, T, 1, 1)
    keys = torch.stack([key_direction(head) for head in heads])  # (H, S, C)
    values = torch.stack([value_direction(head) for head in heads])
    scores, readouts = runs_last(keys, xs), runs_last(values, xs)  # (N, T, H, S)
    ps = [p[:, None] for p in offsets.unbind(-1)]  # (T, 1, S or 1)
    scores += runs_last(keys, ps)
    readouts += runs_last(values, ps)
    weights = torch.softmax(scores, 1)
    contexts = (weights * readouts).sum(1)  # (N, H, S)
    logits = contexts.sum(1) + bias  # (N, S)
    dlogit = (probability(logits) - labels[:, None]) / examples  # (N, S)

    dreadouts = weights.mul_(dlogit[:, None, None])  # dz, in weights' memory
    dscores = readouts.sub_(contexts[:, None]).mul_(dreadouts)  # ds, in readouts'

    def channel_sums(grad: torch.Tensor) -> torch.Tensor:
        """sum_{n,t} grad x_c, channel by channel: (H, S, C)."""
        flat = grad.reshape(examples * steps, -1)
        sums = [x.reshape(-1) @ flat for x in inputs.unbind(-1)]
        return torch.stack(sums, -1).view(*grad.shape[2:], -1)

    dkeys, dvalues = channel_sums(dscores), channel_sums(dreadouts)
    dscore_steps, dreadout_steps = dscores.sum(0), dreadouts.sum(0)  # (T, H, S)
    dkeys += torch.stack([(dscore_steps * p).sum(0) for p in ps], -1)
    dvalues += torch.stack([(dreadout_steps * p).sum(0) for p in ps], -1)
    doffsets = None
    if offset_gradients:
        doffsets = torch.einsum("ths,hsc->tsc", dscore_steps, keys) + torch.einsum(
            "ths,hsc->tsc", dreadout_steps, values
        )
    return PoolingGradients(logits.T, dkeys, dvalues, dlogit.sum(0), doffsets)
