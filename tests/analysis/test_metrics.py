"""SPEC section 4: the weight-mass metrics, step ablation and the cross-seed numbers."""

from __future__ import annotations

import math
import statistics

import pytest
import reference_lesson as lesson
import torch

from pipeline import data
from pipeline.analysis import metrics
from pipeline.config import DataConfig, EvalConfig, ModelConfig
from pipeline.models import frames, interface

F64 = torch.float64


def t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


# --- hand-computable cases ------------------------------------------------------------------

# Two runs, three examples, four steps.
WEIGHTS = t(
    [
        [[0.1, 0.6, 0.2, 0.1], [0.4, 0.4, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]],
        [[0.7, 0.1, 0.1, 0.1], [0.0, 0.2, 0.3, 0.5], [0.1, 0.2, 0.3, 0.4]],
    ]
)
MARKED = torch.tensor([1, 1, 3])


def test_marker_mass_by_hand():
    got = metrics.marker_mass(WEIGHTS, MARKED)
    expected = t([(0.6 + 0.4 + 0.25) / 3, (0.1 + 0.2 + 0.4) / 3])
    torch.testing.assert_close(got, expected, rtol=1e-15, atol=1e-15)


def test_argmax_hit_first_max_wins():
    # Run 0: hit, tie 0.4/0.4 -> step 0 (miss for marked 1), uniform -> step 0 (miss).
    # Run 1: step 0 (miss), step 3 (miss), step 3 (hit).
    assert metrics.argmax_hit(WEIGHTS, MARKED).tolist() == [1 / 3, 1 / 3]
    # Marking the first of the tied steps turns the ties of run 0 into hits.
    assert metrics.argmax_hit(WEIGHTS, torch.tensor([1, 0, 0])).tolist() == [1.0, 0.0]
    assert metrics.argmax_hit(WEIGHTS, torch.tensor([1, 1, 1])).tolist() == [1 / 3, 0.0]


EFFECTS = t(
    [
        [[0.01, 0.30, 0.30, 0.0], [0.2, 0.2, 0.0, 0.0], [0.0, 0.0, 0.0, 0.04]],
        [[0.05, 0.06, 0.0, 0.0], [0.0, 0.0, 0.0, 0.049], [0.3, 0.3, 0.3, 0.3]],
    ]
)


def test_agreement_first_max_wins():
    # Weight argmax: [[1, 0, 0], [0, 3, 3]]; effect argmax (first max): [[1, 0, 3], [1, 3, 0]].
    assert metrics.agreement(WEIGHTS, EFFECTS).tolist() == [2 / 3, 1 / 3]


def test_top_weight_effect_by_hand():
    expected = t([[0.30, 0.2, 0.0], [0.05, 0.049, 0.3]])
    assert torch.equal(metrics.top_weight_effect(WEIGHTS, EFFECTS), expected)


def high_weight_counts(cfg: EvalConfig) -> tuple[torch.Tensor, torch.Tensor]:
    high, high_low = metrics.high_weight_flags(WEIGHTS, EFFECTS, cfg)
    return high.sum(-1), high_low.sum(-1)


def test_high_weight_flags_strict_thresholds():
    high, high_low = high_weight_counts(EvalConfig(high_weight=0.5, low_effect=0.05))
    # Run 0: only example 0 has max > 0.5 (0.6); its effect 0.30 is not < 0.05.
    # Run 1: example 0 (0.7, effect 0.05: not < 0.05); example 1 has max 0.5, not > 0.5.
    assert high.tolist() == [1, 1]
    assert high_low.tolist() == [0, 0]
    high, high_low = high_weight_counts(EvalConfig(0.45, 0.06))
    assert high.tolist() == [1, 2]
    assert high_low.tolist() == [0, 2]


def test_across_seeds_by_hand():
    got = metrics.across_seeds([0.8, 0.9, 0.6])
    assert got["seed_gap"] == pytest.approx(0.3, abs=1e-15)
    assert got["heldout_accuracy_mean"] == pytest.approx(2.3 / 3, abs=1e-15)
    assert got["heldout_accuracy_std"] == pytest.approx(
        statistics.pstdev([0.8, 0.9, 0.6]), abs=1e-15
    )
    assert got["heldout_accuracy_std"] == pytest.approx(math.sqrt(0.14 / 9), abs=1e-12)
    # Two runs: the lesson's |run 1 - run 2| (SPEC golden gap 0.1056 = 0.9944 - 0.8889).
    two = metrics.across_seeds([160 / 180, 179 / 180])
    assert round(two["seed_gap"], 4) == 0.1056
    assert two["heldout_accuracy_std"] == pytest.approx(19 / 360, abs=1e-15)
    one = metrics.across_seeds([0.7])
    assert one == {"seed_gap": 0.0, "heldout_accuracy_mean": 0.7, "heldout_accuracy_std": 0.0}


