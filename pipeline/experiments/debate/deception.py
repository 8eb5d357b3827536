"""Deceptive attention (Pruthi et al., "Learning to Deceive with Attention-Based
Explanations", ACL 2020, section 3): train with a penalty on the pooling weight that
lands on the chosen steps, here each example's true rationale R_n,

    loss = BCE + lam * mean_n(-log(1 - sum_{t in R_n} a_{n,t})),

and see whether the model keeps its accuracy while its attention hides the steps
that decide the label. With lam = 0 it is the ordinary run.
"""

from __future__ import annotations

import torch

from pipeline.experiments.debate.training import per_run, train_on_loss
from pipeline.models.parameters import Params
from pipeline.models.train import History, surrogate_loss


def rationale_mass(weights: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """The pooling weight on each example's rationale (..., N): `weights` (..., N, T),
    `rationale` bool (N, T)."""
    return (weights * rationale).sum(-1)


def deception_penalty(weights: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """Per run, mean_n -log(1 - weight on R_n) (...,): 0 when none is on the rationale.

    1 - the weight on R_n is summed off the rationale directly (no cancellation), and
    floored at the smallest normal float: where a softmax put everything on R_n, the
    penalty is large and finite instead of inf, and that example pushes no further."""
    off = (weights * ~rationale).sum(-1)
    return -torch.log(off.clamp(min=torch.finfo(off.dtype).tiny)).mean(-1)


def train_deceptive(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    rationale: torch.Tensor,
    penalty: float | torch.Tensor,
    epochs: int,
    lr: float,
    check: bool = True,
    reference: bool = False,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run on BCE + `penalty` (one lam, or one per run)
    * the deception penalty (its weights: the mean over heads), debate/training.py.
    With `check`, a run that reached NaN or inf raises DivergenceError, as in
    `train.train`; without, the caller looks at `train.finite_runs` and names them."""

    def loss(logits: torch.Tensor, weights: torch.Tensor, runs: slice) -> torch.Tensor:
        value = surrogate_loss(logits, labels)
        lam = per_run(penalty, runs)
        if isinstance(lam, torch.Tensor) or lam:
            value = value + (lam * deception_penalty(weights, rationale)).sum()
        return value

    return train_on_loss(params, inputs, labels, loss, epochs, lr, check=check, reference=reference)
