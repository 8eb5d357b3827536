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

from pipeline.debate.pooling import pooling_terms
from pipeline.models.parameters import Params
from pipeline.models.train import History, check_finite, descend, surrogate_loss
from pipeline.precision import settle


def uniform_weights(examples: int, steps: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """a_{h,t} = 1/T for every example and head (N, 1, T)."""
    return torch.full((examples, 1, steps), 1 / steps, dtype=dtype)


def step_weights(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Each head's learned weights on the steps (S, N, H, T): what frozen attention fixes."""
    terms = pooling_terms(params, inputs)
    return terms.weights[..., : terms.steps]


def fixed_logits(params: Params, inputs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Logits (S, N) with the steps' `weights` (broadcasting against (S, N, H, T)) in
    place of the pooling's."""
    terms = pooling_terms(params, inputs)
    return (weights * terms.readouts[..., : terms.steps]).sum((-2, -1)) + terms.bias


def train_fixed(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    weights: torch.Tensor,
    epochs: int,
    lr: float,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run with the pooling weights fixed to `weights`;
    as `train.train` on autograd, the parameters come back settled."""

    def step(current: Params):
        leaves = current.map(lambda t: t.detach().requires_grad_(True))
        logits = fixed_logits(leaves, inputs, weights)
        gradients = torch.autograd.grad(
            surrogate_loss(logits, labels), leaves.tensors(), allow_unused=True
        )
        # The keys and the query, which a fixed pooling does not read, stay where they are.
        steps = [
            torch.zeros_like(t) if g is None else g
            for t, g in zip(leaves.tensors(), gradients, strict=True)
        ]
        return logits.detach(), steps

    params, history = descend(params, step, labels, epochs, lr)
    check_finite(history.loss, params, lr)
    return params.map(settle), history
