"""Seconds of each debate stage, as `dvc repro` runs them (docs/debate.md).

    python benchmarks/bench_debate_cells.py [--config "override ..."]

Runs every debate cell's stage command, `python -m pipeline.experiments.debate.stage TASK
VARIANT`, then `pipeline.experiments.debate.debate_figures`, in a copy of this project whose
params.yaml is composed from `--config`'s overrides (tracking off), one after
another, and prints each process's wall seconds and their sum. The defaults are
the cost on a cold `dvc repro`; `--config "debate.seeds=1000
debate.trained_seeds=100"` the issue's full scale. Before the clock starts, one
window step compiles the copy's numba loops (`cache=True`): on a cold `dvc repro`
the grid's window cells, which run before the debate, pay that once.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from pipeline.config import validate
from pipeline.config.load import composed_yaml

sys.path.insert(0, str(Path(__file__).parent))
from bench_memory import compose_params, project_copy  # noqa: E402

# One step of window's fused kernel in the copy: numba compiles and caches its loops.
COMPILE = (
    "import torch; from pipeline.config import ModelConfig; from pipeline.models import "
    "interface, train; cfg = ModelConfig(kind='window'); "
    "params = interface.init_params(0, [1], cfg, 12); "
    "train.train(params, torch.zeros(2, 12, 2, dtype=torch.float64), "
    "torch.tensor([0.0, 1.0], dtype=torch.float64), 1, 0.1)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="", help="Hydra overrides, space-separated")
    args = parser.parse_args()
    overrides = [*args.config.split(), "tracking.enabled=false"]
    with tempfile.TemporaryDirectory() as folder:
        project = project_copy(Path(folder))
        (project / "params.yaml").write_text(composed_yaml(overrides))
        cfg = validate(compose_params(project))
        commands = {
            f"debate@{name}": ["pipeline.experiments.debate.stage", cell.task, cell.variant]
            for name, cell in cfg.debate.cells.items()
        }
        commands["debate_figures"] = ["pipeline.experiments.debate.debate_figures"]
        subprocess.run([sys.executable, "-c", COMPILE], cwd=project, check=True)
        total = 0.0
        for stage, command in commands.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", *command], cwd=project, check=True)
            seconds = time.perf_counter() - started
            total += seconds
            print(f"{stage:40s} {seconds:7.1f} s", flush=True)
    print(f"{'all':40s} {total:7.1f} s  (torch threads {torch.get_num_threads()})")


if __name__ == "__main__":
    main()
