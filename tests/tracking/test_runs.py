"""Logging a pipeline state (pipeline/tracking/runs.py): one parent run with every
number, one child run per seed, names and descriptions, the dataset and the
artifacts, against temporary SQLite stores."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pipeline import tracking
from pipeline.config import PROJECT_ROOT
from pipeline.data import generate
from tests.conftest import GOLDEN_RUNS
from tests.tracking.helpers import REPORTS, committed_state


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
    # The mechanism per epoch (dynamics.json's curves): run 2's hit@1 reaches 1, run 1's not.
    dynamics = json.loads((REPORTS / "dynamics/dynamics.json").read_text())
    curves = dynamics["curves"]
    for _, child in children.iterrows():
        seed = child["tags.seed"]
        history_ = client.get_metric_history(child["run_id"], "dynamics/hit_at_1")
        points = sorted((m.step, m.value) for m in history_)
        run = curves["argmax_hit"][f"run {seed}"]
        assert points == list(zip(curves["argmax_hit"]["epochs"], run, strict=True))
        assert len(points) == 201 and (points[-1][1] == 1.0) == (seed == "2")
    share = dynamics["emergence"]["share_never"]
    assert parent["metrics.dynamics/share_never_found"] == share
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


def test_an_unchanged_config_says_so(default_cfg, store):
    tracking.log_state(committed_state(default_cfg, store))
    parents, _ = tracking.search_parent_runs(store, "test")
    assert parents.iloc[0]["tags.mlflow.note.content"].startswith(
        "no change against the lesson's defaults; gap 0.1056"
    )


def test_a_run_without_a_study_records_no_study_params(default_cfg, store):
    """Issue 21: `history` showed study.seeds 1000 for a `pipeline.run` with no study."""
    state = committed_state(default_cfg, store)
    state.experiments = {}
    tracking.log_state(state)
    parents, _ = tracking.search_parent_runs(store, "test")
    logged = [c for c in parents.columns if c.startswith("params.")]
    assert "params.train.lr" in logged
    assert not [c for c in logged if c.startswith(("params.study.", "params.faithfulness."))]


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
