"""Reading the logged states back (pipeline/tracking/search.py) without changing
the process's environment."""

from __future__ import annotations

from pipeline import tracking
from tests.tracking.helpers import committed_state


def test_reading_a_store_leaves_the_environment_alone(default_cfg, store, monkeypatch):
    """mlflow.set_tracking_uri exports MLFLOW_TRACKING_URI: a `dvc repro` started
    after `pipeline history` in the same process would log to the store it read."""
    import os

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    tracking.log_state(committed_state(default_cfg, store))
    parents, _ = tracking.search_parent_runs(store, "test")
    assert len(parents) == 1 and "MLFLOW_TRACKING_URI" not in os.environ