# --- against the lesson's own code ----------------------------------------------------------


def small_trained(data_seed: int, sequences: int, split: list[int], epochs: int, lr: float):
    """A small lesson, trained by the reference port (independent of pipeline.models.train)."""
    ref = lesson.Lesson(data_seed, sequences, 12, tuple(split), epochs, lr)
    trained = [ref.train_run(1), ref.train_run(2)]
    params = interface.from_flat(t([lesson.flat(p) for p in trained]), ModelConfig(), 12)
    cfg = DataConfig(seed=data_seed, sequences=sequences, split=split)
    frame = data.generate(cfg)
    train_set = frames.features(data.split_frame(frame, "train"), 12)
    heldout_set = frames.features(data.split_frame(frame, "heldout"), 12)
    return ref, trained, params, train_set, heldout_set


@pytest.fixture(scope="module")
def small():
    # 150 epochs at lr 2.0: concentrated weights, so every count below is non-zero.
    return small_trained(4242, 60, [30, 10, 20], 150, 2.0)


def test_ablation_effects_match_lesson(small):
    ref, trained, params, _, (inputs, _, _) = small
    effects = metrics.ablation_effects(params, inputs)
    assert effects.shape == (2, 20, 12)
    for s, p in enumerate(trained):
        expected = t([lesson.step_effects(p, x) for x, _, _ in ref.heldout_set])
        torch.testing.assert_close(effects[s], expected, rtol=1e-9, atol=1e-13)


def test_run_metrics_match_lesson(small):
    ref, trained, params, (train_x, train_y, _), heldout_set = small
    numbers, weights, effects = metrics.run_metrics(
        params, (train_x, train_y), heldout_set, EvalConfig()
    )
    assert weights.shape == effects.shape == (2, 20, 12)
    assert numbers["high_weight_low_effect"].tolist() == [6, 3]  # not a degenerate case
    for s, p in enumerate(trained):
        mass, hit = lesson.attention_measures(p, ref.heldout_set)
        agree, top_effect, high, high_low = lesson.causality(p, ref.heldout_set)
        assert float(numbers["train_accuracy"][s]) == lesson.accuracy(p, ref.train_set)
        assert float(numbers["heldout_accuracy"][s]) == lesson.accuracy(p, ref.heldout_set)
        assert math.isclose(float(numbers["marker_mass"][s]), mass, rel_tol=1e-12)
        assert float(numbers["argmax_hit"][s]) == hit
        assert float(numbers["weight_effect_agreement"][s]) == agree
        assert math.isclose(float(numbers["top_weight_effect"][s]), top_effect, rel_tol=1e-10)
        assert int(numbers["high_weight"][s]) == high
        assert int(numbers["high_weight_low_effect"][s]) == high_low


def test_run_metrics_match_lesson_second_config():
    ref, trained, params, train_set, heldout_set = small_trained(31337, 48, [24, 4, 20], 40, 1.0)
    numbers, _, _ = metrics.run_metrics(params, train_set[:2], heldout_set, EvalConfig(0.3, 0.1))
    for s, p in enumerate(trained):
        agree, top_effect, _, _ = lesson.causality(p, ref.heldout_set, threshold=0.1)
        assert float(numbers["weight_effect_agreement"][s]) == agree
        assert math.isclose(float(numbers["top_weight_effect"][s]), top_effect, rel_tol=1e-10)
        # The lesson hard-codes weight > 0.5; count > 0.3 from its weights by hand.
        weights = [lesson.forward(p, x)[2] for x, _, _ in ref.heldout_set]
        assert int(numbers["high_weight"][s]) == sum(max(a) > 0.3 for a in weights)
        effects = [lesson.step_effects(p, x) for x, _, _ in ref.heldout_set]
        expected_low = sum(
            max(a) > 0.3 and e[a.index(max(a))] < 0.1 for a, e in zip(weights, effects, strict=True)
        )
        assert int(numbers["high_weight_low_effect"][s]) == expected_low


def test_metrics_document_shape():
    per_run = {"heldout_accuracy": t([0.5, 0.75]), "high_weight": torch.tensor([3, 4])}
    doc = metrics.metrics_document({"sequences": 10}, [1, 2], per_run)
    assert doc["data"] == {"sequences": 10}
    assert doc["runs"] == {
        "1": {"heldout_accuracy": 0.5, "high_weight": 3},
        "2": {"heldout_accuracy": 0.75, "high_weight": 4},
    }
    assert doc["seed_gap"] == 0.25
    assert doc["heldout_accuracy_std"] == 0.125
