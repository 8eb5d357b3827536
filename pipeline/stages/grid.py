"""Stage grid@<task>-<variant>: one cell of the next lesson's grid -> reports/grid/<cell>.json.

    python -m pipeline.stages.grid TASK VARIANT

The cell makes its own data (the lesson's sequences, the task's labels) and reads
no other stage's output, so it has no provenance record to check; its one file is
written atomically, and params.yaml is checked again before it is.
"""

from __future__ import annotations

import argparse

from pipeline import provenance
from pipeline.analysis import grid
from pipeline.config import load_params
from pipeline.errors import ConfigError
from pipeline.files import write_json
from pipeline.kinds import TASKS, VARIANTS
from pipeline.memory import check_memory
from pipeline.reporting.summary import interval
from pipeline.stages import entry


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("variant")
    args = parser.parse_args(argv)
    if args.task not in TASKS:
        raise ConfigError(f"unknown task {args.task!r}; allowed: {', '.join(TASKS)}")
    if args.variant not in VARIANTS:
        allowed = ", ".join(VARIANTS)
        raise ConfigError(f"unknown model variant {args.variant!r}; allowed: {allowed}")
    cfg = load_params()
    check_memory(cfg)  # before any work: the largest stage of this config fits
    document = grid.run_cell(cfg, args.task, args.variant)
    document["params"] = provenance.grid_params(cfg)  # what the readers check it against
    if load_params() != cfg:
        raise ConfigError("params.yaml changed while the grid cell ran: not publishing")
    write_json(provenance.cell_path(cfg.paths.grid, args.task, args.variant), document)
    accuracy = document["heldout_accuracy"]
    print(
        f"{args.task} x {args.variant}: held-out accuracy {interval(accuracy)} "
        f"over {document['seeds']} seeds"
    )


if __name__ == "__main__":
    entry(main)
