"""The window variant's layer and pooling in training on the CPU: compiled loops.

Why: 1000 seeds of every variant should train within the time target of
benchmarks/bench_variants.py on 2 cores (docs/speed.md). In torch's eager ops the
window variant misses it: each of its ~50 ops per epoch streams (window, N, T, runs)
intermediates through memory. Here numba compiles the arithmetic into loops that
keep one (run, example, step)'s numbers in registers, and torch computes the
exponentials, vectorized, between them (numba's scalar exp is slower than torch's).
README: Model variants has the timings.

The model, per run, with x_{t-o} written X_o:

    s_o = x_t^T A X_o,  a = softmax over the offsets o < min(w, t + 1) of s,
    z_t = sum_o a_o X_o,  h_t = x_t + Wv z_t,
    score_t = u_k . x_t + beta . z_t,  r_t = u_v . x_t + gamma . z_t,
    alpha = softmax_t(score),  context = sum_t alpha_t r_t,

with A = Wq^T Wk / sqrt(d_k), u_k and u_v the lesson's key and value directions,
beta = Wv^T u_k and gamma = Wv^T u_v (`window.gradient_step` computes these and
their part of the chain by hand). Backward, from the pooling head's dr_t and
dscore_t (`bce_head`, training's, with g = dL/dcontext: dr_t = g alpha_t,
dscore_t = dr_t (r_t - context); `pooling_gradients.loss_head`, the debate's, any
loss on the pooling): du_k = sum dscore x, du_v = sum dr x, dbeta = sum dscore z,
dgamma = sum dr z, dz = beta dscore + gamma dr, da_o = dz . X_o,
ds_o = a_o (da_o - sum_o' a_o' da_o'), dA = sum ds x X_o^T.

The layer's weights are packed: position t keeps the slots of its keys
j = t - min(w, t + 1) + 1 .. t only (`slot_starts`), 78 for w = T = 12 instead of
144. Runs sit innermost, in tiles of `TILE`; threads take whole tiles. Training's
step (`logits_and_gradients`) runs each tile's backward right after its forward.
tests/models/test_models.py and tests/experiments/test_debate_training.py check the logits and
gradients against autograd through `window.attend`, the definition.
numba caches the compiled loops next to this file (`cache=True`): the first use
after an install compiles them, once.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from numba import njit

from pipeline.models.parameters import CHANNELS
from pipeline.models.pooling import probability
from pipeline.models.threads import run_jobs

# Runs per tile, innermost in every buffer, so every loop body is one operation
# over a tile's runs, which LLVM vectorises without fastmath: each run's numbers are
# plain IEEE operations in a fixed order, the same in a vector lane or a scalar
# remainder. Threads take whole tiles, so the numbers do not depend on the thread
# count; another tile width moves last bits (torch's exp takes a scalar path for a
# buffer's tail). 32 is the fastest width on the 2-core machine, far faster than
# scalar loops over one run at a time (docs/speed.md).
TILE = 32


def slot_starts(steps: int, window: int) -> np.ndarray:
    """Where each position's keys start in the packed layout: position t scores the
    keys j = t - reach + 1 .. t (reach = min(w, t + 1)) in slots starts[t] ..
    starts[t + 1] - 1, in that order; no slot for a key before step 0."""
    reach = np.minimum(window, np.arange(steps) + 1)
    return np.concatenate([[0], np.cumsum(reach)]).astype(np.int64)


@njit(nogil=True, cache=True, error_model="numpy")
def _layer_scores(x, bilinear, starts, weights):
    """weights[n, slot of (t, j), r] = s_j - max_j s_j for a tile's runs r;
    bilinear (4, R): A_00, A_01, A_10, A_11."""
    examples, steps, runs = x.shape[0], x.shape[1], weights.shape[2]
    y0, y1, top = np.empty(runs), np.empty(runs), np.empty(runs)
    for n in range(examples):
        xn, wn = x[n], weights[n]
        for t in range(steps):
            x0, x1 = xn[t, 0], xn[t, 1]
            for r in range(runs):  # A^T x_t
                y0[r] = bilinear[0, r] * x0 + bilinear[2, r] * x1
                y1[r] = bilinear[1, r] * x0 + bilinear[3, r] * x1
                top[r] = -np.inf
            base, end = starts[t], starts[t + 1]
            low = t + 1 - (end - base)
            for k in range(base, end):
                p0, p1 = xn[low + k - base, 0], xn[low + k - base, 1]
                row = wn[k]
                for r in range(runs):
                    score = y0[r] * p0 + y1[r] * p1
                    row[r] = score
                    top[r] = max(top[r], score)
            for k in range(base, end):
                row = wn[k]
                for r in range(runs):
                    row[r] -= top[r]


@njit(nogil=True, cache=True, error_model="numpy")
def _layer_outputs(x, directions, starts, weights, pooling, readouts):
    """From exp(weights): the softmax weights a (in place), pooling scores minus their
    max over steps, and readouts r (N, T, R); directions (8, R): u_k, u_v, beta, gamma."""
    examples, steps, runs = x.shape[0], x.shape[1], weights.shape[2]
    k0, k1, v0, v1 = directions[0], directions[1], directions[2], directions[3]
    b0, b1, g0, g1 = directions[4], directions[5], directions[6], directions[7]
    scale, z0, z1, top = np.empty(runs), np.empty(runs), np.empty(runs), np.empty(runs)
    for n in range(examples):
        xn, wn, pn, rn = x[n], weights[n], pooling[n], readouts[n]
        for r in range(runs):
            top[r] = -np.inf
        for t in range(steps):
            base, end = starts[t], starts[t + 1]
            low = t + 1 - (end - base)
            for r in range(runs):
                scale[r], z0[r], z1[r] = 0.0, 0.0, 0.0
            for k in range(base, end):
                row = wn[k]
                for r in range(runs):
                    scale[r] += row[r]
            for r in range(runs):
                scale[r] = 1.0 / scale[r]
            for k in range(base, end):
                p0, p1 = xn[low + k - base, 0], xn[low + k - base, 1]
                row = wn[k]
                for r in range(runs):
                    weight = row[r] * scale[r]
                    row[r] = weight
                    z0[r] += weight * p0
                    z1[r] += weight * p1
            x0, x1 = xn[t, 0], xn[t, 1]
            prow, rrow = pn[t], rn[t]
            for r in range(runs):
                score = k0[r] * x0 + k1[r] * x1 + b0[r] * z0[r] + b1[r] * z1[r]
                prow[r] = score
                top[r] = max(top[r], score)
                rrow[r] = v0[r] * x0 + v1[r] * x1 + g0[r] * z0[r] + g1[r] * z1[r]
        for t in range(steps):
            prow = pn[t]
            for r in range(runs):
                prow[r] -= top[r]


@njit(nogil=True, cache=True, error_model="numpy")
def _backward_tile(x, beta_gamma, starts, dreadouts, dscores, weights, grads):
    """A tile's gradients into grads (12, R): dA_00, dA_01, dA_10, dA_11, du_k, du_v,
    dbeta, dgamma, from the loss's gradients w.r.t. the readouts r_t and the pooling
    scores score_t (N, T, R); beta_gamma (4, R); z is recomputed from a (cheaper than
    saved)."""
    examples, steps, runs = x.shape[0], x.shape[1], weights.shape[2]
    b0, b1, g0, g1 = beta_gamma[0], beta_gamma[1], beta_gamma[2], beta_gamma[3]
    z0, z1, dz0, dz1 = np.empty(runs), np.empty(runs), np.empty(runs), np.empty(runs)
    mean, e0, e1 = np.empty(runs), np.empty(runs), np.empty(runs)
    grads[:] = 0.0
    for n in range(examples):
        xn, wn, dreadout_n, dscore_n = x[n], weights[n], dreadouts[n], dscores[n]
        for t in range(steps):
            base, end = starts[t], starts[t + 1]
            low = t + 1 - (end - base)
            for r in range(runs):
                z0[r], z1[r] = 0.0, 0.0
            for k in range(base, end):
                p0, p1 = xn[low + k - base, 0], xn[low + k - base, 1]
                row = wn[k]
                for r in range(runs):
                    z0[r] += row[r] * p0
                    z1[r] += row[r] * p1
            x0, x1 = xn[t, 0], xn[t, 1]
            dreadout_t, dscore_t = dreadout_n[t], dscore_n[t]
            for r in range(runs):
                dreadout, dscore = dreadout_t[r], dscore_t[r]
                grads[4, r] += dscore * x0
                grads[5, r] += dscore * x1
                grads[6, r] += dreadout * x0
                grads[7, r] += dreadout * x1
                grads[8, r] += dscore * z0[r]
                grads[9, r] += dscore * z1[r]
                grads[10, r] += dreadout * z0[r]
                grads[11, r] += dreadout * z1[r]
                dz0[r] = b0[r] * dscore + g0[r] * dreadout
                dz1[r] = b1[r] * dscore + g1[r] * dreadout
                # ds_j = a_j (dz . x_j - dz . z), as sum_j a_j dz . x_j = dz . z; and
                # dA = sum_j ds_j x_t x_j^T = x_t (sum_j ds_j x_j)^T.
                mean[r] = dz0[r] * z0[r] + dz1[r] * z1[r]
                e0[r], e1[r] = 0.0, 0.0
            for k in range(base, end):
                p0, p1 = xn[low + k - base, 0], xn[low + k - base, 1]
                row = wn[k]
                for r in range(runs):
                    ds = row[r] * (dz0[r] * p0 + dz1[r] * p1 - mean[r])
                    e0[r] += ds * p0
                    e1[r] += ds * p1
            for r in range(runs):
                grads[0, r] += x0 * e0[r]
                grads[1, r] += x0 * e1[r]
                grads[2, r] += x1 * e0[r]
                grads[3, r] += x1 * e1[r]


def _forward_tile(
    x: np.ndarray, layer: np.ndarray, directions: np.ndarray, starts: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One tile's layer weights (N, slots, R), and its pooling scores minus their max
    over steps and readouts (N, T, R); layer (4, R), directions (8, R)."""
    (examples, steps, _), runs = x.shape, layer.shape[1]
    dtype = getattr(torch, str(x.dtype))
    weights = torch.empty(examples, int(starts[-1]), runs, dtype=dtype)
    scores = torch.empty(examples, steps, runs, dtype=dtype)
    readouts = torch.empty_like(scores)
    _layer_scores(x, np.ascontiguousarray(layer), starts, weights.numpy())
    weights.exp_()
    _layer_outputs(
        x,
        np.ascontiguousarray(directions),
        starts,
        weights.numpy(),
        scores.numpy(),
        readouts.numpy(),
    )
    return weights, scores, readouts


