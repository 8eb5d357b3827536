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

Every loop runs over whole runs in a fixed order, so a run's numbers do not depend
on how the runs are split over threads or tiles. tests/test_models.py checks the
logits and gradients against autograd through `window.attend`, the definition.
numba caches the compiled loops next to this file (`cache=True`): the first use
after an install compiles them, once, in about 3 s.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import pairwise

import numpy as np
import torch
from numba import njit

from pipeline.models.params import CHANNELS

# Runs per pass of a thread's forward: a tile's (runs, N, T, w) weights, 2.6 MB for
# 25 runs, stay in cache from the compiled scores through exp to the compiled outputs.
TILE = 25
# LLVM may contract a * b + c to one rounding, use reciprocals and reorder sums (the
# numbers still depend only on the code and the run, not on threads or tiles); not
# "nnan" or "ninf": masked offsets are -inf and a diverged run must stay NaN.
FAST = {"contract", "arcp", "reassoc", "nsz"}


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FAST)
def _layer_scores(x, bilinear, window, first, last, weights):
    """weights[s, n, t, o] = s_o - max_o s_o of runs first..last-1; -inf before step 0."""
    examples, steps = x.shape[0], x.shape[1]
    for s in range(first, last):
        a00, a01 = bilinear[s, 0, 0], bilinear[s, 0, 1]
        a10, a11 = bilinear[s, 1, 0], bilinear[s, 1, 1]
        a = weights[s]
        for n in range(examples):
            for t in range(steps):
                x0, x1 = x[n, t, 0], x[n, t, 1]
                y0, y1 = a00 * x0 + a10 * x1, a01 * x0 + a11 * x1  # A^T x_t
                reach = min(window, t + 1)
                top = -np.inf
                for o in range(reach):
                    a[n, t, o] = y0 * x[n, t - o, 0] + y1 * x[n, t - o, 1]
                    top = max(top, a[n, t, o])
                for o in range(reach):
                    a[n, t, o] -= top
                for o in range(reach, window):
                    a[n, t, o] = -np.inf


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FAST)
def _layer_outputs(x, key_dir, value_dir, beta, gamma, first, last, weights, pooling,
                   readouts):  # fmt: skip
    """From exp(weights): the softmax weights a (in place), pooling scores minus their
    max over steps, and readouts r, of runs first..last-1."""
    examples, steps, window = weights.shape[1], weights.shape[2], weights.shape[3]
    for s in range(first, last):
        k0, k1, v0, v1 = key_dir[s, 0], key_dir[s, 1], value_dir[s, 0], value_dir[s, 1]
        b0, b1, g0, g1 = beta[s, 0], beta[s, 1], gamma[s, 0], gamma[s, 1]
        a = weights[s]
        for n in range(examples):
            top = -np.inf
            for t in range(steps):
                total = 0.0
                for o in range(window):
                    total += a[n, t, o]
                z0, z1 = 0.0, 0.0
                for o in range(min(window, t + 1)):
                    a[n, t, o] /= total
                    z0 += a[n, t, o] * x[n, t - o, 0]
                    z1 += a[n, t, o] * x[n, t - o, 1]
                x0, x1 = x[n, t, 0], x[n, t, 1]
                pooling[s, n, t] = k0 * x0 + k1 * x1 + b0 * z0 + b1 * z1
                top = max(top, pooling[s, n, t])
                readouts[s, n, t] = v0 * x0 + v1 * x1 + g0 * z0 + g1 * z1
            for t in range(steps):
                pooling[s, n, t] -= top


