"""What every logger does through MLflow's client (pipeline/tracking/client.py): a
state logged once, a run complete only when all of it is in, and the runs an
interrupted log left RUNNING closed by the next one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline import tracking
from pipeline.core.errors import TrackingError
from pipeline.tracking.client import complete
from tests.tracking.helpers import committed_state


def test_the_same_state_is_logged_once(default_cfg, store):
    first, logged = tracking.log_state(committed_state(default_cfg, store))
    again, logged_again = tracking.log_state(committed_state(default_cfg, store))
    assert logged and not logged_again and again == first
    changed = committed_state(default_cfg, store)
    changed.cfg = replace(changed.cfg, eval=replace(changed.cfg.eval, high_weight=0.6))
    assert tracking.log_state(changed)[1]
    parents, _ = tracking.search_parent_runs(store, "test")
    assert len(parents) == 2


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
