"""SPEC section 2: the 19-parameter classifier (pipeline/models/lesson.py), its init
order and the step-drop mask."""

from __future__ import annotations

import math

import pytest
import reference_lesson as lesson
import torch

from pipeline.config import ModelConfig
from pipeline.core import precision
from pipeline.core.files import read_parquet, write_parquet
from pipeline.models import frames, interface
from pipeline.models import lesson as lesson_model
from pipeline.models.parameters import Params, init_run, lesson_layout
from pipeline.models.pooling import probability

CFG = ModelConfig()
F64 = torch.float64
STEPS = 12


def random_inputs(n: int, steps: int, seed: int) -> torch.Tensor:
    """(n, steps, 2): random readings and a one-hot marker at a random step."""
    gen = torch.Generator().manual_seed(seed)
    readings = torch.randn(n, steps, generator=gen, dtype=F64)
    marked = torch.randint(0, steps, (n,), generator=gen)
    return torch.stack([readings, torch.nn.functional.one_hot(marked, steps).to(F64)], -1)


def random_params(runs: int, seed: int, scale: float = 1.0) -> Params:
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randn(runs, 19, generator=gen, dtype=F64) * scale
    return interface.from_flat(flat, CFG, STEPS)


def as_lesson_dict(params: Params, run: int) -> dict:
    """One run of Params, read tensor by tensor into the lesson's dict layout."""
    n = params.named
    return {
        "Wk": n["Wk"][run].tolist(),
        "Wv": n["Wv"][run].tolist(),
        "q": n["q"][run].tolist(),
        "w": n["w"][run].tolist(),
        "b": float(n["b"][run]),
    }


# --- initialisation -----------------------------------------------------------------------


def test_parameter_count():
    assert interface.parameter_count(CFG, STEPS) == 19
    assert interface.parameter_count(ModelConfig(d_k=2, d_v=2), STEPS) == 13
    assert len(interface.flat_names(CFG, STEPS)) == 19


@pytest.mark.parametrize("seed", [20260219, 20260220, 7])
def test_init_run_is_explicit_draws_in_order(seed):
    draw = lesson.stream(seed)
    uniforms = [draw() for _ in range(54)]
    expected = [
        (uniforms[3 * j] + uniforms[3 * j + 1] + uniforms[3 * j + 2] - 1.5) * 0.9 for j in range(18)
    ] + [0.0]
    assert init_run(seed, lesson_layout(CFG), CFG.init_scale) == expected


def test_init_layout_matches_lesson_dict():
    params = interface.init_params(20260218, [1, 2], CFG, STEPS)
    n = params.named
    assert params.runs == 2
    assert list(n) == ["Wk", "Wv", "q", "w", "b"]
    assert n["Wk"].shape == (2, 3, 2) and n["Wv"].shape == (2, 3, 2)
    assert n["q"].shape == (2, 3) and n["w"].shape == (2, 3)
    assert n["b"].shape == (2,)
    for run, k in enumerate([1, 2]):
        assert as_lesson_dict(params, run) == lesson.init(20260218 + k)


def test_flat_names_order():
    names = interface.flat_names(CFG, STEPS)
    assert names[:6] == ["Wk_00", "Wk_01", "Wk_10", "Wk_11", "Wk_20", "Wk_21"]
    assert names[6:12] == ["Wv_00", "Wv_01", "Wv_10", "Wv_11", "Wv_20", "Wv_21"]
    assert names[12:] == ["q_0", "q_1", "q_2", "w_0", "w_1", "w_2", "b"]


def test_frame_round_trip_is_exact(tmp_path):
    params = random_params(4, seed=11, scale=3.0).map(precision.settle)  # as training leaves them
    seeds = [3, 1, 4, 15]
    frame = frames.params_to_frame(params, seeds, CFG, 12)
    assert frame.columns.tolist() == ["seed", *interface.flat_names(CFG, STEPS)]
    write_parquet(tmp_path / "p.parquet", frame)
    for source in (frame, read_parquet(tmp_path / "p.parquet")):
        got_seeds, got = frames.params_from_frame(source, CFG, 12)
        assert got_seeds == seeds
        for a, b in zip(got.tensors(), params.tensors(), strict=True):
            assert a.dtype == F64 and torch.equal(a, b)
    # A named cell holds the parameter it names.
    assert frame.loc[2, "Wv_21"] == float(params.named["Wv"][2, 2, 1])
    assert frame.loc[3, "q_1"] == float(params.named["q"][3, 1])


# --- forward ------------------------------------------------------------------------------


def test_forward_matches_reference_lesson():
    params = random_params(3, seed=5)
    inputs = random_inputs(6, 12, seed=6)
    logits, weights = lesson_model.forward(params, inputs)
    assert logits.shape == (3, 6) and weights.shape == (3, 6, 12)
    for s in range(3):
        p = as_lesson_dict(params, s)
        for n in range(6):
            _, _, a, _, o = lesson.forward(p, inputs[n].tolist())
            torch.testing.assert_close(
                weights[s, n], torch.tensor(a, dtype=F64), rtol=1e-12, atol=1e-15
            )
            assert math.isclose(float(logits[s, n]), o, rel_tol=1e-12, abs_tol=1e-14)


