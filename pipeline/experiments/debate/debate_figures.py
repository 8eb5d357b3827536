"""Stage debate_figures: the attention debate's cells -> reports/debate_figures/ (the
figures of report.md's section "The attention debate"), and one MLflow parent run
per cell (tracking.enabled)."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import Config, load_params, provenance
from pipeline.config.cells import cell_config
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
    if cfg.tracking.enabled and cells:
        log(cfg, cells)


def log(cfg: Config, cells: list[tuple[Path, dict]]) -> None:
    """One parent run per cell, its config the cell's own (the task, the variant)."""
    from pipeline.experiments.debate.cell_runs import RUNS
    from pipeline.tracking import store_uri
    from pipeline.tracking.cell_runs import log_cells

    cells = [(cell_config(cfg, d["task"], d["variant"], cfg.grid), d, path) for path, d in cells]
    new = sum(fresh for _, fresh in log_cells(cfg, cells, RUNS, "debate"))
    print(f"logged {new} new of {len(cells)} debate cells in {store_uri(cfg.tracking)}")


if __name__ == "__main__":
    entry(main)
