"""The variance across seeds (Wiegreffe & Pinter, "Attention is not not Explanation",
EMNLP 2019, section 3.2): two models trained alike from different seeds, compared on
the same example by the JSD of their pooling weights and the total variation
distance of their outputs. It is the background an adversary's JSD is read against:
an adversary that moves the weights no further than another seed does shows nothing.
"""

from __future__ import annotations

import torch

from pipeline.experiments.debate.adversary import jsd


def seed_pairs(runs: int) -> torch.Tensor:
    """Disjoint pairs of runs (P, 2): (0, 1), (2, 3), ...; each run in one pair, so
    the pairs are independent draws."""
    return torch.arange(runs - runs % 2).view(-1, 2)


def pair_divergence(
    weights: torch.Tensor, probabilities: torch.Tensor, pairs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """JSD between the pair's weights (P, N) and TVD between their output
    distributions (P, N): for a binary output, |p - p'|. `weights` (S, N, T),
    `probabilities` P(y=1) (S, N)."""
    first, second = pairs.unbind(-1)
    divergence = jsd(weights[first], weights[second])
    distance = (probabilities[first] - probabilities[second]).abs()
    return divergence, distance
