"""The default config reproduces every golden number of SPEC section 5."""

from __future__ import annotations

import json

import pytest

from pipeline.config import PROJECT_ROOT
from pipeline.reporting.lesson_tables import first_example_weights
from pipeline.stages import evaluate, generate, train
from tests.conftest import GOLDEN_FIRST_WEIGHTS, assert_golden


@pytest.fixture(scope="module")
def lesson(default_cfg):
    frame, summary = generate.run(default_cfg)
    params, history = train.run(default_cfg, frame)
    document, steps = evaluate.run(default_cfg, frame, summary, params)
    return document, steps, history


def test_default_config_reproduces_the_golden_tables(lesson):
    assert_golden(lesson[0])


def test_first_heldout_weights_match_the_printed_rows(lesson):
    rows = first_example_weights(lesson[1])
    for seed, golden in GOLDEN_FIRST_WEIGHTS.items():
        assert " ".join(f"{w:.2f}" for w in rows.loc[seed]) == golden


def test_history_has_one_loss_per_epoch_and_seed(lesson):
    history = lesson[2]
    assert history.loss.shape == (200, 2)
    assert bool((history.loss[-1] < history.loss[0]).all())


def test_committed_metrics_are_golden():
    assert_golden(json.loads((PROJECT_ROOT / "reports" / "metrics.json").read_text()))
