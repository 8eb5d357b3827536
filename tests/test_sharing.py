"""Sharing an experiment (docs/sharing.md): one clone runs and pushes it, another pulls
it, outputs included, and recomputes nothing.

A bare git repository plays the team's git server and a local folder the DVC remote.
The clone keeps the committed outputs and shrinks only settings that the next
lesson's grid and the debate do not read (train.epochs, study.seeds), so the
experiment reruns the lesson's stages, the study and the battery, small, and skips
the grid's and the debate's cells (up to date in the clone: their committed
outputs). Tracking is off: the experiment's files, not MLflow, are under test here.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import clone_project, git_commit, shrink_conf
from tests.test_pipeline_dvc import ran_stages, restore_params

pytestmark = pytest.mark.slow

EXPERIMENT = "lower-lr"
SMALL = ["train.epochs=30", "study.seeds=4"]  # neither is a param of the grid or the debate
# What the experiment reruns: not the grid's or the debate's cells. The stages that
# read `tracking` (turned off) rerun too: the two that draw the cells' figures.
RERUN = {"generate", "train", "evaluate", "study", "faithfulness", "report", "track"}
RERUN |= {"next_lesson", "debate_figures", "erasure", "roar", "abstraction"}
# DVC and the stages it starts: this interpreter's venv first on PATH.
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def run(cwd: Path, *command: str) -> str:
    result = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}{result.stderr}"
    return result.stdout


def outputs(repo: Path) -> dict[str, str]:
    """sha256 of every file each stage of dvc.lock writes (git-tracked or DVC-cached),
    but the track stage's git-ignored record of what it logged (none here)."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    outs = [out["path"] for name, stage in lock["stages"].items() for out in stage["outs"]]
    paths = [repo / path for path in outs if path != ".mlflow-state.json"]
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*")))]
    return {
        str(f.relative_to(repo)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in files
        if f.is_file()
    }


def tracking_off(repo: Path) -> None:
    path = repo / "conf/tracking/local.yaml"
    text = path.read_text()
    assert "enabled: true" in text
    path.write_text(text.replace("enabled: true", "enabled: false"))


def test_a_pushed_experiment_is_pulled_with_its_outputs_and_nothing_recomputed(tmp_path):
    origin, storage = tmp_path / "origin.git", tmp_path / "dvc-storage"
    run(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))

    # Clone A: the project with a DVC remote beside its git remote, as docs/sharing.md
    # sets it up, pushed to the team's git server.
    a = clone_project(tmp_path / "a")
    shrink_conf(a, SMALL)
    tracking_off(a)
    restore_params(a)
    run(a, "dvc", "remote", "add", "-d", "storage", str(storage))
    git_commit(a, "small config, a DVC remote")
    run(a, "git", "remote", "set-url", "origin", str(origin))
    run(a, "git", "push", "-q", "origin", "HEAD:main")

    # A runs the experiment and shares it: its git ref, and its DVC-cached outputs.
    started = time.monotonic()
    ran = ran_stages(run(a, "dvc", "exp", "run", "-n", EXPERIMENT, "-S", "train.lr=0.3"))
    assert ran == RERUN
    print(f"dvc exp run: {time.monotonic() - started:.1f} s")
    pushed = run(a, "dvc", "exp", "push", "origin", EXPERIMENT)
    assert "Pushed experiment" in pushed and any(storage.rglob("*")), pushed
    produced, metrics = outputs(a), json.loads(run(a, "dvc", "metrics", "show", "--json"))

    # Clone B: a colleague's fresh clone, no DVC cache.
    b = tmp_path / "b"
    run(tmp_path, "git", "clone", "-q", str(origin), str(b))
    assert not (b / "models/parameters.parquet").exists()
    run(b, "dvc", "exp", "pull", "origin", EXPERIMENT)
    run(b, "dvc", "exp", "apply", EXPERIMENT)
    run(b, "dvc", "pull")

    assert outputs(b) == produced  # the same bytes, the DVC-cached files included
    assert "lr: 0.3" in (b / "params.yaml").read_text()
    shown = json.loads(run(b, "dvc", "metrics", "show", "--json"))
    assert next(iter(shown.values())) == next(iter(metrics.values()))
    # Nothing to recompute: every stage is up to date but the track stage, which DVC
    # reruns on every repro (always_changed) and which here has tracking off.
    status = json.loads(run(b, "dvc", "status", "--json"))
    assert set(status) <= {"track"}, status
    assert ran_stages(run(b, "dvc", "repro")) <= {"track"}
    assert outputs(b) == produced
