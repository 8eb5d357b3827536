"""Interchange interventions (pipeline/experiments/abstraction/interchange.py), hand-worked."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch.testing import assert_close

from pipeline.config import ModelConfig, validate
from pipeline.core.errors import ConfigError
from pipeline.experiments.abstraction import interchange
from pipeline.experiments.grid import capacity
from pipeline.models import interface
from pipeline.models.parameters import Params

THRESHOLD = 0.35


def readout_params(runs: int = 1) -> Params:
    """Only w = (1, 0, 0) and b = -0.35 matter to the readout: logit = c_0 - 0.35."""
    w = torch.tensor([[1.0, 0.0, 0.0]] * runs, dtype=torch.float64)
    b = torch.full((runs,), -THRESHOLD, dtype=torch.float64)
    return Params(ModelConfig(), {"w": w, "b": b})


def rotation_map(angle: float) -> interchange.AlignmentMap:
    """R = exp(K), K = [[0, angle], [-angle, 0]] in the (0, 1) plane: R's first row,
    the aligned direction, is (cos angle, sin angle, 0)."""
    skew = torch.zeros(1, 3, 3, dtype=torch.float64)
    skew[0, 0, 1] = angle
    return interchange.AlignmentMap(skew, (), 1)


# Two examples whose context holds the marked reading on axis 0: r = 1.0 (y = 1), 0.0 (y = 0).
CONTEXT = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], dtype=torch.float64)
LABELS = torch.tensor([1.0, 0.0], dtype=torch.float64)


@pytest.mark.parametrize(
    ("angle", "iia", "changed"),
    [
        # aligned: the swapped coordinate is the reading, the output is the source's label
        (0.0, 1.0, 1.0),
        # c'_0 = (r_base + r_source) / 2 = 0.5 > 0.35 on both mixed pairs: right only
        # for source r = 1. Pairs (1,1) (0,0) (0,1) right, (1,0) wrong.
        (math.pi / 4, 0.75, 0.5),
        # orthogonal to the readout: the output stays the base's, right where labels agree
        (math.pi / 2, 0.5, 0.0),
    ],
)
def test_iia_of_a_rotation_is_the_hand_count(angle, iia, changed):
    got, got_changed = interchange.interchange_accuracy(
        readout_params(), rotation_map(angle), CONTEXT, LABELS
    )
    assert_close(got, torch.tensor([iia], dtype=torch.float64))
    assert_close(got_changed, torch.tensor([changed], dtype=torch.float64))


def test_interchange_is_the_projection_swap():
    """For a rotation, h' = h_base + u (u . (h_source - h_base)), u = R's first row."""
    angle = 0.3
    base = torch.tensor([[[0.2, -1.0, 0.5]]], dtype=torch.float64)
    source = torch.tensor([[[1.5, 0.4, -0.7]]], dtype=torch.float64)
    u = torch.tensor([math.cos(angle), math.sin(angle), 0.0], dtype=torch.float64)
    expected = base + u * ((source - base) * u).sum(-1, keepdim=True)
    assert_close(interchange.interchange(rotation_map(angle), base, source), expected)


def nonlinear_map(seeds=(1, 2), hidden: int = 4, blocks: int = 2) -> interchange.AlignmentMap:
    phi = interchange.initial_map(list(seeds), 0, 3, 1, hidden, blocks)
    # outer weights of order one, so that the blocks are far from the identity
    return interchange.AlignmentMap(
        phi.skew,
        tuple(tuple(t * (10.0 if t.dim() == 3 else 1.0) for t in b) for b in phi.blocks),
        1,
    )


def test_the_nonlinear_map_inverts_exactly_and_swaps_nothing_from_itself():
    phi = nonlinear_map()
    hidden = torch.randn(2, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert_close(interchange.unalign(phi, interchange.align(phi, hidden)), hidden)
    assert_close(interchange.interchange(phi, hidden, hidden), hidden)
    linear = interchange.linear_part(phi)
    assert not torch.allclose(interchange.align(phi, hidden), interchange.align(linear, hidden))


def test_the_init_of_a_run_does_not_depend_on_the_others():
    both = interchange.initial_map([1, 2], 0, 3, 1, 4, 2)
    alone = interchange.initial_map([2], 0, 3, 1, 4, 2)
    for pair, single in zip(both.tensors(), alone.tensors(), strict=True):
        assert_close(pair[1:], single)


def test_context_and_readout_are_the_model_on_the_hand_set_model():
    """The lesson's rule set by hand: focus on the marker, read its reading. The context
    is (r_m, 0, 0) up to the unmarked weights (~1e-12), and the readout is the logit."""
    cfg = ModelConfig()
    params = capacity.marker_reading(cfg, 4, THRESHOLD)
    readings = torch.tensor([[0.0, 0.9, -0.3, 0.1], [0.0, -0.5, 0.2, 1.2]], dtype=torch.float64)
    marked = torch.tensor([1, 2])
    inputs = torch.stack([readings, torch.nn.functional.one_hot(marked, 4).double()], -1)
    context = interchange.context_vectors(params, inputs)
    expected = torch.tensor([[[0.9, 0.0, 0.0], [0.2, 0.0, 0.0]]], dtype=torch.float64)
    assert_close(context, expected, atol=1e-11, rtol=0)
    logits, _ = interface.forward(params, inputs)
    assert_close(interchange.readout(params, context), logits)
    labels = torch.tensor([1.0, 0.0], dtype=torch.float64)
    iia, _ = interchange.interchange_accuracy(params, rotation_map(0.0), context, labels)
    assert iia.item() == 1.0


def test_fitting_finds_the_aligned_rotation_from_a_misaligned_start():
    """From u orthogonal to the readout (IIA 1/2 by hand above), training on the
    counterfactual labels turns u onto the reading's axis."""
    start = rotation_map(math.pi / 2 - 0.2)
    base, source = torch.tensor([0, 1, 0, 1]), torch.tensor([0, 0, 1, 1])
    fitted = interchange.fit(
        readout_params(), start, CONTEXT[:, base], CONTEXT[:, source], LABELS[source], 200, 0.05
    )
    iia, _ = interchange.interchange_accuracy(readout_params(), fitted, CONTEXT, LABELS)
    assert iia.item() == 1.0


