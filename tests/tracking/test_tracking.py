"""MLflow tracking against temporary SQLite stores."""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from pipeline import tracking
from pipeline.browse import history
from pipeline.config import PROJECT_ROOT, TrackingConfig
from pipeline.core.errors import TrackingError
from pipeline.data import generate
from pipeline.tracking import store as store_module
from pipeline.tracking.client import complete
from pipeline.tracking.store import artifact_location, store_error
from tests.conftest import GOLDEN_RUNS

REPORTS = PROJECT_ROOT / "reports"


def committed_state(cfg, uri: str, **tags: str) -> tracking.PipelineState:
    cfg = replace(cfg, tracking=TrackingConfig(uri=uri, experiment="test"))
    curves = pd.read_csv(REPORTS / "training.csv")
    return tracking.PipelineState(
        cfg=cfg,
        metrics=json.loads((REPORTS / "metrics.json").read_text()),
        curves=curves,
        tags={"git.commit": "abc1234def", "git.dirty": "False", **tags},
        artifacts=[REPORTS / "metrics.json"],
        experiments={
            "study": json.loads((REPORTS / "study/summary.json").read_text()),
            "faithfulness": {
                "runs": json.loads((REPORTS / "faithfulness.json").read_text()),
                "study": json.loads((REPORTS / "study/faithfulness.json").read_text()),
            },
        },
    )


def test_one_parent_and_a_child_per_seed_with_every_number(default_cfg, store):
    from mlflow.tracking import MlflowClient

    parent_id, logged = tracking.log_state(committed_state(default_cfg, store))
    assert logged
    parents, children = tracking.search_parent_runs(store, "test")
    assert list(parents["run_id"]) == [parent_id] and len(children) == 2
    metrics = json.loads((REPORTS / "metrics.json").read_text())
    parent = parents.iloc[0]
    # The gap under gap/, at the lesson's 4 decimals (the UI shows them whole); the
    # data checks under data/.
    assert parent["metrics.gap/seed_gap"] == 0.1056 == round(metrics["seed_gap"], 4)
    assert parent["metrics.gap/heldout_mean"] == round(metrics["heldout_accuracy_mean"], 4)
    assert parent["metrics.gap/heldout_std"] == round(metrics["heldout_accuracy_std"], 4)
    heldout = [run["heldout_accuracy"] for run in metrics["runs"].values()]
    assert parent["metrics.gap/heldout_min"] == 0.8889 == round(min(heldout), 4)
    assert parent["metrics.gap/heldout_max"] == 0.9944 == round(max(heldout), 4)
    assert parent["metrics.gap/sequences"] == 19  # 0.1056 of 180 held-out sequences
    assert parent["metrics.data/baseline"] == metrics["data"]["baseline"]
    assert parent["metrics.model/parameters"] == metrics["parameters"] == 19
    assert parent["params.train.lr"] == "0.6" and parent["params.train.seeds"] == "[1, 2]"
    # Constant settings are not params.
    assert not [c for c in parents.columns if c.startswith(("params.paths.", "params.tracking."))]
    client = MlflowClient(store)
    for _, child in children.iterrows():
        seed = child["tags.seed"]
        for key, value in metrics["runs"][seed].items():
            assert child[f"metrics.lesson/{key}"] == value
        assert (
            round(child["metrics.lesson/heldout_accuracy"], 4)
            == GOLDEN_RUNS[seed]["heldout_accuracy"]
        )
        for curve in ("train/loss", "train/accuracy"):
            history_ = client.get_metric_history(child["run_id"], curve)
            assert [m.step for m in history_] == list(range(200))
    artifacts = [a.path for a in client.list_artifacts(parent_id)]
    assert "metrics.json" in artifacts
    # The seed study: its numbers on the parent under study/, no run per study seed.
    summary = json.loads((REPORTS / "study/summary.json").read_text())
    assert parent["metrics.study/seeds"] == summary["seeds"] == 1000
    assert (
        parent["metrics.study/heldout_accuracy/ci95_low"]
        == (summary["heldout_accuracy"]["ci95_low"])
    )
    assert (
        parent["metrics.study/pair_gap/p_at_least_observed"]
        == (summary["pair_gap"]["p_at_least_observed"])
    )
    assert (
        parent["metrics.study/lesson_seeds/1/percentile"]
        == (summary["lesson_seeds"]["1"]["percentile"])
    )
    # The faithfulness battery: per run on the seed's child, over the study on the parent.
    battery = json.loads((REPORTS / "faithfulness.json").read_text())["runs"]
    for _, child in children.iterrows():
        for explainer, numbers in battery[child["tags.seed"]].items():
            for metric, value in numbers.items():
                assert child[f"metrics.faithfulness/{explainer}/{metric}"] == value
    study_battery = json.loads((REPORTS / "study/faithfulness.json").read_text())["explainers"]
    assert (
        parent["metrics.faithfulness/study/attention/hit_at_1/share_first"]
        == (study_battery["attention"]["hit_at_1"]["share_first"])
    )