@njit(nogil=True, cache=True, error_model="numpy", fastmath=FAST)
def _backward_runs(x, beta, gamma, first, last, dcontext, context, weights, pooling, readouts,
                   dbilinear, dkey_dir, dvalue_dir, dbeta, dgamma):  # fmt: skip
    """The gradients of runs first..last-1; z is recomputed from a (cheaper than saved)."""
    examples, steps, window = weights.shape[1], weights.shape[2], weights.shape[3]
    for s in range(first, last):
        b0, b1, g0, g1 = beta[s, 0], beta[s, 1], gamma[s, 0], gamma[s, 1]
        da00, da01, da10, da11 = 0.0, 0.0, 0.0, 0.0
        dk0, dk1, dv0, dv1, db0, db1, dg0, dg1 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        a = weights[s]
        for n in range(examples):
            g, out = dcontext[s, n], context[s, n]
            for t in range(steps):
                reach = min(window, t + 1)
                x0, x1 = x[n, t, 0], x[n, t, 1]
                z0, z1 = 0.0, 0.0
                for o in range(reach):
                    z0 += a[n, t, o] * x[n, t - o, 0]
                    z1 += a[n, t, o] * x[n, t - o, 1]
                dreadout = g * pooling[s, n, t]
                dscore = dreadout * (readouts[s, n, t] - out)
                dk0 += dscore * x0
                dk1 += dscore * x1
                dv0 += dreadout * x0
                dv1 += dreadout * x1
                db0 += dscore * z0
                db1 += dscore * z1
                dg0 += dreadout * z0
                dg1 += dreadout * z1
                dz0, dz1 = b0 * dscore + g0 * dreadout, b1 * dscore + g1 * dreadout
                mean = 0.0
                for o in range(reach):
                    mean += a[n, t, o] * (dz0 * x[n, t - o, 0] + dz1 * x[n, t - o, 1])
                for o in range(reach):
                    p0, p1 = x[n, t - o, 0], x[n, t - o, 1]
                    ds = a[n, t, o] * (dz0 * p0 + dz1 * p1 - mean)
                    da00 += ds * x0 * p0
                    da01 += ds * x0 * p1
                    da10 += ds * x1 * p0
                    da11 += ds * x1 * p1
        dbilinear[s, 0, 0], dbilinear[s, 0, 1] = da00, da01
        dbilinear[s, 1, 0], dbilinear[s, 1, 1] = da10, da11
        dkey_dir[s, 0], dkey_dir[s, 1], dvalue_dir[s, 0], dvalue_dir[s, 1] = dk0, dk1, dv0, dv1
        dbeta[s, 0], dbeta[s, 1], dgamma[s, 0], dgamma[s, 1] = db0, db1, dg0, dg1


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="window")


def _over_runs(task, runs: int, threads: int) -> None:
    """task(first, last) for `threads` blocks of the runs, in threads of our own (the
    compiled loops release the GIL), with torch's ops on one thread meanwhile: each
    block's own exp runs in its thread."""
    threads = max(1, min(threads, runs))
    bounds = [runs * i // threads for i in range(threads + 1)]
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # a pool thread keeps the count it first sees
    try:
        if threads == 1:
            task(0, runs)
            return
        jobs = [_pool(threads).submit(task, first, last) for first, last in pairwise(bounds)]
        for job in jobs:
            job.result()
    finally:
        torch.set_num_threads(previous)


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
        context = torch.empty(runs, examples, dtype=inputs.dtype)
        weights = torch.empty(runs, examples, steps, window, dtype=inputs.dtype)
        pooling = torch.empty(runs, examples, steps, dtype=inputs.dtype)
        readouts = torch.empty_like(pooling)
        x, bilinear_, *directions = _arrays(inputs, bilinear, key_dir, value_dir, beta, gamma)
        buffers = _arrays(weights, pooling, readouts)

        def task(first: int, last: int) -> None:
            for start in range(first, last, TILE):
                stop = min(last, start + TILE)
                _layer_scores(x, bilinear_, window, start, stop, buffers[0])
                weights[start:stop].exp_()
                _layer_outputs(x, *directions, start, stop, *buffers)
                alpha = pooling[start:stop].exp_()
                alpha /= alpha.sum(-1, keepdim=True)
                torch.sum(alpha * readouts[start:stop], -1, out=context[start:stop])

        _over_runs(task, runs, threads)
        ctx.threads = threads
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
            lambda first, last: _backward_runs(x, beta_, gamma_, first, last, *rest),
            runs,
            ctx.threads,
        )
        return dbilinear, *ddirections, None, None, None
