"""Full-batch gradient descent on mean binary cross-entropy, all runs at once.

The definition, for every model kind: torch autograd through the kind's forward
(`autograd_step`), with the lesson's clamp of the logit to [-30, 30] in the
probability. A kind may bring a fast path (`gradient_step`): the lesson's
hand-derived gradients (also sink's and multihead's), posenc's
(pipeline/models/pooling_gradients.py), the window kind's fused compiled step
(`window.gradient_step`); tests/models/test_train.py and tests/models/test_models.py check them
against the definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

from pipeline.config import ModelConfig, TrainConfig
from pipeline.core import ties
from pipeline.core.device import resolve_device
from pipeline.core.errors import DivergenceError
from pipeline.core.precision import settle
from pipeline.core.processes import keep_freed_memory
from pipeline.models import cuda_launch, interface
from pipeline.models.parameters import Params, cat_runs, to_flat
from pipeline.models.pooling import probability
from pipeline.models.threads import available, check_stopped, run_jobs


@dataclass(frozen=True)
class History:
    loss: torch.Tensor  # (epochs, S), before each epoch's update
    accuracy: torch.Tensor  # (epochs, S)
    # (epochs, S, P): each epoch's flat parameters before its update, where asked
    # (`train(trajectory=True)`: the seed study's dynamics)
    params: torch.Tensor | None = None


def device_and_dtype(cfg: TrainConfig) -> tuple[torch.device, torch.dtype]:
    return resolve_device(cfg.device), getattr(torch, cfg.dtype)


def mean_bce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(S, N) logits -> (S,) mean binary cross-entropy."""
    targets = labels.expand_as(logits)
    return F.binary_cross_entropy_with_logits(logits, targets, reduction="none").mean(-1)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Share of examples with (logit > 0) == label, over the last dim (`ties.above`:
    a logit within float noise of 0 predicts 0)."""
    return (ties.above(logits, 0.0) == (labels > 0.5)).to(logits.dtype).mean(-1)


def train(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    check: bool = True,
    autograd: bool = False,
    trajectory: bool = False,
) -> tuple[Params, History]:
    """`epochs` simultaneous gradient steps of size `lr` for every run; the trained
    parameters come back settled at the written precision (pipeline/core/precision.py),
    the values every later computation and the parameters file share.

    The definition is autograd through the kind's forward (`autograd_step`), in
    blocks of `AUTOGRAD_BLOCK` runs. A kind with a fast path (`gradient_step`: the
    lesson's moments, also sink's and multihead's; posenc's
    pipeline/models/pooling_gradients.py; window's fused kernel on the CPU) takes it
    unless `autograd`, in its own blocks (`training_block`); tests/models/test_models.py
    checks each fast path against the definition. On a cuda device a kind's fused
    kernel trains every epoch at once (`fused`: tests/models/test_cuda_kernels.py), or,
    where it does not compile or launch, torch's ops do.
    With `check`, a run that reached NaN or inf raises DivergenceError; without, the
    caller looks at `finite_runs` itself (the seed study names the seeds). With
    `trajectory`, the history keeps every epoch's parameters (`History.params`); the
    fused kernels keep none, so torch's ops train then.
    """
    keep_freed_memory()
    trained = None if autograd or trajectory else fused(params, inputs, labels, epochs, lr)
    if trained is not None:
        params, history = trained
    else:
        params, history = stepped(params, inputs, labels, epochs, lr, autograd, trajectory)
    if check:
        check_finite(history.loss, params, lr)
    return params.map(settle), history


def fused(
    params: Params, inputs: torch.Tensor, labels: torch.Tensor, epochs: int, lr: float
) -> tuple[Params, History] | None:
    """On cuda, every epoch in the kind's fused kernel (cuda_launch.py); None where the
    kind has none here, or where its kernel failed to compile or launch (a warning line
    names the error, once a kernel): then torch's ops train, from the same params."""
    training = interface.fused_training(params, inputs, labels)
    if training is None:
        return None
    try:
        params, loss, acc = training(params, epochs, lr)
    except cuda_launch.KernelFailure:
        return None
    return params, History(loss, acc)


def stepped(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    autograd: bool,
    trajectory: bool = False,
) -> tuple[Params, History]:
    """`epochs` steps of the kind's fast path (`gradient_step`), or autograd's."""
    step, block = training_plan(params.cfg, inputs, labels, autograd)
    if block is None:  # lesson, sink, multihead: one pass of all runs, on torch's threads
        return descend(params, step, labels, epochs, lr, kept=trajectory)
    threads = blocks_threads(block, available())
    return descend_blocks(params, step, labels, epochs, lr, block[0], threads, trajectory)


def training_plan(model: ModelConfig, inputs: torch.Tensor, labels: torch.Tensor, autograd: bool):
    """`train`'s step for this kind on these inputs, and its blocks: (runs per pass,
    whether the kernel has threads of its own), or None for one pass of every run."""
    kind = interface.kind(model.kind)
    fast = None if autograd else kind.gradient_step(inputs, labels)
    if fast is None:
        return autograd_step(inputs, labels), (AUTOGRAD_BLOCK, False)
    return fast, kind.training_block(inputs)


def runs_together(model: ModelConfig, inputs: torch.Tensor, labels: torch.Tensor) -> int:
    """Runs that a piece of a chunk keeps together for the chunk's bits: a multiple of
    the kind's block (a block of other size rounds its sums differently and moves
    posenc's parameters: docs/speed.md), 1 where every run trains in one pass,
    whose runs never meet (tests/experiments/test_study.py: the same bits in any grouping)."""
    block = training_plan(model, inputs, labels, autograd=False)[1]
    return 1 if block is None else block[0]


def descend(
    params: Params,
    step,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    settled: bool = False,
    kept: bool = False,
) -> tuple[Params, History]:
    """`epochs` gradient steps: step(params) -> (logits (S, N), gradients in `tensors()`
    order); the loss and accuracy (and, `kept`, the flat parameters) are recorded
    before each update. `settled`: every step's parameters at the written precision,
    for a loss whose steps amplify a last bit (the debate's adversaries:
    docs/pipeline.md, "Bytes on any machine")."""
    loss = torch.empty(epochs, params.runs, dtype=labels.dtype, device=labels.device)
    acc = torch.empty_like(loss)
    # Written in place, like the loss: a small tensor kept from each epoch, between its
    # temporaries, would fragment the heap (a study's peak tripled).
    trajectory = None
    if kept:
        flat = to_flat(params)
        trajectory = flat.new_empty((epochs, *flat.shape))
    for epoch in range(epochs):
        check_stopped()  # a SIGTERM ends a long study or grid cell within an epoch
        if trajectory is not None:
            trajectory[epoch] = to_flat(params)
        logits, gradients = step(params)
        loss[epoch] = mean_bce(logits, labels)
        acc[epoch] = accuracy(logits, labels)
        steps = [p - lr * g for p, g in zip(params.tensors(), gradients, strict=True)]
        params = params.with_tensors([settle(t) for t in steps] if settled else steps)
    return params, History(loss, acc, trajectory)


def blocks_threads(block: tuple[int, bool], threads: int) -> int:
    """Threads for a kind's blocks: one when its kernel has threads of its own (window's
    takes its blocks in turn), else `threads` of our own."""
    _, own_threads = block
    return 1 if own_threads else threads


def descend_blocks(
    params: Params,
    step,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    size: int,
    threads: int,
    kept: bool = False,
) -> tuple[Params, History]:
    """`descend` for `size` runs at a time, the blocks on `threads` threads of our own
    (pipeline/models/threads.py). Runs are independent, so a block changes no number
    beyond float rounding, and a small one keeps its temporaries in cache."""
    jobs = [
        partial(descend, block, step, labels, epochs, lr, kept=kept)
        for _, block in params.blocks(size)
    ]
    return joined(run_jobs(jobs, threads))


def joined(blocks: list[tuple[Params, History]]) -> tuple[Params, History]:
    """Blocks of runs, each trained with its history, as one set of runs."""
    histories = [h for _, h in blocks]
    kept = None if histories[0].params is None else torch.cat([h.params for h in histories], 1)
    history = History(
        torch.cat([h.loss for h in histories], 1),
        torch.cat([h.accuracy for h in histories], 1),
        kept,
    )
    return cat_runs([block for block, _ in blocks]), history


def surrogate_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A scalar whose gradient w.r.t. the logits (S, N) is (probability(logit) - y) / N:
    the mean BCE's gradient with the lesson's clamp in the probability (the clamp does
    not bind on the lesson; where it binds, the plain BCE gradient would differ).
    Runs add up: each run's parameters get their own run's gradient."""
    residual = (probability(logits) - labels).detach()
    return (residual * logits).sum() / labels.shape[-1]


# Runs per autograd pass. Autograd keeps (N, T, heads, runs) intermediates, whose
# passes are bound by memory bandwidth: with 50 runs they stay in cache (sized on
# the 2-core machine with multihead: docs/speed.md). Runs are independent, so the
# block changes no number beyond float rounding. A kind may ask for its own
# (`training_block`: posenc, the window kernel).
AUTOGRAD_BLOCK = 50


def autograd_step(inputs: torch.Tensor, labels: torch.Tensor):
    """`descend`'s step for any kind, the definition of training: the logits of the
    kind's forward and torch autograd's gradients."""

    def step(params: Params) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        leaves = params.map(lambda t: t.detach().requires_grad_(True))
        logits = interface.forward(leaves, inputs)[0]  # (S, N)
        gradients = torch.autograd.grad(surrogate_loss(logits, labels), leaves.tensors())
        return logits.detach(), gradients

    return step


def finite_runs(loss: torch.Tensor, params: Params) -> torch.Tensor:
    """(S,) True where a run's loss and parameters stayed finite."""
    return torch.isfinite(loss).all(0) & torch.isfinite(to_flat(params)).all(1)


def check_finite(loss: torch.Tensor, params: Params, lr: float) -> None:
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
