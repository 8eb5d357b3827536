"""One rule for every discrete decision: values closer than float noise are equal.

Another CPU, another kernel path or another thread count moves a computed value in
its last bits (about 1e-16 of its size, 1e-14 after long sums). A count that
compares two such values, or a value with a threshold, must not follow those
bits. So every argmax, rank, best-of and threshold in the pipeline goes through
this module, with one rule:

- two values tie when they differ by at most `RTOL` times their scale (the largest
  |value| compared, or 1 for a threshold comparison of a quantity of size one:
  logits, probabilities, weights, effects);
- among tied maxima the first wins (the lesson's `max(range, key=...)`);
- a value within the tolerance of a threshold is *at* the threshold, so it is not
  above it and not below it: accuracy's `logit > 0` is `logit > RTOL`.

RTOL = 1e-13: loo effects are differences of probabilities, so their noise is
absolute, ~1e-16..1e-15 (steps with repeated readings get effects ~1e-15 apart),
and another batch or kernel path reorders such near-ties (and moves tau_loo). RTOL
sits a margin above the smallest tolerance that makes the battery batch-invariant,
and far below the relative gap between any explainer's distinct steps on the
lesson, so the rule merges noise only. The numbers behind it are in docs/speed.md
and docs/pipeline.md, "Bytes on any machine".
"""

from __future__ import annotations

import torch

RTOL = 1e-13


def tolerance(scale: torch.Tensor | float) -> torch.Tensor | float:
    """The tie tolerance of values of size `scale`."""
    return RTOL * scale


def at_max(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Bool, x's shape: True where x ties the largest value along `dim`."""
    peak = x.amax(dim, keepdim=True)
    return x >= peak - tolerance(x.abs().amax(dim, keepdim=True))


def first_max(x: torch.Tensor, dim: int = -1, keepdim: bool = False) -> torch.Tensor:
    """Index of the first value tying the maximum along `dim` (the tie-aware argmax)."""
    # argmax returns the first maximal index, and True is the maximum of a bool row.
    return at_max(x, dim).to(torch.uint8).argmax(dim, keepdim=keepdim)


def above(x: torch.Tensor, threshold: float) -> torch.Tensor:
    """x > threshold beyond a tie, for quantities of size one (the scale is
    max(1, |threshold|))."""
    return x > threshold + tolerance(max(1.0, abs(threshold)))


def below(x: torch.Tensor, threshold: float) -> torch.Tensor:
    """x < threshold beyond a tie (the mirror of `above`)."""
    return x < threshold - tolerance(max(1.0, abs(threshold)))


def signs(x: torch.Tensor) -> torch.Tensor:
    """sign(x_i - x_j) over the last dim, (..., T, T), ties 0; the scale is the
    vector's largest |value| (Kendall tau's pairs)."""
    differences = x.unsqueeze(-1) - x.unsqueeze(-2)
    scale = x.abs().amax(-1)[..., None, None]
    return torch.sign(differences) * (differences.abs() > tolerance(scale))


def descending_order(x: torch.Tensor) -> torch.Tensor:
    """Indices by descending value over the last dim, tied values by index: (..., T).

    A step's key is how many steps are greater beyond a tie, so a near-tie never
    swaps two steps whatever their last bits."""
    above_count = (signs(x) < 0).sum(-1)  # entry (i, j) < 0: x_j beyond x_i
    return torch.sort(above_count, dim=-1, stable=True).indices
