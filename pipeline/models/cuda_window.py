"""The fused CUDA training of the window kind: its sliding-window layer and the
pooling, forward and backward, one CUDA thread a run, every epoch in registers
(pipeline/models/cuda_launch.py says why and how it is launched). On a GPU this
replaces autograd on small tensors, slower there than the window kernel on the CPU
(docs/speed.md, "On a GPU").

The model per run and example (pipeline/models/window_kernel.py derives it), x_t the
input (C = 2), the keys of position t the steps j = max(0, t - w + 1) .. t:

    s_tj = x_t^T A x_j,  a_tj = softmax_j(s_tj),  z_t = sum_j a_tj x_j     (layer)
    score_t = u_k . x_t + beta . z_t,  r_t = u_v . x_t + gamma . z_t       (pooling)
    alpha = softmax_t(score),  context = sum_t alpha_t r_t,  o = context + b,

with A = Wq^T Wk / sqrt(d_k) (C, C), u_k = Wk^T q / sqrt(d_k), u_v = Wv^T w,
beta = Wv_layer^T u_k, gamma = Wv_layer^T u_v (h_t = x_t + Wv_layer z_t, so
u . h_t = u . x_t + (Wv_layer^T u) . z_t). Backward, g = (p(o) - y) / N:

    dr_t = g alpha_t,  dscore_t = dr_t (r_t - context),
    du_k += dscore_t x_t,  du_v += dr_t x_t,  dbeta += dscore_t z_t,  dgamma += dr_t z_t,
    dz_t = beta dscore_t + gamma dr_t,
    dA += x_t (sum_j a_tj (dz_t . x_j - dz_t . z_t) x_j)^T.

A thread keeps z_t, score_t and r_t of one example's T steps in local arrays
(4 T values); the layer's weights a_tj are recomputed in the backward (w exps a
step) rather than kept (T w values). At each epoch's end the chain to the
parameters (`window.kernel_step`): du_k += Wv_layer dbeta, du_v += Wv_layer dgamma,
the head's (`pooling.head_gradients`), dWq_layer = Wk_layer dA^T / sqrt(d_k) per
row, dWk_layer = Wq_layer dA / sqrt(d_k), dWv_layer = u_k dbeta^T + u_v dgamma^T.

tests/models/test_cuda_kernels.py runs it in numba's simulator against autograd through
`window.attend` (the definition), to 1e-10.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import torch
from numba import cuda, float64  # module globals: the simulator swaps `cuda` in them

from pipeline.models.cuda_launch import FusedTraining
from pipeline.models.cuda_pooling import EXP_FLOPS, bce_head, extrema
from pipeline.models.parameters import CHANNELS, Params


def flops(window: int, steps: int) -> int:
    """Float operations per (run, epoch, example), counted by hand from the kernel's
    loops: per step, the layer's scores (4 for A^T x_t, then 3 + 1 max a key), exps
    (1 + EXP_FLOPS + 1 + 4 a key), z (2 divides), score and readout (12), the pooling's
    max, exp, sums (EXP_FLOPS + 6); in the backward 30 for the pooling's part, the
    layer's scores and exps again and 10 a key; per example ~3 exps and 20 more."""
    keys = sum(min(window, t + 1) for t in range(steps))  # (t, j) pairs
    forward = steps * (4 + 2 + 12 + EXP_FLOPS + 6) + keys * (4 + EXP_FLOPS + 6)
    backward = steps * (4 + 2 + 30 + EXP_FLOPS) + keys * (4 + EXP_FLOPS + 6 + 10)
    return forward + backward + 3 * EXP_FLOPS + 20


