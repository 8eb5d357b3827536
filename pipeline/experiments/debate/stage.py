"""Stage debate@<task>-<variant>: one cell of the attention debate -> reports/debate/<cell>.json.

    python -m pipeline.experiments.debate.stage TASK VARIANT

Each paper's test on the cell's runs (pipeline/experiments/debate/cell.py, docs/debate.md). The
cell makes its own data and runs, as a grid cell does, and reads no other stage's
output; its one file is written atomically, and params.yaml is checked again before
it is.
"""

from __future__ import annotations

from pipeline.config import load_params, provenance
from pipeline.config.cells import cell_label
from pipeline.core.errors import ConfigError
from pipeline.core.files import write_json
from pipeline.experiments.debate.cell import run_cell
from pipeline.memory import check_memory
from pipeline.stages import cell_arguments, entry


def main(argv: list[str] | None = None) -> None:
    task, variant = cell_arguments(argv, __doc__)
    cfg = load_params()
    check_memory(cfg)  # before any work: the largest stage of this config fits
    document = run_cell(cfg, task, variant)
    document["params"] = provenance.cell_params(cfg, "debate")  # what readers check
    if load_params() != cfg:
        raise ConfigError("params.yaml changed while the debate cell ran: not publishing")
    write_json(provenance.cell_path(cfg.paths.debate, task, variant), document)
    first = document["adversary"][0]
    print(
        f"{cell_label(task, variant)}: eps {first['eps']}: median max JSD "
        f"{first['median_max_jsd']['median']:.4f} over {document['seeds']} seeds"
    )


if __name__ == "__main__":
    entry(main)
