"""Another CPU from this one: every computing stage on a small config, once as it is
and once with the last bit of each machine-dependent result nudged
(tests/last_bit.py), must write the same bytes. CI runs on one CPU, so without this a
stage whose numbers follow the last bit (the abstraction stage's non-linear fit,
before its steps were settled) passes here and fails on the next machine."""

from __future__ import annotations

import pytest
import torch

from pipeline.config import validate
from tests import stage_runs
from tests.conftest import composed
from tests.last_bit import LastBitNudge, nudge_numba, nudged

# The stages' groups (tests/stage_runs.py) and the field's: each computing stage once.
GROUPS = {**stage_runs.GROUPS, "field": stage_runs.field_stages}


# The abstraction stage's fit long enough for a last bit to grow into another map
# there before its steps were settled (150 steps on 64 pairs: the small config's 20
# steps never showed it).
LONGER_FIT = ["abstraction.epochs=150", "abstraction.pairs=64"]


@pytest.fixture(scope="module")
def cfg():
    return validate(composed([*stage_runs.OVERRIDES, *LONGER_FIT]))


@pytest.fixture(autouse=True)
def one_thread():
    """The jobs of a stage in turn on this thread: a dispatch mode is the thread's own."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_last_bit_nudge_moves_each_machine_dependent_result_by_one_ulp():
    x = torch.tensor([0.3, 0.0, 1.0, -2.5], dtype=torch.float64)
    with nudged(seed=1) as mode:
        moved = torch.exp(x) - 0  # sub is exact: not nudged
        product = torch.ones(1, 4, dtype=torch.float64) @ x[:, None]
    exact = torch.exp(x)
    ulps = (moved - exact).abs() / torch.finfo(torch.float64).eps / exact.abs()
    assert bool(((ulps > 0.1) & (ulps <= 1.0)).all())  # one ulp each, relative <= eps
    assert product.item() != (torch.ones(1, 4, dtype=torch.float64) @ x[:, None]).item()
    assert mode.nudged == 5
    with nudged(seed=1):
        assert torch.equal(torch.exp(x), moved)  # seeded: the same nudges again
    with nudged(seed=1):
        assert torch.zeros(3, dtype=torch.float64).sum().item() == 0.0  # exact zeros stay


def test_last_bit_nudge_reaches_the_in_place_updates_of_an_optimizer():
    weight = torch.ones(3, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.Adam([weight], lr=0.1)
    (weight * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    with LastBitNudge(seed=0) as mode:
        optimizer.step()
    assert mode.nudged > 0


def test_last_bit_numba_nudge_moves_the_window_kernel_outputs(monkeypatch):
    import numpy as np

    from pipeline.models import window_kernel

    def write(x, bilinear, starts, weights):
        weights[...] = 1.0

    monkeypatch.setattr(window_kernel, "_layer_scores", write)
    nudge_numba(monkeypatch, seed=0)
    weights = np.zeros((2, 3))
    window_kernel._layer_scores(None, None, None, weights)
    assert (weights != 1.0).all() and (np.abs(weights - 1.0) < 3e-16).all()


@pytest.mark.slow  # every stage end to end: the full tier
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_last_bit_every_stage_writes_the_same_bytes_under_a_nudge(group, cfg, monkeypatch):
    plain = GROUPS[group](cfg)
    nudge_numba(monkeypatch, seed=0)
    with nudged(seed=0) as mode:
        moved = GROUPS[group](cfg)
    assert mode.nudged > 0
    differ = [name for name in plain if plain[name] != moved[name]]
    assert differ == [], f"{group}: {differ} follow the last bit"
