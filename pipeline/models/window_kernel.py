"""The window variant's layer and pooling in training on the CPU: compiled loops.

Issue 12 asks for 1000 seeds of every variant in 60 s on 2 cores. In torch's eager
ops the window variant took 57 to 71 s: each of its ~50 ops per epoch streamed
(window, N, T, runs) intermediates through memory. Here numba compiles the
arithmetic into loops that keep one (run, example, step)'s numbers in registers,
and torch computes the exponentials, vectorized, between them (numba's scalar
exp costs two to three times torch's). README: Model variants has the timings.

The model, per run, with x_{t-o} written X_o:

    s_o = x_t^T A X_o,  a = softmax over the offsets o < min(w, t + 1) of s,
    z_t = sum_o a_o X_o,  h_t = x_t + Wv z_t,
    score_t = u_k . x_t + beta . z_t,  r_t = u_v . x_t + gamma . z_t,
    alpha = softmax_t(score),  context = sum_t alpha_t r_t,

with A = Wq^T Wk / sqrt(d_k), u_k and u_v the lesson's key and value directions,
beta = Wv^T u_k and gamma = Wv^T u_v (`window.training_logits` computes these, and
autograd takes that part of the chain). Backward, with g = dL/dcontext:
dr_t = g alpha_t, dscore_t = dr_t (r_t - context), du_k = sum dscore x,
du_v = sum dr x, dbeta = sum dscore z, dgamma = sum dr z, dz = beta dscore + gamma dr,
da_o = dz . X_o, ds_o = a_o (da_o - sum_o' a_o' da_o'), dA = sum ds x X_o^T.

The layer's weights are packed: position t keeps the slots of its keys
j = t - min(w, t + 1) + 1 .. t only (`slot_starts`), 78 for w = T = 12 instead of
144. Every loop runs over whole runs in a fixed order, so a run's numbers do not
depend on how the runs are split over threads or tiles. tests/test_models.py checks the
logits and gradients against autograd through `window.attend`, the definition.
numba caches the compiled loops next to this file (`cache=True`): the first use
after an install compiles them, once, in about 3 s.
"""

from __future__ import annotations

from functools import partial
from itertools import pairwise

import numpy as np
import torch
from numba import njit

from pipeline.models.params import CHANNELS
from pipeline.models.threads import run_jobs

# Bytes of a thread's tile of layer weights: a tile's (runs, N, slots) weights stay in
# cache from the compiled scores through exp to the compiled outputs (measured on the
# 2-core machine, w = 12, 250 runs: 10 MB tiles 17.3 s, 2.5 MB tiles 13.4 s).
TILE_BYTES = 2_600_000
# LLVM may contract a * b + c to one rounding, use reciprocals and reorder sums (the
# numbers still depend only on the code and the run, not on threads or tiles); not
# "nnan" or "ninf": a diverged run must stay NaN.
FAST = {"contract", "arcp", "reassoc", "nsz"}


def slot_starts(steps: int, window: int) -> np.ndarray:
    """Where each position's keys start in the packed layout: position t scores the
    keys j = t - reach + 1 .. t (reach = min(w, t + 1)) in slots starts[t] ..
    starts[t + 1] - 1, in that order; no slot for a key before step 0."""
    reach = np.minimum(window, np.arange(steps) + 1)
    return np.concatenate([[0], np.cumsum(reach)]).astype(np.int64)


