"""The store's record of the state logged last (pipeline/tracking/record.py): the
track stage's no-op check, read without mlflow, that sees a replaced store and
deleted artifacts."""

from __future__ import annotations

from pathlib import Path

from pipeline import tracking
from pipeline.config import PROJECT_ROOT
from tests.tracking.helpers import committed_state


def test_logged_run_reads_a_sqlite_store_without_mlflow(default_cfg, store, tmp_path):
    from mlflow.tracking import MlflowClient

    state = committed_state(default_cfg, store)
    run_id, _ = tracking.log_state(state)
    assert tracking.logged_run(store, "test", state.digest) == run_id
    assert tracking.logged_run(store, "other-experiment", state.digest) is None
    assert tracking.logged_run(store, "test", "0" * 64) is None
    assert tracking.logged_run(f"sqlite:///{tmp_path / 'missing.db'}", "test", state.digest) is None
    assert tracking.logged_run("http://127.0.0.1:1", "test", state.digest) is None
    (tmp_path / "junk.db").write_text("not a database")
    assert tracking.logged_run(f"sqlite:///{tmp_path / 'junk.db'}", "test", state.digest) is None
    MlflowClient(store).delete_run(run_id)
    assert tracking.logged_run(store, "test", state.digest) is None


def test_a_replaced_store_is_not_taken_for_the_one_the_record_names(
    default_cfg, store, store_template, tmp_path
):
    """The record beside the store names the database file it was written for: a store
    put in its place (deleted and made again, or copied over it) is asked again."""
    import shutil

    state = committed_state(default_cfg, store)
    run_id, _ = tracking.log_state(state)
    database = tmp_path / "mlflow.db"
    assert (tmp_path / "mlflow.db.state.json").is_file()
    assert tracking.logged_run(store, "test", state.digest) == run_id
    shutil.copyfile(database, tmp_path / "kept.db")
    database.unlink()
    shutil.copyfile(store_template, database)  # an empty store where the old one was
    assert tracking.logged_run(store, "test", state.digest) is None
    # (Not logged again here: this process's MLflow keeps the deleted file open.)
    database.unlink()
    shutil.copy2(tmp_path / "kept.db", database)  # the old store back, mtime and all
    assert tracking.logged_run(store, "test", state.digest) is None


def test_the_record_is_read_without_mlflow(default_cfg, store):
    import subprocess
    import sys

    state = committed_state(default_cfg, store)
    run_id, _ = tracking.log_state(state)
    probe = (
        "import sys\nfrom pipeline import tracking\n"
        f"print(tracking.logged_run({store!r}, 'test', {state.digest!r}))\n"
        "print(sorted(m for m in ('mlflow', 'pandas', 'sqlalchemy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert result.stdout.splitlines() == [run_id, "[]"], result.stderr


def test_deleted_artifacts_are_logged_again_and_the_record_sees_them_gone(
    default_cfg, store, capsys
):
    """Issue 34, case 8: after `rm -rf mlartifacts; dvc repro` the track stage said
    "already logged" and the run kept no artifacts."""
    import shutil

    from mlflow.tracking import MlflowClient

    from pipeline.tracking import record

    state = committed_state(default_cfg, store)
    state.report_html = "<html><body>report</body></html>"
    parent_id, fresh = tracking.log_state(state)
    assert fresh
    client = MlflowClient(store)
    root = Path(client.get_run(parent_id).info.artifact_uri.removeprefix("file://"))
    assert (root / "report.html").is_file()
    assert record.logged_run(store, "test", state.digest) == parent_id  # the no-op path
    shutil.rmtree(root)
    assert record.logged_run(store, "test", state.digest) is None  # it sees them gone
    again, fresh = tracking.log_state(state)
    assert (again, fresh) == (parent_id, False)  # the same run, no second one
    assert (
        f"the artifacts of run {parent_id} were gone: logged them again" in capsys.readouterr().out
    )
    assert (root / "report.html").read_text() == state.report_html
    assert {p.name for p in root.iterdir()} >= {"report.html", "metrics.json"}
    assert record.logged_run(store, "test", state.digest) == parent_id