def test_a_run_scores_the_same_alone_or_with_others():
    cfg = ModelConfig()
    params = interface.init_params(20260218, [1, 2], cfg, 4)
    gen = torch.Generator().manual_seed(1)
    readings = torch.randn(12, 4, dtype=torch.float64, generator=gen)
    marked = torch.randint(1, 4, (12,), generator=gen)
    inputs = torch.stack([readings, torch.nn.functional.one_hot(marked, 4).double()], -1)
    labels = (readings[torch.arange(12), marked] > THRESHOLD).double()
    split = interchange.Split(inputs, labels)
    settings = SimpleNamespace(dims=1, hidden=4, blocks=1, pairs=16, pair_seed=0, map_seed=0,
                               epochs=5, lr=0.05)  # fmt: skip
    both = interchange.measure_runs(params, [1, 2], split, split, settings)
    alone = interchange.measure_runs(params.map(lambda t: t[1:]), [2], split, split, settings)
    for name in interchange.MAPS:
        assert_close(both[name][0][1:], alone[name][0])


@pytest.mark.parametrize(
    ("override", "key"),
    [({"dims": 3}, "abstraction.dims"), ({"seeds": 0}, "abstraction.seeds"),
     ({"lr": 0.0}, "abstraction.lr"), ({"implements": 1.5}, "abstraction.implements")],
)  # fmt: skip
def test_bad_settings_name_the_key(override, key):
    with pytest.raises(ConfigError, match=key):
        validate({"abstraction": override})


def tiny_document() -> dict:
    """Two runs (seeds 1, 2): every summary the mean of the per-seed values."""

    def numbers(values):
        mean = sum(values) / len(values)
        return {"mean": mean, "ci95_low": min(values), "ci95_high": max(values)}

    def condition(accuracy, linear, nonlinear, moved):
        entry = {"heldout_accuracy": numbers(accuracy), "per_seed_heldout_accuracy": accuracy}
        for name, iia in (("linear", linear), ("nonlinear", nonlinear)):
            # only the non-linear map's IIA moves under the nudge here
            chaotic = [s for s, m in zip([1, 2], moved, strict=True) if m > 0 and name != "linear"]
            entry[name] = {
                "iia": numbers(iia),
                "iia_changed": numbers(iia),
                "share_implements": sum(v >= 0.9 for v in iia) / len(iia),
                "chaotic_seeds": chaotic,
                "max_iia_moved": max(moved) if name == "nonlinear" else 0.0,
                "per_seed_iia": iia,
                "per_seed_iia_changed": iia,
            }
        gains = [n - li for n, li in zip(nonlinear, linear, strict=True)]
        entry["nonlinear_gain"] = numbers(gains)
        keep = [i for i, m in enumerate(moved) if m == 0]
        entry["stable"] = {
            "seeds": [[1, 2][i] for i in keep],
            "iia_linear": sum(linear[i] for i in keep) / len(keep),
            "iia_nonlinear": sum(nonlinear[i] for i in keep) / len(keep),
            "nonlinear_gain": sum(gains[i] for i in keep) / len(keep),
        }
        return entry

    return {
        "seeds": [1, 2],
        "implements": 0.9,
        "conditions": {
            "trained": condition([0.9, 1.0], [0.9, 1.0], [0.95, 1.0], [0.0, 0.0]),
            # seed 2 at init chaotic: its non-linear IIA moves by 0.1 under the nudge
            "random": condition([0.5, 0.4], [0.5, 0.6], [0.6, 0.95], [0.0, 0.1]),
        },
    }


