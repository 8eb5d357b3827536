"""Logging the next lesson's grid: one parent run per task x model cell.

In an experiment of its own, `<tracking.experiment>-next-lesson`, so the lesson's
versions (history, compare, the gap view) stay the lesson's. Tagged `task` and
`model` (the cell's variant), so the MLflow UI groups and filters by them; its
numbers under grid/ (held-out accuracy, the solved share, the majority baseline,
the hand-set accuracy, the shuffled control, per-head numbers) and the cell's
JSON. A cell already in the store is not logged again.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import Config
from pipeline.config.checks import GRID_SUFFIX
from pipeline.reporting.summary import interval
from pipeline.tracking.client import NewRun, log_once, source_tags
from pipeline.tracking.state import nested_metrics, number_params, state_digest
from pipeline.tracking.store import locked, store_uri

SUFFIX = GRID_SUFFIX  # the config checks the name with it (pipeline/config/checks.py)
PER_SEED = ("per_seed_heldout_accuracy", "per_seed_marker_mass", "per_seed_entropy")


def cell_metrics(document: dict) -> dict[str, float]:
    """The cell's numbers as grid/... metrics: summaries only, not every seed's."""
    numbers = {k: v for k, v in document.items() if isinstance(v, (int, float, dict))}
    if "heads" in numbers:
        numbers["heads"] = {k: v for k, v in numbers["heads"].items() if k not in PER_SEED}
    numbers.pop("model", None)
    numbers.pop("params", None)  # the settings it was made from, logged as params
    return {k: v for k, v in nested_metrics(numbers, "grid/").items() if v == v}


def log_cells(cfg: Config, cells: list[tuple[Config, dict, Path]]) -> list[tuple[str, bool]]:
    """Each (cell config, cell document, its file) as a parent run, under one lock:
    [(run id, newly logged)]."""
    uri = store_uri(cfg.tracking)
    return locked(uri, lambda: [_log_cell(uri, cfg, *cell) for cell in cells])


def _log_cell(uri: str, cfg: Config, cell: Config, document: dict, path: Path) -> tuple[str, bool]:
    tags = {"task": document["task"], "model": document["variant"]}

    def new_run(client, experiment_id: str) -> NewRun:
        name = f"{document['task']} x {document['variant']}"
        accuracy = document["heldout_accuracy"]
        run_tags = {
            **source_tags("python -m pipeline.stages.next_lesson"),
            **tags,
            "version": name,
            "mlflow.note.content": (
                f"{name}: held-out {interval(accuracy)} over {document['seeds']} seeds"
            ),
        }
        return NewRun(
            name,
            run_tags,
            number_params(cell),
            cell_metrics(document),
            rest=lambda client, run, _: client.log_artifact(run, str(path), artifact_path="grid"),
        )

    digest = state_digest(cell, document, tags)
    return log_once(uri, cfg.tracking.experiment + SUFFIX, digest, new_run)
