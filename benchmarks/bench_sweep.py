"""Wall time of a 4-job sweep of the default config, per Hydra launcher.

    python benchmarks/bench_sweep.py [LAUNCHER ...]     default: basic joblib ray

Each sweep is one `python -m pipeline.run -m train.lr=0.3,0.6 data.seed=1,2`
command, timed whole: Python and library imports, Ray's start-up, four jobs
(generate, train, evaluate, log a parent and two seed runs to a fresh SQLite
store in a temporary directory). `basic` is Hydra's default launcher: the jobs
one after another in one process. Target (issue 13, 2-core machine): Ray within
2x the sequential time.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWEEP = ["train.lr=0.3,0.6", "data.seed=1,2"]
LAUNCHERS = {
    "basic": [],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "ray": ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"],
}


def sweep_seconds(launcher: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable, "-m", "pipeline.run", "-m", *SWEEP, *LAUNCHERS[launcher],
            f"hydra.sweep.dir={tmp}/sweep", f"tracking.uri=sqlite:///{tmp}/mlflow.db",
        ]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=Path(__file__).parents[1])
        return time.perf_counter() - start


def main(launchers: list[str]) -> None:
    seconds = {name: sweep_seconds(name) for name in launchers}
    base = seconds.get("basic")
    print(f"{'launcher':>8} {'seconds':>8} {'x basic':>8}")
    for name, value in seconds.items():
        ratio = f"{value / base:>8.2f}" if base else f"{'-':>8}"
        print(f"{name:>8} {value:>8.1f} {ratio}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(LAUNCHERS))