def test_the_section_and_the_headline_read_the_document():
    from pipeline.experiments.abstraction.section import iia_means
    from pipeline.experiments.abstraction.section import section as abstraction_section

    document = tiny_document()
    assert iia_means(document) == pytest.approx(
        {
            "iia_trained_linear": 0.95,
            "iia_trained_nonlinear": 0.975,
            "iia_random_linear": 0.5,  # the stable run alone: the chaotic one decides nothing
            "iia_random_nonlinear": 0.6,
        }
    )
    text = abstraction_section(document)
    # seed 2 at init: accuracy 0.4, non-linear IIA 0.95: the most "implementing" run
    assert (
        "Most so: seed 2 (accuracy 0.4000, IIA 0.6000 linear, 0.9500 non-linear, chaotic)" in text
    )
    assert "the non-linear map 0.7750 (1 of 2)" in text  # random runs at 0.9 or above
    assert "run 1 0.9000 / 0.9500 trained, 0.5000 / 0.6000 at init" in text
    assert "at init (random) rotation + RevNet: 1 of 2 (seeds 2; IIA moved up to 0.1000)" in text
    assert "at init (random) 1 run, IIA 0.5000 / 0.6000, gain 0.1000" in text


def test_the_summary_keeps_chaotic_runs_out_of_the_stable_means():
    """Seed 8's non-linear IIA moved under the nudge: the stable means are seed 7's."""
    iia = torch.tensor([0.8, 0.6], dtype=torch.float64)
    still, moved = torch.zeros(2, dtype=torch.float64), torch.tensor([0.0, 0.05])
    scores = {
        "trained": {"linear": (iia, iia, still), "nonlinear": (iia + 0.1, iia, moved.double())}
    }
    settings = validate({}).abstraction
    document = interchange.summary(scores, {"trained": iia}, [7, 8], settings, 20, 0)
    entry = document["conditions"]["trained"]
    assert entry["linear"]["chaotic_seeds"] == [] and entry["nonlinear"]["chaotic_seeds"] == [8]
    assert entry["nonlinear"]["max_iia_moved"] == pytest.approx(0.05)
    assert entry["stable"]["seeds"] == [7]
    assert entry["stable"]["iia_linear"] == pytest.approx(0.8)
    assert entry["stable"]["iia_nonlinear"] == pytest.approx(0.9)
    assert entry["stable"]["nonlinear_gain"] == pytest.approx(0.1)


def test_a_signal_stops_the_fit_within_a_step():
    """SIGTERM set the stop flag; the fit used to run its every epoch first."""
    from pipeline.models import threads

    params = interface.init_params(20260218, [1], ModelConfig(), 4)
    context = torch.zeros(1, 2, 3, dtype=torch.float64)
    phi = interchange.initial_map([1], 0, 3, 1, 4, 1)
    threads.stop()
    try:
        with pytest.raises(threads.JobsStopped):
            interchange.fit(params, phi, context, context, torch.ones(2), 10**5, 0.05)
    finally:
        threads._stopping.clear()


def test_a_diverged_fit_is_refused_naming_the_learning_rate():
    from pipeline.core.errors import DivergenceError

    phi = interchange.initial_map([1], 0, 3, 1, 4, 1)
    broken = interchange.AlignmentMap(phi.skew * float("inf"), phi.blocks, phi.dims)
    with pytest.raises(DivergenceError, match=r"abstraction\.lr=1e\+300"):
        interchange.check_finite_map(broken, 1e300)
    interchange.check_finite_map(phi, 0.05)  # a finite map passes