def test_runs_name_their_version_describe_the_change_and_say_who_logged_them(default_cfg, store):
    state = committed_state(default_cfg, store, **{"dvc.exp_name": "lower-lr"})
    state.cfg = replace(state.cfg, train=replace(state.cfg.train, lr=0.3))
    tracking.log_state(state)
    parents, children = tracking.search_parent_runs(store, "test")
    parent = parents.iloc[0]
    assert parent["tags.mlflow.runName"] == parent["tags.version"] == "lower-lr"
    assert parent["tags.mlflow.note.content"] == (
        "train.lr 0.6\u21920.3; gap 0.1056 (held-out 0.8889\u20130.9944)"
    )
    for tag in ("mlflow.user", "mlflow.source.name", "mlflow.source.type"):
        assert parent[f"tags.{tag}"], tag
    assert sorted(children["tags.mlflow.runName"]) == ["lower-lr / seed 1", "lower-lr / seed 2"]
    assert set(children["tags.version"]) == {"lower-lr"}
    assert set(children["tags.train.lr"]) == {"0.3"}  # what differs from the defaults
    assert "tags.train.epochs" not in children  # what does not


def test_reading_a_store_leaves_the_environment_alone(default_cfg, store, monkeypatch):
    """mlflow.set_tracking_uri exports MLFLOW_TRACKING_URI: a `dvc repro` started
    after `pipeline history` in the same process would log to the store it read."""
    import os

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    tracking.log_state(committed_state(default_cfg, store))
    parents, _ = tracking.search_parent_runs(store, "test")
    assert len(parents) == 1 and "MLFLOW_TRACKING_URI" not in os.environ


def test_the_experiment_carries_the_gap_view(default_cfg, store):
    from mlflow.tracking import MlflowClient

    tracking.log_state(committed_state(default_cfg, store))
    tags = MlflowClient(store).get_experiment_by_name("test").tags
    # The UI's saved-view envelope (what its Views menu lists), the state inside.
    envelope = json.loads(tags[f"mlflow.sharedViewState.{tracking.GAP_VIEW}"])
    assert envelope["name"] == tracking.GAP_VIEW and isinstance(envelope["createdAt"], int)
    view = json.loads(envelope["state"])
    assert view["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": "version"}]
    assert "metrics.`gap/seed_gap`" in view["selectedColumns"]


def test_an_unchanged_config_says_so(default_cfg, store):
    tracking.log_state(committed_state(default_cfg, store))
    parents, _ = tracking.search_parent_runs(store, "test")
    assert parents.iloc[0]["tags.mlflow.note.content"].startswith(
        "no change against the lesson's defaults; gap 0.1056"
    )


