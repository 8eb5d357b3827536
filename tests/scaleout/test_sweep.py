"""Sweeps: Hydra launchers, sharded studies, one tracking server for every job."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest

from pipeline import data, tracking
from pipeline.analysis import seed_study
from pipeline.browse import history
from pipeline.config import PROJECT_ROOT, ConfigError, compose, validate
from pipeline.core import precision
from pipeline.core.errors import PipelineError
from pipeline.scaleout import merge_study
from tests.conftest import assert_login_required, kill_group

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


@contextlib.contextmanager
def logged_in(store: Path):
    """The environment of a job given the login of the server whose store is `store`
    (what `pipeline server` prints)."""
    from pipeline.scaleout.server import server_login

    with mock.patch.dict(os.environ, server_login(store).client_env()):
        yield


def test_shards_cut_the_seeds_at_chunk_boundaries_and_cover_them_once():
    cfg = small_cfg("study.seeds=45")  # 5 chunks of 10 (the last has 5)
    shards = [
        seed_study.study_seeds(small_cfg("study.seeds=45", f"study.shard={i}/3").study)
        for i in range(3)
    ]
    assert sum(shards, []) == list(range(1, 46)) == seed_study.study_seeds(cfg.study)
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
        seed_study.run(cfg, data.generate(cfg.data))


def write_shards(root: Path, count: int, *overrides: str) -> None:
    for index in range(count):
        cfg = small_cfg(*overrides, f"study.shard={index}/{count}")
        frame = data.generate(cfg.data)
        runs = seed_study.train_seeds(cfg, frame, seed_study.study_seeds(cfg.study))
        payload = seed_study.shard_bytes(cfg, runs, seed_study.outside_accuracy(cfg, frame))
        (root / str(index)).mkdir(parents=True)
        (root / str(index) / seed_study.SHARD_FILE).write_bytes(payload)


def test_four_shards_merge_to_the_bytes_of_one_run(tmp_path):
    # train.seeds 2 and 45: one lesson seed inside the study, one outside it
    write_shards(tmp_path, 4, "train.seeds=[2,45]")
    cfg = small_cfg("train.seeds=[2,45]")
    _, whole = seed_study.run(cfg, data.generate(cfg.data))
    out = tmp_path / "merged.json"
    merge_study.main([str(tmp_path), "--out", str(out)])
    assert out.read_bytes() == (json.dumps(precision.rounded(whole), indent=2) + "\n").encode()
    assert set(whole["lesson_seeds"]) == {"2", "45"}


def test_a_shard_file_has_the_same_bytes_every_time():
    cfg = small_cfg("study.shard=1/4")
    frame = data.generate(cfg.data)
    payloads = {
        seed_study.shard_bytes(
            cfg, seed_study.train_seeds(cfg, frame, seed_study.study_seeds(cfg.study)), {}
        )
        for _ in range(2)
    }
    assert len(payloads) == 1


def test_merge_refuses_missing_doubled_and_foreign_shards(tmp_path):
    write_shards(tmp_path / "a", 2)
    (tmp_path / "a" / "1" / seed_study.SHARD_FILE).unlink()
    with pytest.raises(PipelineError, match=r"missing shards 1/2: the study needs all 2"):
        seed_study.merged_summary(tmp_path / "a")
    write_shards(tmp_path / "b", 2, "train.lr=0.3")
    shutil.copytree(tmp_path / "b" / "1", tmp_path / "a" / "1", dirs_exist_ok=True)
    with pytest.raises(PipelineError, match=r"is not a shard of .*: train.lr differ"):
        seed_study.merged_summary(tmp_path / "a")
    shutil.copytree(tmp_path / "b", tmp_path / "c" / "again")
    shutil.copytree(tmp_path / "b", tmp_path / "c" / "b")
    with pytest.raises(PipelineError, match=r"shard 0/2 twice"):
        seed_study.merged_summary(tmp_path / "c")
    (tmp_path / "bad" / "0").mkdir(parents=True)
    (tmp_path / "bad" / "0" / seed_study.SHARD_FILE).write_bytes(b"not a shard")
    with pytest.raises(PipelineError, match=r"cannot read shard .*bad/0/shard.pt: "):
        seed_study.merged_summary(tmp_path / "bad")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PipelineError, match="no shard.pt found"):
        seed_study.merged_summary(tmp_path / "empty")
    result = run_module("pipeline", "merge_study", str(tmp_path / "missing"), "--out", "x.json")
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


def test_an_unreachable_tracking_server_fails_the_job_at_once_naming_the_uri(
    tmp_path, app_in_process, monkeypatch
):
    """At once, as structure rather than a time (issue 51, item 3: the bound of 30 s
    failed under load): one request to the server, none through MLflow's client (whose
    retry loop runs for minutes), and no data generated, no model trained."""
    import urllib.request

    from mlflow.utils import rest_utils

    from pipeline import run
    from pipeline.stages import generate, train
    from pipeline.tracking.loopback import free_port

    calls: dict[str, int] = {"request": 0, "mlflow": 0, "work": 0}

    def counted(key, function):
        def call(*args, **kwargs):
            calls[key] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(urllib.request, "urlopen", counted("request", urllib.request.urlopen))
    monkeypatch.setattr(rest_utils, "http_request", counted("mlflow", rest_utils.http_request))
    monkeypatch.setattr(generate, "run", counted("work", generate.run))
    monkeypatch.setattr(train, "run", counted("work", train.run))
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
def test_the_server_command_serves_until_sigterm_and_stops_what_it_started():
    """Issue 34, case 3, too: any local user could create and delete experiments and
    upload artifacts through its API; it now asks for the login it prints."""
    from pipeline.scaleout.server import server_login
    from pipeline.tracking.loopback import free_port

    require_postgres()
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    port = free_port()
    command = [sys.executable, "-m", "pipeline", "server", str(root / "store"), "--port", str(port)]
    server = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert server.stdout.readline().startswith(f"tracking server: http://127.0.0.1:{port}")
        server.stdout.readline()  # point jobs at it
        password = shlex.quote(str(root / "store" / "auth" / "password"))
        assert server.stdout.readline() == (
            f'with its login: MLFLOW_TRACKING_USERNAME=admin MLFLOW_TRACKING_PASSWORD="$(cat '
            f'{password})"\n'
        )
        with logged_in(root / "store"):
            tracking.check_server(f"http://127.0.0.1:{port}")  # its API answers
        no_login = {"MLFLOW_TRACKING_USERNAME": "", "MLFLOW_TRACKING_PASSWORD": ""}
        with (
            mock.patch.dict(os.environ, no_login),  # not the module's server's login
            pytest.raises(PipelineError, match="refused the login: set MLFLOW_TRACKING_USERNAME"),
        ):
            tracking.check_server(f"http://127.0.0.1:{port}")  # a job without the login
        owner = server_login(root / "store")
        assert_login_required(f"http://127.0.0.1:{port}", owner)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        with pytest.raises(PipelineError, match="cannot reach MLflow tracking server"):
            tracking.check_server(f"http://127.0.0.1:{port}")
        postgres = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True)
        assert postgres.stdout == ""  # PostgreSQL stopped too
    finally:
        kill_group(server)
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


@pytest.mark.parametrize(
    "payload",
    [
        b"not a shard",
        "unsafe",  # a torch file whose pickle names a class weights_only refuses
        "foreign",  # a safe torch file that is not a shard
    ],
)
def test_a_file_that_is_not_a_shard_is_named_without_unsafe_advice(tmp_path, payload):
    """Issue 22: the error relayed torch's advice to load the file with
    weights_only=False, unsafe for a file of unknown origin."""
    import io

    import torch

    path = tmp_path / "0" / seed_study.SHARD_FILE
    path.parent.mkdir()
    if payload == "unsafe":
        buffer = io.BytesIO()
        torch.save({"shard": "0/1", "config": Path("x")}, buffer)
        payload = buffer.getvalue()
    elif payload == "foreign":
        buffer = io.BytesIO()
        torch.save({"weights": torch.zeros(3)}, buffer)
        payload = buffer.getvalue()
    path.write_bytes(payload)
    with pytest.raises(PipelineError) as err:
        seed_study.merged_summary(tmp_path)
    message = str(err.value)
    assert message == f"cannot read shard {path}: not a study shard, or a damaged one"
    assert "weights_only" not in message


def test_merge_into_an_existing_folder_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    def no_merge(sweep_dir):
        raise AssertionError("merged before checking --out")

    monkeypatch.setattr(merge_study.seed_study, "merged_summary", no_merge)
    (tmp_path / "sweep").mkdir()
    with pytest.raises(SystemExit) as exit_:
        merge_study.main([str(tmp_path / "sweep"), "--out", str(tmp_path)])
    assert exit_.value.code == (
        f"error: --out {tmp_path}: not written there (a folder); name a new file, e.g. in "
        "outputs/ or outside the project"
    )


@pytest.mark.parametrize("name", ["mlflow.db", "params.yaml"])
def test_merge_study_replaces_neither_the_store_nor_the_params(name, tmp_path, monkeypatch):
    """Issue 49, item 4: `merge_study SWEEP --out mlflow.db` (or params.yaml) replaced
    the store (`file is not a database`) or the params, exit 0."""
    from pipeline.core import files

    monkeypatch.setattr(files, "PROJECT_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(merge_study.seed_study, "merged_summary", lambda sweep_dir: {"seeds": 1})
    monkeypatch.setattr(merge_study, "study_line", lambda summary: "1 seed")
    (tmp_path / name).write_bytes(b"SQLite format 3\x00 and its pages")
    with pytest.raises(SystemExit) as exit_:
        merge_study.main([str(tmp_path), "--out", name])
    assert str(exit_.value.code).startswith(f"error: --out {name}: not written there (")
    assert (tmp_path / name).read_bytes() == b"SQLite format 3\x00 and its pages"


def test_merge_study_replaces_its_own_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(merge_study.seed_study, "merged_summary", lambda sweep_dir: {"seeds": 2})
    monkeypatch.setattr(merge_study, "study_line", lambda summary: "2 seeds")
    out = tmp_path / "summary.json"
    out.write_text('{\n  "seeds": 1\n}\n')
    merge_study.main([str(tmp_path), "--out", str(out)])
    assert json.loads(out.read_text()) == {"seeds": 2}


def test_a_summary_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(merge_study.seed_study, "merged_summary", lambda sweep_dir: {"seeds": 1})
    monkeypatch.setattr(merge_study, "study_line", lambda summary: "1 seed")
    out = tmp_path / "file" / "summary.json"
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(SystemExit) as exit_:
        merge_study.main([str(tmp_path), "--out", str(out)])
    assert exit_.value.code == (
        f"error: cannot write {out}: File exists: {tmp_path / 'file'}; earlier outputs are "
        "left as they were"
    )


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


# The tracking server's holes (issue 22): a busy port, trust authentication, a
# /health that answers while the store is down, errors that do not name the log,
# children that outlive a killed server.


@contextlib.contextmanager
def answering_api(status: int):
    """A tiny HTTP server on a loopback port: /health answers 200, the rest `status`."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200 if self.path == "/health" else status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = answer

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_busy_port_is_one_error_naming_it_before_the_server_starts_anything(
    tmp_path, monkeypatch
):
    """Before anything starts, as structure rather than a time (issue 59: the bound of
    30 s failed under load): no process started, no folder made."""
    import socket

    from pipeline.scaleout import server

    message = "error: port {} on 127.0.0.1 is in use: Address already in use"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = ["pipeline", "server", str(tmp_path / "store"), "--port", str(port)]
        result = run_module(*command, timeout=60)
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [message.format(port)]
        # In process: every process (PostgreSQL's, mlflow's) starts through Popen.
        started = []
        monkeypatch.setattr(subprocess, "Popen", lambda *args, **kw: started.append(args))
        with pytest.raises(SystemExit) as exit_:
            server.main([str(tmp_path / "store"), "--port", str(port)])
    assert exit_.value.code == message.format(port) and started == []
    assert not (tmp_path / "store").exists()  # nothing started


