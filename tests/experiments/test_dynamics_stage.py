"""The dynamics stage (pipeline/experiments/dynamics/stage.py) on a small study: its
document against the study it reads, its section, figures and bad settings."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

from pipeline import data
from pipeline.analysis import epochs, seed_study
from pipeline.config import validate
from pipeline.core import ties
from pipeline.core.errors import ConfigError
from pipeline.experiments import dynamics
from pipeline.experiments.dynamics import figures, section, stage, summary, tracked
from pipeline.models import interface
from tests.conftest import composed, small_overrides

SMALL = [
    *small_overrides(),
    "study.seeds=6",
    "study.bootstrap=20",
    "dynamics.claim_resamples=50",
    "dynamics.phase_seeds=2",
    "dynamics.flip_seeds=4",
    "dynamics.phase_lrs=[0.3,0.6]",
    "dynamics.phase_init_scales=[0.5,0.9]",
]


@pytest.fixture(scope="module")
def result():
    cfg = validate(composed(SMALL))
    frame = data.generate(cfg.data)
    runs = seed_study.study_runs(cfg, frame, dynamics=True)
    table, study_summary = seed_study.outcome(cfg, frame, runs)
    names = interface.flat_names(cfg.model, cfg.data.steps)
    battery = pd.DataFrame(
        {
            "seed": table["seed"],
            "explainer": "attention",
            "hit_at_1": table["argmax_hit"],
            "tau_loo": 0.1,
        }
    )
    inputs = {
        "sequences": frame,
        "dynamics": epochs.epochs_table(runs.seeds, runs.epochs),
        "seeds": table,
        "params": table[["seed", *names]],
        "battery": battery,
        "cells": [
            {"per_seed_heldout_accuracy": [0.9, 0.8]},
            {"per_seed_heldout_accuracy": [0.7, 0.8]},
        ],
    }
    return cfg, runs, table, stage.run(cfg, inputs, study_summary)


def test_the_document_has_its_declared_shape(result):
    document = result[3]
    assert set(document) == set(dynamics.SHAPE)
    assert all(isinstance(document[key], kind) for key, kind in dynamics.SHAPE.items())


def test_each_seed_settles_where_its_hit_stays_at_the_threshold(result):
    _, runs, _, document = result
    hit = runs.epochs["argmax_hit"]
    for column, epoch in enumerate(document["emergence"]["per_seed"]):
        reached = ~ties.below(hit[:, column], 0.9)
        if epoch < 0:
            assert not bool(reached[-1])
        else:
            assert bool(reached[epoch:].all())
            assert epoch == 0 or not bool(reached[epoch - 1])


def test_the_lesson_s_phase_cell_is_the_study_s_runs(result):
    # The cell at the lesson's lr and init scale trains seeds 1..2 as the study did.
    cfg, _, table, document = result
    phases = document["phases"]
    row, column = phases["init_scales"].index(0.9), phases["lrs"].index(cfg.train.lr)
    hit = torch.tensor(table["argmax_hit"][:2].to_numpy())
    found = float((~ties.below(hit, 0.9)).to(torch.float64).mean())
    assert phases["share_found"][row][column] == found
    accuracy = float(table["heldout_accuracy"][:2].mean())
    assert phases["heldout_accuracy"][row][column] == pytest.approx(accuracy, abs=1e-12)


def test_the_observed_variance_is_the_study_s_accuracies(result):
    _, _, table, document = result
    observed = float(torch.tensor(table["heldout_accuracy"].to_numpy()).var())
    assert document["noise"]["observed"] == pytest.approx(observed, abs=1e-12)


def test_the_two_heads_claim_reads_the_paired_cells(result):
    # Paired gains 0.2 and 0.0: the mean is above 0, so the claim holds on 2 seeds.
    claim = result[3]["claims"]["two heads beat one on the two-pattern task"]
    assert claim["verdict"] is True and claim["seeds"] == 2


def test_the_section_figures_summary_and_headline(result):
    document = result[3]
    text = section.mechanism_over_training(document, [])
    assert text.startswith("## The mechanism over training")
    assert "MultiBERTs (25)" in text and "PolyPythias (10)" in text
    assert "init scale 0.9" in text
    for plot in figures.dynamics_figures(document):
        plot.draw(Figure(figsize=plot.size))
    assert set(section.headline(document)["dynamics"]) >= {"share_never_found", "variance_ratio"}
    assert "seeds over training" in summary.lines(validate(composed(SMALL)), document)[1]


def test_a_smaller_study_or_shorter_training_needs_no_dynamics_setting():
    cfg = validate(composed([*SMALL, "dynamics.flip_seeds=1000", "dynamics.predict_epochs=[0,99]"]))
    assert cfg.dynamics.flip_seeds == 1000  # the stage flips the study's 6 runs


def test_without_the_grid_s_cells_the_two_heads_claim_is_left_out(result):
    cfg, _, table, _ = result
    cfg = validate(composed([*SMALL, "dynamics.two_heads=nope"]))
    assert stage.two_heads_cells(cfg) == []
    battery = table.assign(explainer="attention", hit_at_1=table["argmax_hit"], tau_loo=0.1)
    columns = stage.claim_columns(table, battery, [])
    claims = stage.claims_summary(cfg, columns, 0.9)
    assert len(claims) == 3 and "two heads beat one on the two-pattern task" not in claims


def test_bad_settings_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="dynamics.predict_epochs"):
        validate(composed([*SMALL, "dynamics.predict_epochs=[0,-1]"]))
    cfg = validate(composed([*SMALL, "dynamics.flip_parameter=19"]))
    with pytest.raises(ConfigError, match="dynamics.flip_parameter=19"):
        stage.run(cfg, {}, {})


def test_undefined_numbers_are_null_and_shown_as_such(result):
    # Runs that all get every held-out sequence alike (the small stage checks' 4 seeds)
    # have no test-set noise to compare, and one story has no predictor.
    assert stage.defined({"a": [float("nan"), 1.0], "b": float("inf")}) == {
        "a": [None, 1.0],
        "b": None,
    }
    document = copy.deepcopy(result[3])
    document["noise"] |= {"ratio": None, "ci95_low": None, "gap_in_stds": None}
    for entry in document["predictors"].values():
        if isinstance(entry, dict):
            entry["auc"] = None
    text = section.mechanism_over_training(document, [])
    assert "n/a [n/a," in text and "nothing to compare" in text
    assert "no early number can predict it" in text
    assert "dynamics/variance_ratio" not in tracked.parent_metrics(document)
