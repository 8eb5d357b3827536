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

from pipeline.core import ties
from pipeline.experiments.debate.adversary import jsd
from pipeline.experiments.debate.pooling import with_sink_slot
from pipeline.experiments.debate.training import per_run, train_on_loss
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability
from pipeline.models.train import History


def consistency_loss(
    probabilities: torch.Tensor,
    weights: torch.Tensor,
    base_probabilities: torch.Tensor,
    base_weights: torch.Tensor,
    penalty: float | torch.Tensor,
) -> torch.Tensor:
    """Per run (S,): mean_n |p - p_base| - penalty * mean_n JSD(a, a_base), with
    `probabilities` (S, N) and `weights` (S, N, T) against the base's; `penalty` one
    lam or one per run (S,).

    A difference within float noise of 0 counts as 0 (pipeline/core/ties.py), and so does
    its gradient: at the base, |.|'s kink would otherwise turn the last bits between
    two ways of computing the same logit (autograd's, a kind's fast path) into a
    gradient of full size, and a run with nothing to gain would move."""
    distance = (probabilities - base_probabilities).abs()
    distance = torch.where(ties.above(distance, 0.0), distance, 0.0).mean(-1)
    return distance - penalty * jsd(weights, base_weights).mean(-1)


def adversary_start(base: Params, init: Params, fraction: float) -> Params:
    """Each adversary's start: `fraction` of the way from its base run's trained
    parameters to that run's init (debate.consistent_start; 1 is the init).

    At the base itself every gradient of the loss is 0 (|p - p_base| and JSD at their
    minimum), so an adversary started there would leave it only as float noise grows,
    at a pace set by the last bits of whichever path computed it (rise x window2's
    runs at lam 1 never left it in 200 epochs). From a step toward the init, the
    numbers decide, not the noise (docs/debate.md, section 6)."""
    return base.with_tensors(
        [b + fraction * (i - b) for b, i in zip(base.tensors(), init.tensors(), strict=True)]
    )


def train_consistent(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    base: Params,
    penalty: float | torch.Tensor,
    epochs: int,
    lr: float,
    reference: bool = False,
) -> tuple[Params, History]:
    """`epochs` gradient steps of every run from `params` (`adversary_start`) against
    the base run of the same index (`base`, trained): the loss above
    (debate/training.py). `labels` only feed the training history (its BCE and
    accuracy)."""
    base_logits, base_weights = (t.detach() for t in interface.forward(base, inputs))
    base_weights = with_sink_slot(base_weights, params.cfg)
    base_probabilities = probability(base_logits)

    def loss(logits: torch.Tensor, weights: torch.Tensor, runs: slice) -> torch.Tensor:
        return consistency_loss(
            probability(logits),
            with_sink_slot(weights, params.cfg),
            base_probabilities[runs],
            base_weights[runs],
            per_run(penalty, runs),
        ).sum()

    return train_on_loss(params, inputs, labels, loss, epochs, lr, check=False, reference=reference)