def test_a_server_answering_on_the_port_that_is_not_the_one_started_is_refused(tmp_path):
    from pipeline.tracking.loopback import wait_serving

    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)  # listens nowhere
    try:
        with (
            answering_api(200) as uri,
            pytest.raises(PipelineError, match="another server answers at") as err,
        ):
            wait_serving(uri, stand_in, tmp_path / "log", timeout=10)
        assert str(err.value) == (
            f"another server answers at {uri}, not the mlflow server started here "
            f"(log: {tmp_path / 'log'})"
        )
    finally:
        stand_in.kill()
        stand_in.wait()


@pytest.mark.parametrize(
    ("status", "fails"), [(503, True), (500, True), (404, False), (403, False)]
)
def test_check_server_fails_on_an_api_error_though_health_answers(status, fails, monkeypatch):
    """At once, as structure rather than a time (issue 59: the bound of 5 s failed
    under load): one request, none through MLflow's client (which retries)."""
    import urllib.request

    from mlflow.utils import rest_utils

    calls = {"request": 0, "mlflow": 0}

    def counted(key, function):
        def call(*args, **kwargs):
            calls[key] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(urllib.request, "urlopen", counted("request", urllib.request.urlopen))
    monkeypatch.setattr(rest_utils, "http_request", counted("mlflow", rest_utils.http_request))
    with answering_api(status) as uri:
        if fails:
            with pytest.raises(PipelineError) as err:
                tracking.check_server(uri)
            assert str(err.value).startswith(
                f"cannot reach MLflow tracking server {uri}: HTTP {status} "
            )
            assert "\n" not in str(err.value)
        else:  # a proxy, a permission, an older server without the route: as before
            tracking.check_server(uri)
    assert calls == {"request": 1, "mlflow": 0}