def bce_head(labels: torch.Tensor):
    """Training's pooling head on a tile: alpha = softmax_t(score), the logits and the
    mean BCE's gradients (with the lesson's clamp in the probability, as
    `train.surrogate_loss`) w.r.t. the logits, the readouts and the scores:
    dr_t = g alpha_t, dscore_t = dr_t (r_t - context), g = (p - y) / N."""

    def head(scores, readouts, bias, runs: slice):
        alpha = scores.exp_()
        alpha /= alpha.sum(1, keepdim=True)
        context = (alpha * readouts).sum(1)
        logits = context + bias
        dlogit = (probability(logits) - labels[:, None]) / labels.shape[0]  # (N, R)
        dreadout = dlogit[:, None, :] * alpha
        return logits, dlogit, dreadout, dreadout * (readouts - context[:, None, :])

    return head


def logits_and_gradients(
    bilinear: torch.Tensor,
    key_dir: torch.Tensor,
    value_dir: torch.Tensor,
    beta: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor,
    inputs: torch.Tensor,
    head,
    window: int,
    threads: int,
) -> tuple[torch.Tensor, ...]:
    """Training's fused step: the logits (S, N) and the loss's gradients for A, u_k,
    u_v, beta, gamma and b, the loss being the pooling `head`'s (`bce_head`, training's;
    `loss_head`, any loss on the logits and pooling weights). A run's gradient needs
    only its own numbers, so each tile runs its backward right after its forward,
    while its buffers are in cache."""
    examples, runs = inputs.shape[0], bilinear.shape[0]
    x, starts, layer, directions = _kernel_inputs(
        inputs, window, bilinear, key_dir, value_dir, beta, gamma
    )
    beta_gamma, offsets = directions[4:], bias.detach()
    logits = torch.empty(runs, examples, dtype=inputs.dtype)
    dlogits = torch.empty_like(logits)
    grads = np.empty((12, runs))

    def task(first: int, last: int) -> None:
        weights, scores, readouts = _forward_tile(
            x, layer[:, first:last], directions[:, first:last], starts
        )
        tile_logits, dlogit, dreadout, dscore = head(
            scores, readouts, offsets[first:last], slice(first, last)
        )
        grads[:, first:last] = _tile_backward(
            x, beta_gamma[:, first:last], starts, dreadout, dscore, weights
        )
        logits[first:last] = tile_logits.T
        dlogits[first:last] = dlogit.T

    _over_tiles(task, runs, threads)
    dbias = dlogits.sum(1)  # over the whole (S, N): a tile's own sum would depend on its width
    return logits, *_unpacked(grads, inputs.dtype), dbias


