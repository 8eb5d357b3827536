"""`python -m pipeline history` (pipeline/browse/history.py): a row per logged
version with the params that differ, stores written with the old metric names,
one marker for what is missing, and a plot that replaces only its own file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from pipeline import tracking
from pipeline.browse import history
from tests.browse.helpers import assert_replaces_only_its_own
from tests.tracking.helpers import committed_state


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


def test_history_replaces_only_its_own_plot(default_cfg, store, capsys):
    tracking.log_state(committed_state(default_cfg, store))
    foreign = ("README.md", "# a project's README")
    assert_replaces_only_its_own(history.main, store, "--plot", "gap.png", foreign)
