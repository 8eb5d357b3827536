"""Stage dynamics: the mechanism over training -> reports/dynamics/dynamics.json.

Reads the seed study's per-epoch numbers (reports/study/dynamics.parquet, measured
during the study's own training), its per-seed table and parameters, the
faithfulness battery's per-seed scores and the grid's two heads cells; trains the
last-bit flip and the phase diagram (phases.py). docs/dynamics.md says what each
number is and which paper it replays.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import torch

from pipeline.analysis import metrics, stats
from pipeline.config import Config, provenance
from pipeline.core.errors import ConfigError
from pipeline.core.files import read_json, read_parquet, write_json
from pipeline.core.precision import settle
from pipeline.experiments.dynamics import emergence, noise, phases, seeds_needed
from pipeline.models import frames, interface
from pipeline.models.parameters import to_flat
from pipeline.stages import entry
from pipeline.stages.start import checked_params

CURVES = ("heldout_accuracy", "marker_mass", "argmax_hit", "weight_effect_agreement", "loss")
PREDICTORS = ("marker_mass", "argmax_hit")


def epoch_matrix(table: pd.DataFrame, name: str) -> torch.Tensor:
    """(epochs + 1, S) of one per-epoch number, seeds in ascending order."""
    wide = table.pivot(index="epoch", columns="seed", values=name).sort_index()
    return torch.tensor(wide.sort_index(axis=1).to_numpy(), dtype=torch.float64)


def emergence_summary(
    hit: torch.Tensor, accuracy: torch.Tensor, found: float, resamples: int, generator
) -> dict:
    """When each seed's hit@1 settles at or above `found` (-1: never), its median with
    a bootstrap interval, and the order of the two phases."""
    rationale = emergence.settled_epoch(hit, found)
    reached = rationale[rationale >= 0].to(torch.float64)
    document = {
        "per_seed": rationale.tolist(),
        "share_never": emergence.never_share(rationale),
        "order": emergence.phase_order(rationale, emergence.settled_epoch(accuracy, found)),
    }
    if len(reached):
        median, low, high = emergence.median_interval(reached, resamples, generator)
        document |= {"median": median, "ci95_low": low, "ci95_high": high}
        document["epochs"] = stats.describe(reached)
    return document


def predictor_summary(
    matrices: dict[str, torch.Tensor], epochs: list[int], found: float, resamples, generator
) -> dict:
    """How well each early number predicts a seed's final story (its last hit@1 at or
    above `found`): the AUC with a bootstrap interval over seeds."""
    story = emergence.settled_epoch(matrices["argmax_hit"][-1:], found) >= 0
    document = {"share_found": float(story.to(torch.float64).mean())}
    for epoch in epochs:
        for name in PREDICTORS:
            auc, low, high = emergence.auc_interval(
                matrices[name][epoch], story, resamples, generator
            )
            document[f"{name}@{epoch}"] = {"auc": auc, "ci95_low": low, "ci95_high": high}
    return document


def claims_summary(cfg: Config, columns: dict[str, torch.Tensor], run_accuracy: float) -> dict:
    """Each headline claim's verdict over all seeds, and the chance a study of k seeds
    reaches it (`seeds_needed.seeds_table`)."""
    claims = {
        "run 1 is an unlucky seed": (columns["heldout"], seeds_needed.unlucky(run_accuracy)),
        "attention's hit@1 and rank agreement disagree": (
            columns["attention"],
            seeds_needed.metrics_disagree(),
        ),
        "a high weight is not a causal effect": (
            columns["high_weight_low_effect"],
            seeds_needed.weight_not_effect(),
        ),
    }
    if "heads" in columns:  # the grid has both cells
        claims["two heads beat one on the two-pattern task"] = (
            columns["heads"],
            seeds_needed.two_heads_beat_one(),
        )
    generator = torch.Generator().manual_seed(cfg.dynamics.claim_seed)
    document = {}
    for claim, (values, verdict) in claims.items():
        table = seeds_needed.seeds_table(values, verdict, generator, cfg.dynamics.claim_resamples)
        table["verdict"] = bool(verdict(values.reshape(len(values), -1)[None])[0])
        table["probability"] = {str(k): p for k, p in table["probability"].items()}
        document[claim] = table
    return document


def claim_columns(seeds: pd.DataFrame, battery: pd.DataFrame, cells: list[dict]) -> dict:
    """The per-seed values each claim reads: the study's, the battery's attention scores,
    the grid's paired two-head and one-head cells (`cells`, in that order; none where
    the grid lacks them)."""
    attention = battery[battery["explainer"] == "attention"].sort_values("seed")

    def column(frame: pd.DataFrame, *names: str) -> torch.Tensor:
        return torch.tensor(frame[list(names)].to_numpy(copy=True), dtype=torch.float64)

    columns = {
        "heldout": column(seeds, "heldout_accuracy"),
        "attention": column(attention, "hit_at_1", "tau_loo"),
        "high_weight_low_effect": column(seeds, "high_weight_low_effect"),
    }
    if cells:
        accuracies = [cell["per_seed_heldout_accuracy"] for cell in cells]
        columns["heads"] = torch.tensor(accuracies, dtype=torch.float64).T
    return columns


def heldout_correct(cfg: Config, params: pd.DataFrame, heldout) -> torch.Tensor:
    """(S, N) 1.0 where study run s gets held-out sequence n right."""
    _, trained = frames.params_from_frame(params, cfg.model, cfg.data.steps)
    logits, _ = interface.forward(trained, heldout[0])
    return metrics.correct(logits, heldout[1])


def curves(matrices: dict[str, torch.Tensor], lesson: list[int], seeds: list[int]) -> dict:
    """Per epoch: the median and 5%/95% quantiles over seeds, and the lesson runs'.

    The quantiles are order statistics (the seed at or below the level, at or above
    for q95), not interpolations: between two written values an interpolation can
    land on a half at the written precision, where a last bit would decide the
    rounding."""
    document = {}
    for name in CURVES:
        values = matrices[name]
        rows = torch.tensor([not bool(torch.isnan(row).all()) for row in values])
        measured = values[rows]
        q05, median, q95 = (
            torch.nanquantile(measured, level, dim=1, interpolation=how)
            for level, how in ((0.05, "lower"), (0.5, "lower"), (0.95, "higher"))
        )
        document[name] = {
            "epochs": torch.nonzero(rows).squeeze(1).tolist(),
            "q05": q05.tolist(),
            "median": median.tolist(),
            "q95": q95.tolist(),
            **{
                f"run {seed}": measured[:, seeds.index(seed)].tolist()
                for seed in lesson
                if seed in seeds
            },
        }
    return document


def defined(value):
    """The document with every NaN or infinite number as None (null in JSON): an AUC
    where every seed tells one story, a ratio where no held-out sequence varies."""
    if isinstance(value, dict):
        return {key: defined(item) for key, item in value.items()}
    if isinstance(value, list):
        return [defined(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run(cfg: Config, inputs: dict, lesson_summary: dict) -> dict:
    """The stage's document (reports/dynamics/dynamics.json) from its inputs (`main`'s
    tables by name, and "cells": the grid's two-head and one-head documents)."""
    count = interface.parameter_count(cfg.model, cfg.data.steps)
    if cfg.dynamics.flip_parameter >= count:
        raise ConfigError(
            f"invalid config value dynamics.flip_parameter={cfg.dynamics.flip_parameter}: "
            f"must be below the model's parameter count ({count})"
        )
    table, seeds_frame = inputs["dynamics"], inputs["seeds"].sort_values("seed")
    seeds = sorted(table["seed"].unique().tolist())
    matrices = {name: epoch_matrix(table, name) for name in CURVES}
    settings, resamples = cfg.dynamics, cfg.study.bootstrap
    generator = torch.Generator().manual_seed(cfg.study.bootstrap_seed)
    dtype = torch.float64
    train_split = frames.split_tensors(cfg, inputs["sequences"], "train", "cpu", dtype)[:2]
    heldout = frames.split_tensors(cfg, inputs["sequences"], "heldout", "cpu", dtype)
    correct = heldout_correct(cfg, inputs["params"].sort_values("seed"), heldout)
    lesson = [int(seed) for seed in lesson_summary["lesson_seeds"]]
    first = lesson_summary["lesson_seeds"][str(lesson[0])]["heldout_accuracy"]
    variance = noise.variance_ratio(correct, resamples, generator)
    gap = lesson_summary["pair_gap"]["observed"]
    flip_seeds = seeds[: settings.flip_seeds]
    before = {
        name: torch.tensor(seeds_frame[name].to_numpy()[: len(flip_seeds)], dtype=dtype)
        for name in ("heldout_accuracy", "argmax_hit")
    }
    # At the written precision, as `before` was written: an unchanged run compares equal.
    (numbers, flipped_params), phase_columns = phases.trainings(
        cfg, flip_seeds, train_split, heldout
    )
    flipped = {name: settle(value) for name, value in numbers.items()}
    changes = noise.flip_changes(before, flipped)
    _, study_params = frames.params_from_frame(
        inputs["params"].sort_values("seed").head(len(flip_seeds)), cfg.model, cfg.data.steps
    )
    moved = float((flipped_params - to_flat(study_params)).abs().max())
    return defined(
        {
            "seeds": len(seeds),
            "found": settings.found,
            "emergence": emergence_summary(
                matrices["argmax_hit"],
                matrices["heldout_accuracy"],
                settings.found,
                resamples,
                generator,
            ),
            "predictors": predictor_summary(
                matrices,
                [epoch for epoch in settings.predict_epochs if epoch <= cfg.train.epochs],
                settings.found,
                resamples,
                generator,
            ),
            "claims": claims_summary(
                cfg, claim_columns(seeds_frame, inputs["battery"], inputs["cells"]), first
            ),
            "noise": {
                **variance,
                "observed_gap": gap,
                "gap_in_stds": noise.gap_in_stds(gap, variance["observed"]),
                "predicted_gap_in_stds": noise.gap_in_stds(gap, variance["predicted"]),
            },
            "flip": {
                "parameter": settings.flip_parameter,
                "seeds": len(flip_seeds),
                **changes,
                "stories_changed": round(changes["share_story_changed"] * len(flip_seeds)),
                "max_parameter_change": moved,
            },
            "phases": phases.phase_diagram(cfg, phase_columns),
            "curves": curves(matrices, lesson, seeds),
        }
    )


def two_heads_cells(cfg: Config) -> list[dict]:
    """The grid's dynamics.two_heads and dynamics.one_head cells' documents, or none
    where grid.cells lacks either."""
    names = (cfg.dynamics.two_heads, cfg.dynamics.one_head)
    if not all(name in cfg.grid.cells for name in names):
        return []
    return [read_json(Path(cfg.paths.grid) / f"{name}.json") for name in names]


def main() -> None:
    cfg = checked_params("dynamics")
    inputs = {
        "sequences": read_parquet(cfg.paths.sequences),
        "dynamics": read_parquet(cfg.paths.study_dynamics),
        "seeds": read_parquet(cfg.paths.study_seeds),
        "params": read_parquet(cfg.paths.study_params),
        "battery": read_parquet(cfg.paths.study_faithfulness_seeds),
        "cells": two_heads_cells(cfg),
    }
    lesson_summary = read_json(Path(cfg.paths.study_summary))
    document = run(cfg, inputs, lesson_summary)
    with provenance.publishing(cfg, "dynamics"):
        write_json(Path(cfg.paths.dynamics) / "dynamics.json", document)
    from pipeline.experiments.dynamics.summary import dynamics_line

    print(dynamics_line(document))


if __name__ == "__main__":
    entry(main)