def test_sequences_are_the_runs_dataset_with_dvcs_md5(default_cfg, store):
    """Issue 21: one digest for the same data, from the DVC pipeline and the Hydra app
    alike: the md5 DVC records for data/sequences.parquet."""
    from mlflow.tracking import MlflowClient

    state = committed_state(default_cfg, store)
    state.sequences = generate(default_cfg.data)  # data/ is DVC-cached: not in a clone
    parent_id, _ = tracking.log_state(state)
    _, children = tracking.search_parent_runs(store, "test")
    lock = (PROJECT_ROOT / "dvc.lock").read_text()
    dvc_md5 = lock.split("path: data/sequences.parquet")[1].split("md5: ")[1].split()[0]
    client = MlflowClient(store)
    for run_id in [parent_id, *children["run_id"]]:
        (logged,) = client.get_run(run_id).inputs.dataset_inputs
        assert logged.dataset.digest == dvc_md5
        assert json.loads(logged.dataset.source) == {"uri": "data/sequences.parquet"}
        assert json.loads(logged.dataset.profile)["num_rows"] == 720
        assert [(t.key, t.value) for t in logged.tags] == [("mlflow.data.context", "training")]


def test_the_html_report_is_an_artifact(default_cfg, store):
    from mlflow.tracking import MlflowClient

    state = committed_state(default_cfg, store)
    state.report_html = "<html><body>report</body></html>"
    parent_id, _ = tracking.log_state(state)
    path = MlflowClient(store).download_artifacts(parent_id, "report.html")
    assert Path(path).read_text() == state.report_html


def test_tracking_uri_comes_from_the_config_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.store_uri(TrackingConfig()) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert tracking.store_uri(TrackingConfig()) == "http://127.0.0.1:5999"
    assert tracking.store_uri(TrackingConfig(uri="sqlite:///x.db")) == "sqlite:///x.db"


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


def test_a_lock_file_that_cannot_be_created_says_so(default_cfg, tmp_path):
    uri = f"sqlite:///{tmp_path / 'no-such-dir' / 'mlflow.db'}"
    with pytest.raises(TrackingError, match="cannot create the lock file") as err:
        tracking.log_state(committed_state(default_cfg, uri))
    assert uri in str(err.value) and "\n" not in str(err.value)


def test_the_same_state_is_logged_once(default_cfg, store):
    first, logged = tracking.log_state(committed_state(default_cfg, store))
    again, logged_again = tracking.log_state(committed_state(default_cfg, store))
    assert logged and not logged_again and again == first
    changed = committed_state(default_cfg, store)
    changed.cfg = replace(changed.cfg, eval=replace(changed.cfg.eval, high_weight=0.6))
    assert tracking.log_state(changed)[1]
    parents, _ = tracking.search_parent_runs(store, "test")
    assert len(parents) == 2


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
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        run_ids = pool.map(_log_in_process, [(store, 0.5), (store, 0.6), (store, 0.7)])
    parents, children = tracking.search_parent_runs(store, "test")
    assert sorted(parents["run_id"]) == sorted(run_ids)
    assert len(children) == 6


