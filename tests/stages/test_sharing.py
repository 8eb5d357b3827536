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
from tests.stages.test_pipeline_dvc import ran_stages, restore_params

pytestmark = pytest.mark.slow

# The README's share line (its "Next" block).
SHARE = "python -m pipeline share origin <exp>"

EXPERIMENT = "lower-lr"
SMALL = ["train.epochs=30", "study.seeds=4"]  # neither is a param of the grid or the debate
# What the experiment reruns: not the grid's or the debate's cells. The stages that
# read `tracking` (turned off) rerun too: the two that draw the cells' figures.
RERUN = {"generate", "train", "evaluate", "study", "faithfulness", "report", "track"}
RERUN |= {"next_lesson", "debate_figures", "erasure", "roar", "abstraction", "dynamics"}
# DVC and the stages it starts: this interpreter's venv first on PATH.
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def run(cwd: Path, *command: str) -> str:
    result = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}{result.stderr}"
    return result.stdout


def outputs(repo: Path) -> dict[str, str]:
    """sha256 of every file each stage of dvc.lock writes (git-tracked or DVC-cached),
    but the track stage's git-ignored markers of what it logged (none here)."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    outs = [out["path"] for name, stage in lock["stages"].items() for out in stage["outs"]]
    markers = (".mlflow-state.json", "mlartifacts/.tracked.json")
    paths = [repo / path for path in outs if path not in markers]
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


def small_clone_and_origin(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The team's git server (an empty bare repository), the DVC remote's folder (not
    made: `dvc push` makes it) and clone A of the project, on the small settings with
    tracking off and params.yaml composed from them: (origin, storage, clone A)."""
    origin, storage = tmp_path / "origin.git", tmp_path / "dvc-storage"
    run(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    a = clone_project(tmp_path / "a")
    shrink_conf(a, SMALL)
    tracking_off(a)
    restore_params(a)
    return origin, storage, a


def test_a_pushed_experiment_is_pulled_with_its_outputs_and_nothing_recomputed(tmp_path):
    # Clone A: the project with a DVC remote beside its git remote, as docs/sharing.md
    # sets it up, pushed to the team's git server.
    origin, storage, a = small_clone_and_origin(tmp_path)
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


def committed(repo: Path, *paths: str, message: str) -> None:
    """`git add PATHS && git commit -m MESSAGE`, as a user types it: nothing else."""
    run(repo, "git", "add", *paths)
    run(
        repo, "git", "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-qm", message
    )


def test_the_readme_s_order_shares_the_files_and_nothing_is_recomputed(tmp_path):
    """Issue 59, item 1: the README's order, run first and share after. The remote is
    added and committed after `dvc exp run`, so the experiment's commit has none:
    `dvc exp push` said "Pushed experiment" over 0 files, and the colleague's `dvc exp
    apply` deleted the remote's lines, so `dvc pull` had no remote. `python -m
    pipeline share` moves the experiment onto the remote's commit and pushes."""
    origin, storage, a = small_clone_and_origin(tmp_path)
    git_commit(a, "small config")
    run(a, "git", "remote", "set-url", "origin", str(origin))
    run(a, "git", "push", "-q", "origin", "HEAD:refs/heads/main")

    # The README's "Next" block: the experiment first.
    assert ran_stages(run(a, "dvc", "exp", "run", "-n", EXPERIMENT, "-S", "train.lr=0.3")) == RERUN
    # Then docs/sharing.md's remote, added, committed and pushed.
    run(a, "dvc", "remote", "add", "-d", "storage", str(storage))
    committed(a, ".dvc/config", message="DVC remote")
    run(a, "git", "push", "-q", "origin", "HEAD:refs/heads/main")
    # Then the README's share line.
    line = SHARE.replace("<exp>", EXPERIMENT)
    shared = run(a, *line.split())
    assert shared.startswith(f"shared experiment {EXPERIMENT} (moved onto "), shared
    assert "its DVC-cached files in remote 'storage'" in shared
    assert sorted(p.name for p in storage.rglob("*") if p.is_file()), "nothing in the remote"
    produced, metrics = outputs(a), json.loads(run(a, "dvc", "metrics", "show", "--json"))

    # The colleague, as the README's next line says.
    b = tmp_path / "b"
    run(tmp_path, "git", "clone", "-q", str(origin), str(b))
    run(b, "dvc", "exp", "pull", "origin", EXPERIMENT)
    run(b, "dvc", "exp", "apply", EXPERIMENT)
    assert "storage" in (b / ".dvc/config").read_text()  # apply kept the remote
    run(b, "dvc", "pull")
    assert outputs(b) == produced  # the same bytes, the DVC-cached files included
    shown = json.loads(run(b, "dvc", "metrics", "show", "--json"))
    assert next(iter(shown.values())) == next(iter(metrics.values()))
    # Nothing to recompute: the track stage only, whose git-ignored marker a fresh
    # clone lacks (tracking is off here).
    assert set(json.loads(run(b, "dvc", "status", "--json"))) <= {"track"}
    assert ran_stages(run(b, "dvc", "repro")) <= {"track"}
    assert outputs(b) == produced
    # Sharing again finds it all there.
    again = run(a, *line.split())
    assert "(0 uploaded now)" in again and "moved" not in again, again


def test_the_readme_shares_with_the_command_that_checks(tmp_path):
    from pipeline.config import PROJECT_ROOT

    readme = (PROJECT_ROOT / "README.md").read_text()
    assert f"\n{SHARE} " in readme
    assert "\ndvc exp push origin" not in readme


def tiny_repo(path: Path) -> Path:
    """A git and DVC repository with one stage, its output DVC-cached: DVC's side of
    sharing in seconds."""
    path.mkdir()
    run(path, "git", "init", "-q", "-b", "main")
    run(path, "dvc", "init", "-q")
    (path / "params.yaml").write_text("lr: 0.6\n")
    (path / "dvc.yaml").write_text(
        "stages:\n  make:\n    cmd: python -c \"import yaml; open('out.txt', 'w').write("
        "str(yaml.safe_load(open('params.yaml'))['lr']))\"\n    params: [lr]\n    outs: [out.txt]\n"
    )
    run(path, "dvc", "repro", "-q")
    git_commit(path, "base")
    return path


def share(repo: Path, name: str) -> subprocess.CompletedProcess:
    env = {**ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "pipeline", "share", "origin", name]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)


def test_sharing_without_a_remote_is_refused_in_one_line(tmp_path):
    repo = tiny_repo(tmp_path / "repo")
    run(repo, "dvc", "exp", "run", "-q", "-n", "e", "-S", "lr=0.3")
    result = share(repo, "e")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: no DVC remote: add one and commit it (")
    assert result.stderr.count("\n") == 1


def test_an_experiment_behind_more_than_the_remote_is_refused_in_one_line(tmp_path):
    repo = tiny_repo(tmp_path / "repo")
    run(repo, "dvc", "exp", "run", "-q", "-n", "e", "-S", "lr=0.3")
    run(repo, "dvc", "remote", "add", "-d", "storage", str(tmp_path / "storage"))
    (repo / "notes.txt").write_text("more than the remote\n")
    committed(repo, ".dvc/config", "notes.txt", message="remote and notes")
    result = share(repo, "e")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "'e' ran before the DVC remote was committed, and HEAD changed more" in result.stderr
    assert not (tmp_path / "storage").exists()  # nothing half-shared
