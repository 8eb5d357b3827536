"""The variant x metric table read back from an MLflow store."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from pipeline import tracking
from pipeline.browse import compare
from pipeline.config import TaskConfig
from tests.browse.helpers import assert_replaces_only_its_own
from tests.tracking.helpers import committed_state


def test_one_row_per_version_with_each_variants_own_numbers(default_cfg, store, capsys):
    lesson = committed_state(default_cfg, store, **{"dvc.exp_name": "lesson"})
    tracking.log_state(lesson)
    sink = committed_state(default_cfg, store, **{"dvc.exp_name": "with-sink"})
    sink.cfg = replace(
        sink.cfg, model=replace(sink.cfg.model, kind="sink"), task=TaskConfig(kind="rise")
    )
    sink.metrics = copy.deepcopy(sink.metrics)
    sink.metrics["parameters"] = 20
    sink.metrics["seed_gap"] = 0.25
    for seed, mass in (("1", 0.1), ("2", 0.3)):
        sink.metrics["runs"][seed]["sink_mass"] = mass
    tracking.log_state(sink)

    parents, children = tracking.search_parent_runs(store, "test")
    table = compare.variant_table(parents, children)
    assert list(table["task"]) == ["lesson", "rise"]
    assert list(table["variant"]) == ["lesson", "sink"]
    assert list(table["version"]) == ["lesson", "with-sink"]
    assert list(table["params"]) == [19, 20]
    assert table["gap"].round(4).tolist() == [0.1056, 0.25]
    runs = lesson.metrics["runs"]
    mean_heldout = (runs["1"]["heldout_accuracy"] + runs["2"]["heldout_accuracy"]) / 2
    assert table["heldout"].tolist() == pytest.approx([mean_heldout] * 2, abs=1e-15)
    assert table["sink_mass"].isna().tolist() == [True, False]
    assert table["sink_mass"].iloc[1] == pytest.approx(0.2)

    compare.main(["--uri", store, "--experiment", "test"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["task", "variant", "version", "gap", "params"]
    assert lines[2].split()[:5] == ["rise", "sink", "with-sink", "0.2500", "20"]


def test_a_store_without_runs_is_an_error_naming_it(default_cfg, store):
    with pytest.raises(SystemExit) as exit_:
        compare.main(["--uri", store, "--experiment", "test"])
    assert store in str(exit_.value)
    tracking.log_state(committed_state(default_cfg, store))
    with pytest.raises(SystemExit) as exit_:
        compare.main(["--uri", store, "--experiment", "nothing-logged-here"])
    assert f"no runs recorded in {store}" in str(exit_.value)


def test_compare_replaces_only_its_own_csv(default_cfg, store, capsys):
    tracking.log_state(committed_state(default_cfg, store))
    foreign = ("params.yaml", "train:\n  lr: 0.6\n")
    assert_replaces_only_its_own(compare.main, store, "--csv", "table.csv", foreign)
