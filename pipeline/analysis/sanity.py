"""Randomisation sanity checks: does an explanation change when the model is destroyed?

The definition is Adebayo et al., "Sanity Checks for Saliency Maps" (NeurIPS 2018):
an explainer whose scores barely change when the model's parameters are re-drawn,
or when the model learned from permuted labels, explains nothing about the model.

- cascading (section 3): the kind's parameter groups (`randomisation_groups`:
  readout, values, keys and query, then window's layer) re-drawn from the output
  side inwards, each step keeping the groups before it re-drawn;
- independent (section 3): one group re-drawn at a time, the others as trained;
- labels (section 4): the same inits trained on the training labels permuted by
  default_rng(label_seed).

A re-drawn group of run k takes what the kind's init rule draws from
stream((data.seed + randomisation_offset + k) mod 2**32): a fresh init, never a
study run's.
Similarity per held-out example is the Spearman rank correlation of the trained
model's step scores with the randomised model's, of the scores and of their
absolute values, the paper's two rank correlations (its SSIM and HOG are for
images). Ranks are tie-aware by pipeline/core/ties.py's rule, tied steps sharing their
average rank; an example where either score vector is constant has no correlation
(nan) and is left out of its run's mean, as tau_b's are. The random baseline's
explanation of a randomised model is fresh noise, so its similarity is chance,
about 0: the floor the explainers are read against.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import torch

from pipeline.analysis import paired, seed_study, stats
from pipeline.analysis.explainers import applicable, explain
from pipeline.analysis.explainers import rows as explainer_rows
from pipeline.analysis.faithfulness import random_scores
from pipeline.config import Config, ModelConfig
from pipeline.config.schema import MAX_SEED
from pipeline.core import ties
from pipeline.core.measures import RANDOM
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.threads import run_jobs, workers

CASCADING, INDEPENDENT, LABELS = "cascading", "independent", "labels"
PERMUTED = "permuted_labels"  # the labels test's one step
MEASURES = ("spearman", "spearman_abs")
CHUNK = 16  # runs per explain pass: the battery's chunk (memory.BATTERY_RUNS)


def average_ranks(scores: torch.Tensor) -> torch.Tensor:
    """1-based ranks over the last dim, tied steps (`ties.signs`) at their average rank."""
    signs = ties.signs(scores)  # [..., i, j]: sign(s_i - s_j)
    below = (signs > 0).sum(-1)
    tied = (signs == 0).sum(-1)  # the step itself included
    return below.to(scores.dtype) + (tied.to(scores.dtype) + 1) / 2


def spearman(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Spearman's rho over the last dim (the Pearson correlation of average ranks):
    (...,), nan where either vector is constant."""
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(-1, keepdim=True), ry - ry.mean(-1, keepdim=True)
    return (rx * ry).sum(-1) / ((rx * rx).sum(-1) * (ry * ry).sum(-1)).sqrt()


