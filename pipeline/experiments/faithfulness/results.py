"""The battery's results: {"runs": reports/faithfulness.json (per lesson run, and
captum's robustness), "study": reports/study/faithfulness.json (over the study's
runs, the paired comparisons, the sanity checks)}; the report's section reads the
per-run parquet as well (section.report_results)."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.files import read_json


def read(cfg) -> dict | None:
    """Both documents, None where the faithfulness stage has not run."""
    paths = Path(cfg.paths.faithfulness), Path(cfg.paths.study_faithfulness)
    if not all(path.exists() for path in paths):
        return None
    return {"runs": read_json(paths[0]), "study": read_json(paths[1])}
