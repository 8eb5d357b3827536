"""The DVC stage entry points, run in process on a small config in a temp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import reference_lesson as lesson

from pipeline.config import PROJECT_ROOT
from pipeline.config.load import composed_yaml
from pipeline.core import files, precision
from pipeline.core.errors import OrphanedError
from pipeline.stages import evaluate, generate, train
from tests.conftest import STAGE_OUTPUTS, run_stage, small_overrides


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "params.yaml").write_text(composed_yaml(small_overrides()))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_all_stages() -> None:
    generate.main()
    train.main()
    evaluate.main()


def output_bytes(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in STAGE_OUTPUTS}


def test_stages_write_every_output_deterministically(workdir, small_cfg):
    run_all_stages()
    first = output_bytes(workdir)
    run_all_stages()
    assert output_bytes(workdir) == first

    document = json.loads(first["reports/metrics.json"])
    assert document["data"]["sequences"] == 120
    assert set(document["runs"]) == {"1", "2"}
    # The stage files hold the lesson's own numbers for this config.
    reference = lesson.Lesson(small_cfg.data.seed, 120, 12, (60, 30, 30), 30, 0.6)
    for seed in (1, 2):
        trained = reference.train_run(seed)
        run = document["runs"][str(seed)]
        heldout_accuracy = lesson.accuracy(trained, reference.heldout_set)
        assert run["heldout_accuracy"] == precision.rounded(heldout_accuracy)
        agreement, _, high, high_low = lesson.causality(trained, reference.heldout_set)
        assert run["weight_effect_agreement"] == precision.rounded(agreement)
        assert run["high_weight"] == high
        assert run["high_weight_low_effect"] == high_low


def test_training_curves_have_one_row_per_epoch(workdir):
    generate.main()
    train.main()
    curves = (workdir / "reports/training.csv").read_text().splitlines()
    assert curves[0] == "epoch,seed,loss,accuracy" and len(curves) == 1 + 30 * 2
    assert [line.split(",")[:2] for line in curves[1:3]] == [["0", "1"], ["0", "2"]]


def test_bad_params_value_stops_the_stage_and_keeps_outputs(workdir, run_entry):
    run_all_stages()
    before = output_bytes(workdir)
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("lr: 0.6", "lr: -0.6"))
    for stage in (train, evaluate):
        code, stderr = run_entry(stage.main)
        assert code == 1
        assert stderr.startswith("error: invalid config value train.lr=-0.6")
        assert stderr.count("\n") == 1
    assert output_bytes(workdir) == before


def test_a_config_too_large_for_memory_stops_every_computing_stage_before_work(workdir, run_entry):
    """The memory bound is the stages' own (pipeline/memory/, above the config and
    the models): each one that computes refuses the config before reading its
    inputs, and the generate stage, which needs no model, still runs."""
    from pipeline.experiments.faithfulness import stage as faithfulness
    from pipeline.experiments.grid import stage as grid
    from pipeline.experiments.roar import stage as roar
    from pipeline.experiments.study import stage as study
    from pipeline.stages import report

    run_all_stages()
    before = output_bytes(workdir)
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("bootstrap: 20\n", "bootstrap: 1000000000\n"))
    stages = [train.main, evaluate.main, study.main, faithfulness.main, roar.main, report.main]
    for main in [*stages, lambda: grid.main(["rise", "lesson"])]:
        code, stderr = run_entry(main)
        assert code == 1
        assert stderr.startswith("error: invalid config value study.bootstrap=1000000000: "), stderr
        assert stderr.rstrip().endswith("more than the 8 GiB limit") and stderr.count("\n") == 1
    assert output_bytes(workdir) == before


def test_the_generate_stage_runs_without_torch(workdir):
    """Data generation depends on the config, the data and the tasks, not on a model:
    with torch unimportable it still writes its outputs (dvc.yaml lists no
    pipeline/models/ for it)."""
    blocked = (
        "import runpy, sys; sys.modules['torch'] = None; "
        "runpy.run_module('pipeline.stages.generate', run_name='__main__')"
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", blocked], cwd=workdir, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    assert (workdir / "data/sequences.parquet").is_file()
    assert "torch" not in result.stderr


def test_missing_input_is_a_clear_error(workdir):
    result = run_stage("train", workdir)
    assert result.returncode == 1
    # The first thing a stage reads: the record of the stage whose outputs it uses.
    assert (
        result.stderr == "error: missing reports/provenance/generate.json: run `dvc repro` first\n"
    )


def test_divergence_stops_training_without_writing(workdir, run_entry):
    generate.main()
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("lr: 0.6", "lr: 1.0e+300"))
    code, stderr = run_entry(train.main)
    assert code == 1 and "diverged" in stderr and stderr.count("\n") == 1
    assert not (workdir / "models/parameters.parquet").exists()


def test_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    files.write_json(target, {"old": 1})

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_json(target, {"new": 2})
    assert json.loads(target.read_text()) == {"old": 1}
    assert list(tmp_path.iterdir()) == [target]


# Orphans and signals (issue 10). A stand-in for DVC starts the train stage as DVC
# does (`$SHELL -c CMD`, or the command itself, as bash's exec gives), then is
# killed with SIGKILL. The orphan must not publish; SIGTERM ends a stage in one line.
LAUNCHER = """
import subprocess, sys
shell, stderr = sys.argv[1] == "shell", open(sys.argv[2], "w")
command = [sys.executable, "-m", "pipeline.stages.train"]
if shell:
    command = ["/bin/sh", "-c", " ".join(command)]