def similarity(trained: torch.Tensor, randomised: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per (run, example) rank correlations of two explanations (S, N, T): (S, N) each."""
    return {
        "spearman": spearman(trained, randomised),
        "spearman_abs": spearman(trained.abs(), randomised.abs()),
    }


def redrawn(params: Params, fresh: Params, names: frozenset[str]) -> Params:
    """`params` with the named tensors taken from `fresh`."""
    return Params(
        params.cfg,
        {name: fresh.named[name] if name in names else t for name, t in params.named.items()},
    )


def randomised_groups(cfg: ModelConfig) -> dict[tuple[str, str], frozenset[str]]:
    """{(test, group): the parameter names re-drawn} of the cascading test (every group
    up to and including `group`) and the independent test (`group` alone)."""
    groups = interface.randomisation_groups(cfg)
    tests, so_far = {}, frozenset()
    for group, names in groups:
        so_far |= set(names)
        tests[CASCADING, group] = so_far
    for group, names in groups:
        tests[INDEPENDENT, group] = frozenset(names)
    return tests


def fresh_streams(cfg: Config, seeds: list[int]) -> list[int]:
    """The streams of the re-drawn runs: (data.seed + randomisation_offset + k) mod 2**32,
    none a study run's (the config check bounds the offset)."""
    offset = cfg.data.seed + cfg.faithfulness.randomisation_offset
    return [(offset + seed) % (MAX_SEED + 1) for seed in seeds]


def scores(
    params: Params, inputs: torch.Tensor, names: list[str], cfg: Config
) -> dict[str, torch.Tensor]:
    """Every named explainer's scores (S, N, T), CHUNK runs per pass on our threads."""
    rows = explainer_rows(params.cfg, names)
    table = {row: inputs.new_empty((params.runs, *inputs.shape[:2])) for row in rows}

    def chunk(start: int, part: Params) -> None:
        for row, values in explain(part, inputs, names, cfg.faithfulness).items():
            table[row][start : start + part.runs] = values

    blocks = params.blocks(CHUNK)
    run_jobs([partial(chunk, *block) for block in blocks], workers(len(blocks)))
    return table


def permuted_labels(frame: pd.DataFrame, label_seed: int) -> pd.DataFrame:
    """The sequences with the training split's labels permuted by default_rng(label_seed)."""
    permuted = frame.copy()
    train = (frame["split"] == "train").to_numpy()
    labels = frame.loc[train, "label"].to_numpy()
    permuted.loc[train, "label"] = np.random.default_rng(label_seed).permutation(labels)
    return permuted


def majority_share(frame: pd.DataFrame) -> float:
    """The held-out accuracy of always answering the held-out majority class."""
    positive = float(frame.loc[frame["split"] == "heldout", "label"].mean())
    return max(positive, 1.0 - positive)


def label_randomised(
    cfg: Config, frame: pd.DataFrame, seeds: list[int], device: torch.device, dtype: torch.dtype
) -> tuple[Params, torch.Tensor]:
    """The study's inits of `seeds` trained on permuted labels: (params, each run's
    held-out accuracy on the true labels (S,))."""
    permuted = permuted_labels(frame, cfg.faithfulness.label_seed)
    runs = seed_study.train_sets(cfg, [(permuted, True)], seeds)[0]
    params = interface.from_flat(
        runs.params.to(device=device, dtype=dtype), cfg.model, cfg.data.steps
    )
    return params, runs.values["heldout_accuracy"].to(torch.float64).mean(-1)


def summary_entry(
    values: torch.Tensor, seed_counts: torch.Tensor, example_counts: torch.Tensor
) -> dict[str, float]:
    """A similarity's distribution over runs (S, N) -> the mean of the runs' means, its
    multi-bootstrap 95% interval (seeds and held-out examples resampled together),
    the 5%, 50% and 95% quantiles over runs, and how many runs have a correlation."""
    runs = paired.run_means(values)
    scored = runs[~runs.isnan()]
    low, high = stats.interval(paired.resampled_means(values, seed_counts, example_counts))
    described = stats.describe(scored)
    return {
        "mean": described["mean"],
        "ci95_low": low,
        "ci95_high": high,
        **{name: described[name] for name in stats.QUANTILES},
        "runs": int(scored.numel()),
    }


def compared(
    trained: dict[str, torch.Tensor],
    randomised: dict[str, torch.Tensor],
    seed_counts: torch.Tensor,
    example_counts: torch.Tensor,
) -> dict[str, dict[str, dict[str, float]]]:
    """{row: {measure: summary_entry}} of two models' explanations (S, N, T) per row."""
    return {
        row: {
            measure: summary_entry(values.cpu(), seed_counts, example_counts)
            for measure, values in similarity(trained[row], randomised[row]).items()
        }
        for row in trained
    }


def checks(
    cfg: Config,
    frame: pd.DataFrame,
    params: Params,
    seeds: list[int],
    inputs: torch.Tensor,
    labelled: tuple[Params, torch.Tensor] | None = None,
) -> dict:
    """Every test's similarities for the trained runs `params` (study seeds `seeds`) on
    the held-out `inputs` (N, T, C): {test: {step: {row: {measure: summary_entry}}}},
    with the groups and the label-randomised models' held-out accuracy. `labelled`:
    those models, `label_randomised`'s, where the caller trained them already (a grid
    cell, beside its own training, before the battery's phase)."""
    names = applicable(params.cfg)
    examples, steps = inputs.shape[:2]
    order_seed, dtype, device = cfg.faithfulness.order_seed, inputs.dtype, inputs.device
    trained = scores(params, inputs, names, cfg)
    trained[RANDOM] = random_scores(seeds, examples, steps, order_seed, dtype).to(device)
    fresh = interface.init_params(0, fresh_streams(cfg, seeds), cfg.model, steps, dtype, device)
    redraws = randomised_groups(cfg.model)
    models = {key: redrawn(params, fresh, group) for key, group in redraws.items()}
    if labelled is None:
        labelled = label_randomised(cfg, frame, seeds, device, dtype)
    models[LABELS, PERMUTED], label_accuracy = labelled
    generator = torch.Generator().manual_seed(cfg.study.bootstrap_seed)
    counts = (
        stats.resample_counts(len(seeds), cfg.study.bootstrap, generator),
        stats.resample_counts(examples, cfg.study.bootstrap, generator),
    )
    tests: dict = {}
    entries: dict = {}  # by what is re-drawn: cascading's first step is independent's first
    for salt, ((test, step), model) in enumerate(models.items(), start=1):
        key = redraws.get((test, step), PERMUTED)
        if key not in entries:
            randomised = scores(model, inputs, names, cfg)
            # A randomised model's random baseline: a stream the trained one never draws.
            noise = random_scores(seeds, examples, steps, order_seed, dtype, salt=(salt,))
            randomised[RANDOM] = noise.to(device)
            entries[key] = compared(trained, randomised, *counts)
        tests.setdefault(test, {})[step] = entries[key]
    return {
        "seeds": len(seeds),
        "groups": {
            group: list(members) for group, members in interface.randomisation_groups(cfg.model)
        },
        "label_heldout_accuracy": float(label_accuracy.mean()),
        "heldout_majority_share": majority_share(frame),
        "tests": tests,
    }
