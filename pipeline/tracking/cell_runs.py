"""Logging the cells of an experiment of task x model cells (the next lesson's grid:
pipeline/experiments/grid/cell_runs.py; the attention debate): one parent run per cell.

In an MLflow experiment of its own, `<tracking.experiment><suffix>` (`-next-lesson`
for the grid, `-debate` for the debate), so the lesson's versions (history, compare,
the gap view) stay the lesson's. Tagged `task` and `model` (the cell's variant), so
the MLflow UI groups and filters by them; its numbers (`CellRuns.metrics`: the
grid's under grid/, the debate's under debate/, each experiment's summaries), and
the cell's JSON. A cell already in the store is not logged again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pipeline.config import Config
from pipeline.config.cells import cell_label
from pipeline.config.checks import DEBATE_SUFFIX
from pipeline.tracking.client import NewRun, log_once, source_tags
from pipeline.tracking.state import nested_metrics, number_params, state_digest
from pipeline.tracking.store import locked, store_uri


def debate_metrics(document: dict) -> dict[str, float]:
    """A debate cell's summaries as debate/... metrics, each eps and lam by its value;
    not every seed's numbers nor the binned tables."""
    adversary_keys = ("median_max_jsd", "share_far", "adversary_rationale_weight")
    numbers = {
        "learned_rationale_weight": document["learned_rationale_weight"],
        "adversary": {
            f"eps_{row['eps']:g}": {key: row[key] for key in adversary_keys}
            for row in document["adversary"]
        },
        "permutation": {
            key: document["permutation"][key] for key in ("median_output_change", "share_peaked")
        },
        "seed_variance": {
            key: value
            for key, value in document["seed_variance"].items()
            if not key.startswith("per_pair_")  # every pair's: the figure's, not MLflow's
        },
        "consistent_adversary": {
            f"lam_{row['penalty']:g}": {key: row[key] for key in ("tvd", "jsd", "heldout_accuracy")}
            for row in document["consistent_adversary"]
        },
        "fixed_attention": document["fixed_attention"],
        "deception": {
            f"lam_{row['penalty']:g}": {
                "heldout_accuracy": row["heldout_accuracy"],
                "rationale_weight": row["rationale_weight"],
                "hit_at_1": row["hit_at_1"],
                "diverged": len(row["diverged_seeds"]),
            }
            for row in document["deception"]
        },
    }
    return nested_metrics(numbers, "debate/")


def debate_note(name: str, document: dict) -> str:
    first = document["adversary"][0]
    return (
        f"{name}: the exact adversary at eps {first['eps']:g} reaches a median JSD of "
        f"{first['median_max_jsd']['median']:.4f} over {document['seeds']} seeds"
    )


class CellRuns(NamedTuple):
    """How one kind of cell is logged."""

    suffix: str  # of the experiment's name
    metrics: Callable[[dict], dict[str, float]]
    note: Callable[[str, dict], str]
    source: str  # the command that logs it


DEBATE = CellRuns(
    DEBATE_SUFFIX, debate_metrics, debate_note, "python -m pipeline.stages.debate_figures"
)


def log_cells(
    cfg: Config, cells: list[tuple[Config, dict, Path]], kind: CellRuns, stage: str
) -> list[tuple[str, bool]]:
    """Each (cell config, cell document, its file) of an experiment's cells (`stage`:
    its cell stages' name, the artifacts' folder) as a parent run logged as `kind`
    says, under one lock: [(run id, newly logged)]."""
    uri = store_uri(cfg.tracking)
    return locked(uri, lambda: [_log_cell(uri, cfg, kind, stage, *cell) for cell in cells])


def _log_cell(
    uri: str, cfg: Config, kind: CellRuns, stage: str, cell: Config, document: dict, path: Path
) -> tuple[str, bool]:
    tags = {"task": document["task"], "model": document["variant"]}

    def new_run(client, experiment_id: str) -> NewRun:
        name = cell_label(document["task"], document["variant"])
        run_tags = {
            **source_tags(kind.source),
            **tags,
            "version": name,
            "mlflow.note.content": kind.note(name, document),
        }
        return NewRun(
            name,
            run_tags,
            number_params(cell),
            kind.metrics(document),
            rest=lambda client, run, _: client.log_artifact(run, str(path), artifact_path=stage),
        )

    digest = state_digest(cell, document, tags)
    return log_once(uri, cfg.tracking.experiment + kind.suffix, digest, new_run)