def test_history_has_a_row_per_version_and_the_params_that_differ(default_cfg, store, capsys):
    tracking.log_state(committed_state(default_cfg, store))
    other = committed_state(default_cfg, store, **{"dvc.exp_name": "lower-lr"})
    other.cfg = replace(other.cfg, train=replace(other.cfg.train, lr=0.3))
    other.metrics["seed_gap"] = 0.05
    tracking.log_state(other)
    plot = Path(store.removeprefix("sqlite:///")).parent / "gap.png"
    history.main(["--uri", store, "--experiment", "test", "--plot", str(plot)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "version",
        "gap",
        "heldout_1",
        "heldout_2",
        "marker_mass_1",
        "marker_mass_2",
        "agreement_1",
        "agreement_2",
        "train.lr",
    ]
    assert lines[1].split() == [
        "abc1234",
        "0.1056",
        "0.8889",
        "0.9944",
        "0.2721",
        "0.9691",
        "0.5889",
        "1.0000",
        "0.6",
    ]
    assert lines[2].split()[:2] == ["lower-lr", "0.0500"] and lines[2].split()[-1] == "0.3"
    assert plot.read_bytes().startswith(b"\x89PNG")


def _log_old_names(uri: str) -> None:
    """A version as stores written before the metric namespaces hold it."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("test").experiment_id
    parent = client.create_run(experiment, run_name="old-version")
    client.log_metric(parent.info.run_id, "seed_gap", 0.25)
    client.log_param(parent.info.run_id, "train.lr", "0.6")
    for seed, accuracy in (("1", 0.5), ("2", 0.75)):
        tags = {"mlflow.parentRunId": parent.info.run_id, "seed": seed}
        child = client.create_run(experiment, run_name=f"seed {seed}", tags=tags)
        for key, value in (("heldout_accuracy", accuracy), ("marker_mass", 0.5)):
            client.log_metric(child.info.run_id, key, value)
        client.log_metric(child.info.run_id, "weight_effect_agreement", 1.0)
    client.set_tag(parent.info.run_id, tracking.STATE_TAG, "old")


def test_history_reads_stores_written_with_the_old_metric_names(default_cfg, store, capsys):
    tracking.log_state(committed_state(default_cfg, store))
    _log_old_names(store)
    history.main(["--uri", store, "--experiment", "test"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[:4] for row in rows] == [
        ["abc1234", "0.1056", "0.8889", "0.9944"],
        ["old-version", "0.2500", "0.5000", "0.7500"],
    ]


def test_history_names_a_store_it_cannot_read(store, capsys):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    experiment = client.create_experiment("test")
    run = client.create_run(experiment, tags={tracking.STATE_TAG: "x"})
    client.log_metric(run.info.run_id, "accuracy", 1.0)
    with pytest.raises(SystemExit) as exit_:
        history.main(["--uri", store, "--experiment", "test"])
    assert store in str(exit_.value) and "gap/seed_gap" in str(exit_.value)


def test_store_is_anchored_at_dvc_root(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.store_uri(TrackingConfig()) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert artifact_location() == (tmp_path / "mlartifacts").as_uri()


def test_a_failed_attempt_is_not_taken_for_a_logged_state(default_cfg, store, monkeypatch):
    from mlflow.tracking import MlflowClient

    real = MlflowClient.log_artifact
    calls = []

    def fail_once(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_artifact", fail_once)
    with pytest.raises(TrackingError, match="disk full"):
        tracking.log_state(committed_state(default_cfg, store))
    run_id, logged = tracking.log_state(committed_state(default_cfg, store))
    assert logged
    parents, children = tracking.search_parent_runs(store, "test")
    assert list(parents["run_id"]) == [run_id] and len(children) == 2
    assert parents.iloc[0]["status"] == "FINISHED"
    assert [a.path for a in MlflowClient(store).list_artifacts(run_id)] == ["metrics.json"]


def test_track_stage_with_tracking_disabled_logs_nothing(tmp_path, monkeypatch):
    import yaml

    from pipeline.params import composed_yaml
    from pipeline.stages import track

    (tmp_path / "params.yaml").write_text(composed_yaml(["tracking.enabled=false"]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    track.main()
    state = yaml.safe_load((tmp_path / ".mlflow-state.json").read_text())
    assert state == {"experiment": None}
    assert not (tmp_path / "mlflow.db").exists()
    # Its second output, inside the artifacts' folder (issue 59, item 3), private.
    marker = tmp_path / track.ARTIFACTS_MARKER
    assert yaml.safe_load(marker.read_text()) == state
    assert (marker.stat().st_mode & 0o777, marker.parent.stat().st_mode & 0o777) == (0o600, 0o700)


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


def test_a_run_whose_logging_breaks_off_is_failed_and_carries_no_state():
    calls = []

    class Client:
        def set_terminated(self, run, status="FINISHED"):
            calls.append(("terminated", status))

        def set_tag(self, run, key, value):
            calls.append(("tag", key))

    def broken():
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        complete(Client(), "run", "digest", broken)
    assert calls == [("terminated", "FAILED")]
    calls.clear()
    complete(Client(), "run", "digest", lambda: None)
    assert calls == [("tag", tracking.STATE_TAG), ("terminated", "FINISHED")]


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


def test_artifact_location_is_beside_a_sqlite_store(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path / "project"))
    store = f"sqlite:///{tmp_path / 'elsewhere' / 'mlflow.db'}"
    assert artifact_location(store) == (tmp_path / "elsewhere" / "mlartifacts").as_uri()
    default = tracking.store_uri(TrackingConfig())
    assert artifact_location(default) == (tmp_path / "project" / "mlartifacts").as_uri()


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


def test_tables_print_integers_as_integers_and_one_missing_marker():
    """Issue 21: `history --sweep` printed seed_runs as 2.0000, and missing values
    printed as NaN, <NA> or - depending on the command."""
    table = pd.DataFrame(
        {
            "job": [0, 1],
            "seed_runs": pd.array([2, None], dtype="Int64"),
            "gap": [0.10555555, float("nan")],
            "status": ["logged", None],
        }
    )
    lines = history.text_table(table).splitlines()
    assert lines[0].split() == ["job", "seed_runs", "gap", "status"]
    assert lines[1].split() == ["0", "2", "0.1056", "logged"]
    assert lines[2].split() == ["1", "-", "-", "-"]


def test_a_run_without_a_study_records_no_study_params(default_cfg, store):
    """Issue 21: `history` showed study.seeds 1000 for a `pipeline.run` with no study."""
    state = committed_state(default_cfg, store)
    state.experiments = {}
    tracking.log_state(state)
    parents, _ = tracking.search_parent_runs(store, "test")
    logged = [c for c in parents.columns if c.startswith("params.")]
    assert "params.train.lr" in logged
    assert not [c for c in logged if c.startswith(("params.study.", "params.faithfulness."))]


def test_the_printed_ui_command_quotes_every_value(default_cfg, monkeypatch, tmp_path):
    """Issue 34, case 5: the hint printed the experiment name unquoted, so a name such
    as `x; touch f` became a second command when the line was pasted."""
    import shlex

    from pipeline.stages.track import ui_hint

    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    hostile = "x; touch /tmp/pwned $(id)"
    cfg = replace(default_cfg, tracking=replace(default_cfg.tracking, experiment=hostile))
    local = f"sqlite:///{tracking.store_root() / 'mlflow.db'}"
    hint = ui_hint(cfg, local)
    assert shlex.split(hint) == ["python", "-m", "pipeline", "ui", "--experiment", hostile]
    assert ui_hint(default_cfg, local) == "python -m pipeline ui"
    other = ui_hint(cfg, "http://127.0.0.1:5000/x;id")
    assert shlex.split(other.split(",")[0]) == [
        "mlflow",
        "ui",
        "--backend-store-uri",
        "http://127.0.0.1:5000/x;id",
    ]


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


def test_runs_an_interrupted_log_left_running_are_closed_by_the_next_log(
    default_cfg, store, capsys
):
    """Issue 34, case 13: after kill -9 of the track stage (or a full disk) its runs
    stayed RUNNING with partial metrics. The next log of the same state closes them as
    KILLED, in one line; history and compare (search_parent_runs) never count them."""
    from mlflow.tracking import MlflowClient

    from pipeline.tracking.client import experiment, log_run, start_state

    state = committed_state(default_cfg, store)
    client = MlflowClient(store)
    experiment_id = experiment(client, store, "test")
    tags = start_state(client, experiment_id, state.digest)
    partial = log_run(client, experiment_id, "killed mid-log", tags, {}, {"gap/seed_gap": 0.5})
    assert client.get_run(partial).info.status == "RUNNING"  # as kill -9 leaves it
    parents, _ = tracking.search_parent_runs(store, "test")
    assert parents.empty  # not counted while it is partial
    parent_id, fresh = tracking.log_state(state)
    assert fresh and parent_id != partial
    assert client.get_run(partial).info.status == "KILLED"
    said = capsys.readouterr().out
    assert "closed 1 run(s) that an interrupted log of this state left RUNNING, as KILLED" in said
    parents, _ = tracking.search_parent_runs(store, "test")
    assert parents["run_id"].tolist() == [parent_id]
    assert client.get_run(parent_id).info.status == "FINISHED"


def test_the_commands_output_options_write_only_their_own_files(tmp_path, monkeypatch):
    """Issue 34, case 7: `diff --out mlflow.db`, `compare --csv params.yaml` and
    `history --plot README.md` replaced the store, the params and the README, exit 0."""
    from pipeline.config import PROJECT_ROOT
    from pipeline.core.errors import ConfigError
    from pipeline.core.files import command_output

    def own(head: bytes) -> bool:
        return head.startswith(b"mine")

    for name in (
        "mlflow.db",
        "mlflow.db.lock",
        "params.yaml",
        "README.md",
        "dvc.lock",
        "reports/metrics.json",
        "conf/config.yaml",
        "pipeline/new.py",
        "data/x",
    ):
        with pytest.raises(ConfigError, match=r"^--out .*: not written there \(") as err:
            command_output(PROJECT_ROOT / name, "--out", own)
        assert "\n" not in str(err.value)
    (tmp_path / "theirs.md").write_text("a file of someone else's")
    with pytest.raises(ConfigError, match="a file this command did not write"):
        command_output(tmp_path / "theirs.md", "--out", own)
    with pytest.raises(ConfigError, match="a folder"):
        command_output(tmp_path, "--out", own)
    (tmp_path / "earlier.md").write_text("mine, from the last run")
    assert command_output(tmp_path / "earlier.md", "--out", own) == tmp_path / "earlier.md"
    assert command_output(tmp_path / "new.md", "--out", own) == tmp_path / "new.md"
    assert command_output(PROJECT_ROOT / "outputs/new.md", "--out", own)


def test_diff_refuses_its_out_file_in_one_line_before_computing(capsys):
    from pipeline.browse import diff

    with pytest.raises(SystemExit) as exit_:
        diff.main(["HEAD", "--out", "mlflow.db"])
    assert str(exit_.value.code).startswith("error: --out mlflow.db: not written there (the store")


def test_history_replaces_only_its_own_plot(default_cfg, store, capsys):
    tracking.log_state(committed_state(default_cfg, store))
    folder = Path(store.removeprefix("sqlite:///")).parent
    plot, readme = folder / "gap.png", folder / "README.md"
    history.main(["--uri", store, "--experiment", "test", "--plot", str(plot)])
    history.main(["--uri", store, "--experiment", "test", "--plot", str(plot)])  # its own
    readme.write_text("# a project's README")
    with pytest.raises(SystemExit) as exit_:
        history.main(["--uri", store, "--experiment", "test", "--plot", str(readme)])
    assert "a file this command did not write" in str(exit_.value.code)
    assert readme.read_text() == "# a project's README"


def test_compare_replaces_only_its_own_csv(default_cfg, store, capsys):
    from pipeline.browse import compare

    tracking.log_state(committed_state(default_cfg, store))
    folder = Path(store.removeprefix("sqlite:///")).parent
    table, params = folder / "table.csv", folder / "params.yaml"
    compare.main(["--uri", store, "--experiment", "test", "--csv", str(table)])
    compare.main(["--uri", store, "--experiment", "test", "--csv", str(table)])  # its own
    params.write_text("train:\n  lr: 0.6\n")
    with pytest.raises(SystemExit) as exit_:
        compare.main(["--uri", store, "--experiment", "test", "--csv", str(params)])
    assert "a file this command did not write" in str(exit_.value.code)
    assert params.read_text() == "train:\n  lr: 0.6\n"


def test_the_sanity_checks_reach_mlflow_as_one_mean_per_test_step_and_row():
    from pipeline.experiments.grid.cell_runs import cell_metrics
    from pipeline.tracking.state import sanity_metrics

    entry = {"spearman": {"mean": 0.25, "ci95_low": 0.1}, "spearman_abs": {"mean": 0.3}}
    sanity = {
        "seeds": 2,
        "groups": {"readout": ["w", "b"]},
        "tests": {"cascading": {"readout": {"attention": entry}}},
    }
    assert sanity_metrics(sanity, "faithfulness/sanity/") == {
        "faithfulness/sanity/cascading/readout/attention": 0.25
    }
    document = {"seeds": 2, "faithfulness": {"seeds": 2, "sanity": sanity}}
    assert cell_metrics(document) == {
        "grid/seeds": 2.0,
        "grid/faithfulness/seeds": 2.0,
        "grid/sanity/cascading/readout/attention": 0.25,
    }
    assert "sanity" in document["faithfulness"]  # the document itself is left as it was


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


def test_the_digest_holds_every_experiment_document_as_the_track_stage_reads_them(default_cfg):
    """The track stage's no-op check digests the documents it reads from disk
    (config.results.experiment_results); the logged state digests its own. Each
    document must move the state's digest, the same way: a state whose digest left
    out abstraction and roar was never found by the check, so every `dvc repro` of the
    track stage imported mlflow (CI caught it)."""
    from pipeline.core.kinds import EXPERIMENTS

    state = committed_state(default_cfg, "sqlite:///unused.db")
    documents = {stage: {"stage": stage, "value": 1} for stage in EXPERIMENTS}
    state.experiments = dict(documents)
    battery = tracking.battery_documents(documents)
    assert state.digest == tracking.state_digest(
        state.cfg, state.metrics, state.tags, None, battery
    )
    seen = {state.digest}
    for stage in EXPERIMENTS:
        state.experiments[stage] = {"stage": stage, "value": 2}
        assert state.digest not in seen, stage
        seen.add(state.digest)


def pulled_params(folder: Path, uri: str) -> Path:
    """A params.yaml whose tracking.uri arrived with a pull."""
    from pipeline.config.load import composed_yaml

    folder.mkdir(parents=True, exist_ok=True)
    params = folder / "params.yaml"
    params.write_text(composed_yaml().replace("  uri: null\n", f"  uri: {uri}\n", 1))
    return params


@pytest.mark.parametrize(
    ("uri", "where"),
    [
        ("sqlite:///{outside}/victim", "outside the project"),
        ("file://{outside}/mlruns", "outside the project"),
        ("http://203.0.113.7:5000", "a server"),
        ("https://tracking.example.com", "a server"),
        ("postgresql://user@db.example.com/mlflow", "a server"),
    ],
)
def test_a_store_outside_the_project_is_not_taken_from_params_yaml(
    tmp_path, monkeypatch, run_entry, uri, where
):
    """Issue 60, case 10: a pulled params.yaml sent the runs, params and artifacts
    anywhere (an existing file there became 0600, with a `.lock` and `mlartifacts/`
    beside it) or to any server. Outside the project it is MLFLOW_TRACKING_URI's."""
    from pipeline.config import ConfigError, load_params
    from pipeline.stages import track

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("someone's file\n")
    victim.chmod(0o644)
    uri = uri.format(outside=outside)
    project = tmp_path / "project"
    params = pulled_params(project, uri)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(project))
    monkeypatch.chdir(project)
    code, err = run_entry(track.main)
    assert code == 1 and err.count("\n") == 1, err
    assert err == (
        f"error: invalid config value tracking.uri={uri!r}: a store {where} is not taken "
        f"from params.yaml (it arrives with a pull); choose it with MLFLOW_TRACKING_URI={uri}, "
        "or set tracking.uri to null (the project's mlflow.db) or a store inside the project\n"
    )
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert victim.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in project.iterdir()) == ["params.yaml"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # the explicit choice
    assert load_params(params).tracking.uri == uri
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")  # another one
    with pytest.raises(ConfigError, match="is not taken from params.yaml"):
        load_params(params)


def test_a_store_inside_the_project_is_a_config_value(tmp_path, monkeypatch):
    from pipeline.config import load_params
    from pipeline.config.store_choice import check_store_choice, inside

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    project = tmp_path / "project"
    for uri in ("sqlite:///mlflow.db", f"sqlite:///{project}/stores/a.db", "file:mlruns"):
        monkeypatch.chdir(tmp_path)
        params = pulled_params(project, uri)
        monkeypatch.chdir(project)
        assert load_params(params).tracking.uri == uri
    link = project / "link"
    link.symlink_to(tmp_path)  # a link out of the project is outside
    assert not inside(f"sqlite:///{link}/x.db", [project])
    # the Hydra apps: `tracking.uri=...` typed on the command line is a choice
    check_store_choice("http://127.0.0.1:5000", [project], "conf/", flag=True)
