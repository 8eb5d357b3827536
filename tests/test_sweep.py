"""Sweeps: Hydra launchers, sharded studies, one tracking server for every job."""

from __future__ import annotations

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

from pipeline import data, history, merge_study, study, tracking
from pipeline.config import PROJECT_ROOT, ConfigError, compose, validate
from pipeline.errors import PipelineError

SMALL = ["study.seeds=40", "study.chunk=10", "study.bootstrap=50", "train.epochs=20"]


def small_cfg(*overrides: str):
    return validate(compose([*SMALL, *overrides]))


def run_module(module: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_shards_cut_the_seeds_at_chunk_boundaries_and_cover_them_once():
    cfg = small_cfg("study.seeds=45")  # 5 chunks of 10 (the last has 5)
    shards = [
        study.study_seeds(small_cfg("study.seeds=45", f"study.shard={i}/3").study) for i in range(3)
    ]
    assert sum(shards, []) == list(range(1, 46)) == study.study_seeds(cfg.study)
    assert [s[0] for s in shards] == [1, 11, 31]  # every shard starts a chunk


@pytest.mark.parametrize("shard", ["4/4", "-1/4", "1/5", "a/4", "1"])
def test_a_bad_shard_names_the_key_and_what_is_allowed(shard):
    with pytest.raises(
        ConfigError, match=r"invalid config value study.shard=.*i/n with 0 <= i < n <= 4"
    ):
        small_cfg(f"study.shard={shard}")


def test_the_dvc_stage_refuses_a_shard():
    cfg = small_cfg("study.shard=0/4")
    with pytest.raises(ConfigError, match="a shard has no summary of its own"):
        study.run(cfg, data.generate(cfg.data))


def write_shards(root: Path, count: int, *overrides: str) -> None:
    for index in range(count):
        cfg = small_cfg(*overrides, f"study.shard={index}/{count}")
        frame = data.generate(cfg.data)
        runs = study.train_seeds(cfg, frame, study.study_seeds(cfg.study))
        payload = study.shard_bytes(cfg, runs, study.outside_accuracy(cfg, frame))
        (root / str(index)).mkdir(parents=True)
        (root / str(index) / study.SHARD_FILE).write_bytes(payload)


def test_four_shards_merge_to_the_bytes_of_one_run(tmp_path):
    # train.seeds 2 and 45: one lesson seed inside the study, one outside it
    write_shards(tmp_path, 4, "train.seeds=[2,45]")
    cfg = small_cfg("train.seeds=[2,45]")
    _, whole = study.run(cfg, data.generate(cfg.data))
    out = tmp_path / "merged.json"
    merge_study.main([str(tmp_path), "--out", str(out)])
    assert out.read_bytes() == (json.dumps(whole, indent=2) + "\n").encode()
    assert set(whole["lesson_seeds"]) == {"2", "45"}


def test_a_shard_file_has_the_same_bytes_every_time():
    cfg = small_cfg("study.shard=1/4")
    frame = data.generate(cfg.data)
    payloads = {
        study.shard_bytes(cfg, study.train_seeds(cfg, frame, study.study_seeds(cfg.study)), {})
        for _ in range(2)
    }
    assert len(payloads) == 1


def test_merge_refuses_missing_doubled_and_foreign_shards(tmp_path):
    write_shards(tmp_path / "a", 2)
    (tmp_path / "a" / "1" / study.SHARD_FILE).unlink()
    with pytest.raises(PipelineError, match=r"missing shards 1/2: the study needs all 2"):
        merge_study.merge(tmp_path / "a")
    write_shards(tmp_path / "b", 2, "train.lr=0.3")
    shutil.copytree(tmp_path / "b" / "1", tmp_path / "a" / "1", dirs_exist_ok=True)
    with pytest.raises(PipelineError, match=r"is not a shard of .*: train.lr differ"):
        merge_study.merge(tmp_path / "a")
    shutil.copytree(tmp_path / "b", tmp_path / "c" / "again")
    shutil.copytree(tmp_path / "b", tmp_path / "c" / "b")
    with pytest.raises(PipelineError, match=r"shard 0/2 twice"):
        merge_study.merge(tmp_path / "c")
    (tmp_path / "bad" / "0").mkdir(parents=True)
    (tmp_path / "bad" / "0" / study.SHARD_FILE).write_bytes(b"not a shard")
    with pytest.raises(PipelineError, match=r"cannot read shard .*bad/0/shard.pt: "):
        merge_study.merge(tmp_path / "bad")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PipelineError, match="no shard.pt found"):
        merge_study.merge(tmp_path / "empty")
    result = run_module("pipeline.merge_study", str(tmp_path / "missing"), "--out", "x.json")
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: no such sweep directory: {tmp_path / 'missing'}"


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


def test_an_unreachable_tracking_server_fails_the_job_at_once_naming_the_uri(tmp_path):
    from pipeline.server import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = run_module("pipeline.run", f"hydra.run.dir={tmp_path}", f"tracking.uri={uri}")
    assert time.monotonic() - started < 30
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: cannot reach MLflow tracking server {uri}: [Errno 111] Connection refused"
    ]
    assert not (tmp_path / "metrics.json").exists()  # failed before training


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


def require_postgres() -> None:
    """Skip without PostgreSQL; in CI fail (.ci/run installs it)."""
    if shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        return
    if os.environ.get("CI"):
        pytest.fail("PostgreSQL is not installed: .ci/run installs Debian's postgresql")
    pytest.skip("PostgreSQL is not installed (apt install postgresql)")


@pytest.fixture(scope="module")
def server():
    """PostgreSQL and `mlflow server` on free loopback ports, stopped afterwards."""
    from pipeline.server import tracking_server

    require_postgres()
    # Not under pytest's tmp_path: as root, PostgreSQL runs as `postgres`, which
    # cannot enter pytest's private (0700) directories.
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    try:
        with tracking_server(root) as uri:
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
    listed = run_module("pipeline.history", "--uri", server, "--sweep", str(sweep_dir))
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.strip().splitlines()) == 5  # header and four jobs


@pytest.mark.slow
def test_a_sharded_study_on_ray_merges_to_the_unsharded_summary(server, tmp_path):
    shards = ",".join(f"{i}/4" for i in range(4))
    result = run_module(
        "pipeline.study", "-m", *SMALL, f"study.shard={shards}", *LAUNCHERS["ray"],
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
            "pipeline.merge_study", str(tmp_path / "shards"), "--out", str(merged)
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
def test_the_server_command_serves_until_sigterm_and_stops_what_it_started():
    from pipeline.server import free_port

    require_postgres()
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    port = free_port()
    command = [sys.executable, "-m", "pipeline.server", str(root / "store"), "--port", str(port)]
    server = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().startswith(f"tracking server: http://127.0.0.1:{port}")
        tracking.check_server(f"http://127.0.0.1:{port}")  # answers /health
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        with pytest.raises(PipelineError, match="cannot reach MLflow tracking server"):
            tracking.check_server(f"http://127.0.0.1:{port}")
        postgres = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True)
        assert postgres.stdout == ""  # PostgreSQL stopped too
    finally:
        server.kill()
        shutil.rmtree(root, ignore_errors=True)


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
