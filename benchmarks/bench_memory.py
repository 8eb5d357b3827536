"""Peak memory of every stage against its estimate (pipeline/memory/).

    python benchmarks/bench_memory.py [--config "override ..."] ...

Runs each stage of the pipeline as DVC does, `python -m pipeline.stages.<stage>`,
in a fresh clone of this project with params.yaml composed from `--config`'s
overrides (tracking off), one after another, and prints each process's peak
resident memory (wait4's ru_maxrss) beside the stage's estimate and their ratio.
The config check refuses a configuration whose largest estimate is over the
limit; the estimate should be at or above the peak and at most twice it
(tests/memory/test_memory.py checks a few configurations the same way).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.config import PROJECT_ROOT, validate
from pipeline.config.load import composed_yaml
from pipeline.core.kinds import EXPERIMENTS

DEFAULT_CONFIGS = [
    "grid.seeds=20",
    "model=multihead study.seeds=250 grid.seeds=300 faithfulness.ig_steps=20",
    "model=window model.window=12 study.seeds=2000 train.seeds=[1,2,3,4,5,6,7,8]",
]


def stage_commands(cfg) -> dict[str, list[str]]:
    """Each stage's command line, in dvc.yaml's order (the grid's and the debate's cells
    by name)."""
    commands = {
        stage: [sys.executable, "-m", f"pipeline.stages.{stage}"]
        for stage in ("generate", "train", "evaluate")
    }
    for name, package in EXPERIMENTS.items():  # each experiment's stage (its folder)
        commands[name] = [sys.executable, "-m", f"{package}.stage"]
    for name, cell in cfg.grid.cells.items():
        commands[f"grid@{name}"] = [
            sys.executable, "-m", "pipeline.experiments.grid.stage", cell.task, cell.variant
        ]  # fmt: skip
    for name, cell in cfg.debate.cells.items():
        commands[f"debate@{name}"] = [
            sys.executable, "-m", "pipeline.experiments.debate.stage", cell.task, cell.variant
        ]  # fmt: skip
    commands["report"] = [sys.executable, "-m", "pipeline.stages.report"]
    return commands


# A small launcher between this process and the stage: Linux carries a process's
# peak memory across fork and exec, so a stage started from a large process (a
# pytest worker) would report that process's size as its own peak.
LAUNCHER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "open(sys.argv[1], 'w').write(str(peak))\n"
    "sys.exit(code)\n"
)
# The estimates as the stages see the machine (their thread count), not as this
# process does.
ESTIMATES = (
    "import json\n"
    "from pipeline.config import load_params\n"
    "from pipeline.memory import stage_estimates\n"
    "print(json.dumps(stage_estimates(load_params())))\n"
)


def peak_rss(command: list[str], cwd: Path) -> int:
    """The peak resident memory of `command`'s process, in bytes."""
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        result = subprocess.run(
            [sys.executable, "-c", LAUNCHER, peak.name, *command],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command[2:])} failed: {result.stderr[-2000:]}")
        return int(peak.read()) * 1024  # KiB on Linux


def measuring_path(folder: Path) -> str:
    """A PATH whose `python` runs each command under LAUNCHER, its peak written to
    `folder`: a whole `dvc repro` measured stage by stage (DVC starts each stage's
    `python -m pipeline.stages.<stage>` from PATH). Read it with `peaks_by_stage`."""
    shim = folder / "bin" / "python"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(
        "#!/bin/sh\n"
        'name=$(printf "%s@" "$@" | tr / _)\n'
        f"exec {shlex.quote(sys.executable)} -c {shlex.quote(LAUNCHER)} "
        f'"{folder}/$name.peak" {shlex.quote(sys.executable)} "$@"\n'
    )
    shim.chmod(0o755)
    return f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}"


def peaks_by_stage(folder: Path, cfg) -> dict[str, int]:
    """The peak resident memory, in bytes, of each stage that ran with `measuring_path`'s
    python, by stage name (dvc.yaml's, a grid cell as grid@<cell>)."""
    peaks = {}
    for stage, command in stage_commands(cfg).items():
        peak = folder / ("@".join(command[1:]).replace("/", "_") + "@.peak")
        if peak.exists():
            peaks[stage] = int(peak.read_text()) * 1024  # KiB on Linux
    return peaks


def project_copy(dest: Path, untracked: bool = False) -> Path:
    """The project's tracked files (its committed outputs included), with `untracked`
    also the files git does not ignore; no git history."""
    others = ["--others", "--exclude-standard"] if untracked else []
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", *others],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, (item.decode() for item in listed)):
        source = PROJECT_ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def measure(project: Path, overrides: list[str], stages: list[str] | None = None) -> list[tuple]:
    """(stage, measured peak, estimate) for each stage of the config of `overrides`,
    run in `project` (a copy: its params.yaml and outputs are replaced)."""
    overrides = [*overrides, "tracking.enabled=false"]
    (project / "params.yaml").write_text(composed_yaml(overrides))
    cfg = validate(compose_params(project))
    said = subprocess.run(
        [sys.executable, "-c", ESTIMATES], cwd=project, capture_output=True, text=True, check=True
    )
    estimates = json.loads(said.stdout)
    rows = []
    for stage, command in stage_commands(cfg).items():
        if stages is None or stage in stages or stage.split("@")[0] in stages:
            rows.append((stage, peak_rss(command, project), estimates[stage]))
    return rows


def compose_params(project: Path):
    from omegaconf import OmegaConf

    return OmegaConf.load(project / "params.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", help="overrides, space-separated")
    parser.add_argument("--stage", action="append", help="only these (grid: every cell)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        project = project_copy(Path(folder))
        for config in args.config or DEFAULT_CONFIGS:
            print(f"\n{config}")
            print(f"{'stage':34} {'peak MiB':>9} {'est MiB':>9} {'est/peak':>8}")
            for stage, peak, estimate in measure(project, config.split(), args.stage):
                print(
                    f"{stage:34} {peak / 2**20:9.0f} {estimate / 2**20:9.0f} {estimate / peak:8.2f}"
                )
                sys.stdout.flush()


if __name__ == "__main__":
    main()
