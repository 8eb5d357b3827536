"""The suppressor task (pipeline/tasks/suppressor.py) and the attribution shares on
its suppressor (pipeline/experiments/grid/suppressors.py)."""

from __future__ import annotations

import torch
from scipy import stats
from torch.testing import assert_close

from pipeline import data
from pipeline.config import DataConfig, ModelConfig
from pipeline.experiments.grid import capacity, suppressors
from pipeline.models import frames, interface
from pipeline.tasks import suppressor

CFG = DataConfig()


def test_the_label_ignores_any_offset_by_hand():
    """r' = r + o for every step: the label is [r_m > 0.35] whatever o."""
    readings = [0.0, 0.2, 0.351, -1.0]
    for offset in (0.0, 0.123, -2.5, 4.991):
        shown = [round(r + offset, 3) for r in readings]
        assert suppressor.label(shown, 2, 0.35) == 1
        assert suppressor.label(shown, 1, 0.35) == 0
    # at the threshold exactly: not above it, as in the lesson
    assert suppressor.label([1.0, 1.35], 1, 0.35) == 0


def test_the_label_is_independent_of_the_suppressor_on_the_generated_data():
    """The offset (step 0's reading) has one distribution in both classes (two-sample
    Kolmogorov-Smirnov, 720 sequences), while the marked reading's differs."""
    frame = data.generate(CFG, "suppressor")
    positive, negative = frame[frame["label"] == 1], frame[frame["label"] == 0]
    assert stats.ks_2samp(positive["reading_0"], negative["reading_0"]).pvalue > 0.2
    marked = frame.apply(lambda row: row[f"reading_{row['marked_step']}"], axis=1)
    assert stats.ks_2samp(marked[frame["label"] == 1], marked[frame["label"] == 0]).pvalue < 1e-6
    # and the labels are the lesson's: the offset never enters them
    assert frame["label"].equals(data.generate(CFG, "lesson")["label"])


def heldout():
    return frames.features(data.split_frame(data.generate(CFG, "suppressor"), "heldout"), 12)


def test_the_hand_set_model_uses_the_suppressor():
    """With step 0 it is exact; its calibration reading replaced by another sequence's
    (the suppressor's information gone, the label unchanged), it falls to chance level;
    reading the marker alone (the lesson's model) does no better than ~0.6."""
    inputs, labels, _ = heldout()
    cfg = ModelConfig(kind="posenc", positional="learned")
    params = capacity.calibrated_marker(cfg, 12, 0.35)

    def accuracy(x):
        logits, _ = interface.forward(params, x)
        return float(((logits[0] > 0) == (labels > 0.5)).double().mean())

    assert accuracy(inputs) == 1.0
    swapped = inputs.clone()
    swapped[:, 0, 0] = inputs[:, 0, 0].roll(1)
    assert accuracy(swapped) < 0.75
    marker_only = capacity.hand_set_accuracy("lesson", "lesson", ModelConfig(), heldout(), 0.35)
    assert marker_only < 0.65


def test_attribution_shares_by_hand():
    # one run, two examples over 3 steps: suppressor step 0, rationale the marked step
    scores = torch.tensor([[[2.0, -1.0, 1.0], [0.0, 0.0, 4.0]]], dtype=torch.float64)
    rationale = torch.tensor([[False, True, False], [False, False, True]])
    suppressor_mask = torch.tensor([[True, False, False], [True, False, False]])
    shares = suppressors.attribution_shares(scores, rationale, suppressor_mask)
    assert_close(shares["suppressor"], torch.tensor([[0.5, 0.0]], dtype=torch.float64))
    assert_close(shares["rationale"], torch.tensor([[0.25, 1.0]], dtype=torch.float64))
    assert_close(shares["other"], torch.tensor([[0.25, 0.0]], dtype=torch.float64))
    assert_close(shares["top_is_suppressor"], torch.tensor([[1.0, 0.0]], dtype=torch.float64))


def test_the_section_names_the_explainers_on_the_suppressor():
    from pipeline.experiments.grid.suppressors_section import suppressor_section

    def parts(on_suppressor):
        value = {"mean": on_suppressor, "ci95_low": on_suppressor, "ci95_high": on_suppressor}
        rest = {"mean": 1 - on_suppressor, "ci95_low": 0.0, "ci95_high": 1.0}
        zero = {"mean": 0.0, "ci95_low": 0.0, "ci95_high": 0.0}
        return {"suppressor": value, "rationale": rest, "other": zero, "top_is_suppressor": zero}

    cell = {
        "task": "suppressor",
        "variant": "posenc_learned",
        "heldout_accuracy": {"mean": 0.7},
        "hand_set_accuracy": 1.0,
        "majority_baseline": 0.6,
        "suppressors": {
            "trained": {"attention": parts(0.1), "loo": parts(0.05)},
            "hand_set": {"attention": parts(0.6), "loo": parts(0.1)},
        },
    }
    text = suppressor_section([cell, {"task": "lesson"}])  # a cell without: left out
    assert text.count("### ") == 1
    assert "leave-one-out effect mass" in text and "carries 0.0500" in text
    assert "on the suppressor: attention; below: loo" in text
    assert suppressor_section([{"task": "lesson"}]) == ""
