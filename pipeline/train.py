"""Full-batch gradient descent on mean binary cross-entropy, all runs at once.

The gradients are derived by hand (tests/test_train.py checks them against
torch autograd through `model.forward`): with a reading channel and a one-hot
marker channel, every softmax sum splits into the marked step and three moments
over the unmarked steps (see `TrainingSet`), which is what makes 1000 runs
cheap. Like the lesson, the probability in the gradient uses the logit clamped
to [-30, 30].

That fast path is the lesson's only: every model variant (pipeline.variants), and
the lesson too on request (`autograd=True`), trains with torch autograd through
the same seed-batched `variants.forward`, with the same loss, clamp, History and
divergence checks (`train_autograd`). tests/test_train.py checks that both paths
give the lesson's numbers. One node of that graph has its backward written by hand
too: the window variant's layer and pooling, compiled for the CPU
(`pipeline.window_kernel`, checked against autograd through `forward` in
tests/test_variants.py).
"""

from __future__ import annotations

import ctypes
import math
import sys
from dataclasses import dataclass
from functools import cache

import torch
import torch.nn.functional as F

from pipeline.config import TrainConfig
from pipeline.errors import ConfigError, DivergenceError
from pipeline.model import (
    Params,
    key_direction,
    probability,
    value_direction,
)
from pipeline.variants import (
    AnyParams,
    to_flat,
    training_logits,
    uses_window_kernel,
    with_tensors,
)


@dataclass(frozen=True)
class History:
    loss: torch.Tensor  # (epochs, S), before each epoch's update
    accuracy: torch.Tensor  # (epochs, S)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "invalid config value train.device='cuda': CUDA is not available here; "
            "allowed: auto, cpu"
        )
    return torch.device(name)


@dataclass(frozen=True)
class TrainingSet:
    """Per-example constants of the one-hot marker channel, computed once.

    With x_t = (r_t, [t == m]), a step's score is u0 r_t + u1 [t == m]. The
    softmax sums then split into the marked step (an (S, N) quantity) and
    three moments of exp(u0 r_t) over the unmarked steps: one exp pass over
    (S, N, T) per epoch and one batched matmul, nothing else that large.
    """

    readings: torch.Tensor  # (N, T), the marked entry replaced by an unmarked reading
    moments: torch.Tensor  # (N, 3, T): unmarked * [1, r, r^2]
    marked_reading: torch.Tensor  # (N,)
    unmarked_max: torch.Tensor  # (N,)
    unmarked_min: torch.Tensor  # (N,)
    labels: torch.Tensor  # (N,)

    @classmethod
    def build(cls, inputs: torch.Tensor, labels: torch.Tensor) -> TrainingSet:
        readings, marker = inputs[..., 0], inputs[..., 1]
        is_marked = marker > 0.5
        unmarked = (~is_marked).to(readings.dtype)
        first_unmarked = (~is_marked).to(torch.int8).argmax(-1, keepdim=True)
        # The masked-out entry only has to keep exp() from overflowing.
        safe = torch.where(is_marked, readings.gather(-1, first_unmarked), readings)
        return cls(
            readings=safe,
            moments=torch.stack([unmarked, unmarked * readings, unmarked * readings**2], 1),
            marked_reading=(readings * marker).sum(-1),
            unmarked_max=safe.amax(-1),
            unmarked_min=safe.amin(-1),
            labels=labels,
        )


def device_and_dtype(cfg: TrainConfig) -> tuple[torch.device, torch.dtype]:
    return resolve_device(cfg.device), getattr(torch, cfg.dtype)


