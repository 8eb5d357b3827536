"""Wall time of the next lesson's grid (docs/next_lesson.md), after imports.

    python benchmarks/bench_grid.py [--seeds 1000] [cells ...]

Each cell as its DVC stage runs it (`grid.run_cell`: the task's data, `--seeds`
seeds trained like the study, the summary; the order tasks train the
shuffled-steps control too; the faithfulness battery on the first
grid.faithfulness_seeds seeds), one after another in one process. Targets of issue
23 on 2 cores: 60 s for any one cell at 1000 seeds, 5 minutes for the grid. A
cell is a name of grid.cells (conf/grid/lesson.yaml, e.g. rise-window2); default:
every cell.
"""

from __future__ import annotations

import argparse
import time

from pipeline.config import compose, validate
from pipeline.experiments.grid import cell as grid
from pipeline.reporting.summary import interval


def numbers(document: dict) -> str:
    """The cell's headline: held-out mean [95% CI], solved share; the shuffled control
    and the difference to it, or the share of seeds whose heads divide the work."""

    accuracy = document["heldout_accuracy"]
    text = f"held-out {interval(accuracy)}, solved {accuracy['share_solved']:.2f}"
    if "shuffled" in document:
        shuffled, above = document["shuffled"], document["above_shuffled"]
        text += f"; shuffled {interval(shuffled)}, above {interval(above)}"
    if "heads" in document:
        text += f"; divided {document['heads']['share_divided']:.2f}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("cells", nargs="*")
    args = parser.parse_args()
    cfg = validate(compose([f"grid.seeds={args.seeds}"]))
    names = args.cells or list(cfg.grid.cells)
    total = 0.0
    for name in names:
        cell = cfg.grid.cells[name]
        start = time.perf_counter()
        document = grid.run_cell(cfg, cell.task, cell.variant)
        took = time.perf_counter() - start
        total += took
        print(f"{name:30s} {took:6.1f} s  {numbers(document)}", flush=True)
    print(f"{'grid':30s} {total:6.1f} s  ({len(names)} cells, {args.seeds} seeds each)")


if __name__ == "__main__":
    main()
