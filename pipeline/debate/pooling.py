"""What every experiment of the debate reads off a one-head kind: its logit is
sum_t a_t r_t + b, the pooling weights a, the readouts r and the bias b."""

from __future__ import annotations

from typing import NamedTuple

import torch

from pipeline.errors import ConfigError
from pipeline.models import interface
from pipeline.models.parameters import Params


class OneHead(NamedTuple):
    logits: torch.Tensor  # (S, N)
    weights: torch.Tensor  # (S, N, T)
    readouts: torch.Tensor  # (S, N, T)
    bias: torch.Tensor  # (S, N): b, whatever the kind's layout names it


def one_head(params: Params, inputs: torch.Tensor, experiment: str) -> OneHead:
    """The kind's pooling terms; a kind with more heads is refused, naming `experiment`."""
    logits, weights, readouts = interface.kind(params.cfg.kind).attend(params, inputs)
    if weights.shape[-2] != 1:
        raise ConfigError(
            f"invalid config value model.kind={params.cfg.kind}: {experiment} needs one head"
        )
    weights, readouts = weights[..., 0, :], readouts[..., 0, :]
    return OneHead(logits, weights, readouts, logits - (weights * readouts).sum(-1))
