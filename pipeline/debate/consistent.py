"""A model-consistent adversary (Wiegreffe & Pinter, "Attention is not not
Explanation", EMNLP 2019, section 4): a model of the same kind, trained against a
base run to give the base's predictions with attention as far from the base's as it
can,

    loss = mean_n TVD(y_n, y_base_n) - lam * mean_n JSD(a_n, a_base_n)

over the training sequences; for a binary output the TVD is |p - p_base|. Unlike
the per-example adversary (adversary.py), its distributions come from one trained
model: what a model of the kind can actually do. Read against the seed variance
(seed_variance.py): an adversary whose (JSD, TVD) lies inside the cloud of two
ordinary seeds shows nothing. The JSD is of the metrics' weights, the mean over
heads, with a sink's share as one more slot (pooling.with_sink_slot).
"""

from __future__ import annotations

import torch

from pipeline.debate.adversary import jsd
from pipeline.debate.pooling import with_sink_slot
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability
from pipeline.models.train import History, descend
from pipeline.precision import settle


def consistency_loss(
    probabilities: torch.Tensor,
    weights: torch.Tensor,
    base_probabilities: torch.Tensor,
    base_weights: torch.Tensor,
    penalty: float,
) -> torch.Tensor:
    """Per run (S,): mean_n |p - p_base| - penalty * mean_n JSD(a, a_base), with
    `probabilities` (S, N) and `weights` (S, N, T) against the base's."""
    distance = (probabilities - base_probabilities).abs().mean(-1)
    return distance - penalty * jsd(weights, base_weights).mean(-1)


def train_consistent(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    base: Params,
    penalty: float,
    epochs: int,
    lr: float,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run against the base run of the same index
    (`base`, trained): the loss above, through autograd on the kind's forward.
    `labels` only feed the training history (its BCE and accuracy)."""
    base_logits, base_weights = (t.detach() for t in interface.forward(base, inputs))
    base_weights = with_sink_slot(base_weights, params.cfg)
    base_probabilities = probability(base_logits)

    def step(current: Params):
        leaves = current.map(lambda t: t.detach().requires_grad_(True))
        logits, weights = interface.forward(leaves, inputs)
        loss = consistency_loss(
            probability(logits),
            with_sink_slot(weights, params.cfg),
            base_probabilities,
            base_weights,
            penalty,
        ).sum()
        return logits.detach(), torch.autograd.grad(loss, leaves.tensors())

    params, history = descend(params, step, labels, epochs, lr)  # one block: run k meets base k
    return params.map(settle), history