@cache
def window_kernel(d_k: int, d_v: int, steps: int, window: int):
    """The kernel for one shape of run, one a process: numba compiles it once for the
    launches' signature (`cuda_launch.kernels_compile`), whatever the runs and epochs."""
    DK, DV, T, C, WIN = d_k, d_v, steps, CHANNELS, window
    ROOT = math.sqrt(d_k)
    # Offsets into a run's flat row (`window.layout`): Wk (d_k, C), Wv (d_v, C),
    # q (d_k), w (d_v), b, Wq_layer (d_k, C), Wk_layer (d_k, C), Wv_layer (C, C).
    WK, WV = 0, DK * C
    Q = WV + DV * C
    W = Q + DK
    B = W + DV
    WQL = B + 1
    WKL = WQL + DK * C
    WVL = WKL + DK * C
    SIZE = WVL + C * C
    # local arrays' lengths: compile-time constants, computed here (an expression in
    # the kernel does not type as one)
    CC, VEC, TC = C * C, 4 * C, T * C
    bce = bce_head()
    maximum = extrema()[0]

    @cuda.jit(device=True, inline=True)
    def layer_max(inputs, n, t, bilinear):
        """A^T x_t and the max of its keys' scores x_j . (A^T x_t)."""
        x0, x1 = inputs[n, t, 0], inputs[n, t, 1]
        y0 = bilinear[0] * x0 + bilinear[2] * x1
        y1 = bilinear[1] * x0 + bilinear[3] * x1
        most = -math.inf
        for j in range(maximum(0, t - WIN + 1), t + 1):
            most = maximum(most, y0 * inputs[n, j, 0] + y1 * inputs[n, j, 1])
        return y0, y1, most

    @cuda.jit
    def kernel(flat, inputs, labels, first, count, lr, loss, accuracy):
        run = cuda.grid(1)
        if run >= flat.shape[0]:
            return
        par = cuda.local.array(SIZE, float64)
        grad = cuda.local.array(SIZE, float64)
        bilinear = cuda.local.array(CC, float64)  # A (C, C)
        dbilinear = cuda.local.array(CC, float64)
        vec = cuda.local.array(VEC, float64)  # u_k, u_v, beta, gamma
        dvec = cuda.local.array(VEC, float64)
        z = cuda.local.array(TC, float64)  # one example's z_t, score_t, r_t
        score = cuda.local.array(T, float64)
        readout = cuda.local.array(T, float64)
        for i in range(SIZE):
            par[i] = flat[run, i]
        examples = inputs.shape[0]
        for epoch in range(first, first + count):
            for c in range(C):
                for d in range(C):
                    a = 0.0
                    for i in range(DK):
                        a += par[WQL + i * C + c] * par[WKL + i * C + d]
                    bilinear[c * C + d], dbilinear[c * C + d] = a / ROOT, 0.0
                k, v = 0.0, 0.0
                for i in range(DK):
                    k += par[WK + i * C + c] * par[Q + i]
                for i in range(DV):
                    v += par[WV + i * C + c] * par[W + i]
                vec[c], vec[C + c] = k / ROOT, v
            for d in range(C):  # beta = Wv_layer^T u_k, gamma = Wv_layer^T u_v
                beta, gamma = 0.0, 0.0
                for c in range(C):
                    beta += par[WVL + c * C + d] * vec[c]
                    gamma += par[WVL + c * C + d] * vec[C + c]
                vec[2 * C + d], vec[3 * C + d] = beta, gamma
            for i in range(4 * C):
                dvec[i] = 0.0
            dbias, loss_sum, hits = 0.0, 0.0, 0.0
            for n in range(examples):
                pool_max = -math.inf
                for t in range(T):  # the layer, then the pooling's score and readout
                    y0, y1, most = layer_max(inputs, n, t, bilinear)
                    total, z0, z1 = 0.0, 0.0, 0.0
                    for j in range(maximum(0, t - WIN + 1), t + 1):
                        p0, p1 = inputs[n, j, 0], inputs[n, j, 1]
                        e = math.exp(y0 * p0 + y1 * p1 - most)
                        total += e
                        z0 += e * p0
                        z1 += e * p1
                    z0, z1 = z0 / total, z1 / total
                    x0, x1 = inputs[n, t, 0], inputs[n, t, 1]
                    z[t * C], z[t * C + 1] = z0, z1
                    score[t] = vec[0] * x0 + vec[1] * x1 + vec[4] * z0 + vec[5] * z1
                    readout[t] = vec[2] * x0 + vec[3] * x1 + vec[6] * z0 + vec[7] * z1
                    pool_max = maximum(pool_max, score[t])
                pool_sum, weighted = 0.0, 0.0
                for t in range(T):
                    e = math.exp(score[t] - pool_max)
                    pool_sum += e
                    weighted += e * readout[t]
                context = weighted / pool_sum
                logit = context + par[B]
                g, example_loss, hit = bce(logit, labels[n], examples)
                loss_sum += example_loss
                hits += hit
                dbias += g
                for t in range(T):  # the backward
                    x0, x1, z0, z1 = inputs[n, t, 0], inputs[n, t, 1], z[t * C], z[t * C + 1]
                    dr = g * math.exp(score[t] - pool_max) / pool_sum
                    ds = dr * (readout[t] - context)
                    dvec[0] += ds * x0
                    dvec[1] += ds * x1
                    dvec[2] += dr * x0
                    dvec[3] += dr * x1
                    dvec[4] += ds * z0
                    dvec[5] += ds * z1
                    dvec[6] += dr * z0
                    dvec[7] += dr * z1
                    dz0 = vec[4] * ds + vec[6] * dr
                    dz1 = vec[5] * ds + vec[7] * dr
                    mean = dz0 * z0 + dz1 * z1
                    y0, y1, most = layer_max(inputs, n, t, bilinear)
                    total, e0, e1 = 0.0, 0.0, 0.0
                    for j in range(maximum(0, t - WIN + 1), t + 1):
                        p0, p1 = inputs[n, j, 0], inputs[n, j, 1]
                        e = math.exp(y0 * p0 + y1 * p1 - most)
                        total += e
                        spread = e * (dz0 * p0 + dz1 * p1 - mean)
                        e0 += spread * p0
                        e1 += spread * p1
                    e0, e1 = e0 / total, e1 / total
                    dbilinear[0] += x0 * e0
                    dbilinear[1] += x0 * e1
                    dbilinear[2] += x1 * e0
                    dbilinear[3] += x1 * e1
            loss[epoch, run] = loss_sum / examples
            accuracy[epoch, run] = hits / examples
            for c in range(C):  # the chain to the parameters (`window.kernel_step`)
                dkey, dvalue = dvec[c], dvec[C + c]
                for d in range(C):
                    dkey += par[WVL + c * C + d] * dvec[2 * C + d]
                    dvalue += par[WVL + c * C + d] * dvec[3 * C + d]
                    grad[WVL + c * C + d] = vec[c] * dvec[2 * C + d] + vec[C + c] * dvec[3 * C + d]
                dkey /= ROOT
                for i in range(DK):
                    grad[WK + i * C + c] = par[Q + i] * dkey
                for i in range(DV):
                    grad[WV + i * C + c] = par[W + i] * dvalue
                dvec[c], dvec[C + c] = dkey, dvalue  # kept for dq and dw
            for i in range(DK):
                dq = 0.0
                for c in range(C):
                    dq += par[WK + i * C + c] * dvec[c]
                grad[Q + i] = dq
            for i in range(DV):
                dw = 0.0
                for c in range(C):
                    dw += par[WV + i * C + c] * dvec[C + c]
                grad[W + i] = dw
            grad[B] = dbias
            for i in range(DK):  # dWq_layer = Wk_layer dA^T, dWk_layer = Wq_layer dA
                for c in range(C):
                    dq, dk = 0.0, 0.0
                    for d in range(C):
                        dq += dbilinear[c * C + d] * par[WKL + i * C + d]
                        dk += dbilinear[d * C + c] * par[WQL + i * C + d]
                    grad[WQL + i * C + c], grad[WKL + i * C + c] = dq / ROOT, dk / ROOT
            for i in range(SIZE):
                par[i] -= lr * grad[i]
        for i in range(SIZE):
            flat[run, i] = par[i]

    return kernel


def training(inputs: torch.Tensor, labels: torch.Tensor) -> FusedTraining:
    """The kind contract's `fused_training` for window: the kernel of the runs' shape
    and its data."""

    def kernel(params: Params) -> tuple[Callable, tuple[torch.Tensor, ...]]:
        cfg = params.cfg
        made = window_kernel(cfg.d_k, cfg.d_v, inputs.shape[1], cfg.window)
        return made, (inputs, labels.to(inputs))

    return FusedTraining(kernel, lambda params: flops(params.cfg.window, inputs.shape[1]))
