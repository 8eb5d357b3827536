"""Issue 48, test 1: erasure and decision flips (Serrano & Smith, ACL 2019), by hand."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.analysis import explainers, faithfulness
from pipeline.config import ModelConfig
from pipeline.core import ties
from pipeline.experiments.erasure import decision_flips, erasure_study
from pipeline.models.parameters import Params

F64 = torch.float64
NAN = math.nan


def t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


def marker_model() -> Params:
    """One run, d_k = d_v = 1: key ln 2 on the marker channel, so the marked step gets
    weight 2 / (2 + T - 1) = 1/2 of T = 3 steps, the others 1/4; value = the reading,
    logit = sum_t a_t r_t (w = 1, b = 0)."""
    return Params(
        ModelConfig(d_k=1, d_v=1),
        {
            "Wk": t([[[0.0, math.log(2.0)]]]),
            "Wv": t([[[1.0, 0.0]]]),
            "q": torch.ones(1, 1, dtype=F64),
            "w": torch.ones(1, 1, dtype=F64),
            "b": t([0.0]),
        },
    )


def sequences(readings: list[list[float]]) -> torch.Tensor:
    """(N, T, 2): the readings, step 0 marked in every sequence."""
    values = t(readings)
    marker = torch.zeros_like(values)
    marker[:, 0] = 1.0
    return torch.stack([values, marker], -1)


# A: readings (2, -1, -1): logit 0.5*2 - 0.25 - 0.25 = 0.5 > 0.
#    Erase 0: the rest uniform, mean(-1, -1) = -1: flips.
#    Erase 1 (or 2): weights (2/3, 1/3): 4/3 - 1/3 = 1: no flip.
# B: readings (-1, 4, -1): logit -0.5 + 1 - 0.25 = 0.25 > 0.
#    Erase 0: mean(4, -1) = 1.5: no flip. Erase 1: (2/3)(-1) + (1/3)(-1) = -1: flips.
#    Erase 2: -2/3 + 4/3 = 2/3: no flip.
# C: readings (1, 1, 1): every mix is 1: nothing ever flips.
INPUTS = sequences([[2.0, -1.0, -1.0], [-1.0, 4.0, -1.0], [1.0, 1.0, 1.0]])
MARKED = torch.tensor([0, 0, 0])


def test_single_flips_by_hand():
    flips = decision_flips.single_flips(marker_model(), INPUTS)
    expected = [[[True, False, False], [False, True, False], [False, False, False]]]
    assert flips.tolist() == expected


def test_top_weight_step_against_the_exact_mean_over_the_others():
    params = marker_model()
    flips = decision_flips.single_flips(params, INPUTS)
    weights = explainers.attention(params, INPUTS)  # (1/2, 1/4, 1/4) everywhere
    got = decision_flips.top_and_other(flips, weights)
    # The top step is step 0. A: it flips, the others do not (0/2). B: it does not,
    # one of the two others does (1/2). C: none.
    torch.testing.assert_close(got["top_flip"], t([[1.0, 0.0, 0.0]]))
    torch.testing.assert_close(got["other_flip"], t([[0.0, 0.5, 0.0]]))


def test_top_weight_ties_take_the_first_step():
    # Weights tie at steps 1 and 2: the top is step 1, the others are 0 and 2.
    flips = torch.tensor([[[True, False, True]]])
    got = decision_flips.top_and_other(flips, t([[[0.2, 0.4, 0.4]]]))
    torch.testing.assert_close(got["top_flip"], t([[0.0]]))
    torch.testing.assert_close(got["other_flip"], t([[1.0]]))  # both others flip


def test_the_rationale_s_view_of_single_erasure():
    params = marker_model()
    flips = decision_flips.single_flips(params, INPUTS)
    weights = explainers.attention(params, INPUTS)
    # A: the top step flips and is the marked one; B, C: it does not flip (nan).
    marked = decision_flips.top_flip_marked(flips, weights, MARKED)
    torch.testing.assert_close(marked, t([[1.0, NAN, NAN]]), equal_nan=True)
    # Erasing the marked step alone flips A only.
    torch.testing.assert_close(
        decision_flips.rationale_flip(flips, MARKED, F64), t([[1.0, 0.0, 0.0]])
    )


def test_flip_curves_by_hand():
    params = marker_model()
    order = ties.descending_order(explainers.attention(params, INPUTS))  # 0, 1, 2
    first = decision_flips.first_flips(params, INPUTS, order)
    # A flips at k = 1. B: erase 0 -> 1.5, erase 0 and 1 -> -1: k = 2. C: never (0).
    assert first.tolist() == [[1, 2, 0]]
    curve = decision_flips.flip_curve(first, order, MARKED, F64)
    torch.testing.assert_close(curve["removed"], t([[1 / 3, 2 / 3, NAN]]), equal_nan=True)
    torch.testing.assert_close(curve["never"], t([[0.0, 0.0, 1.0]]))
    # The k-th erased step: A's is step 0 (marked), B's step 1 (not).
    torch.testing.assert_close(curve["flip_marked"], t([[1.0, 0.0, NAN]]), equal_nan=True)


def test_another_order_flips_elsewhere():
    params = marker_model()
    order = torch.tensor([[[2, 1, 0]] * 3])  # reversed
    # A: erase 2 -> (2/3)2 + (1/3)(-1) = 1; erase 2, 1 -> 2: never. B: erase 2 -> 2/3;
    # erase 2, 1 -> -1: k = 2. C: never.
    assert decision_flips.first_flips(params, INPUTS, order).tolist() == [[0, 2, 0]]


def test_a_run_s_mean_and_the_summary_skip_nan():
    values = {("flip", "attention", "removed"): t([1.0, NAN, 3.0])}
    summary = erasure_study.over_seeds(values, resamples=50, bootstrap_seed=0)
    entry = summary["flip"]["attention"]["removed"]
    assert entry["mean"] == 2.0 and entry["runs"] == 2
    assert 1.0 <= entry["ci95_low"] <= entry["ci95_high"] <= 3.0
    torch.testing.assert_close(erasure_study.run_mean(t([[1.0, NAN, 2.0]])), t([1.5]))


@pytest.mark.parametrize("name", sorted(erasure_study.SIGNED))
def test_signed_forms_are_the_battery_s_scores_before_their_absolute_value(name):
    params = marker_model()
    cfg = type("Cfg", (), {"faithfulness": explainers.DEFAULTS})()
    signed = erasure_study.SIGNED[name](params, INPUTS, cfg)
    plain = explainers.explain(params, INPUTS, [name])[name]
    torch.testing.assert_close(signed.abs(), plain, rtol=0, atol=1e-12)
    assert (signed < 0).any() or name != "loo"  # loo's sign is not always +


def test_the_section_reads_a_model_whose_decisions_never_flip():
    """A run that never flips (sequence C: every mix is 1) leaves "is the flipping step
    marked?" without a value: the reading says so instead of failing (CI caught the
    report stage failing on `dvc exp run -S train.epochs=40 -S train.lr=0.3`)."""
    from pipeline.experiments.erasure.section import section as erasure_section

    params, inputs = marker_model(), INPUTS[2:].repeat(3, 1, 1)
    rationale = faithfulness.task_rationale("lesson", torch.zeros(3, dtype=torch.long), 3)
    weights = explainers.explain(params, inputs, ["attention"])["attention"]
    noise = torch.rand(1, 3, 3, dtype=F64, generator=torch.Generator().manual_seed(0))
    scores = {"attention": weights, "loo": weights.flip(-1), "random": noise}
    values = {
        **erasure_study.erasure_values(params, inputs, rationale, scores),
        **erasure_study.agreement_values(scores, rationale, [1]),
    }
    document = {
        "runs": erasure_study.run_documents(values, [1]),
        "study": {"seeds": 1, **erasure_study.over_seeds(values, 20, 0)},
    }
    assert document["study"]["erasure"]["attention"]["top_flip_marked"]["mean"] is None
    section = erasure_section(document)
    assert "Erasing the top-weight step flips 0.0000 of the decisions" in section
    assert "never flips a decision here, so whether the flipping step is the marked one" in section
    assert "no ranking ever reaches a flip" in section
