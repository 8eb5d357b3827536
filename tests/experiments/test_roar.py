"""Remove and retrain (pipeline/experiments/roar/retrain.py): masks, removal, smoothing, the
numbers and the known answer, on inputs small enough to work out by hand."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import torch

from pipeline.analysis import stats
from pipeline.analysis.faithfulness import task_rationale
from pipeline.analysis.metrics import correct
from pipeline.analysis.seed_study import train_seeds
from pipeline.config import ConfigError, validate
from pipeline.data import generate, reading_columns, split_frame
from pipeline.experiments.grid.capacity import marker_reading
from pipeline.experiments.roar import retrain
from pipeline.experiments.roar.section import section as roar_section
from pipeline.models import frames, interface
from pipeline.models.train import train
from tests.conftest import composed, small_overrides


@pytest.mark.parametrize(
    ("fraction", "steps", "count"),
    [
        (0.1, 12, 1),  # 1.2
        (0.3, 12, 4),  # 3.6
        (0.5, 12, 6),
        (0.7, 12, 8),  # 8.4
        (0.9, 12, 11),  # 10.8
        (0.3, 10, 3),  # 0.3 * 10 is 3.0000000000000004 in floats: still 3
        (0.5, 5, 3),  # 2.5: halves up
        (0.1, 5, 1),  # 0.5: halves up
    ],
)
def test_the_removed_count_is_k_t_to_the_nearest_step(fraction, steps, count):
    assert retrain.removed_count(fraction, steps) == count


def test_the_top_mask_takes_the_highest_steps_and_a_tie_goes_to_the_earlier_one():
    scores = torch.tensor(
        [
            [0.2, 0.9, 0.9, 0.1],  # steps 1 and 2 tie: 1 first
            [1.0, 1.0 + 1e-15, 0.0, 0.5],  # a tie within float noise: step 0 first
            [0.0, 0.0, 0.0, 0.0],  # all tied: index order
        ],
        dtype=torch.float64,
    )
    one = [[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]
    two = [[0, 1, 1, 0], [1, 1, 0, 0], [1, 1, 0, 0]]
    three = [[1, 1, 1, 0], [1, 1, 0, 1], [1, 1, 1, 0]]
    for count, expected in ((1, one), (2, two), (3, three)):
        assert retrain.top_mask(scores, count).tolist() == [[bool(v) for v in r] for r in expected]
    assert not retrain.top_mask(scores, 0).any() and retrain.top_mask(scores, 4).all()


def test_smoothing_is_a_moving_average_with_zeros_outside_the_sequence():
    scores = torch.tensor([[0.0, 3.0, 0.0, 0.0], [3.0, 0.0, 0.0, 6.0]], dtype=torch.float64)
    # step 0: (0 + 0 + 3) / 3; step 1: (0 + 3 + 0) / 3; step 2: (3 + 0 + 0) / 3; step 3: 0.
    expected = [[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 2.0, 2.0]]
    torch.testing.assert_close(
        retrain.smoothed(scores), torch.tensor(expected, dtype=torch.float64)
    )
    width5 = retrain.smoothed(torch.tensor([[0.0, 0.0, 5.0, 0.0, 0.0]]), window=5)
    torch.testing.assert_close(width5, torch.ones(1, 5))
    # A peak spread over its neighbours ties them, and the tie goes to the earlier step:
    # the smoothed ranking's top is no longer the peak.
    peaked = torch.tensor([[0.0, 0.0, 6.0, 0.0, 0.0]], dtype=torch.float64)
    assert retrain.top_mask(retrain.smoothed(peaked), 1).tolist() == [
        [False, True, False, False, False]
    ]


def test_removal_replaces_the_masked_readings_and_keeps_the_marker_and_the_label():
    frame = pd.DataFrame(
        {
            "split": ["train", "heldout"],
            "reading_0": [0.0, 0.0],
            "reading_1": [1.5, -0.5],
            "reading_2": [0.2, 2.0],
            "marked_step": [1, 2],
            "label": [1, 1],
        }
    )
    mask = torch.tensor([[False, True, False], [False, False, True]])
    removed = retrain.removed_frame(frame, mask, -0.25)
    assert removed[reading_columns(3)].to_numpy().tolist() == [
        [0.0, -0.25, 0.2],
        [0.0, -0.5, -0.25],
    ]
    assert removed["marked_step"].tolist() == [1, 2] and removed["label"].tolist() == [1, 1]
    assert frame["reading_1"].tolist() == [1.5, -0.5]  # the original is left as it was
    # The training split's mean reading: (0 + 1.5 + 0.2) / 3.
    assert retrain.uninformative_reading(frame, 3) == pytest.approx(1.7 / 3, abs=1e-15)


def test_marked_removed_needs_every_rationale_step_removed():
    rationale = torch.tensor([[False, True, True], [True, False, False]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert retrain.marked_removed(mask, rationale).tolist() == [False, True]


def test_removing_the_marked_step_leaves_a_hand_set_model_at_chance(default_cfg):
    """The known answer: the hand-set model that reads the marked step (logit r_m - 0.35)
    classifies every held-out sequence right; with k = 0.1 of the rationale ranking the
    marked reading becomes the training mean (-0.026 < 0.35), every prediction is 0, and
    the accuracy is the held-out share of label 0: 1 - 0.3667 (docs/lesson.md)."""
    cfg = default_cfg
    frame = generate(cfg.data)
    steps = cfg.data.steps
    inputs, _, marked = frames.features(frame, steps)
    ranking = retrain.reference_rankings(task_rationale("lesson", marked, steps), 0)
    mask = retrain.top_mask(ranking[retrain.RATIONALE], retrain.removed_count(0.1, steps))
    assert mask.sum(-1).eq(1).all() and mask[torch.arange(len(marked)), marked].all()
    model = marker_reading(cfg.model, steps, cfg.data.threshold)

    def accuracy(sequences: pd.DataFrame) -> float:
        x, labels, _ = frames.features(split_frame(sequences, "heldout"), steps)
        return float(correct(interface.forward(model, x)[0], labels).mean())

    removed = retrain.removed_frame(frame, mask, retrain.uninformative_reading(frame, steps))
    assert accuracy(frame) == 1.0
    assert accuracy(removed) == pytest.approx(1 - 66 / 180, abs=1e-12)  # 0.6333: chance


def test_a_drop_s_interval_is_the_bootstrap_of_the_paired_difference():
    """The fast way (each set resampled once, intervals from differences) against the
    plain one (the study's multi-bootstrap of the per-example difference)."""
    g = torch.Generator().manual_seed(0)
    base = (torch.rand(5, 7, generator=g) < 0.9).to(torch.float64)
    modified = (torch.rand(5, 7, generator=g) < 0.6).to(torch.float64)
    bootstrap = retrain.Bootstrap(5, 7, 200, 3)
    got = retrain.Retrained(base, bootstrap).minus(retrain.Retrained(modified, bootstrap))
    plain = stats.multi_bootstrap_means(base - modified, bootstrap.runs, bootstrap.examples)
    low, high = stats.interval(plain)
    assert got["mean"] == pytest.approx(float((base - modified).mean()), abs=1e-15)
    assert (got["ci95_low"], got["ci95_high"]) == pytest.approx((low, high), abs=1e-12)


def test_leaks_and_the_at_chance_fraction_and_the_verdicts_by_hand():
    def cell(removed: float, low: float) -> dict:
        return {"marked_removed": removed, "above_chance": {"ci95_low": low}}

    cells = {"0.1": cell(0.5, 0.2), "0.3": cell(1.0, -0.01), "0.5": cell(1.0, 0.05)}
    assert retrain.at_chance_from(cells) == 0.3
    assert retrain.leaks(cells) == ["0.5"]  # every marked step gone, yet above chance
    assert retrain.at_chance_from({"0.1": cell(0.5, 0.2)}) is None
    assert retrain.verdict(0.01, 0.2) == "better"
    assert retrain.verdict(-0.2, -0.01) == "worse"
    assert retrain.verdict(-0.1, 0.1) == "no different"


def test_an_unknown_smoothed_explainer_is_one_line_naming_the_key(default_cfg):
    params = interface.init_params(1, [1], default_cfg.model, 12, torch.float64, "cpu")
    inputs = torch.zeros(2, 12, 2, dtype=torch.float64)
    with pytest.raises(ConfigError, match=r"roar\.smoothed=\['nope'\]: allowed: attention, loo"):
        retrain.model_rankings(params, inputs, ["nope"], 3, default_cfg.faithfulness)


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("roar.fractions=[0.5,0.1]", "roar.fractions"),
        ("roar.fractions=[0.0,0.5]", "roar.fractions"),
        ("roar.fractions=[]", "roar.fractions"),
        ("roar.window=2", "roar.window"),
        ("roar.seeds=1", "roar.seeds"),
        ("roar.random_seed=-1", "roar.random_seed"),
    ],
)
def test_bad_settings_name_the_key(override, key):
    with pytest.raises(ConfigError, match=rf"invalid config value {key}"):
        validate(composed([override]))


