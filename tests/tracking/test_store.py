"""The store (pipeline/tracking/store.py): its URI and where its artifacts go, its
lock, creating it whole under parallel and interrupted writers, keeping it the
owner's alone, its errors in one line, and checking a tracking server before any
work."""

from __future__ import annotations

import multiprocessing
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline import tracking
from pipeline.config import TrackingConfig
from pipeline.core.errors import PipelineError, TrackingError
from pipeline.tracking import store as store_module
from pipeline.tracking.store import artifact_location, store_error
from tests.tracking.helpers import answering_api, committed_state, count_requests


def test_tracking_uri_comes_from_the_config_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.store_uri(TrackingConfig()) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert tracking.store_uri(TrackingConfig()) == "http://127.0.0.1:5999"
    assert tracking.store_uri(TrackingConfig(uri="sqlite:///x.db")) == "sqlite:///x.db"


def test_store_is_anchored_at_dvc_root(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.store_uri(TrackingConfig()) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert artifact_location() == (tmp_path / "mlartifacts").as_uri()


def test_artifact_location_is_beside_a_sqlite_store(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path / "project"))
    store = f"sqlite:///{tmp_path / 'elsewhere' / 'mlflow.db'}"
    assert artifact_location(store) == (tmp_path / "elsewhere" / "mlartifacts").as_uri()
    default = tracking.store_uri(TrackingConfig())
    assert artifact_location(default) == (tmp_path / "project" / "mlartifacts").as_uri()


def _artifact_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_artifacts_go_beside_the_store_and_a_copied_store_is_refused(
    default_cfg, store_template, tmp_path, monkeypatch
):
    """Issue 22: a copied project (or a clone sharing a store) wrote its artifacts into
    the first project's mlartifacts/, recorded in the store as an absolute path."""
    import shutil

    monkeypatch.setenv("DVC_ROOT", str(tmp_path / "project"))
    (tmp_path / "a").mkdir()
    shutil.copyfile(store_template, tmp_path / "a" / "mlflow.db")
    first = f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}"
    tracking.log_state(committed_state(default_cfg, first))
    logged = _artifact_files(tmp_path / "a" / "mlartifacts")
    assert [p.name for p in logged] == ["metrics.json"]  # beside the store, not the project
    assert not (tmp_path / "project" / "mlartifacts").exists()

    shutil.copytree(tmp_path / "a", tmp_path / "b")
    copied = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    changed = committed_state(default_cfg, copied)
    changed.cfg = replace(changed.cfg, eval=replace(changed.cfg.eval, high_weight=0.6))
    with pytest.raises(TrackingError) as err:
        tracking.log_state(changed)
    message = str(err.value)
    assert "\n" not in message and copied in message
    assert f"records artifacts in {tmp_path / 'a' / 'mlartifacts'}, not beside it" in message
    assert str(tmp_path / "b" / "mlartifacts") in message and "delete" in message
    assert _artifact_files(tmp_path / "a" / "mlartifacts") == logged
    assert len(tracking.search_parent_runs(copied, "test")[0]) == 1  # nothing logged


def test_a_lock_file_that_cannot_be_created_says_so(default_cfg, tmp_path):
    uri = f"sqlite:///{tmp_path / 'no-such-dir' / 'mlflow.db'}"
    with pytest.raises(TrackingError, match="cannot create the lock file") as err:
        tracking.log_state(committed_state(default_cfg, uri))
    assert uri in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("uri", ["sqlite:////proc/no-such-dir/mlflow.db", "nosuchscheme://x"])
def test_unwritable_store_names_the_uri(default_cfg, uri, tmp_path, monkeypatch):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    with pytest.raises(TrackingError) as err:
        tracking.log_state(committed_state(default_cfg, uri))
    assert uri in str(err.value) and "\n" not in str(err.value)


def _log_in_process(args: tuple[str, float]) -> str:
    from pipeline.config import Config

    uri, high_weight = args
    state = committed_state(Config(), uri)
    state.cfg = replace(state.cfg, eval=replace(state.cfg.eval, high_weight=high_weight))
    return tracking.log_state(state)[0]