def logits_and_gradients(params: Params, batch: TrainingSet) -> tuple[torch.Tensor, Params]:
    """Training logits (S, N) and the gradient of the mean BCE for every parameter.

    Computed example-major, (N, S) and (N, T, S): runs innermost, so the batched
    matmul is (3, T) @ (T, S) per example (3.5x faster than (S, T) @ (T, 3) on the
    CPU) and every (N, S) operand it yields is contiguous along the runs.
    """
    key_dir, value_dir = key_direction(params), value_direction(params)  # (S, C)
    reading_key, marker_key = key_dir[:, 0], key_dir[:, 1]  # (S,) each
    reading_value, marker_value = value_dir[:, 0], value_dir[:, 1]
    marked_reading = batch.marked_reading[:, None]  # (N, 1)

    # The exact max score of every (example, run): the softmax shift.
    extreme = torch.where(
        reading_key > 0, batch.unmarked_max[:, None], batch.unmarked_min[:, None]
    )  # (N, S)
    marked_score = marked_reading * reading_key + marker_key  # (N, S)
    shift = torch.maximum(reading_key * extreme, marked_score)
    exps = torch.addcmul(
        -shift[:, None, :], batch.readings[:, :, None], reading_key[None, None, :]
    ).exp_()  # (N, T, S)
    unmarked_sum, unmarked_r, unmarked_rr = torch.bmm(batch.moments, exps).unbind(1)

    marked_exp = torch.exp(marked_score - shift)  # (N, S)
    total = unmarked_sum + marked_exp
    marked_weight = marked_exp / total
    mean_reading = (unmarked_r + marked_exp * marked_reading) / total  # sum_t a_t r_t
    mean_square = (unmarked_rr + marked_exp * marked_reading**2) / total
    context = reading_value * mean_reading + marker_value * marked_weight  # sum_t a_t z_t
    logits = context + params.bias

    dlogit = (probability(logits) - batch.labels[:, None]) / batch.labels.shape[0]  # (N, S)
    # sum_t a_t (z_t - context) x_t, channel by channel.
    spread_reading = (
        reading_value * mean_square
        + marker_value * marked_weight * marked_reading
        - context * mean_reading
    )
    marked_value = reading_value * marked_reading + marker_value
    spread_marker = marked_weight * (marked_value - context)
    dvalue_dir = torch.stack([(dlogit * mean_reading).sum(0), (dlogit * marked_weight).sum(0)], -1)
    dkey_dir = torch.stack([(dlogit * spread_reading).sum(0), (dlogit * spread_marker).sum(0)], -1)
    dkey_dir = dkey_dir / math.sqrt(params.query.shape[1])

    gradients = Params(
        key_proj=params.query[:, :, None] * dkey_dir[:, None, :],
        value_proj=params.readout[:, :, None] * dvalue_dir[:, None, :],
        query=torch.einsum("sic,sc->si", params.key_proj, dkey_dir),
        readout=torch.einsum("sic,sc->si", params.value_proj, dvalue_dir),
        bias=dlogit.sum(0),
    )
    return logits.T, gradients


def mean_bce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(S, N) logits -> (S,) mean binary cross-entropy."""
    targets = labels.expand_as(logits)
    return F.binary_cross_entropy_with_logits(logits, targets, reduction="none").mean(-1)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Share of examples with (logit > 0) == label, over the last dim."""
    return ((logits > 0) == (labels > 0.5)).to(logits.dtype).mean(-1)


def train(
    params: AnyParams,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    check: bool = True,
    autograd: bool = False,
) -> tuple[AnyParams, History]:
    """`epochs` simultaneous gradient steps of size `lr` for every run.

    The lesson's `Params` take the hand-derived fast path unless `autograd`; every
    other variant trains through `train_autograd`. With `check`, a run that reached
    NaN or inf raises DivergenceError; without, the caller looks at `finite_runs`
    itself (the seed study names the seeds).
    """
    if autograd or not isinstance(params, Params):
        return train_autograd(params, inputs, labels, epochs, lr, check)
    batch = TrainingSet.build(inputs, labels)

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        logits, gradients = logits_and_gradients(params, batch)
        return logits, gradients.tensors()

    params, history = descend(params, step, labels, epochs, lr)
    if check:
        check_finite(history.loss, params, lr)
    return params, history


def descend(
    params: AnyParams, step, labels: torch.Tensor, epochs: int, lr: float
) -> tuple[AnyParams, History]:
    """`epochs` gradient steps: step(params) -> (logits (S, N), gradients in `tensors()`
    order); the loss and accuracy are recorded before each update."""
    loss = torch.empty(epochs, params.runs, dtype=labels.dtype, device=labels.device)
    acc = torch.empty_like(loss)
    for epoch in range(epochs):
        logits, gradients = step(params)
        loss[epoch] = mean_bce(logits, labels)
        acc[epoch] = accuracy(logits, labels)
        steps = [p - lr * g for p, g in zip(params.tensors(), gradients, strict=True)]
        params = with_tensors(params, steps)
    return params, History(loss, acc)