def _over_tiles(task, runs: int, threads: int) -> None:
    """task(first, last) for every tile of `TILE` runs, on `threads` threads of our own
    (the compiled loops release the GIL): each tile's own exp runs in its thread."""
    tiles = [(first, min(runs, first + TILE)) for first in range(0, runs, TILE)]
    run_jobs([partial(task, first, last) for first, last in tiles], threads)


def _kernel_inputs(inputs: torch.Tensor, window: int, *tensors: torch.Tensor):
    """x (N, T, C), the slot starts, and A (4, S) and the directions (8, S) runs last."""
    steps, channels = inputs.shape[1:]
    if channels != CHANNELS:
        raise ValueError(f"the window kernel reads {CHANNELS} channels, got {channels}")
    x = inputs.detach().contiguous().numpy()
    return x, slot_starts(steps, window), _runs_last(tensors[0]), _runs_last(*tensors[1:])


def _tile_backward(x, beta_gamma, starts, dreadout, dscore, weights) -> np.ndarray:
    """One tile's (12, R) gradients from the loss's dreadout and dscore (N, T, R) and
    its forward's layer weights."""
    part = np.empty((12, dreadout.shape[2]))
    _backward_tile(
        x,
        np.ascontiguousarray(beta_gamma),
        starts,
        np.ascontiguousarray(dreadout.detach().numpy()),
        np.ascontiguousarray(dscore.detach().numpy()),
        weights.numpy(),
        part,
    )
    return part


def _unpacked(grads: np.ndarray, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """(12, S) gradients -> dA (S, C, C) and du_k, du_v, dbeta, dgamma (S, C)."""
    out = torch.from_numpy(grads.T.copy()).to(dtype)  # (S, 12)
    dbilinear = out[:, :4].reshape(-1, CHANNELS, CHANNELS)
    return dbilinear, *(out[:, 4 + 2 * i : 6 + 2 * i].contiguous() for i in range(4))


def _runs_last(*tensors: torch.Tensor) -> np.ndarray:
    """(S, ...) tensors as one (sum of their widths, S) array: the runs innermost."""
    columns = torch.cat([t.detach().reshape(t.shape[0], -1) for t in tensors], 1)
    return columns.T.contiguous().numpy()
