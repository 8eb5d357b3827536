"""Every stage killed mid-work by SIGKILL, SIGTERM and SIGINT, then two runs at once.

    python -m benchmarks.kill_matrix [--stage train ...] [--skip-concurrent]

In a fresh copy of this project (its committed outputs, a git repository of its
own), params.yaml moves to another data seed, so every stage's outputs change.
For each stage, in dvc.yaml's order (of the grid, one cell, after the others):
one run to completion gives its new files. Then, for each signal, at half and at
nine tenths of that run's time: the old files are put back, the stage starts as
DVC runs it (`python -m pipeline.stages.<stage>`), gets the signal (SIGINT to its
process group, as Ctrl-C sends it) and is waited for. A stage publishes all its
outputs or none: its files must be all old or all new, with no temporary file
left. SIGKILL, which no process can act on, may leave temporary files (counted,
then removed) and, between two renames, a mix that the record written last does
not list: downstream stages refuse it. Then the stage runs again and must give the
new files byte for byte.
After the track stage's kills, no MLflow run may be left RUNNING.

Back on the default params, `dvc repro` must give the committed bytes. Then the
runs at once: two `dvc repro` of the default config, forcing two different stages
(DVC locks per stage: the second runs beside the first or stops at a lock; both
must end well and the outputs stay the committed bytes), and two queued
experiments run by two workers (both must succeed).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_memory import project_copy

SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}
FRACTIONS = (0.5, 0.9)
GRID_CELL = ("rise", "window2")  # the one cell killed; the others run before it
# dvc.yaml's order: the report reads the grid's cells, which must be of the new params.
STAGES = ["generate", "train", "evaluate", "study", "faithfulness"]
STAGES += [f"grid@{'-'.join(GRID_CELL)}", "next_lesson", "report", "track"]
OUTPUT_DIRS = ("data", "models", "reports")
NEW_PARAMS = ["data.seed=20260219"]


def snapshot(project: Path) -> dict[str, str]:
    """sha256 of every output file, and of the tracked-state file in the root."""
    files = [
        p
        for d in OUTPUT_DIRS
        for p in (project / d).rglob("*")
        if p.is_file() and ".tmp" not in p.name
    ]
    files += list(project.glob(".mlflow-state*.json"))
    return {str(p.relative_to(project)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def leftovers(project: Path) -> list[str]:
    """Temporary files a writer left behind."""
    return [
        str(p.relative_to(project))
        for d in OUTPUT_DIRS
        for p in (project / d).rglob("*")
        if ".tmp" in p.name
    ]


def stage_command(stage: str) -> list[str]:
    if stage.startswith("grid@"):
        return [sys.executable, "-m", "pipeline.experiments.grid.stage", *GRID_CELL]
    return [sys.executable, "-m", f"pipeline.stages.{stage}"]


def run(command: list[str], project: Path, kill: tuple[float, int] | None = None) -> int:
    """`command` in `project`; with `kill` = (after seconds, signal), signalled then."""
    process = subprocess.Popen(
        command,
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "DVC_ROOT": str(project)},
    )
    if kill is not None:
        after, signum = kill
        try:
            process.wait(timeout=after)
        except subprocess.TimeoutExpired:
            if signum == signal.SIGINT:
                os.killpg(process.pid, signum)  # Ctrl-C reaches the foreground group
            else:
                process.send_signal(signum)
    return process.wait()


def restore(project: Path, files: dict[str, bytes | None]) -> None:
    for name, content in files.items():
        path = project / name
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(content)


def contents(project: Path, names: set[str]) -> dict[str, bytes | None]:
    return {n: (project / n).read_bytes() if (project / n).exists() else None for n in names}


def sealed(project: Path, stage: str) -> bool:
    """Whether the stage's provenance record (written last) lists its outputs as they
    are: the downstream stages check their inputs against it."""
    import json

    record = project / "reports" / "provenance" / f"{stage.split('@')[0]}.json"
    if not record.exists():
        return True  # the grid's cells and track have none
    listed = json.loads(record.read_text())["outputs"]
    return all(
        (project / name).exists()
        and hashlib.sha256((project / name).read_bytes()).hexdigest() == digest
        for name, digest in listed.items()
    )


def running_runs(project: Path) -> int:
    import mlflow

    store = project / "mlflow.db"
    if not store.exists():
        return 0
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    runs = mlflow.search_runs(search_all_experiments=True, run_view_type=3)
    return int((runs["status"] == "RUNNING").sum()) if len(runs) else 0


LOGGING_STAGES = ("track", "next_lesson")  # their work is logging to the MLflow store
STORE = ("mlflow.db", "mlartifacts")


def save_store(project: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    for name in STORE:
        if (project / name).is_dir():
            shutil.copytree(project / name, dest / name)
        elif (project / name).exists():
            shutil.copy2(project / name, dest / name)


def restore_store(project: Path, saved: Path) -> None:
    """The store as it was before the stage first logged: each kill hits a log."""
    for name in STORE:
        if (project / name).is_dir():
            shutil.rmtree(project / name)
        (project / name).unlink(missing_ok=True)
        if (saved / name).is_dir():
            shutil.copytree(saved / name, project / name)
        elif (saved / name).exists():
            shutil.copy2(saved / name, project / name)


def kill_stage(project: Path, stage: str) -> list[str]:
    """The stage's rows of the matrix; leaves its new outputs in place."""
    before = snapshot(project)
    original = contents(project, set(before))
    saved = project.parent / "store-before"
    if stage in LOGGING_STAGES:
        save_store(project, saved)
    started = time.monotonic()
    assert run(stage_command(stage), project) == 0, f"{stage} failed unkilled"
    took = time.monotonic() - started
    after = snapshot(project)
    changed = {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}
    old = {n: original.get(n) for n in changed}
    new = contents(project, changed)
    rows = []
    for name, signum in SIGNALS.items():
        for fraction in FRACTIONS:
            restore(project, old)
            if stage in LOGGING_STAGES:
                restore_store(project, saved)
            code = run(stage_command(stage), project, (took * fraction, signum))
            now = snapshot(project)
            states = {"old" if now.get(n) == before.get(n) else "new" if now.get(n) == after.get(n)
                      else "other" for n in changed}  # fmt: skip
            published = "none" if states == {"old"} else "all" if states == {"new"} else "MIXED"
            if published == "MIXED" and not sealed(project, stage):
                published = "mixed, refused downstream"  # the record, last, still the old
            left = leftovers(project)
            for leftover in left:  # after SIGKILL; git ignores them, no one reads them
                (project / leftover).unlink()
            again = run(stage_command(stage), project)
            recovered = again == 0 and snapshot(project) == after
            extra = f", RUNNING runs {running_runs(project)}" if stage == "track" else ""
            killed = signum == signal.SIGKILL  # acts between two renames; nothing can defer it
            allowed = {"none", "all"} | ({"mixed, refused downstream"} if killed else set())
            ok = published in allowed and (killed or not left) and recovered
            rows.append(
                f"{stage:14} SIG{name:4} at {fraction:.1f} x {took:4.1f} s: exit {code:4}, "
                f"published {published}, leftovers {len(left)}, rerun byte-identical "
                f"{'yes' if recovered else 'NO'}{extra}  {'ok' if ok else 'FAILED'}"
            )
            print(rows[-1], flush=True)
    restore(project, new)
    return rows


