"""Stage grid@<task>-<variant>: one cell of the next lesson's grid -> reports/grid/<cell>.json.

    python -m pipeline.experiments.grid.stage TASK VARIANT

The cell makes its own data (the lesson's sequences, the task's labels) and reads
no other stage's output, so it has no provenance record to check; its one file is
written atomically, and params.yaml is checked again before it is.
"""

from __future__ import annotations

from pipeline.config import load_params, provenance
from pipeline.config.cells import cell_label
from pipeline.core.errors import ConfigError
from pipeline.core.files import write_json
from pipeline.experiments.grid import cell
from pipeline.memory import check_memory
from pipeline.reporting.summary import interval
from pipeline.stages import cell_arguments, entry


def main(argv: list[str] | None = None) -> None:
    task, variant = cell_arguments(argv, __doc__)
    cfg = load_params()
    check_memory(cfg)  # before any work: the largest stage of this config fits
    document = cell.run_cell(cfg, task, variant)
    document["params"] = provenance.cell_params(cfg, "grid")  # what the readers check it against
    if load_params() != cfg:
        raise ConfigError("params.yaml changed while the grid cell ran: not publishing")
    write_json(provenance.cell_path(cfg.paths.grid, task, variant), document)
    accuracy = document["heldout_accuracy"]
    print(
        f"{cell_label(task, variant)}: held-out accuracy {interval(accuracy)} over "
        f"{document['seeds']} seeds"
    )


if __name__ == "__main__":
    entry(main)
