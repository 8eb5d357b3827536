"""Stage next_lesson: the grid's cells -> reports/next_lesson/ (report and figures),
and one MLflow parent run per cell (tracking.enabled)."""

from __future__ import annotations

from pathlib import Path

from pipeline import provenance
from pipeline.config import Config, load_params
from pipeline.config.cells import cell_config
from pipeline.files import read_json, write_bytes, write_text
from pipeline.reporting.next_lesson import HEADS_TASK, next_lesson_markdown
from pipeline.stages import entry


def main() -> None:
    cfg = load_params(sizes=False)  # reads the cells, computes nothing large
    from pipeline.reporting.figures import next_lesson_figures

    paths = sorted(Path(cfg.paths.grid).glob("*.json"))
    cells = [read_json(path) for path in paths]
    order = {task: i for i, task in enumerate((HEADS_TASK, "first_half", "rise"))}
    cells.sort(key=lambda c: (order.get(c["task"], len(order)), c["task"]))
    heads = [c for c in cells if c["task"] == HEADS_TASK]
    pngs = next_lesson_figures(heads, [c for c in cells if c["task"] != HEADS_TASK])
    out = Path(cfg.paths.next_lesson)
    with provenance.publishing(cfg, "next_lesson"):
        for name, png in pngs.items():
            write_bytes(out / name, png)
        write_text(out / "next_lesson.md", next_lesson_markdown(cells, list(pngs)))
    print(f"== the next lesson: {out / 'next_lesson.md'}")
    if cfg.tracking.enabled:
        log(cfg, paths)


def log(cfg: Config, paths: list[Path]) -> None:
    """One parent run per cell, its config the cell's own (the task, the variant)."""
    from pipeline.tracking import store_uri
    from pipeline.tracking.grid_runs import log_cells

    documents = [read_json(path) for path in paths]
    cells = [
        (cell_config(cfg, d["task"], d["variant"]), d, path)
        for d, path in zip(documents, paths, strict=True)
    ]
    new = sum(fresh for _, fresh in log_cells(cfg, cells))
    print(f"logged {new} new of {len(cells)} grid cells in {store_uri(cfg.tracking)}")


if __name__ == "__main__":
    entry(main)
