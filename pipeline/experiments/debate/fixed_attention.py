"""Attention held fixed while the rest trains (Wiegreffe & Pinter, "Attention is not
not Explanation", EMNLP 2019, sections 3.1 and 3.3): uniform weights a_t = 1/T (is
attention needed at all?), and a trained run's per-example weights frozen into a
model that learns only the rest (do those weights carry what the task needs?).

For every kind the logit is sum_h sum_t a_{h,t} r_{h,t} + b (pooling.py), the
readouts and the bias coming from the kind's parameters (for window, through its
layer). Fixing a puts the given weights in place of the learned ones and leaves that
sum: uniform weights go to every head; frozen ones are each head's own, and a sink
keeps the mass the steps do not take, which adds nothing to the logit. The same
parameters, init and training (full-batch gradient descent on the mean BCE with the
lesson's clamp), with the keys and the query left without a gradient.
"""

from __future__ import annotations

import torch

from pipeline.experiments.debate.pooling import pooling_terms
from pipeline.experiments.debate.training import train_on_loss
from pipeline.models.parameters import Params
from pipeline.models.train import History, surrogate_loss


def uniform_weights(examples: int, steps: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """a_{h,t} = 1/T for every example and head (N, 1, T)."""
    return torch.full((examples, 1, steps), 1 / steps, dtype=dtype)


def step_weights(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Each head's learned weights on the steps (S, N, H, T): what frozen attention fixes."""
    terms = pooling_terms(params, inputs)
    return terms.weights[..., : terms.steps]


def train_fixed(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    weights: torch.Tensor,
    epochs: int,
    lr: float,
    reference: bool = False,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run on the mean BCE with the pooling weights
    fixed to `weights`; the parameters come back settled (debate/training.py)."""

    def bce(logits: torch.Tensor, _weights: torch.Tensor, _runs: slice) -> torch.Tensor:
        return surrogate_loss(logits, labels)

    return train_on_loss(
        params, inputs, labels, bce, epochs, lr, fixed=weights, reference=reference
    )