child = subprocess.Popen(command, stderr=stderr)
print(child.pid, flush=True)
child.wait()
"""
SIGTERM_BIT = 1 << (15 - 1)
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def proc_field(pid: int, name: str) -> str | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{name}:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def alive(pid: int) -> bool:
    state = proc_field(pid, "State")
    return state is not None and not state.startswith("Z")


def wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def child_of(pid: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and proc_field(int(entry.name), "PPid") == str(pid):
            return int(entry.name)
    return None


def handles_sigterm(pid: int) -> bool:
    """entry() has run: the stage watches its launcher and catches SIGTERM."""
    caught = proc_field(pid, "SigCgt")
    return caught is not None and bool(int(caught, 16) & SIGTERM_BIT)


@pytest.fixture
def trained(workdir) -> dict[str, bytes]:
    """Outputs of a finished run; then params that would change them, slow enough
    (5000 epochs, about 5 s on 2 cores) that the stage is mid-run when it is stopped
    or its launcher dies: with 500, training took 0.1 s and a loaded CI machine
    sent SIGTERM after the stage had finished."""
    generate.main()
    train.main()
    before = output_bytes_of(workdir, TRAIN_OUTPUTS)
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("epochs: 30", "epochs: 5000"))
    return before


TRAIN_OUTPUTS = ["models/parameters.parquet", "reports/training.csv"]


def output_bytes_of(root: Path, names: list[str]) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in names}


def leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.tmp")]


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize(
    ("how", "message"),
    [
        # dash keeps a shell between DVC and the stage: the publish check refuses.
        ("shell", "error: the process that started this stage (pid "),
        # the stage's parent is DVC itself: its death sends SIGTERM (PR_SET_PDEATHSIG).
        ("direct", "error: stopped by SIGTERM; no output is half-written"),
    ],
)
def test_orphaned_stage_does_not_publish(workdir, trained, tmp_path_factory, how, message):
    stderr = tmp_path_factory.mktemp("orphan") / "stderr.txt"
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, how, str(stderr)],
        cwd=workdir,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    child = int(launcher.stdout.readline())
    if how == "shell":
        wait_for(lambda: child_of(child) is not None)
        stage = child_of(child)
    else:
        stage = child
    wait_for(lambda: handles_sigterm(stage))
    launcher.kill()  # kill -9 of `dvc repro`
    launcher.wait()
    wait_for(lambda: not alive(stage))
    assert stderr.read_text().startswith(message), stderr.read_text()
    assert stderr.read_text().count("\n") == 1
    assert output_bytes_of(workdir, TRAIN_OUTPUTS) == trained
    assert leftovers(workdir) == []


@pytest.mark.slow
@linux_only
def test_sigterm_ends_a_stage_in_one_line(workdir, trained):
    stage = subprocess.Popen(
        [sys.executable, "-m", "pipeline.stages.train"],
        cwd=workdir,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    wait_for(lambda: handles_sigterm(stage.pid))
    stage.terminate()
    _, stderr = stage.communicate(timeout=60)
    assert stage.returncode == 143
    assert stderr == "error: stopped by SIGTERM; no output is half-written\n"
    assert output_bytes_of(workdir, TRAIN_OUTPUTS) == trained
    assert leftovers(workdir) == []


# A stage stopped while omegaconf builds its config: omegaconf turns the signal's
# exception into a ConfigKeyError of its own (seen in CI); the stop is still one line.
REWRAPPED_STOP = """
import os, signal
from pipeline.stages import entry

def main():
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10**8):
            pass
    except KeyboardInterrupt as err:
        raise KeyError("'NoneType' object has no attribute '_invalidate_flags_cache'") from err

entry(main)
"""


@linux_only
def test_a_stop_that_a_library_rewraps_still_ends_in_one_line():
    stage = subprocess.run(
        [sys.executable, "-c", REWRAPPED_STOP],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    assert stage.returncode == 143
    assert stage.stderr == "error: stopped by SIGTERM; no output is half-written\n"


def test_no_file_is_published_once_the_launcher_is_gone(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    files.write_json(target, {"old": 1})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    monkeypatch.setattr(files, "_launcher", (dead.pid,))
    with pytest.raises(OrphanedError, match=f"pid {dead.pid}.* not replacing"):
        files.write_json(target, {"new": 2})
    assert json.loads(target.read_text()) == {"old": 1}
    assert list(tmp_path.iterdir()) == [target]
    monkeypatch.setattr(files, "_launcher", (os.getppid(),))
    files.write_json(target, {"new": 2})
    assert json.loads(target.read_text()) == {"new": 2}


def test_a_stage_refuses_any_argument_in_one_line(tmp_path):
    """Issue 60, case 13: `python -m pipeline.experiments.roar.stage roar.seeds=1` ignored its
    argument (even an invalid one), ran on params.yaml's values and exited 0."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.experiments.roar.stage", "roar.seeds=1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stderr == (
        "error: python -m pipeline.experiments.roar.stage takes no arguments (got 'roar.seeds=1'): "
        "a stage reads params.yaml only; set the value in conf/ and run `python -m "
        "pipeline.params`, or use `dvc exp run -S KEY=VALUE`\n"
    )
    assert list(tmp_path.iterdir()) == []
