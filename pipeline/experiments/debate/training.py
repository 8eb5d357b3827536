"""Training on a loss on the pooling, the debate's own trainings (deceptive attention,
the model-consistent adversary, fixed attention): full-batch gradient descent as
`train.descend`, the parameters coming back settled at the written precision.

A loss is `loss(logits (S, N), weights (S, N, T), runs) -> scalar`, the sum of each
run's own loss; `runs` is the slice of the trained runs it is handed (a block's, a
kernel tile's), for a loss with numbers of its own per run: a base run to compare
with, a lam (`per_run`). The runs train in blocks of `AUTOGRAD_BLOCK`, which keep
autograd's intermediates in cache and bound its memory as `train.train` does.

The definition is autograd through the kind's `attend` (`reference_step`). A kind
may bring a fast path (`loss_step` in its contract: window's fused kernel, the
lesson's and posenc's hand-derived pooling), which tests/experiments/test_debate_training.py
checks against it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from pipeline.core.precision import settle
from pipeline.experiments.debate.pooling import fixed_logits
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.threads import run_jobs
from pipeline.models.train import AUTOGRAD_BLOCK, History, check_finite, descend, joined

Loss = Callable[[torch.Tensor, torch.Tensor, slice], torch.Tensor]


def reference_step(inputs: torch.Tensor, loss: Loss, fixed: torch.Tensor | None = None):
    """`descend`'s step by autograd through `attend`. With `fixed` weights (S, N, H or
    1, T: `each_run_weights`) in place of the pooling's, the loss reads those, and the
    parameters the pooling's weights alone depend on (the keys and the query) get a
    zero gradient."""

    def step(current: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        leaves = current.map(lambda t: t.detach().requires_grad_(True))
        if fixed is None:
            logits, weights = interface.forward(leaves, inputs)
        else:
            logits, weights = fixed_logits(leaves, inputs, fixed), fixed
        value = loss(logits, weights, slice(0, current.runs))
        gradients = torch.autograd.grad(value, leaves.tensors(), allow_unused=True)
        zeros = [
            torch.zeros_like(t) if g is None else g
            for t, g in zip(leaves.tensors(), gradients, strict=True)
        ]
        return logits.detach(), zeros

    return step


def loss_step(params: Params, inputs: torch.Tensor, loss: Loss, fixed=None, reference=False):
    """The kind's fast step on `loss` where it has one (and not `reference`), else
    `reference_step`."""
    fast = None if reference else interface.loss_step(params, inputs, loss, fixed)
    return fast or reference_step(inputs, loss, fixed)


def each_run_weights(weights: torch.Tensor, runs: int) -> torch.Tensor:
    """Fixed pooling weights broadcasting against (S, N, H, T), as one (N, H or 1, T)
    slab per run (a view): what a step's `fixed` holds, sliced as its runs are."""
    weights = weights if weights.dim() == 4 else weights[None]
    return weights.expand(runs, *weights.shape[1:])


def per_run(value: float | torch.Tensor, runs: slice) -> float | torch.Tensor:
    """A loss's setting for `runs`: one number for every run, or one per run (S,)."""
    return value[runs] if isinstance(value, torch.Tensor) else value


def train_on_loss(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    loss: Loss,
    epochs: int,
    lr: float,
    fixed: torch.Tensor | None = None,
    check: bool = True,
    reference: bool = False,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run on `loss` (`labels` feed the history's BCE
    and accuracy), `fixed` weights (broadcasting against (S, N, H, T)) in place of the
    pooling's. With `check`, a run that reached NaN or inf raises DivergenceError, as
    in `train.train`; without, the caller looks at `train.finite_runs`."""
    if fixed is not None:
        fixed = each_run_weights(fixed, params.runs)

    def block(start: int, part: Params) -> tuple[Params, History]:
        def block_loss(logits: torch.Tensor, weights: torch.Tensor, runs: slice) -> torch.Tensor:
            return loss(logits, weights, slice(start + runs.start, start + runs.stop))

        mine = None if fixed is None else fixed[start : start + part.runs]
        step = loss_step(part, inputs, block_loss, mine, reference)
        return descend(part, step, labels, epochs, lr, settled=True)

    jobs = [partial(block, start, part) for start, part in params.blocks(AUTOGRAD_BLOCK)]
    params, history = joined(run_jobs(jobs, threads=1))
    if check:
        check_finite(history.loss, params, lr)
    return params.map(settle), history
