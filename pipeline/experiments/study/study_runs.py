"""Logging a seed study job (python -m pipeline.study): one run with the study/
numbers, its lesson seeds' gap as gap/seed_gap and summary.json; no run per
study seed (a thousand would swamp the UI)."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import Config
from pipeline.reporting.summary import study_line
from pipeline.tracking.client import NewRun, log_once, source_tags
from pipeline.tracking.state import (
    GAP_DECIMALS,
    nested_metrics,
    number_params,
    state_digest,
    version_label,
)
from pipeline.tracking.store import locked, store_uri


def log_study(
    cfg: Config, summary: dict, tags: dict[str, str], summary_file: Path
) -> tuple[str, bool]:
    """A study job's parent run (python -m pipeline.study): the study/ numbers, its
    lesson seeds' gap as gap/seed_gap, summary.json; no run per study seed. Returns
    (run id, newly logged)."""
    uri = store_uri(cfg.tracking)
    return locked(uri, lambda: _log_study_locked(uri, cfg, summary, tags, summary_file))


def study_note(summary: dict) -> str:
    """The run's description: the line the study prints."""
    return f"study of {study_line(summary)}"


def _log_study_locked(
    uri: str, cfg: Config, summary: dict, tags: dict[str, str], summary_file: Path
) -> tuple[str, bool]:
    def new_run(client, experiment_id: str) -> NewRun:
        name = version_label(tags)
        run_tags = {
            **source_tags("python -m pipeline.study"),
            **tags,
            "version": name,
            "mlflow.note.content": study_note(summary),
        }
        values = {
            "gap/seed_gap": round(summary["pair_gap"]["observed"], GAP_DECIMALS),
            **nested_metrics(summary, "study/"),
        }
        return NewRun(
            name,
            run_tags,
            number_params(cfg),
            values,
            rest=lambda client, run, _: client.log_artifact(
                run, str(summary_file), artifact_path="study"
            ),
        )

    digest = state_digest(cfg, {}, tags, summary)
    return log_once(uri, cfg.tracking.experiment, digest, new_run)
