"""The mechanism over training (pipeline/analysis/epochs.py): every epoch of a study run
measured as the lesson's own code measures the run stopped there."""

from __future__ import annotations

import math

import pytest
import reference_lesson as lesson
import torch

from pipeline import data
from pipeline.analysis import epochs, seed_study
from pipeline.config import validate
from pipeline.models import frames, interface
from pipeline.models.parameters import to_flat
from pipeline.models.train import train
from tests.conftest import composed, small_overrides

SMALL = [*small_overrides(), "study.seeds=3", "study.agreement_every=7"]


@pytest.fixture(scope="module")
def study():
    cfg = validate(composed(SMALL))
    frame = data.generate(cfg.data)
    return cfg, seed_study.study_runs(cfg, frame, dynamics=True)


def test_agreement_rows_are_every_nth_and_the_last():
    assert epochs.agreement_epochs(30, 7) == [0, 7, 14, 21, 28, 30]
    assert epochs.agreement_epochs(4, 1) == [0, 1, 2, 3, 4]
    assert epochs.agreement_epochs(4, 10) == [0, 4]


def test_each_epoch_is_the_lesson_code_s_run_stopped_there(study):
    cfg, runs = study
    ref = lesson.Lesson(cfg.data.seed, 120, 12, (60, 30, 30))
    column = runs.seeds.index(2)
    for epoch in (0, 1, 7, 30):
        params = lesson.train(cfg.data.seed + 2, ref.train_set, epoch, cfg.train.lr)
        mass, hit = lesson.attention_measures(params, ref.heldout_set)
        expected = {
            "heldout_accuracy": lesson.accuracy(params, ref.heldout_set),
            "marker_mass": mass,
            "argmax_hit": hit,
        }
        if epoch in epochs.agreement_epochs(30, 7):
            expected["weight_effect_agreement"] = lesson.causality(params, ref.heldout_set)[0]
        for name, value in expected.items():
            got = float(runs.epochs[name][epoch, column])
            assert got == pytest.approx(value, abs=1e-9), (name, epoch)


def test_the_last_row_is_the_study_s_trained_run(study):
    _, runs = study
    table = seed_study.seeds_table(runs, validate(composed(SMALL)))
    for name in ("train_accuracy", "heldout_accuracy", "marker_mass", "argmax_hit"):
        assert runs.epochs[name][-1].tolist() == table[name].tolist(), name


def test_agreement_is_measured_only_on_its_rows(study):
    _, runs = study
    agreement = runs.epochs["weight_effect_agreement"]
    measured = [row for row in range(len(agreement)) if not math.isnan(agreement[row, 0])]
    assert measured == epochs.agreement_epochs(30, 7)


def test_the_table_has_one_row_per_seed_and_epoch(study):
    _, runs = study
    table = epochs.epochs_table(runs.seeds, runs.epochs)
    assert len(table) == 3 * 31
    assert list(table.columns) == ["seed", "epoch", *epochs.EPOCH_VALUES]
    row = table[(table["seed"] == 3) & (table["epoch"] == 5)].iloc[0]
    assert row["loss"] == float(runs.epochs["loss"][5, runs.seeds.index(3)])


def test_a_kept_trajectory_trains_the_same_bits():
    cfg = validate(composed(SMALL))
    frame = data.generate(cfg.data)
    split = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)[:2]
    initial = interface.init_params(cfg.data.seed, [1, 2], cfg.model, cfg.data.steps)
    plain, _ = train(initial, *split, 5, 0.6)
    kept, history = train(initial, *split, 5, 0.6, trajectory=True)
    assert all(torch.equal(a, b) for a, b in zip(plain.tensors(), kept.tensors(), strict=True))
    assert history.params.shape == (5, 2, interface.parameter_count(cfg.model, cfg.data.steps))
    assert torch.equal(history.params[0], to_flat(initial))