def test_parallel_processes_on_a_fresh_store_lose_no_run(tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"  # no file yet: the workers race to create it
    # Forked after the store's libraries are imported: the workers race from their
    # first line on, not after seconds of imports.
    import alembic.command  # noqa: F401
    import mlflow.store.model_registry.sqlalchemy_store  # noqa: F401
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401

    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        run_ids = pool.map(_log_in_process, [(store, 0.5), (store, 0.6), (store, 0.7)])
    parents, children = tracking.search_parent_runs(store, "test")
    assert sorted(parents["run_id"]) == sorted(run_ids)
    assert len(children) == 6


def test_a_store_whose_creation_is_interrupted_is_created_again(default_cfg, tmp_path, monkeypatch):
    """Issue 22: Ctrl-C between MLflow's schema migrations of a new store left a
    half-migrated database that every later repro refused."""
    import mlflow.store.db.utils as db_utils

    def interrupted(engine):
        raise KeyboardInterrupt  # after the initial tables, before the migrations

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with monkeypatch.context() as patch:
        patch.setattr(db_utils, "_upgrade_db", interrupted)
        with pytest.raises(KeyboardInterrupt):
            tracking.log_state(committed_state(default_cfg, uri))
    assert not (tmp_path / "mlflow.db").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["mlflow.db.lock"]
    run_id, logged = tracking.log_state(committed_state(default_cfg, uri))
    assert logged and tracking.logged_run(uri, "test", committed_state(default_cfg, uri).digest)


def private_modes(root: Path) -> dict[str, str]:
    """The mode of every store file and artifact under `root` that another local user
    could read or enter: group or other bits set."""
    found = {}
    for path in [root / "mlartifacts", *root.glob("mlflow.db*"), *root.rglob("mlartifacts/**/*")]:
        mode = path.stat().st_mode & 0o777
        if mode & 0o077 or mode & 0o700 != (0o700 if path.is_dir() else 0o600):
            found[str(path.relative_to(root))] = f"{mode:o}"
    return found


def test_the_store_and_its_artifacts_are_the_owner_s_alone_whatever_the_umask(
    default_cfg, tmp_path
):
    """Issue 49, item 1: with umask 022, mlflow.db was 0644 and mlartifacts/ 0755:
    any local user read every run with sqlite3, and the artifacts, whatever the
    UI's login. The store's files are 0600 and its folders 0700; a store made
    before is made so on its next log."""
    import os

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    umask = os.umask(0o022)
    try:
        tracking.log_state(committed_state(default_cfg, uri))
        assert (tmp_path / "mlflow.db").stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "mlflow.db.lock").stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "mlartifacts").stat().st_mode & 0o777 == 0o700
        artifacts = [p for p in (tmp_path / "mlartifacts").rglob("*") if p.is_file()]
        assert any(p.name == "metrics.json" for p in artifacts)
        assert private_modes(tmp_path) == {}
        for path in [tmp_path / "mlartifacts", *(tmp_path / "mlartifacts").rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)  # as the old code left them
        for path in tmp_path.glob("mlflow.db*"):
            path.chmod(0o644)
        tracking.log_state(committed_state(default_cfg, uri))  # already logged: no new run
        assert private_modes(tmp_path) == {}
    finally:
        os.umask(umask)


def _readonly_error_text(tmp_path: Path) -> str:
    """What SQLite says when a write meets a read-only database (root ignores file
    modes, so the database is opened read-only instead)."""
    import sqlite3

    path = tmp_path / "ro.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        db.execute("INSERT INTO t VALUES (1)")
    except sqlite3.OperationalError as err:
        return str(err)
    finally:
        db.close()
    raise AssertionError("a read-only database accepted a write")


def test_a_read_only_database_error_says_so(store, tmp_path):
    from sqlalchemy.exc import OperationalError

    reason = _readonly_error_text(tmp_path)
    assert reason == "attempt to write a readonly database"
    err = OperationalError("INSERT INTO runs ...", {}, Exception(reason))
    err.add_detail("raised as a result of Query-invoked autoflush; consider using a session")
    database = store.removeprefix("sqlite:///")
    assert store_error(store, err) == (
        f"cannot write MLflow store {store}: the database file {database} is read-only"
    )
    other = OperationalError("INSERT", {}, Exception("database is locked"))
    other.add_detail("raised as a result of Query-invoked autoflush; consider using a session")
    assert store_error(store, other) == (
        f"cannot write MLflow store {store}: (builtins.Exception) database is locked"
    )


def _chattr(path: Path, flag: str) -> bool:
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("opened", [True, False], ids=["opened-before", "fresh"])
def test_an_immutable_store_is_named_read_only_in_one_line(default_cfg, store, opened):
    """Issue 22: after `chattr +i mlflow.db` the error blamed SQLAlchemy's autoflush and
    MLflow logged a long traceback before it."""
    import logging

    database = Path(store.removeprefix("sqlite:///"))
    if opened:  # the process already holds a connection to the store
        tracking.log_state(committed_state(default_cfg, store))
    if not _chattr(database, "+i"):
        pytest.skip("chattr +i is not available here")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("mlflow.store.db.utils")
    logger.addHandler(handler)
    try:
        changed = committed_state(default_cfg, store)
        changed.cfg = replace(changed.cfg, eval=replace(changed.cfg.eval, high_weight=0.6))
        with pytest.raises(TrackingError) as err:
            tracking.log_state(changed)
    finally:
        logger.removeHandler(handler)
        _chattr(database, "-i")
    assert str(err.value) == (
        f"cannot write MLflow store {store}: the database file {database} is read-only"
    )
    assert [r for r in records if r.levelno >= logging.WARNING] == []  # no traceback


def test_an_unreachable_server_fails_fast_naming_the_uri(default_cfg, monkeypatch):
    import socket

    monkeypatch.setattr(store_module, "SERVER_TIMEOUT_S", 1)
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(TrackingError, match="cannot reach MLflow tracking server") as err:
            tracking.log_state(committed_state(default_cfg, uri))
    assert uri in str(err.value)
    # Now nothing listens there: refused at once.
    with pytest.raises(TrackingError, match=f"cannot reach MLflow tracking server {uri}"):
        tracking.search_parent_runs(uri, "test")


@pytest.mark.parametrize(
    ("status", "fails"), [(503, True), (500, True), (404, False), (403, False)]
)
def test_check_server_fails_on_an_api_error_though_health_answers(status, fails, monkeypatch):
    """At once, as structure rather than a time (issue 59: the bound of 5 s failed
    under load): one request, none through MLflow's client (which retries)."""
    calls = {"request": 0, "mlflow": 0}
    count_requests(monkeypatch, calls)
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
