"""Issue 48, test 3: the disagreement problem's metrics (Krishna et al., TMLR 2024), by
hand and against scipy."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import spearmanr

from pipeline.experiments.erasure import agreement, erasure_study

F64 = torch.float64

# |a| ranks steps 0, 1, 2, 3; |b| ranks 1, 0, 2, 3. Signs: a (+, -, +, 0), b (+, +, -, +).
A = torch.tensor([0.5, -0.3, 0.1, 0.0], dtype=F64)
B = torch.tensor([0.2, 0.4, -0.1, 0.05], dtype=F64)


@pytest.mark.parametrize(
    ("k", "feature", "rank", "sign", "signed_rank"),
    [
        # top-1: {0} against {1}: nothing shared.
        (1, 0.0, 0.0, 0.0, 0.0),
        # top-2: {0, 1} both; positions (0, 1) against (1, 0): no rank shared; step 0
        # has one sign in both, step 1 not: SA 1/2.
        (2, 1.0, 0.0, 0.5, 0.0),
        # top-3: + step 2 at position 3 in both (RA 1/3), its signs differ (+ against -):
        # SA counts step 0 only (1/3), SRA nothing.
        (3, 1.0, 1 / 3, 1 / 3, 0.0),
        # k above T counts as T = 4: every step shared; step 3 at position 4 in both,
        # sign 0 against +.
        (9, 1.0, 2 / 4, 1 / 4, 0.0),
    ],
)
def test_top_k_agreements_by_hand(k, feature, rank, sign, signed_rank):
    assert float(agreement.feature_agreement(A, B, k)) == pytest.approx(feature)
    assert float(agreement.rank_agreement(A, B, k)) == pytest.approx(rank)
    assert float(agreement.sign_agreement(A, B, k)) == pytest.approx(sign)
    assert float(agreement.signed_rank_agreement(A, B, k)) == pytest.approx(signed_rank)


def test_rank_correlation_by_hand_and_against_scipy():
    # Ascending ranks of |a|: (4, 3, 2, 1); of |b|: (3, 4, 2, 1); d = (1, -1, 0, 0):
    # rho = 1 - 6 * 2 / (4 * 15) = 0.8.
    assert float(agreement.spearman(A, B)) == pytest.approx(0.8)
    generator = torch.Generator().manual_seed(48)
    x = torch.randint(-3, 4, (50, 7), generator=generator).to(F64)  # with ties
    y = torch.randint(-3, 4, (50, 7), generator=generator).to(F64)
    got = agreement.spearman(x, y)
    for i in range(50):
        expected = spearmanr(x[i].abs().numpy(), y[i].abs().numpy()).statistic
        if math.isnan(expected):
            assert math.isnan(float(got[i]))
        else:
            assert float(got[i]) == pytest.approx(expected, abs=1e-12)


def test_pairwise_rank_agreement_by_hand():
    # Of the 6 pairs only (0, 1) is ordered one way by |a| (0 above 1), the other by
    # |b|: 5/6.
    assert float(agreement.pairwise_rank_agreement(A, B)) == pytest.approx(5 / 6)
    # Ties agree with ties only: (1, 0, 0) against (0, 1, 0): (0,1) differs, (0,2)
    # above against tie, (1,2) tie against above: 0.
    x, y = torch.tensor([1.0, 0, 0], dtype=F64), torch.tensor([0, 1.0, 0], dtype=F64)
    assert float(agreement.pairwise_rank_agreement(x, y)) == 0.0
    assert float(agreement.pairwise_rank_agreement(x, x)) == 1.0


def test_against_the_rationale_by_hand():
    marked = torch.tensor([1])  # R = {step 1}
    a, b = A[None], B[None]
    # FA@|R|: a's top step is 0 (miss), b's is 1 (hit).
    assert agreement.rationale_feature_agreement(a, marked).tolist() == [0.0]
    assert agreement.rationale_feature_agreement(b, marked).tolist() == [1.0]
    # PRA over (1, j), j = 0, 2, 3: |a_1| = 0.3 is below 0.5, above 0.1 and 0: 2/3; b's
    # 0.4 is above every other: 1.
    assert float(agreement.rationale_pairwise_agreement(a, marked)) == pytest.approx(2 / 3)
    assert float(agreement.rationale_pairwise_agreement(b, marked)) == 1.0
    # Spearman against (0, 1, 0, 0): average ranks (2, 4, 2, 2), centred (-.5, 1.5, -.5,
    # -.5); a's ranks centred (1.5, .5, -.5, -1.5): cov 1, variances 3 and 5.
    expected = 1 / math.sqrt(15)
    assert float(agreement.rationale_spearman(a, marked)) == pytest.approx(expected)
    assert expected == pytest.approx(spearmanr([0.5, 0.3, 0.1, 0.0], [0, 1, 0, 0]).statistic)


def test_point_biserial_by_hand():
    x = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=F64)
    assert float(agreement.point_biserial(x, 1 - x)) == pytest.approx(-1.0)
    assert math.isnan(float(agreement.point_biserial(x, torch.ones(4, dtype=F64))))


def test_does_disagreement_predict_both_wrong_by_hand():
    # One run, two examples, T = 3, the marked step 0 in both.
    # Example 1: a = b = (1, 0, 0): top-1 agree, both hit; PRA 1 (ties agree with ties).
    # Example 2: a = (0, 1, 0), b = (0, 0, 1): top-1 differ, both miss; every pair is
    # ordered differently: PRA 0.
    a = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]], dtype=F64)
    b = torch.tensor([[[1.0, 0, 0], [0, 0, 1.0]]], dtype=F64)
    values = erasure_study.agreement_values({"a": a, "b": b}, torch.tensor([0, 0]), [1])
    assert values[("pairs", "a vs b", "pairwise_rank")].tolist() == [0.5]
    assert values[("pairs", "a vs b", "feature@1")].tolist() == [0.5]
    # r(PRA (1, 0), both wrong (0, 1)) = -1: disagreement predicts both wrong here.
    disagreement = {m: v.tolist() for (t, _, m), v in values.items() if t == "disagreement"}
    assert disagreement == {
        "r_pairwise_rank_both_wrong": [pytest.approx(-1.0)],
        "both_wrong_top1_agree": [0.0],
        "both_wrong_top1_differ": [1.0],
    }
    assert values[("rationale", "a", "feature")].tolist() == [0.5]  # hit, miss
