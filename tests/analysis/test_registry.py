"""The metric and explainer registry (pipeline/core/measures.py): one declaration
from which every table, file and tracked name derives. A toy metric registered in
this test alone reaches metrics.json, summary.json, report.md, the headline file
and MLflow; a toy explainer, the battery and report.md's list."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from pipeline.analysis import explainers, faithfulness, metrics
from pipeline.config.load import composed_yaml
from pipeline.core import measures, precision
from pipeline.core.errors import PipelineError
from tests.conftest import small_overrides, write_cells

TOY = measures.Metric(
    "toy_top_weight",
    "toy top weight",
    "toy top",
    "mean over held-out sequences of the largest pooling weight",
    "weights",
    headline=True,
)


@pytest.fixture
def toy_metric(monkeypatch):
    monkeypatch.setitem(measures.METRICS, TOY.key, TOY)
    monkeypatch.setitem(metrics.PER_EXAMPLE, TOY.key, lambda out: out.weights.amax(-1))
    return TOY


def test_the_declarations_derive_every_table():
    assert measures.run_order()[:2] == ["train_accuracy", "heldout_accuracy"]
    assert measures.means() == [
        "heldout_accuracy",
        "train_accuracy",
        "marker_mass",
        "argmax_hit",
        "weight_effect_agreement",
        "top_weight_effect",
    ]
    assert measures.counts() == ["high_weight", "high_weight_low_effect"]
    assert measures.in_table("accuracy") == ["train_accuracy", "heldout_accuracy"]
    assert set(metrics.PER_EXAMPLE) == set(measures.METRICS)  # a function for each
    # One word per metric in the wide tables, the same wherever it is shown.
    columns = {key: metric.column for key, metric in measures.METRICS.items()}
    assert columns["weight_effect_agreement"] == "agreement"
    assert columns["heldout_accuracy"] == "heldout" and columns["marker_mass"] == "marker_mass"


def test_a_declared_metric_without_values_is_an_error_naming_it(monkeypatch, small_cfg):
    from tests.models.helpers import small_set

    monkeypatch.setitem(measures.METRICS, TOY.key, TOY)  # declared, no @per_example
    (train_x, train_y), heldout = small_set()
    from pipeline.models import interface

    params = interface.init_params(1, [1], small_cfg.model, train_x.shape[1])
    with pytest.raises(PipelineError, match="toy_top_weight.*no @per_example"):
        metrics.example_values(params, (train_x, train_y), heldout, small_cfg.eval)


def test_a_bad_declaration_is_refused():
    with pytest.raises(ValueError, match="reduce in"):
        measures.register_metric(measures.Metric("x", "x", "x", "x", "weights", reduce="median"))
    with pytest.raises(ValueError, match="table in"):
        measures.register_metric(measures.Metric("x", "x", "x", "x", "elsewhere"))


@pytest.fixture
def project(tmp_path, monkeypatch, store) -> Path:
    overrides = [*small_overrides(), f"tracking.uri={store}", "tracking.experiment=toy"]
    (tmp_path / "params.yaml").write_text(composed_yaml(overrides))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    return tmp_path


@pytest.mark.slow  # every stage end to end: the full tier
def test_a_metric_registered_in_a_test_reaches_every_output(toy_metric, project, store):
    from mlflow.tracking import MlflowClient

    from pipeline.config import load_params
    from pipeline.experiments.abstraction import stage as abstraction
    from pipeline.experiments.faithfulness import stage as faithfulness
    from pipeline.experiments.grid import next_lesson
    from pipeline.experiments.roar import stage as roar
    from pipeline.experiments.study import stage as study
    from pipeline.stages import evaluate, generate, report, track, train

    for stage in (generate, train, evaluate, study, faithfulness, abstraction, roar):
        stage.main()
    write_cells(project, load_params())
    next_lesson.main()
    report.main()
    track.main()

    # metrics.json: its value, against the held-out weights in steps.csv by hand.
    document = json.loads((project / "reports/metrics.json").read_text())
    steps = pd.read_csv(project / "reports/steps.csv")
    by_hand = steps.groupby(["seed", "id"])["weight"].max().groupby("seed").mean()
    for seed, run in document["runs"].items():
        assert run[TOY.key] == pytest.approx(by_hand[int(seed)], abs=1e-7)
        assert list(run)[-1] == "high_weight_low_effect"  # declared, not a variant's own

    # summary.json describes it over the study's seeds.
    summary = json.loads((project / "reports/study/summary.json").read_text())
    assert set(summary[TOY.key]) >= {"mean", "ci95_low", "ci95_high"}

    # report.md: the weights table, under its short label; the study table's row.
    text = (project / "reports/report.md").read_text()
    weights_table = text.split("## Attention weights")[1].split("\n\n")[1]
    assert "toy top" in weights_table.splitlines()[0]
    assert "| toy top weight |" in text.replace("  ", " ").replace("  ", " ")
    assert "numbers only this variant has" not in text.lower()

    # The headline file, flagged; MLflow, under lesson/<key> for each seed.
    headline = json.loads((project / "reports/headline.json").read_text())
    assert set(headline["runs"]["1"]) >= {TOY.key, "weight_effect_agreement"}
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("toy")
    children = [
        run
        for run in client.search_runs([experiment.experiment_id])
        if "mlflow.parentRunId" in run.data.tags
    ]
    assert len(children) == 2
    for child in children:
        seed = child.data.tags["seed"]
        logged = child.data.metrics[f"lesson/{TOY.key}"]
        assert logged == precision.rounded(document["runs"][seed][TOY.key])


def test_an_explainer_registered_in_a_test_is_scored_and_listed(monkeypatch):
    """The toy scores each step by its first input channel: the battery scores it with
    every metric, and report.md's sentence counts and names it."""
    toy = measures.Explainer("first_channel", "a toy", {"scale": "ig_steps"})
    monkeypatch.setitem(measures.EXPLAINERS, toy.key, toy)
    seen = {}

    def first_channel(params, inputs, scale):
        seen["scale"] = scale  # the declared setting, read from the config
        return inputs[..., 0].abs().expand(params.runs, *inputs.shape[:2]) * 1.0

    monkeypatch.setitem(explainers.EXPLAINERS, toy.key, first_channel)
    from pipeline.config import FaithfulnessConfig, ModelConfig
    from pipeline.models import interface
    from tests.models.helpers import small_set

    _, (inputs, labels, marked) = small_set()
    params = interface.init_params(1, [1, 2], ModelConfig(), inputs.shape[1])
    settings = FaithfulnessConfig(ig_steps=7)
    table = faithfulness.battery_tensors(
        params, inputs, marked, [1, 2], ["first_channel"], settings
    )
    assert seen["scale"] == 7
    assert set(table) == {"first_channel", measures.RANDOM}
    assert set(table["first_channel"]) == set(measures.SCORES)
    assert all(torch.isfinite(v).all() for v in table["first_channel"].values())
    sentence = measures.explainers_sentence(explainers.rows(ModelConfig()))
    assert sentence.startswith("Seven explainers score every step")
    assert sentence.endswith("`value_norm` (weight times |readout|) and `first_channel` (a toy)")


def test_the_report_s_explainer_sentence_is_the_committed_one():
    from pipeline.config import PROJECT_ROOT

    text = (PROJECT_ROOT / "reports/report.md").read_text()
    from pipeline.config import ModelConfig

    lesson = explainers.rows(ModelConfig())  # one head, no layer
    assert measures.explainers_sentence(lesson) + "; `random` is a random order" in text
    assert "attention_rollout" not in measures.explainers_sentence(lesson)
    assert "`attention_head` (each head's weight)" in measures.explainers_sentence(
        ["attention", "attention_head1", "attention_head2"]
    )
    assert measures.explainer_of("attention_head2") == "attention_head"
    with pytest.raises(KeyError, match="no explainer gives the battery row value_norm2"):
        measures.explainer_of("value_norm2")  # not a per-head explainer