def surrogate_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A scalar whose gradient w.r.t. the logits (S, N) is (probability(logit) - y) / N:
    the mean BCE's gradient with the lesson's clamp in the probability (the clamp does
    not bind on the lesson; where it binds, the plain BCE gradient would differ).
    Runs add up: each run's parameters get their own run's gradient."""
    residual = (probability(logits) - labels).detach()
    return (residual * logits).sum() / labels.shape[-1]


# Runs per autograd pass. Autograd keeps (N, T, heads, runs) intermediates, whose
# passes are bound by memory bandwidth: with 50 runs they stay in cache (measured on
# the 2-core machine, multihead: 40 ms per epoch of 250 runs in blocks of 50, 73 ms
# in one block). Runs are independent, so the block changes no number beyond float
# rounding.
AUTOGRAD_BLOCK = 50
# The compiled window kernel keeps no such intermediates (it tiles its forward
# itself), and each pass costs a fixed ~3 ms of Python and autograd: larger passes.
KERNEL_BLOCK = 250


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


@cache  # once per process: the setting is process-wide
def keep_freed_memory() -> None:
    """Let glibc keep freed memory for reuse instead of returning it to the kernel.

    Every epoch allocates and frees the same few-megabyte temporaries; by default
    glibc serves them with fresh mmaps or trims them off the heap, so each epoch
    faults its pages in again. On the 2-core VM, window variant, 250 seeds: 1.37M
    page faults and 24.6 s by default, 0.13M and 19.7 s with these settings. Peak
    memory does not grow (freed memory is reused, not added). Linux/glibc only.
    """
    if sys.platform != "linux":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (musl)
        return
    libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's upper bound for this setting
    libc.mallopt(M_TRIM_THRESHOLD, 256 << 20)


def train_autograd(
    params: AnyParams,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    check: bool = True,
) -> tuple[AnyParams, History]:
    """Full-batch gradient descent with torch autograd through the variants' forward
    (`variants.training_logits`, `variants.forward` laid out for speed): the
    definition of training, for every variant (`train` documents the arguments)."""
    keep_freed_memory()
    threads = torch.get_num_threads()
    step = autograd_step(inputs, labels, threads)
    kernel = uses_window_kernel(params, inputs)
    size = KERNEL_BLOCK if kernel else AUTOGRAD_BLOCK
    # The window kernel runs on `threads` threads of its own; torch's ops on one
    # meanwhile. Otherwise libgomp's threads, which spin for milliseconds after each
    # parallel op, take a core from the kernel (250 window seeds: 59 -> 45 ms an epoch).
    torch.set_num_threads(1 if kernel else threads)
    try:
        blocks = [
            descend(params.map(lambda t, s=start: t[s : s + size]), step, labels, epochs, lr)
            for start in range(0, params.runs, size)
        ]
    finally:
        torch.set_num_threads(threads)
    tensors = [torch.cat(parts) for parts in zip(*(b.tensors() for b, _ in blocks), strict=True)]
    params = with_tensors(params, tensors)
    history = History(
        torch.cat([h.loss for _, h in blocks], 1), torch.cat([h.accuracy for _, h in blocks], 1)
    )
    if check:
        check_finite(history.loss, params, lr)
    return params, history


def autograd_step(inputs: torch.Tensor, labels: torch.Tensor, threads: int | None = None):
    """`descend`'s step for any variant: the logits and torch autograd's gradients
    (`threads`: the window kernel's)."""

    def step(params: AnyParams) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        leaves = params.map(lambda t: t.detach().requires_grad_(True))
        logits = training_logits(leaves, inputs, threads)  # (S, N)
        gradients = torch.autograd.grad(surrogate_loss(logits, labels), leaves.tensors())
        return logits.detach(), gradients

    return step


def finite_runs(loss: torch.Tensor, params: AnyParams) -> torch.Tensor:
    """(S,) True where a run's loss and parameters stayed finite."""
    return torch.isfinite(loss).all(0) & torch.isfinite(to_flat(params)).all(1)


def check_finite(loss: torch.Tensor, params: AnyParams, lr: float) -> None:
    """Stop on divergence instead of writing garbage metrics."""
    finite = finite_runs(loss, params)
    if bool(finite.all()):
        return
    bad_epochs = (~torch.isfinite(loss)).any(1).nonzero()
    first = f", first non-finite loss at epoch {int(bad_epochs[0])}" if len(bad_epochs) else ""
    raise DivergenceError(
        f"training diverged: {int((~finite).sum())} of {loss.shape[1]} runs reached "
        f"NaN or inf{first} (train.lr={lr}); lower train.lr"
    )
