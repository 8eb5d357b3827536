"""The one tie rule, on cases worked out by hand."""

from __future__ import annotations

import torch

from pipeline.core import ties

F64 = torch.float64
NOISE = 1e-16  # one rounding of a value of size one


def t(values) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def test_first_max_takes_the_first_of_values_within_noise():
    # torch.argmax would take index 1, which a last bit put ahead.
    assert int(ties.first_max(t([0.5, 0.5 + NOISE, 0.25]))) == 0
    assert int(ties.first_max(t([0.25, 0.5, 0.5 - NOISE]))) == 1
    # A real difference is an order.
    assert int(ties.first_max(t([0.5, 0.5 + 1e-9, 0.25]))) == 1


def test_first_max_is_batched_and_keeps_dims():
    x = t([[[1.0, 3.0, 3.0], [2.0, 1.0, 0.0]]])
    assert ties.first_max(x).tolist() == [[1, 0]]
    assert ties.first_max(x, keepdim=True).shape == (1, 2, 1)


def test_the_tolerance_scales_with_the_largest_value():
    # 1e-9 apart at size 1e5 is a tie (1e-14 relative); at size 1 it is not.
    assert int(ties.first_max(t([1e5, 1e5 + 1e-9]))) == 0
    assert int(ties.first_max(t([1.0, 1.0 + 1e-9]))) == 1


def test_a_value_at_a_threshold_is_neither_above_nor_below_it():
    logits = t([-1.0, -NOISE, 0.0, NOISE, 1e-9])
    assert ties.above(logits, 0.0).tolist() == [False, False, False, False, True]
    effects = t([0.05 - 1e-9, 0.05 - NOISE, 0.05, 0.05 + NOISE])
    assert ties.below(effects, 0.05).tolist() == [True, False, False, False]


def test_at_max_marks_every_tied_maximum():
    values = t([[0.9, 0.9 + NOISE, 0.1], [0.2, 0.3, 0.3]])
    assert ties.at_max(values).tolist() == [[True, True, False], [False, True, True]]
    assert ties.at_max(values, dim=0).tolist() == [[True, True, False], [False, False, True]]


def test_signs_tie_noise_and_order_the_rest():
    signs = ties.signs(t([0.5, 0.5 + NOISE, 0.25]))
    assert signs.tolist() == [[0, 0, 1], [0, 0, 1], [-1, -1, 0]]


def test_descending_order_keeps_near_ties_in_index_order():
    # An exact sort puts step 2 first by one last bit; the rule keeps 1 before 2.
    scores = t([0.1, 0.5, 0.5 + NOISE, 0.7])
    assert ties.descending_order(scores).tolist() == [3, 1, 2, 0]
    exact = torch.sort(scores, descending=True, stable=True).indices
    assert exact.tolist() == [3, 2, 1, 0]
    batch = t([[3.0, 1.0, 2.0], [0.0, 0.0, 1.0]])
    assert ties.descending_order(batch).tolist() == [[0, 2, 1], [2, 0, 1]]
