"""The fused CUDA training of the single-query pooling kinds: lesson, sink, multihead
and posenc (its p learned or fixed). One CUDA thread trains one run, every epoch in
registers; pipeline/models/cuda_launch.py says why and how it is launched.

The model, per run: H heads h with key and value directions u_h = Wk_h^T q_h /
sqrt(d_k) and v_h = Wv_h^T w_h (C = 2 each: `pooling.key_direction`); per example
the pooled steps y_t = x_t (+ p_t for posenc), scores s_t = u_h . y_t, readouts
z_t = v_h . y_t, weights a = softmax_t(s) (with exp(sink) in the sum for sink),
context c_h = sum_t a_t z_t, logit o = sum_h c_h + b. With g = dL/do = (p(o) - y)/N
(the lesson's clamp of o to [-30, 30] in p), per head (`pooling_gradients` derives it):

    dv_h = g sum_t a_t y_t,    du_h = g sum_t a_t (z_t - c_h) y_t
         = g (sum_t e_t y_t) / E,    = g (sum_t e_t z_t y_t - c_h sum_t e_t y_t) / E,
    dsink = -g a_sink c_h,     dp_t = g a_t ((z_t - c_h) u_h + v_h),

with e_t = exp(s_t - max) and E = sum_t e_t (+ the sink's): the moments of the
lesson's fast path (`lesson.moment_gradients`), here taken over every step of one
example in one pass, so they need no one-hot marker and no (N, T, S) tensor. Per
example a thread makes one pass over the T steps for the max score, one for the sums
(one exp a step), and for a learned p one more for dp_t (which needs c_h). The
chain to the parameters, at each epoch's end (`pooling.head_gradients`):
dWk_h = q_h dU_h^T, dq_h = Wk_h dU_h with dU_h = du_h / sqrt(d_k); dWv_h = w_h dv_h^T,
dw_h = Wv_h dv_h. Then every parameter takes p - lr * dp, as `train.descend`.

Flops per (run, epoch, example), counted by hand from the loops below (`flops`,
for benchmarks/bench_gpu.py; an exp counts `EXP_FLOPS`): per head and step, pass 1
4 (score 3, max 1), pass 2 20 + an exp (score 3, shift 1, readout 3, the five sums
13), 2 per pass where p is added, and for a learned p pass 3 20 + an exp; per head
18 (c_h and the four means 5, logit 1, du and dv 12) and 5 + an exp for a sink; per
example 16 + 3 exps (probability, loss with its log1p, accuracy, dbias).

tests/models/test_cuda_kernels.py runs these kernels in numba's simulator against
autograd through each kind's `attend` (the definition), to 1e-10. They hold for any
inputs; the CPU's fast path for lesson, sink and multihead (`lesson.TrainingSet`) only
for a one-hot marker channel, as the data's (`frames.features`), so a kernel and
`train.train` on the CPU agree only on such inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch
from numba import cuda, float64  # module globals: the simulator swaps `cuda` in them

from pipeline.models.cuda_launch import (
    LOGIT_CLAMP,
    LOGIT_TIE,
    FusedTraining,
)
from pipeline.models.parameters import CHANNELS, Params

EXP_FLOPS = 20  # libdevice's float64 exp: range reduction and a degree-11 polynomial


@dataclass(frozen=True)
class Pooling:
    """What a pooling kind's runs are made of, beyond the lesson's layout."""

    heads: int = 1
    sink: bool = False  # one value-less logit per run, after b in the layout
    learned_offsets: bool = False  # p (T, C) per run, after b in the layout
    fixed_offsets: torch.Tensor | None = None  # p (T, C), the same for every run


def flops(pooling: Pooling, steps: int) -> int:
    """Float operations per (run, epoch, example), counted by hand (the docstring)."""
    offsets = pooling.learned_offsets or pooling.fixed_offsets is not None
    per_step = 4 + 20 + EXP_FLOPS + (4 if offsets else 0)
    per_step += (20 + EXP_FLOPS + 2) if pooling.learned_offsets else 0
    per_head = steps * per_step + 18 + ((5 + EXP_FLOPS) if pooling.sink else 0)
    return pooling.heads * per_head + 16 + 3 * EXP_FLOPS


@cache
def extrema():
    """Device functions (maximum, minimum) of two numbers, for both kernels. Not the
    builtin max and min: numba 0.66-0.68 fails to type them in CUDA device code
    ("Signature mismatch: 2 argument types given", numba issue #10753). Each answers
    as Python's builtin does (the first unless the second is strictly beyond it), so
    the simulator's numbers stay those of the builtins, NaN included."""

    @cuda.jit(device=True, inline=True)
    def maximum(a, b):
        return b if b > a else a

    @cuda.jit(device=True, inline=True)
    def minimum(a, b):
        return b if b < a else a

    return maximum, minimum


@cache
def bce_head():
    """A device function of both kernels: torch's BCE with logits for one example,
    (dloss/dlogit / examples, the example's loss, 1.0 where the decision is right).
    Made when a kernel is made, from the `cuda` numba has then (real or simulated)."""
    CLAMP, TIE = LOGIT_CLAMP, LOGIT_TIE
    maximum, minimum = extrema()

    @cuda.jit(device=True, inline=True)
    def bce(logit, label, examples):
        clamped = minimum(maximum(logit, -CLAMP), CLAMP)
        g = (1.0 / (1.0 + math.exp(-clamped)) - label) / examples
        # (1 - y) o - log_sigmoid(o)
        loss = (1.0 - label) * logit - minimum(logit, 0.0) + math.log1p(math.exp(-abs(logit)))
        return g, loss, 1.0 if (logit > TIE) == (label > 0.5) else 0.0

    return bce


@cache
def pooling_kernel(heads: int, d_k: int, d_v: int, steps: int, sink: bool, offsets: str):
    """The kernel for one shape of run, one a process: numba compiles it once for the
    launches' signature (`cuda_launch.kernels_compile`), whatever the runs and epochs
    (runtime arguments); offsets: 'none', 'fixed' (read from the `fixed` (T, C) array)
    or 'learned'."""
    H, DK, DV, T, C = heads, d_k, d_v, steps, CHANNELS
    ROOT = math.sqrt(d_k)
    # Offsets into a run's flat row (`parameters.to_flat`): Wk (H, d_k, C),
    # Wv (H, d_v, C), q (H, d_k), w (H * d_v), b, then the sink or p (T, C).
    WK, WV = 0, H * DK * C
    Q = WV + H * DV * C
    W = Q + H * DK
    B = W + H * DV
    EXTRA = B + 1
    SIZE = EXTRA + (1 if sink else 0) + (T * C if offsets == "learned" else 0)
    HC = H * C
    HAS_SINK, LEARNED, FIXED = sink, offsets == "learned", offsets == "fixed"
    bce = bce_head()
    maximum = extrema()[0]

    @cuda.jit(device=True, inline=True)
    def pooled(inputs, fixed, par, n, t):
        """y_t (its C = 2 channels): the input, plus p where the kind has it."""
        if LEARNED:
            return inputs[n, t, 0] + par[EXTRA + t * C], inputs[n, t, 1] + par[EXTRA + t * C + 1]
        if FIXED:
            return inputs[n, t, 0] + fixed[t, 0], inputs[n, t, 1] + fixed[t, 1]
        return inputs[n, t, 0], inputs[n, t, 1]

    @cuda.jit
    def kernel(flat, inputs, labels, fixed, first, count, lr, loss, accuracy):
        run = cuda.grid(1)
        if run >= flat.shape[0]:
            return
        par = cuda.local.array(SIZE, float64)  # the run's parameters
        grad = cuda.local.array(SIZE, float64)  # their gradients, one epoch's
        key = cuda.local.array(HC, float64)  # u_h, v_h (H, C)
        value = cuda.local.array(HC, float64)
        dkey = cuda.local.array(HC, float64)  # du_h, dv_h (H, C)
        dvalue = cuda.local.array(HC, float64)
        top = cuda.local.array(H, float64)  # per head of one example: the max score,
        total = cuda.local.array(H, float64)  # E, c_h, sum e y / E, sum e z y / E
        context = cuda.local.array(H, float64)
        mean_y = cuda.local.array(HC, float64)
        mean_zy = cuda.local.array(HC, float64)
        for i in range(SIZE):
            par[i] = flat[run, i]
        examples = inputs.shape[0]
        for epoch in range(first, first + count):
            for h in range(H):
                for c in range(C):
                    k, v = 0.0, 0.0
                    for i in range(DK):
                        k += par[WK + (h * DK + i) * C + c] * par[Q + h * DK + i]
                    for i in range(DV):
                        v += par[WV + (h * DV + i) * C + c] * par[W + h * DV + i]
                    key[h * C + c], value[h * C + c] = k / ROOT, v
                    dkey[h * C + c], dvalue[h * C + c] = 0.0, 0.0
            for i in range(EXTRA, SIZE):
                grad[i] = 0.0
            dbias, loss_sum, hits = 0.0, 0.0, 0.0
            for n in range(examples):
                logit = par[B]
                for h in range(H):
                    k0, k1, v0, v1 = key[h * C], key[h * C + 1], value[h * C], value[h * C + 1]
                    most = par[EXTRA] if HAS_SINK else -math.inf
                    for t in range(T):
                        y0, y1 = pooled(inputs, fixed, par, n, t)
                        most = maximum(most, k0 * y0 + k1 * y1)
                    e_sum, ez, ey0, ey1, ezy0, ezy1 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
                    for t in range(T):
                        y0, y1 = pooled(inputs, fixed, par, n, t)
                        e = math.exp(k0 * y0 + k1 * y1 - most)
                        z = v0 * y0 + v1 * y1
                        e_sum += e
                        ez += e * z
                        ey0 += e * y0
                        ey1 += e * y1
                        ezy0 += e * z * y0
                        ezy1 += e * z * y1
                    if HAS_SINK:
                        e_sum += math.exp(par[EXTRA] - most)
                    top[h], total[h], context[h] = most, e_sum, ez / e_sum
                    mean_y[h * C], mean_y[h * C + 1] = ey0 / e_sum, ey1 / e_sum
                    mean_zy[h * C], mean_zy[h * C + 1] = ezy0 / e_sum, ezy1 / e_sum
                    logit += context[h]
                g, example_loss, hit = bce(logit, labels[n], examples)
                loss_sum += example_loss
                hits += hit
                dbias += g
                for h in range(H):
                    for c in range(C):
                        j = h * C + c
                        dvalue[j] += g * mean_y[j]
                        dkey[j] += g * (mean_zy[j] - context[h] * mean_y[j])
                    if HAS_SINK:
                        grad[EXTRA] -= g * (math.exp(par[EXTRA] - top[h]) / total[h]) * context[h]
                    if LEARNED:  # dp_t = g a_t ((z_t - c_h) u_h + v_h)
                        k0, k1, v0, v1 = key[h * C], key[h * C + 1], value[h * C], value[h * C + 1]
                        for t in range(T):
                            y0, y1 = pooled(inputs, fixed, par, n, t)
                            dz = g * math.exp(k0 * y0 + k1 * y1 - top[h]) / total[h]
                            ds = dz * (v0 * y0 + v1 * y1 - context[h])
                            grad[EXTRA + t * C] += ds * k0 + dz * v0
                            grad[EXTRA + t * C + 1] += ds * k1 + dz * v1
            loss[epoch, run] = loss_sum / examples
            accuracy[epoch, run] = hits / examples
            for h in range(H):  # the chain to Wk, Wv, q, w (`pooling.head_gradients`)
                for i in range(DK):
                    dq = 0.0
                    for c in range(C):
                        du = dkey[h * C + c] / ROOT
                        grad[WK + (h * DK + i) * C + c] = par[Q + h * DK + i] * du
                        dq += par[WK + (h * DK + i) * C + c] * du
                    grad[Q + h * DK + i] = dq
                for i in range(DV):
                    dw = 0.0
                    for c in range(C):
                        grad[WV + (h * DV + i) * C + c] = par[W + h * DV + i] * dvalue[h * C + c]
                        dw += par[WV + (h * DV + i) * C + c] * dvalue[h * C + c]
                    grad[W + h * DV + i] = dw
            grad[B] = dbias
            for i in range(SIZE):
                par[i] -= lr * grad[i]
        for i in range(SIZE):
            flat[run, i] = par[i]

    return kernel


def training(
    inputs: torch.Tensor, labels: torch.Tensor, pooling: Callable[[Params], Pooling]
) -> FusedTraining:
    """The kind contract's `fused_training` for a pooling kind: `pooling(params)` says
    what its runs hold; the kernel of their shape and its data."""

    def kernel(params: Params) -> tuple[Callable, tuple[torch.Tensor, ...]]:
        shape = pooling(params)
        offsets = "learned" if shape.learned_offsets else "none"
        fixed = inputs.new_zeros(1, CHANNELS)  # read only with fixed offsets
        if shape.fixed_offsets is not None:
            offsets, fixed = "fixed", shape.fixed_offsets.to(inputs)
        cfg = params.cfg
        made = pooling_kernel(shape.heads, cfg.d_k, cfg.d_v, inputs.shape[1], shape.sink, offsets)
        return made, (inputs, labels.to(inputs), fixed)

    return FusedTraining(kernel, lambda params: flops(pooling(params), inputs.shape[1]))