# The loops index one example's rows (x[n], a[n]) and keep a running maximum with a
# comparison, not max(): 7x faster scores on w = 12 (max() keeps NaN semantics that
# stop LLVM's vectorizer; a NaN score still propagates through the subtraction).


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FAST)
def _layer_scores(x, bilinear, starts, first, last, weights):
    """weights[s, n, slot of (t, j)] = s_j - max_j s_j of runs first..last-1."""
    examples, steps = x.shape[0], x.shape[1]
    for s in range(first, last):
        a00, a01 = bilinear[s, 0, 0], bilinear[s, 0, 1]
        a10, a11 = bilinear[s, 1, 0], bilinear[s, 1, 1]
        for n in range(examples):
            xn, row = x[n], weights[s, n]
            for t in range(steps):
                x0, x1 = xn[t, 0], xn[t, 1]
                y0, y1 = a00 * x0 + a10 * x1, a01 * x0 + a11 * x1  # A^T x_t
                base, end = starts[t], starts[t + 1]
                low = t + 1 - (end - base)
                top = y0 * xn[low, 0] + y1 * xn[low, 1]
                for k in range(base, end):
                    j = low + k - base
                    score = y0 * xn[j, 0] + y1 * xn[j, 1]
                    row[k] = score
                    if score > top:
                        top = score
                for k in range(base, end):
                    row[k] -= top


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FAST)
def _layer_outputs(x, key_dir, value_dir, beta, gamma, starts, first, last, weights, pooling,
                   readouts):  # fmt: skip
    """From exp(weights): the softmax weights a (in place), pooling scores minus their
    max over steps, and readouts r, of runs first..last-1."""
    examples, steps = x.shape[0], x.shape[1]
    for s in range(first, last):
        k0, k1, v0, v1 = key_dir[s, 0], key_dir[s, 1], value_dir[s, 0], value_dir[s, 1]
        b0, b1, g0, g1 = beta[s, 0], beta[s, 1], gamma[s, 0], gamma[s, 1]
        for n in range(examples):
            xn, row, scores, values = x[n], weights[s, n], pooling[s, n], readouts[s, n]
            for t in range(steps):
                base, end = starts[t], starts[t + 1]
                low = t + 1 - (end - base)
                total = 0.0
                for k in range(base, end):
                    total += row[k]
                scale = 1.0 / total
                z0, z1 = 0.0, 0.0
                for k in range(base, end):
                    j = low + k - base
                    weight = row[k] * scale
                    row[k] = weight
                    z0 += weight * xn[j, 0]
                    z1 += weight * xn[j, 1]
                x0, x1 = xn[t, 0], xn[t, 1]
                scores[t] = k0 * x0 + k1 * x1 + b0 * z0 + b1 * z1
                values[t] = v0 * x0 + v1 * x1 + g0 * z0 + g1 * z1
            top = scores[0]
            for t in range(1, steps):
                if scores[t] > top:
                    top = scores[t]
            for t in range(steps):
                scores[t] -= top


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FAST)
def _backward_runs(x, beta, gamma, starts, first, last, dcontext, context, weights, pooling,
                   readouts, dbilinear, dkey_dir, dvalue_dir, dbeta, dgamma):  # fmt: skip
    """The gradients of runs first..last-1; z is recomputed from a (cheaper than saved).
    `pooling` holds the pooling weights alpha by now."""
    examples, steps = x.shape[0], x.shape[1]
    for s in range(first, last):
        b0, b1, g0, g1 = beta[s, 0], beta[s, 1], gamma[s, 0], gamma[s, 1]
        da00, da01, da10, da11 = 0.0, 0.0, 0.0, 0.0
        dk0, dk1, dv0, dv1, db0, db1, dg0, dg1 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        for n in range(examples):
            xn, row, alpha, values = x[n], weights[s, n], pooling[s, n], readouts[s, n]
            g, out = dcontext[s, n], context[s, n]
            for t in range(steps):
                base, end = starts[t], starts[t + 1]
                low = t + 1 - (end - base)
                x0, x1 = xn[t, 0], xn[t, 1]
                z0, z1 = 0.0, 0.0
                for k in range(base, end):
                    j = low + k - base
                    z0 += row[k] * xn[j, 0]
                    z1 += row[k] * xn[j, 1]
                dreadout = g * alpha[t]
                dscore = dreadout * (values[t] - out)
                dk0 += dscore * x0
                dk1 += dscore * x1
                dv0 += dreadout * x0
                dv1 += dreadout * x1
                db0 += dscore * z0
                db1 += dscore * z1
                dg0 += dreadout * z0
                dg1 += dreadout * z1
                dz0, dz1 = b0 * dscore + g0 * dreadout, b1 * dscore + g1 * dreadout
                # ds_j = a_j (dz . x_j - dz . z), as sum_j a_j dz . x_j = dz . z; and
                # dA = sum_j ds_j x_t x_j^T = x_t (sum_j ds_j x_j)^T.
                mean = dz0 * z0 + dz1 * z1
                e0, e1 = 0.0, 0.0
                for k in range(base, end):
                    j = low + k - base
                    p0, p1 = xn[j, 0], xn[j, 1]
                    ds = row[k] * (dz0 * p0 + dz1 * p1 - mean)
                    e0 += ds * p0
                    e1 += ds * p1
                da00 += x0 * e0
                da01 += x0 * e1
                da10 += x1 * e0
                da11 += x1 * e1
        dbilinear[s, 0, 0], dbilinear[s, 0, 1] = da00, da01
        dbilinear[s, 1, 0], dbilinear[s, 1, 1] = da10, da11
        dkey_dir[s, 0], dkey_dir[s, 1], dvalue_dir[s, 0], dvalue_dir[s, 1] = dk0, dk1, dv0, dv1
        dbeta[s, 0], dbeta[s, 1], dgamma[s, 0], dgamma[s, 1] = db0, db1, dg0, dg1


