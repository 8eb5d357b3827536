"""Sweeps (pipeline/scaleout/sweep.py): Hydra's launchers (joblib, Ray, submitit)
running pipeline.run and pipeline.study as jobs, each logged to one store; a failed,
stopped or orphaned job, and a job folder in the outputs. The slow sweeps that log
to the PostgreSQL tracking server share one (the module's `server` fixture): they
stay in this file so that it starts once."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline import tracking
from pipeline.browse import history
from pipeline.config import PROJECT_ROOT, compose
from tests.scaleout.helpers import SMALL, logged_in, require_postgres, run_module
from tests.tracking.helpers import count_requests, counted


@pytest.mark.slow
def test_a_failed_job_is_named_and_the_others_finish_and_are_logged(tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_module(
        "pipeline.run", "-m", "train.lr=0.3,nan,0.6", "train.epochs=20",
        f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra/launcher=joblib",
        f"tracking.uri={store}",
    )  # fmt: skip
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert errors[-1] == "error: 1 of 3 jobs failed: job 1 (train.lr=nan train.epochs=20 " + (
        f"tracking.uri={store.replace(':', chr(92) + ':')})"
    )
    assert "invalid config value train.lr=nan: must be a finite number" in result.stderr
    parents, children = tracking.search_parent_runs(store, "attention-faithfulness")
    table = history.sweep_table(parents, children, tmp_path / "sweep")
    assert table["job"].tolist() == [0, 1, 2]
    assert table["status"].tolist()[::2] == ["logged", "logged"]
    assert table["status"][1].startswith("failed: invalid config value train.lr=nan")
    assert table["seed_runs"].tolist()[::2] == [2, 2]


def test_an_unreachable_tracking_server_fails_the_job_at_once_naming_the_uri(
    tmp_path, app_in_process, monkeypatch
):
    """At once, as structure rather than a time (issue 51, item 3: the bound of 30 s
    failed under load): one request to the server, none through MLflow's client (whose
    retry loop runs for minutes), and no data generated, no model trained."""
    from pipeline import run
    from pipeline.stages import generate, train
    from pipeline.tracking.loopback import free_port

    calls: dict[str, int] = {"request": 0, "mlflow": 0, "work": 0}
    count_requests(monkeypatch, calls)
    monkeypatch.setattr(generate, "run", counted(calls, "work", generate.run))
    monkeypatch.setattr(train, "run", counted(calls, "work", train.run))
    uri = f"http://127.0.0.1:{free_port()}"
    code, _, err = app_in_process(run, f"hydra.run.dir={tmp_path}", f"tracking.uri={uri}")
    assert code == 1
    assert err.strip().splitlines() == [
        f"error: cannot reach MLflow tracking server {uri}: [Errno 111] Connection refused"
    ]
    assert calls == {"request": 1, "mlflow": 0, "work": 0}
    assert not (tmp_path / "metrics.json").exists()


def sweep_jobs(parents, children, sweep_dir: Path) -> dict:
    """{overrides: seeds} of the sweep's parents: none lost, none doubled."""
    runs = parents[parents["tags.sweep"] == str(sweep_dir.resolve())]
    assert runs["tags.sweep.job"].is_unique
    jobs = {}
    for run_id, overrides in zip(runs["run_id"], runs["tags.overrides"], strict=True):
        mine = children[children["tags.mlflow.parentRunId"] == run_id]
        jobs[" ".join(o for o in overrides.split() if o.startswith(("train.", "data.")))] = sorted(
            mine["tags.seed"]
        )
    return jobs


LAUNCHERS = {
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "ray": ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"],
}


@pytest.fixture(scope="module")
def server():
    """PostgreSQL and `mlflow server` on free loopback ports, stopped afterwards."""
    from pipeline.scaleout.server import tracking_server

    require_postgres()
    # Not under pytest's tmp_path: as root, PostgreSQL runs as `postgres`, which
    # cannot enter pytest's private (0700) directories.
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    try:
        with tracking_server(root) as uri, logged_in(root):
            yield uri
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_a_four_job_sweep_logs_four_parents_to_one_server(server, tmp_path, launcher):
    sweep_dir = tmp_path / "sweep"
    result = run_module(
        "pipeline.run", "-m", "train.lr=0.3,0.6", "data.seed=1,2", *LAUNCHERS[launcher],
        f"hydra.sweep.dir={sweep_dir}", f"tracking.uri={server}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    parents, children = tracking.search_parent_runs(server, "attention-faithfulness")
    jobs = sweep_jobs(parents, children, sweep_dir)
    assert jobs == {
        f"train.lr={lr} data.seed={seed}": ["1", "2"] for lr in (0.3, 0.6) for seed in (1, 2)
    }
    listed = run_module("pipeline", "history", "--uri", server, "--sweep", str(sweep_dir))
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.strip().splitlines()) == 5  # header and four jobs


