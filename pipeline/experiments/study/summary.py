"""The seed study's lines in `dvc repro`'s closing summary."""

from __future__ import annotations

from pipeline.reporting.summary import study_line


def lines(cfg, summary: dict | None) -> list[str]:
    if summary is None:
        return []
    return [f"== the seed study ({cfg.paths.study_summary})", study_line(summary)]