def _over_runs(task, runs: int, threads: int) -> None:
    """task(first, last) for `threads` blocks of the runs, in threads of our own (the
    compiled loops release the GIL): each block's own exp runs in its thread."""
    threads = max(1, min(threads, runs))
    bounds = [runs * i // threads for i in range(threads + 1)]
    run_jobs([partial(task, first, last) for first, last in pairwise(bounds)], threads)


def _arrays(*tensors: torch.Tensor) -> list[np.ndarray]:
    """numpy views for the compiled loops (the tensors are on the CPU)."""
    return [t.detach().contiguous().numpy() for t in tensors]


class WindowContext(torch.autograd.Function):
    """context (S, N) = sum_t alpha_t r_t of every run and example (see the module),
    computed on `threads` threads."""

    @staticmethod
    def forward(ctx, bilinear, key_dir, value_dir, beta, gamma, inputs, window, threads):
        (examples, steps, channels), runs = inputs.shape, bilinear.shape[0]
        if channels != CHANNELS:
            raise ValueError(f"the window kernel reads {CHANNELS} channels, got {channels}")
        starts = slot_starts(steps, window)
        context = torch.empty(runs, examples, dtype=inputs.dtype)
        weights = torch.empty(runs, examples, int(starts[-1]), dtype=inputs.dtype)
        pooling = torch.empty(runs, examples, steps, dtype=inputs.dtype)
        readouts = torch.empty_like(pooling)
        x, bilinear_, *directions = _arrays(inputs, bilinear, key_dir, value_dir, beta, gamma)
        buffers = _arrays(weights, pooling, readouts)

        tile = max(1, TILE_BYTES // (weights[0].numel() * weights.element_size()))

        def task(first: int, last: int) -> None:
            for start in range(first, last, tile):
                stop = min(last, start + tile)
                _layer_scores(x, bilinear_, starts, start, stop, buffers[0])
                weights[start:stop].exp_()
                _layer_outputs(x, *directions, starts, start, stop, *buffers)
                alpha = pooling[start:stop].exp_()
                alpha /= alpha.sum(-1, keepdim=True)
                torch.sum(alpha * readouts[start:stop], -1, out=context[start:stop])

        _over_runs(task, runs, threads)
        ctx.threads, ctx.starts = threads, starts
        ctx.save_for_backward(inputs, beta, gamma, context, weights, pooling, readouts)
        return context

    @staticmethod
    def backward(ctx, dcontext):
        inputs, beta, gamma, *saved = ctx.saved_tensors
        runs = beta.shape[0]
        dbilinear = torch.empty(runs, CHANNELS, CHANNELS, dtype=inputs.dtype)
        ddirections = [torch.empty(runs, CHANNELS, dtype=inputs.dtype) for _ in range(4)]
        x, beta_, gamma_, *rest = _arrays(
            inputs, beta, gamma, dcontext, *saved, dbilinear, *ddirections
        )
        _over_runs(
            lambda first, last: _backward_runs(x, beta_, gamma_, ctx.starts, first, last, *rest),
            runs,
            ctx.threads,
        )
        return dbilinear, *ddirections, None, None, None