def test_forward_by_hand_one_example():
    # Wk x = [r, m, 0], q = [1, 1, 0] -> score (r + m) / sqrt(3); Wv = 2 * Wk, w = [1, 0, 0].
    flat = torch.zeros(1, 19, dtype=F64)
    flat[0, [0, 3]] = 1.0  # Wk_00, Wk_11
    flat[0, [6, 9]] = 2.0  # Wv_00, Wv_11
    flat[0, [12, 13]] = 1.0  # q_0, q_1
    flat[0, 15] = 1.0  # w_0
    flat[0, 18] = 0.25  # b
    params = interface.from_flat(flat, CFG, STEPS)
    inputs = torch.tensor([[[0.0, 0.0], [0.5, 1.0], [-1.0, 0.0]]], dtype=F64)
    logits, weights = lesson_model.forward(params, inputs)
    scores = torch.tensor([0.0, 0.5 + 1.0, -1.0], dtype=F64) / math.sqrt(3)
    expected = torch.exp(scores) / torch.exp(scores).sum()
    torch.testing.assert_close(weights[0, 0], expected, rtol=1e-14, atol=0.0)
    # The value channel reads 2 r_t through w_0 (the marker lands in V_1, which w ignores).
    logit = 0.25 + 2 * (0.5 * expected[1] - 1.0 * expected[2])
    torch.testing.assert_close(logits[0, 0], logit, rtol=1e-14, atol=1e-15)


def test_dropped_step_equals_physically_removed_step():
    params = random_params(2, seed=21, scale=2.0)
    inputs = random_inputs(5, 8, seed=22)
    for t in range(8):
        keep = [u for u in range(8) if u != t]
        dropped = torch.zeros(8, dtype=torch.bool)
        dropped[t] = True
        logits, weights = lesson_model.forward(params, inputs, dropped=dropped)
        short_logits, short_weights = lesson_model.forward(params, inputs[:, keep, :])
        torch.testing.assert_close(logits, short_logits, rtol=1e-12, atol=1e-14)
        assert torch.equal(weights[..., t], torch.zeros(2, 5, dtype=F64))
        torch.testing.assert_close(weights[..., keep], short_weights, rtol=1e-12, atol=1e-15)
        # And the lesson's own skip (ileri with atla).
        for s in range(2):
            p = as_lesson_dict(params, s)
            for n in range(5):
                o = lesson.forward(p, inputs[n].tolist(), skip=t)[4]
                assert math.isclose(float(logits[s, n]), o, rel_tol=1e-12, abs_tol=1e-13)


def test_dropped_mask_leading_dims():
    params = random_params(3, seed=31)
    inputs = random_inputs(4, 6, seed=32)
    gen = torch.Generator().manual_seed(33)
    dropped = torch.rand(2, 5, 3, 4, 6, generator=gen) < 0.4
    dropped[..., 0] = False  # keep at least one step everywhere
    logits, weights = lesson_model.forward(params, inputs, dropped=dropped)
    assert logits.shape == (2, 5, 3, 4) and weights.shape == (2, 5, 3, 4, 6)
    for i in range(2):
        for j in range(5):
            one_logits, one_weights = lesson_model.forward(params, inputs, dropped=dropped[i, j])
            assert one_logits.shape == (3, 4)
            torch.testing.assert_close(logits[i, j], one_logits, rtol=1e-14, atol=1e-15)
            torch.testing.assert_close(weights[i, j], one_weights, rtol=1e-14, atol=1e-15)
            for s in range(3):
                for n in range(4):
                    keep = (~dropped[i, j, s, n]).nonzero().squeeze(-1)
                    short, _ = lesson_model.forward(params, inputs[n : n + 1, keep, :])
                    torch.testing.assert_close(
                        logits[i, j, s, n], short[s, 0], rtol=1e-12, atol=1e-14
                    )


def test_one_step_per_mask_batch():
    """The ablation layout: a (T, 1, 1, T) identity mask gives (T, S, N) logits."""
    params = random_params(2, seed=41)
    inputs = random_inputs(3, 5, seed=42)
    eye = torch.eye(5, dtype=torch.bool)[:, None, None, :]
    logits, _ = lesson_model.forward(params, inputs, dropped=eye)
    assert logits.shape == (5, 2, 3)
    for t in range(5):
        keep = [u for u in range(5) if u != t]
        short, _ = lesson_model.forward(params, inputs[:, keep, :])
        torch.testing.assert_close(logits[t], short, rtol=1e-12, atol=1e-14)


def test_runs_do_not_interact():
    params = random_params(4, seed=51)
    inputs = random_inputs(7, 9, seed=52)
    logits, weights = lesson_model.forward(params, inputs)
    for s in range(4):
        alone = params.map(lambda t, s=s: t[s : s + 1])
        one_logits, one_weights = lesson_model.forward(alone, inputs)
        torch.testing.assert_close(logits[s : s + 1], one_logits, rtol=0, atol=0)
        torch.testing.assert_close(weights[s : s + 1], one_weights, rtol=0, atol=0)


def test_probability_clamps_logit():
    logits = torch.tensor([-100.0, -30.0, 0.0, 2.0, 100.0], dtype=F64)
    p = probability(logits)
    assert float(p[0]) == float(p[1]) == 1 / (1 + math.exp(30.0))
    assert float(p[2]) == 0.5
    assert math.isclose(float(p[3]), 1 / (1 + math.exp(-2.0)), rel_tol=1e-15)
    assert float(p[4]) == 1 / (1 + math.exp(-30.0))


def test_the_lesson_s_attend_is_its_forward():
    """The contract's forward (the pooling every kind shares) and the lesson's own
    order of operations compute the same model."""
    params = random_params(3, seed=41)  # the lesson's own
    inputs = random_inputs(5, STEPS, seed=42)
    dropped = torch.eye(STEPS, dtype=torch.bool)[:, None, None, :]
    for mask in (None, dropped):
        logits, weights, _ = lesson_model.attend(params, inputs, mask)
        want_logits, want_weights = lesson_model.forward(params, inputs, mask)
        torch.testing.assert_close(logits, want_logits, rtol=1e-13, atol=1e-14)
        torch.testing.assert_close(weights.squeeze(-2), want_weights, rtol=1e-13, atol=1e-15)