@pytest.mark.slow
def test_a_sharded_study_merges_to_the_unsharded_summary(server, tmp_path):
    """On joblib: Ray starts once in the tests, for the four-job sweep."""
    shards = ",".join(f"{i}/4" for i in range(4))
    result = run_module(
        "pipeline.study", "-m", *SMALL, f"study.shard={shards}", *LAUNCHERS["joblib"],
        f"hydra.sweep.dir={tmp_path / 'shards'}", f"tracking.uri={server}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    whole = run_module(
        "pipeline.study", *SMALL, f"hydra.run.dir={tmp_path / 'whole'}", f"tracking.uri={server}"
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    merged = tmp_path / "merged.json"
    assert (
        run_module(
            "pipeline", "merge_study", str(tmp_path / "shards"), "--out", str(merged)
        ).returncode
        == 0
    )
    assert merged.read_bytes() == (tmp_path / "whole" / "summary.json").read_bytes()
    parents, _ = tracking.search_parent_runs(server, "attention-faithfulness")
    logged = parents[parents["tags.mlflow.source.name"] == "python -m pipeline.study"]
    assert logged["metrics.study/seeds"].tolist() == [40.0]  # the shards log nothing


@pytest.mark.slow
def test_submitit_local_runs_the_sweep_path_of_slurm(tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_module(
        "pipeline.run", "-m", "train.lr=0.3,0.6", "train.epochs=20",
        "hydra/launcher=submitit_local",
        f"hydra.sweep.dir={tmp_path / 'sweep'}", f"tracking.uri={store}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    parents, children = tracking.search_parent_runs(store, "attention-faithfulness")
    assert sweep_jobs(parents, children, tmp_path / "sweep") == {
        "train.lr=0.3 train.epochs=20": ["1", "2"],
        "train.lr=0.6 train.epochs=20": ["1", "2"],
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "launcher", [LAUNCHERS["joblib"], ["hydra/launcher=submitit_local"]], ids=["joblib", "submitit"]
)
def test_study_sweeps_log_one_parent_per_job(tmp_path, launcher):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_module(
        "pipeline.study", "-m", *SMALL, "train.lr=0.3,0.6", *launcher,
        f"hydra.sweep.dir={tmp_path / 'sweep'}", f"tracking.uri={store}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    parents, children = tracking.search_parent_runs(store, "attention-faithfulness")
    table = history.sweep_table(parents, children, tmp_path / "sweep")
    assert [("train.lr=0.3" in o, "train.lr=0.6" in o) for o in table["overrides"]] == [
        (True, False),
        (False, True),
    ]
    assert table["study_seeds"].tolist() == [40, 40] and table["seed_runs"].tolist() == [0, 0]
    summaries = [json.loads((tmp_path / "sweep" / j / "summary.json").read_text()) for j in "01"]
    assert table["p_at_least_gap"].tolist() == [
        s["pair_gap"]["p_at_least_observed"] for s in summaries
    ]


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, from /proc."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        parents.setdefault(parent, []).append(int(stat.parent.name))
    found, queue = [], [pid]
    while queue:
        children = parents.get(queue.pop(), [])
        found += children
        queue += children
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie (a reaped-late orphan has finished all the same)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_stopped_sweep_stops_its_jobs_and_they_publish_nothing(tmp_path, signum):
    """Issue 22: after SIGTERM to a joblib sweep its loky workers ran on, and an
    in-flight job wrote its summary.json and logged a run."""
    from pipeline.scaleout.sweep import JOB_FILE

    sweep_dir = tmp_path / "sweep"
    command = [
        sys.executable, "-m", "pipeline.study", "-m", *SMALL[:3], "train.epochs=3000",
        "train.lr=0.3,0.6", *LAUNCHERS["joblib"], "tracking.enabled=false",
        f"hydra.sweep.dir={sweep_dir}",
    ]  # fmt: skip
    with open(tmp_path / "stderr", "w") as stderr:
        sweep = subprocess.Popen(
            command, cwd=PROJECT_ROOT, stdout=stderr, stderr=stderr, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while not list(sweep_dir.glob("*/.hydra/config.yaml")):  # a job has started
            assert sweep.poll() is None, (tmp_path / "stderr").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(2)  # it trains (about 40 s of it)
        workers = _descendants(sweep.pid)
        assert workers
        sweep.send_signal(signum)
        assert sweep.wait(timeout=10) == -signum
        deadline = time.monotonic() + 10
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [pid for pid in workers if _alive(pid)] == []
        assert list(sweep_dir.rglob("summary.json")) == []
        assert list(sweep_dir.rglob(JOB_FILE)) == []
    finally:
        with contextlib.suppress(ProcessLookupError):  # what is left of this test's sweep
            os.killpg(sweep.pid, signal.SIGKILL)


def test_a_job_whose_sweep_is_gone_ends_without_publishing(monkeypatch, capsys):
    import socket

    from pipeline.scaleout import sweep

    exits = []

    def exit_(code):
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(sweep.os, "_exit", exit_)
    record = {"job": 3, "overrides": ["train.lr=0.3"]}
    gone = subprocess.Popen(["true"])
    gone.wait()
    alive = subprocess.Popen(["sleep", "30"])  # stands in for a live sweep, not our parent
    try:
        host, started = socket.gethostname(), sweep.process_start(alive.pid)
        for pid, start in ((gone.pid, "1"), (alive.pid, "1")):  # gone; its pid reused
            monkeypatch.setenv(sweep.SWEEP_ENV, f"{host} {pid} {start}")
            with pytest.raises(SystemExit):
                sweep.follow_sweep(record)
        assert exits == [1, 1]
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"error: job 3 (train.lr=0.3): the sweep that started it (pid {alive.pid}) is "
            "gone; not publishing"
        )
        for identity in (  # alive; the basic launcher's in-process job; another machine
            f"{host} {alive.pid} {started}",
            f"{host} {os.getpid()} 1",
            f"another-host {gone.pid} 1",
        ):
            monkeypatch.setenv(sweep.SWEEP_ENV, identity)
            sweep.follow_sweep(record)
        assert exits == [1, 1]
    finally:
        alive.kill()
        alive.wait()


@pytest.mark.parametrize("app", ["run", "study"])
@pytest.mark.parametrize(
    "folders, named",
    [
        (
            ["-m", "hydra.sweep.dir=multirun/x", "hydra.sweep.subdir=../../reports"],
            "hydra.sweep.dir='multirun/x' with hydra.sweep.subdir='../../reports'",
        ),
        (
            ["-m", "hydra.sweep.dir=multirun/x", "hydra.sweep.subdir=${hydra.job.num}/../../.."],
            "hydra.sweep.dir='multirun/x' with hydra.sweep.subdir='0/../../..'",
        ),
        (
            ["hydra.run.dir=outputs/${hydra.job.name}/../../reports"],
            "hydra.run.dir='outputs/{app}/../../reports'",
        ),
    ],
)
def test_a_job_folder_that_resolves_into_the_outputs_is_refused_before_hydra_makes_it(
    app, folders, named, app_in_process, tmp_path, monkeypatch
):
    """Issue 49, item 5: `pipeline.run -m train.lr=0.9 hydra.sweep.dir=multirun/x
    hydra.sweep.subdir=../../reports` replaced reports/metrics.json and added .hydra/,
    job.json and run.log to reports/, exit 0 (case 9 checked hydra.run.dir's literal only).
    Here in a project of its own: the resolved job folder of either app, either mode."""
    import importlib

    from pipeline.core import files

    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/metrics.json").write_text('{"seed_gap": 0.5}\n')
    monkeypatch.setattr(files, "PROJECT_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(f"pipeline.{app}")
    code, _, err = app_in_process(module, *folders, "train.lr=-1", "tracking.enabled=false")
    assert code == 1
    assert err.startswith(f"error: invalid config value {named.format(app=app)}: must not be")
    assert err.count("\n") == 1 and "use outputs/ or multirun/" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["metrics.json", "reports"]
    assert (tmp_path / "reports/metrics.json").read_text() == '{"seed_gap": 0.5}\n'


def test_a_job_whose_own_folder_is_refused_writes_nothing_there(monkeypatch, capsys):
    """Issue 49, item 5: where a job's folder differs from the one the sweep's start
    resolved (a subdir of each job's overrides), the job refuses it before any work."""
    from pipeline.scaleout import sweep

    monkeypatch.setattr(sweep, "output_dir", lambda: PROJECT_ROOT / "reports")
    ran = []
    with pytest.raises(SystemExit) as exit_:
        sweep.run_job(ran.append, compose())
    assert exit_.value.code == 1 and ran == []
    err = capsys.readouterr().err
    assert err.startswith("error: invalid config value hydra.runtime.output_dir=")
    assert err.count("\n") == 1
