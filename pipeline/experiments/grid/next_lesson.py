"""Stage next_lesson: the grid's cells -> reports/next_lesson/ (the figures of
report.md's section "The next lesson"), and one MLflow parent run per cell
(tracking.enabled)."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import load_params, provenance
from pipeline.core.files import remove, write_bytes
from pipeline.experiments.grid.section import experiments
from pipeline.stages import entry


def main() -> None:
    cfg = load_params()  # reads the cells, computes nothing large
    from pipeline.experiments.grid.figures import next_lesson_figures

    cells = provenance.cell_documents(cfg, "grid")
    pngs = next_lesson_figures(*experiments([document for _, document in cells]))
    out = Path(cfg.paths.next_lesson)
    with provenance.publishing(cfg, "next_lesson"):
        for name, png in pngs.items():
            write_bytes(out / name, png)
        remove(out / "next_lesson.md")  # an earlier version's, now in report.md
    if cfg.tracking.enabled:  # one parent run per cell, its config the cell's own
        from pipeline.experiments.grid.cell_runs import RUNS
        from pipeline.tracking.cell_runs import log_cell_files

        log_cell_files(cfg, cells, RUNS, "grid", cfg.grid)  # trained as the grid's cells


if __name__ == "__main__":
    entry(main)
