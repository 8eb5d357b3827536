"""Permuted attention (Jain & Wallace, "Attention is not Explanation", NAACL 2019,
section 4.1): shuffle an example's pooling weights over its steps, keep everything
else, and see how far the output moves. Their number is the median over the
permutations of |p(a_perm) - p(a)|, read against the example's largest weight: a
model whose output barely moves under a shuffle of peaked weights was not reading
them.

With several heads, one order shuffles every head's weights (the steps move, as
tokens would); a sink's slot stays where it is, and adds nothing to the logit.
"""

from __future__ import annotations

import torch

from pipeline.models.pooling import probability


def permutation_orders(examples: int, count: int, steps: int, seed: int) -> torch.Tensor:
    """`count` random orders of the steps for each example (N, K, T), from `seed` alone:
    the same orders on any machine and for any run."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(examples, count, steps, generator=generator, dtype=torch.float64).argsort(-1)


def permuted_output_change(
    weights: torch.Tensor, readouts: torch.Tensor, bias: torch.Tensor, orders: torch.Tensor
) -> torch.Tensor:
    """Per example, the median over its orders of |p(a_perm) - p(a)| (..., N).

    `weights` a and `readouts` r are the steps' (..., N, H, T), the logit
    sum_h r_h . a_h + b with `bias` broadcasting against (..., N); `orders` (N, K, T)
    from `permutation_orders`: a_perm_{h,t} = a_{h,order(t)}, the readouts stay where
    they are. The median of an even count is the mean of the two middle values, as
    numpy's (the paper's) is.
    """
    heads = weights.shape[-2]
    index = orders[:, :, None].expand(*weights.shape[:-3], *orders.shape[:2], heads, -1)
    shuffled = weights.unsqueeze(-3).expand(index.shape).gather(-1, index)  # (..., N, K, H, T)
    moved = (shuffled * readouts.unsqueeze(-3)).sum((-2, -1)) + bias[..., None]
    now = (weights * readouts).sum((-2, -1)) + bias
    change = (probability(moved) - probability(now)[..., None]).abs()
    return change.quantile(0.5, dim=-1)
