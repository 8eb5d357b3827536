"""Stage next_lesson: the grid's cells -> reports/next_lesson/ (report and figures)."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import load_params
from pipeline.files import all_or_none, read_json, write_bytes, write_text
from pipeline.reporting.next_lesson import HEADS_TASK, next_lesson_markdown
from pipeline.stages import entry


def main() -> None:
    cfg = load_params(sizes=False)  # reads the cells, computes nothing large
    from pipeline.reporting.figures import next_lesson_figures

    cells = [read_json(path) for path in sorted(Path(cfg.paths.grid).glob("*.json"))]
    order = {task: i for i, task in enumerate((HEADS_TASK, "first_half", "rise"))}
    cells.sort(key=lambda c: (order.get(c["task"], len(order)), c["task"]))
    heads = [c for c in cells if c["task"] == HEADS_TASK]
    pngs = next_lesson_figures(heads, [c for c in cells if c["task"] != HEADS_TASK])
    out = Path(cfg.paths.next_lesson)
    with all_or_none():
        for name, png in pngs.items():
            write_bytes(out / name, png)
        write_text(out / "next_lesson.md", next_lesson_markdown(cells, list(pngs)))
    print(f"== the next lesson: {out / 'next_lesson.md'}")


if __name__ == "__main__":
    entry(main)
