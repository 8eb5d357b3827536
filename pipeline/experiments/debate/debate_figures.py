"""Stage debate_figures: the attention debate's cells -> reports/debate_figures/ (the
figures of report.md's section "The attention debate"), and one MLflow parent run
per cell (tracking.enabled)."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import load_params, provenance
from pipeline.core.files import write_bytes
from pipeline.stages import entry


def main() -> None:
    cfg = load_params()  # reads the cells, computes nothing large
    from pipeline.experiments.debate.figures import debate_figures

    cells = provenance.cell_documents(cfg, "debate")
    out = Path(cfg.paths.debate_figures)
    pngs = debate_figures([document for _, document in cells]) if cells else {}
    with provenance.publishing(cfg, "debate_figures"):
        for name, png in pngs.items():
            write_bytes(out / name, png)
    if cfg.tracking.enabled and cells:  # one parent run per cell, its config the cell's own
        from pipeline.experiments.debate.cell_runs import RUNS
        from pipeline.tracking.cell_runs import log_cell_files

        log_cell_files(cfg, cells, RUNS, "debate", cfg.grid)  # trained as the grid's cells


if __name__ == "__main__":
    entry(main)
