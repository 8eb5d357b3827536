"""Hand-derived gradients of the single-query pooling over any inputs: training's fast
path for posenc, whose steps carry p (sink and multihead, over the lesson's inputs,
take the lesson's cheaper moments: `lesson.moment_gradients`).

Why: 1000 seeds of a grid cell should train within the time target on 2 cores
(docs/speed.md). Autograd through a runs-innermost forward keeps some 30
(N, T, H, runs) temporaries an epoch; this keeps a handful, and every sum over
examples and steps of an input channel is one matrix-vector product. Laid out
example-major, runs innermost. Per head h, with scores s_t = u_h . x_t, readouts
z_t = v_h . x_t, weights a = softmax(s), context c_h = sum_t a_t z_t, logit
o = sum_h c_h + b and g = dL/do = (p(o) - y) / N (the lesson's clamp in p):

    dz_t = g a_t,  ds_t = g a_t (z_t - c_h),
    du_h = sum_t ds_t x_t,  dv_h = sum_t dz_t x_t,  dx_t = sum_h ds_t u_h + dz_t v_h.

(`bce_heads`). For another loss on the pooling (the debate's, pipeline/experiments/debate/),
`loss_head` gives dz_t and ds_t by autograd on the (N, T, runs) pooling numbers
alone; the chain above is the same: the lesson's and posenc's `loss_step`.

Posenc pools over x_t + p_t: p enters as `offsets`, shared by every example, so its
part of each sum is taken once per step, not once per example.
tests/models/test_models.py and tests/experiments/test_debate_training.py check every
kind's gradients against autograd through `forward`, the definition.
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
    head_loss,
    offsets: torch.Tensor,
    offset_gradients: bool,
) -> PoolingGradients:
    """The logits and a loss's gradients of the pooling over inputs (N, T, C) plus
    `offsets` (T, S or 1, C) at every example's steps; dL/doffsets if asked for. The
    loss is `head_loss`'s: from the scores and readouts (N, T, H, S) and the bias, the
    logits (N, S) and the gradients w.r.t. them, the readouts and the scores
    (`bce_heads`: training's; `one_head(loss_head(...))`: any loss on the pooling)."""
    examples, steps, _ = inputs.shape
    xs = [x[:, :, None, None] for x in inputs.unbind(-1)]  # (N, T, 1, 1)
    keys = torch.stack([key_direction(head) for head in heads])  # (H, S, C)
    values = torch.stack([value_direction(head) for head in heads])
    scores, readouts = runs_last(keys, xs), runs_last(values, xs)  # (N, T, H, S)
    ps = [p[:, None] for p in offsets.unbind(-1)]  # (T, 1, S or 1)
    scores += runs_last(keys, ps)
    readouts += runs_last(values, ps)
    logits, dlogit, dreadouts, dscores = head_loss(scores, readouts, bias)

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


def bce_heads(labels: torch.Tensor):
    """Training's `head_loss`: the mean BCE (the lesson's clamp in p) over the heads'
    pooling, dz_t = g a_t and ds_t = g a_t (z_t - c_h) in the weights' and readouts'
    memory."""

    def head_loss(scores: torch.Tensor, readouts: torch.Tensor, bias: torch.Tensor):
        weights = torch.softmax(scores, 1)
        contexts = (weights * readouts).sum(1)  # (N, H, S)
        logits = contexts.sum(1) + bias  # (N, S)
        dlogit = (probability(logits) - labels[:, None]) / labels.shape[0]  # (N, S)
        dreadouts = weights.mul_(dlogit[:, None, None])  # dz, in weights' memory
        dscores = readouts.sub_(contexts[:, None]).mul_(dreadouts)  # ds, in readouts'
        return logits, dlogit, dreadouts, dscores

    return head_loss


def loss_head(loss, fixed: torch.Tensor | None = None):
    """A head's loss on the pooling, for a fast path that computes the scores and
    readouts (N, T, R) of R runs itself (window's kernel tiles, `one_head`): `loss(
    logits (R, N), weights (R, N, T), runs) -> scalar`, the sum of each run's own
    (`runs`: the slice of the step's runs these are), and its gradients w.r.t. the
    logits, readouts and scores by torch autograd over these (N, T, R) numbers only.
    With `fixed` (S, N, T: `one_head_weights`), those weights stand in for
    softmax_t(score), which then gets no gradient."""

    def head(scores: torch.Tensor, readouts: torch.Tensor, bias: torch.Tensor, runs: slice):
        scores, readouts = scores.detach(), readouts.detach()
        with torch.enable_grad():
            wrt = [readouts.requires_grad_(True)]
            if fixed is None:
                weights = torch.softmax(scores.requires_grad_(True), 1)
                wrt.append(scores)
            else:
                weights = fixed[runs].permute(1, 2, 0)
            logits = (weights * readouts).sum(1) + bias
            value = loss(logits.T, weights.permute(2, 0, 1), runs)
            dlogit, dreadout, *dscore = torch.autograd.grad(value, [logits, *wrt])
        return logits.detach(), dlogit, dreadout, dscore[0] if dscore else torch.zeros_like(scores)

    return head


def one_head(head):
    """`runs_last_gradients`' head_loss from a `loss_head` (N, T, S), for one head."""

    def head_loss(scores: torch.Tensor, readouts: torch.Tensor, bias: torch.Tensor):
        one = (scores[:, :, 0], readouts[:, :, 0], bias, slice(0, scores.shape[-1]))
        logits, dlogit, dreadout, dscore = head(*one)
        return logits, dlogit, dreadout[:, :, None], dscore[:, :, None]

    return head_loss


def one_head_weights(fixed: torch.Tensor | None) -> torch.Tensor | None:
    """Fixed weights of one head, (S, N, 1, T) (`debate.training.each_run_weights`), as
    `loss_head` takes them: (S, N, T)."""
    return None if fixed is None else fixed.squeeze(-2)