def recover(project: Path) -> str:
    """Back on the default params, `dvc repro` must give the committed bytes."""
    result = subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, text=True)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                            text=True).stdout  # fmt: skip
    ok = result.returncode == 0 and status == ""
    changed = len(status.splitlines())
    return (
        f"dvc repro back on the default params: exit {result.returncode}, "
        f"{changed} committed files changed  {'ok' if ok else 'FAILED'}"
    )


def concurrent(project: Path) -> list[str]:
    rows = []
    first = subprocess.Popen(
        ["dvc", "repro", "--force", "-s", "study"], cwd=project,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(3)
    second = subprocess.run(
        ["dvc", "repro", "--force", "-s", "train"], cwd=project, capture_output=True, text=True
    )
    first.communicate()
    code = first.returncode
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                            text=True).stdout  # fmt: skip
    said = (second.stderr.strip().splitlines() or [""])[-1][:100]
    # DVC locks per stage: the second either runs beside the first or stops at a lock.
    second_ok = second.returncode == 0 or "lock" in second.stderr
    ok = code == 0 and second_ok and status == ""
    rows.append(
        f"two dvc repro at once: first exit {code}, second exit {second.returncode} "
        f"({said!r}), git status {'clean' if not status else 'CHANGED'}  {'ok' if ok else 'FAILED'}"
    )
    print(rows[-1], flush=True)
    for lr in ("0.5", "0.7"):
        subprocess.run(["dvc", "exp", "run", "--queue", "-S", f"train.lr={lr}"], cwd=project,
                       check=True, capture_output=True)  # fmt: skip
    started = time.monotonic()
    queue = subprocess.run(["dvc", "queue", "start", "-j", "2"], cwd=project, capture_output=True)
    while True:
        listed = subprocess.run(["dvc", "queue", "status"], cwd=project, capture_output=True,
                                text=True).stdout  # fmt: skip
        if "Running" not in listed and "Queued" not in listed:
            break
        time.sleep(5)
    done = listed.count("Success")
    ok = queue.returncode == 0 and done == 2
    rows.append(
        f"two queued experiments on two workers: {done} of 2 succeeded in "
        f"{time.monotonic() - started:.0f} s  {'ok' if ok else 'FAILED'}"
    )
    print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", action="append", help="only these (grid@cell, next_lesson)")
    parser.add_argument("--skip-concurrent", action="store_true")
    args = parser.parse_args()
    from pipeline.config import compose
    from pipeline.config.load import composed_yaml

    with tempfile.TemporaryDirectory(prefix="kill-matrix-") as folder:
        project = project_copy(Path(folder))
        for command in (["git", "init", "-q"], ["git", "add", "-A"],
                        ["git", "commit", "-qm", "copy", "--no-verify"]):  # fmt: skip
            subprocess.run(command, cwd=project, check=True, capture_output=True)
        default = (project / "params.yaml").read_bytes()
        (project / "params.yaml").write_text(composed_yaml(NEW_PARAMS))
        rows = []
        for stage in STAGES:
            if stage.startswith("grid@"):  # the other cells, to completion
                for cell in compose(NEW_PARAMS).grid.cells.values():
                    if (cell.task, cell.variant) != GRID_CELL:
                        command = [sys.executable, "-m", "pipeline.experiments.grid.stage"]
                        assert run([*command, cell.task, cell.variant], project) == 0, cell
            if args.stage is None or stage in args.stage:
                rows += kill_stage(project, stage)
            else:
                assert run(stage_command(stage), project) == 0, stage
        (project / "params.yaml").write_bytes(default)
        rows.append(recover(project))
        print(rows[-1], flush=True)
        if not args.skip_concurrent:
            rows += concurrent(project)
        failed = [row for row in rows if row.endswith("FAILED")]
        print(f"\n{len(rows) - len(failed)} of {len(rows)} ok")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
