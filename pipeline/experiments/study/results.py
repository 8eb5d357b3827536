"""The seed study's results: reports/study/summary.json (the report's section reads
seeds.parquet as well: section.report_results)."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.files import read_json


def read(cfg) -> dict | None:
    """summary.json, None where the study stage has not run."""
    path = Path(cfg.paths.study_summary)
    return read_json(path) if path.exists() else None
