"""Attribution on suppressor variables (XAI-TRIS, Clark et al. 2023; Haufe et al. 2014).

A suppressor carries no information about the label, so the true rationale
excludes it; a model may still use it to cancel noise. For each explainer, the
share of its attribution mass (|score| normalised over the steps of an example)
that lands on the suppressor steps, on the rationale and on the other steps, and
how often the suppressor is its top step (first max). The model's own use of the
suppressor is the leave-one-out row: its effect when the step is dropped.
"""

from __future__ import annotations

import torch

from pipeline.analysis import explainers, stats
from pipeline.config import Config
from pipeline.core import ties
from pipeline.models.parameters import Params

PARTS = ("suppressor", "rationale", "other")


def attribution_shares(
    scores: torch.Tensor, rationale: torch.Tensor, suppressor: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Per run and example (S, N): the share of sum_t |score_t| on each part, and
    whether the top step (first max of |score|) is a suppressor. `rationale` and
    `suppressor`: (N, T) bool, disjoint. An example with no mass has shares 0."""
    mass = scores.abs()  # (S, N, T)
    total = mass.sum(-1)
    safe = torch.where(total > 0, total, torch.ones_like(total))
    other = ~(rationale | suppressor)
    shares = {
        part: (mass * mask.to(mass.dtype)).sum(-1) / safe
        for part, mask in zip(PARTS, (suppressor, rationale, other), strict=True)
    }
    top = ties.first_max(mass)  # (S, N)
    shares["top_is_suppressor"] = (
        suppressor.gather(-1, top.transpose(0, 1)).transpose(0, 1).to(mass.dtype)
    )
    return shares


def summary(
    cfg: Config, params: Params, inputs: torch.Tensor, rationale: torch.Tensor,
    suppressor: torch.Tensor,
) -> dict:  # fmt: skip
    """{explainer row: {part: mean share with its 95% multi-bootstrap interval over runs
    and examples}} for the runs of `params` on the held-out inputs."""
    scores = explainers.explain(params, inputs, settings=cfg.faithfulness)
    generator = torch.Generator().manual_seed(cfg.study.bootstrap_seed)
    runs, examples = params.runs, inputs.shape[0]
    seed_counts = stats.resample_counts(runs, cfg.study.bootstrap, generator)
    example_counts = stats.resample_counts(examples, cfg.study.bootstrap, generator)
    document = {}
    for row, values in scores.items():
        shares = attribution_shares(values, rationale, suppressor)
        document[row] = {}
        for part, per_example in shares.items():
            per_example = stats.on_host(per_example)
            means = stats.multi_bootstrap_means(per_example, seed_counts, example_counts)
            low, high = stats.interval(means)
            document[row][part] = {
                "mean": float(per_example.mean()), "ci95_low": low, "ci95_high": high
            }  # fmt: skip
    return document