@pytest.mark.parametrize("user", [None, "someone"])
def test_a_server_refusing_the_login_is_one_line_naming_the_variables(user, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    if user:
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", user)
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong")
    with answering_api(401) as uri, pytest.raises(PipelineError) as err:
        tracking.check_server(uri)
    whose = f" of user {user!r}" if user else ""
    assert str(err.value) == (
        f"MLflow tracking server {uri} refused the login{whose}: set MLFLOW_TRACKING_USERNAME "
        "and MLFLOW_TRACKING_PASSWORD to its login (python -m pipeline server prints them)"
    )


def start_server_command(store: Path, port: int) -> subprocess.Popen:
    """`python -m pipeline server store --port port`, once it has printed its URI."""
    command = [sys.executable, "-m", "pipeline", "server", str(store), "--port", str(port)]
    server = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert server.stdout.readline().startswith(f"tracking server: http://127.0.0.1:{port}")
    return server


def server_root() -> Path:
    # Not under pytest's tmp_path: as root, PostgreSQL runs as `postgres`, which
    # cannot enter pytest's private (0700) directories.
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    return root


@pytest.mark.slow
def test_the_server_s_postgres_wants_the_secret_which_no_command_line_or_log_shows(monkeypatch):
    import psycopg2

    from pipeline.tracking.loopback import free_port

    require_postgres()
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")  # no password from ~/.pgpass either
    root, port = server_root(), free_port()
    server = start_server_command(root / "store", port)
    try:
        with logged_in(root / "store"):
            tracking.check_server(f"http://127.0.0.1:{port}")  # its API reads the store
        secret_file = root / "store" / "postgres" / "password"
        assert secret_file.stat().st_mode & 0o777 == 0o600
        secret = secret_file.read_text().strip()
        assert len(secret) >= 32
        pid_file = root / "store" / "postgres" / "data" / "postmaster.pid"
        pg_port = int(pid_file.read_text().splitlines()[3])
        login = {"host": "127.0.0.1", "port": pg_port, "user": "mlflow", "dbname": "postgres"}
        for wrong in ({}, {"password": "wrong"}, {"user": "postgres"}):
            with pytest.raises(psycopg2.OperationalError, match="password"):
                psycopg2.connect(**{**login, **wrong})
        psycopg2.connect(**login, password=secret).close()
        sockets = [Path(d) / f".s.PGSQL.{pg_port}" for d in ("/tmp", "/var/run/postgresql")]
        assert [s for s in sockets if s.exists()] == []  # no unix socket at all
        assert list((root / "store").rglob(".s.PGSQL.*")) == []
        shown = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                if secret.encode() in cmdline.read_bytes():
                    shown.append(cmdline)
        assert shown == []
        for log in ("mlflow-server.log", "postgres/postgres.log"):
            assert secret not in (root / "store" / log).read_text()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        kill_group(server)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_a_second_server_on_the_folder_names_the_log_and_a_killed_one_leaves_nothing_serving():
    from pipeline.tracking.loopback import free_port

    require_postgres()
    root, port = server_root(), free_port()
    server = start_server_command(root / "store", port)
    uri = f"http://127.0.0.1:{port}"
    try:
        second = run_module("pipeline", "server", str(root / "store"), "--port", str(free_port()))
        assert second.returncode == 1
        log = root / "store" / "postgres" / "postgres.log"
        [error] = second.stderr.strip().splitlines()
        assert error.startswith('error: PostgreSQL exited: lock file "postmaster.pid" already')
        assert error.endswith(f"(log: {log})")
        with logged_in(root / "store"):
            tracking.check_server(uri)  # the first one still serves
        server.kill()  # SIGKILL: nothing of it can stop its children
        server.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = subprocess.run(
                ["pgrep", "-f", "--", f"{root}|--port {port} --workers"],
                capture_output=True,
                text=True,
            ).stdout
            if not left:
                break
            time.sleep(0.5)
        assert left == ""  # PostgreSQL, mlflow server and uvicorn stopped
        with pytest.raises(PipelineError, match=f"cannot reach MLflow tracking server {uri}"):
            tracking.check_server(uri)
    finally:
        kill_group(server)
        shutil.rmtree(root, ignore_errors=True)


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


def test_a_folder_postgres_cannot_enter_is_one_line_with_the_way_out():
    """Issue 34, case 17: `pipeline server` as root in a folder that only root can enter
    failed at initdb (the postgres user cannot read the secret)."""
    from pipeline.scaleout.server import check_reachable_by_others

    base = Path(tempfile.mkdtemp(prefix="tracking-server-"))  # not pytest's 0700 folders
    try:
        base.chmod(0o755)
        check_reachable_by_others(base / "postgres")
        private = base / "private"
        private.mkdir()
        private.chmod(0o700)
        with pytest.raises(PipelineError) as err:
            check_reachable_by_others(private / "store" / "postgres")
        message = str(err.value)
        assert f"cannot enter {private} (mode 700)" in message
        assert f"`chmod o+x {private}`" in message and "\n" not in message
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.5", True),
        ("head-node", True),
        ("127.0.0.1", False),
        ("127.0.0.2", False),
        ("::1", False),
        ("localhost", False),
    ],
)
def test_a_server_beyond_loopback_warns_that_the_password_crosses_in_plain_http(
    host, warned, monkeypatch, capsys
):
    """Issue 53, item 3: `--host 0.0.0.0` keeps the login, but MLflow speaks plain HTTP.
    One warning line before anything starts, with the remedy; none on loopback."""
    from pipeline.scaleout import server

    @contextlib.contextmanager
    def refused(*_args, **_kwargs):
        raise PipelineError("not started in this test")
        yield

    monkeypatch.setattr(server, "tracking_server", refused)
    with pytest.raises(SystemExit) as exit_:
        server.main(["store", "--host", host])
    assert exit_.value.code == "error: not started in this test"
    lines = capsys.readouterr().err.splitlines()
    warning = (
        f"warning: serving on {host}, beyond loopback, in plain HTTP: the admin password "
        "crosses the network base64-encoded on every request; put a TLS-terminating proxy "
        "(nginx, Caddy) in front, or keep the server on 127.0.0.1"
    )
    assert lines == ([warning] if warned else [])


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