def test_the_whole_test_on_a_small_config():
    """On 120 sequences and 2 retrained runs: the rationale ranking removes every
    held-out marked step at k = 0.1; the unmodified retrain is the study's training of
    the same seeds; the smoothing check and the headline are there."""
    overrides = ["roar.seeds=2", "roar.fractions=[0.1,0.5]", "roar.smoothed=[attention]"]
    cfg = validate(composed([*small_overrides(), *overrides]))
    frame = generate(cfg.data)
    x, y, _ = frames.split_tensors(cfg, frame, "train", torch.device("cpu"), torch.float64)
    initial = interface.init_params(cfg.data.seed, cfg.train.seeds, cfg.model, 12, x.dtype, "cpu")
    trained, _ = train(initial, x, y, cfg.train.epochs, cfg.train.lr)
    lesson = frames.params_to_frame(trained, cfg.train.seeds, cfg.model, 12)
    document = retrain.run(cfg, frame, lesson)

    assert set(document["rankings"]) == {"1", "2", retrain.MODEL_FREE}
    rationale = document["rankings"][retrain.MODEL_FREE][retrain.RATIONALE]
    assert rationale["0.1"]["marked_removed"] == 1.0
    assert document["removed_steps"] == {"0.1": 1, "0.5": 6}
    study = train_seeds(cfg, frame, [1, 2], heldout_only=True)
    expected = float(study.values["heldout_accuracy"].mean())
    assert document["unmodified"]["heldout_accuracy"]["mean"] == pytest.approx(expected)
    drop = rationale["0.1"]["accuracy_drop"]["mean"]
    assert drop == pytest.approx(expected - rationale["0.1"]["heldout_accuracy"])
    assert document["headline"]["rationale_drop"] == drop
    assert set(document["smoothing"]["1"]) == {"attention"}
    assert "attention_smoothed" in document["rankings"]["2"]
    labels = split_frame(frame, "heldout")["label"]
    assert document["majority_share"] == pytest.approx(max(labels.mean(), 1 - labels.mean()))


