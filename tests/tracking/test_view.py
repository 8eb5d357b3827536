"""The MLflow UI's saved gap view (pipeline/tracking/view.py), stored on the
experiment."""

from __future__ import annotations

import json

from pipeline import tracking
from tests.tracking.helpers import committed_state


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
