"""Training on a loss on the pooling, the debate's own trainings (deceptive attention,
the model-consistent adversary, fixed attention): full-batch gradient descent as
`train.descend`, the parameters coming back settled at the written precision.

A loss is `loss(logits (S, N), weights (S, N, T), runs) -> scalar`, the sum of each
run's own loss; `runs` is the slice of the step's runs it is handed (a kernel's tile
of them), for a loss that compares run k with run k of a base. The definition is
autograd through the kind's `attend` (`reference_step`); a kind may bring a fast
path (`loss_step` in its contract: window's fused kernel), which
tests/test_debate_training.py checks against it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pipeline.debate.pooling import fixed_logits
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.train import History, check_finite, descend, descend_blocks
from pipeline.precision import settle

Loss = Callable[[torch.Tensor, torch.Tensor, slice], torch.Tensor]


def reference_step(inputs: torch.Tensor, loss: Loss, fixed: torch.Tensor | None = None):
    """`descend`'s step by autograd through `attend`. With `fixed` weights (broadcasting
    against (S, N, H, T)) in place of the pooling's, the loss reads those, and the
    parameters the pooling's weights alone depend on (the keys and the query) get a
    zero gradient."""

    def step(current: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        leaves = current.map(lambda t: t.detach().requires_grad_(True))
        if fixed is None:
            logits, weights = interface.forward(leaves, inputs)
        else:
            logits, weights = fixed_logits(leaves, inputs, fixed), fixed
        value = loss(logits, weights, slice(None))
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


def train_on_loss(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    loss: Loss,
    epochs: int,
    lr: float,
    fixed: torch.Tensor | None = None,
    block: int | None = None,
    check: bool = True,
    reference: bool = False,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run on `loss` (`labels` feed the history's BCE
    and accuracy), in one pass or in blocks of `block` runs (a loss that reads `runs`
    needs one pass). With `check`, a run that reached NaN or inf raises
    DivergenceError, as in `train.train`; without, the caller looks at
    `train.finite_runs`."""
    step = loss_step(params, inputs, loss, fixed, reference)
    if block is None:
        params, history = descend(params, step, labels, epochs, lr)
    else:
        params, history = descend_blocks(params, step, labels, epochs, lr, block, threads=1)
    if check:
        check_finite(history.loss, params, lr)
    return params.map(settle), history