def hand_document() -> dict:
    """A metrics.json by hand: one lesson run, two fractions, one smoothed explainer."""

    def cell(accuracy: float, removed: float, above_low: float) -> dict:
        drop = 0.9 - accuracy
        return {
            "heldout_accuracy": accuracy,
            "accuracy_drop": {"mean": drop, "ci95_low": drop - 0.05, "ci95_high": drop + 0.05},
            "above_chance": {"mean": accuracy - 0.6, "ci95_low": above_low, "ci95_high": 0.3},
            "marked_removed": removed,
        }

    rows = {
        "attention": {"0.1": cell(0.6, 1.0, -0.02), "0.5": cell(0.85, 1.0, 0.2)},
        "attention_smoothed": {"0.1": cell(0.8, 0.3, 0.1), "0.5": cell(0.6, 1.0, -0.1)},
    }
    free = {
        "rationale": {"0.1": cell(0.6, 1.0, -0.03), "0.5": cell(0.6, 1.0, -0.03)},
        "random": {"0.1": cell(0.88, 0.1, 0.2), "0.5": cell(0.7, 0.5, 0.05)},
    }
    difference = {"mean": 0.1, "ci95_low": 0.02, "ci95_high": 0.2, "verdict": "better"}
    return {
        "seeds": 3,
        "removed_reading": -0.02,
        "removed_steps": {"0.1": 1, "0.5": 6},
        "majority_share": 0.6,
        "unmodified": {"heldout_accuracy": {"mean": 0.9, "ci95_low": 0.85, "ci95_high": 0.95}},
        "rankings": {"1": rows, retrain.MODEL_FREE: free},
        "at_chance_from": {
            "1": {"attention": 0.1, "attention_smoothed": 0.5},
            retrain.MODEL_FREE: {"rationale": 0.1, "random": None},
        },
        "leaks": {"1": {"attention": ["0.5"], "attention_smoothed": []}},
        "smoothing": {
            "1": {
                "attention": {
                    "fractions": {"0.1": {**difference, "verdict": "worse"}, "0.5": difference},
                    "scored_better": True,
                }
            }
        },
    }


