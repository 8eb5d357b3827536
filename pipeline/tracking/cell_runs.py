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
from pipeline.config.cells import CellTraining, cell_config, cell_label
from pipeline.tracking.client import NewRun, log_once, source_tags
from pipeline.tracking.state import number_params, state_digest
from pipeline.tracking.store import locked, store_uri


class CellRuns(NamedTuple):
    """How one kind of cell is logged."""

    suffix: str  # of the experiment's name
    metrics: Callable[[dict], dict[str, float]]
    note: Callable[[str, dict], str]
    source: str  # the command that logs it


def log_cells(
    cfg: Config, cells: list[tuple[Config, dict, Path]], kind: CellRuns, stage: str
) -> list[tuple[str, bool]]:
    """Each (cell config, cell document, its file) of an experiment's cells (`stage`:
    its cell stages' name, the artifacts' folder) as a parent run logged as `kind`
    says, under one lock: [(run id, newly logged)]."""
    uri = store_uri(cfg.tracking)
    return locked(uri, lambda: [_log_cell(uri, cfg, kind, stage, *cell) for cell in cells])


def log_cell_files(
    cfg: Config, cells: list[tuple[Path, dict]], kind: CellRuns, stage: str, training: CellTraining
) -> None:
    """Each (file, document) of an experiment's cells (`provenance.cell_documents`) as
    a parent run (`log_cells`), its config the cell's own: its task and variant,
    trained as `training` says. One line says how many were new."""
    configs = [(cell_config(cfg, d["task"], d["variant"], training), d, path) for path, d in cells]
    new = sum(fresh for _, fresh in log_cells(cfg, configs, kind, stage))
    print(f"logged {new} new of {len(configs)} {stage} cells in {store_uri(cfg.tracking)}")


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