def test_the_report_section_reads_the_numbers_against_the_known_answer():
    text = roar_section(hand_document())
    assert text.startswith("## Remove and retrain\n")
    rows = re.sub(" +", " ", text)
    assert "| attention | 0.3000 [0.2500, 0.3500] (1.00) | 0.0500 [0.0000, 0.1000] (1.00) |" in rows
    assert "fall from 0.9000 to 0.6000 held-out accuracy" in text
    assert "ROAR agrees with the known answer" in text
    assert "run 1: `attention` at k=0.1; `attention_smoothed` at k=0.5" in text
    assert "without a model: `rationale` at k=0.1; `random` never" in text
    assert "`attention` of run 1 at k=0.5 (held-out accuracy 0.8500 to 0.8500" in text
    assert "its drop 0.3000 at k=0.1 falls to 0.0500" in text
    assert (
        "`attention_smoothed` of run 1 against `attention`: scored better: the check fails "
        "(worse at k=0.1; better at k=0.5)." in text
    )


def test_the_report_section_says_when_roar_misses_the_known_answer():
    document = hand_document()
    document["rankings"][retrain.MODEL_FREE]["rationale"]["0.1"]["above_chance"]["ci95_low"] = 0.1
    document["leaks"] = {"1": {"attention": []}}
    text = roar_section(document)
    assert "does not reach chance: the known answer is that it should" in text
    assert "no ranking's choice of the other steps leaked the label" in text


@pytest.mark.parametrize("fractions", ["[0.04]", "[0.04166666,0.0416667]", "[0.1,0.12]"])
def test_fractions_that_remove_no_step_or_the_same_steps_are_refused_before_any_work(
    fractions, tmp_path, monkeypatch, run_entry
):
    """Issue 60, case 4: 0.04 removes 0 of 12 steps (drops of 0 were published), and
    0.04166666 and 0.0416667 (or 0.1 and 0.12) remove as many steps: one output key."""
    from pipeline.config.load import composed_yaml
    from pipeline.experiments.roar import stage as stage

    (tmp_path / "params.yaml").write_text(composed_yaml([f"roar.fractions={fractions}"]))
    monkeypatch.chdir(tmp_path)
    code, err = run_entry(stage.main)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("error: invalid config value roar.fractions=[0."), err
    assert "allowed: fractions n/12 for distinct n in 1..11 (0.08333 removes 1)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_fractions_are_checked_where_roar_runs_not_for_every_data_steps():
    """The default fractions remove 0 of data.steps=2 steps: a run that never removes
    (the lesson, `python -m pipeline.run`) is not refused for it."""
    cfg = validate(composed(["data.steps=2", "data.first_marked_step=1"]))
    with pytest.raises(ConfigError, match=r"roar\.fractions=.*\(k\*2 rounded: \[0, 1, 1, 1, 2\]\)"):
        retrain.check_fractions(cfg)


def test_a_window_wider_than_the_sequence_is_refused_in_one_line():
    """Issue 60, case 7: roar.window=8589934591 passed the check, then torch's pooling
    overflowed in a 23-line traceback; 2 data.steps - 1 already averages every step
    over the whole sequence."""
    refusal = r"roar\.window=8589934591: must be an odd integer in 3\.\.23 "
    with pytest.raises(ConfigError, match=refusal):
        validate(composed(["roar.window=8589934591"]))
    assert validate(composed(["roar.window=23"])).roar.window == 23
    smoothed = retrain.smoothed(torch.arange(12.0, dtype=torch.float64)[None], 23)
    assert torch.allclose(smoothed, torch.full((1, 12), 66.0 / 23, dtype=torch.float64))
