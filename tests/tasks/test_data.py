"""SPEC section 1: the random stream, the sequences, the data checks, the files."""

from __future__ import annotations

import pandas as pd
import pytest
import reference_lesson as lesson
import torch

from pipeline import data
from pipeline.config import DataConfig
from pipeline.core import files
from pipeline.models import frames
from tests.conftest import GOLDEN_DATA

TWO32 = 2**32


def hashed_state(t: int) -> int:
    """SPEC 1's seed hash written with % 2**32 instead of & M (a second spelling)."""
    x = ((t ^ (t // 65536)) * 2246822507) % TWO32
    x = ((x ^ (x // 8192)) * 3266489909) % TWO32
    return (x ^ (x // 65536)) % TWO32


def lcg_uniforms(t: int, count: int) -> list[float]:
    state, out = hashed_state(t), []
    for _ in range(count):
        state = (state * 1664525 + 1013904223) % TWO32
        out.append(state / TWO32)
    return out


@pytest.fixture(scope="module")
def lesson_frame() -> pd.DataFrame:
    return data.generate(DataConfig())


def test_stream_first_value_literal():
    draw = data.stream(20260218)
    assert draw() == 0.9695386900566518
    # The literal is an exact multiple of 2**-32: the state after one LCG step.
    assert (0.9695386900566518 * TWO32).is_integer()


def test_stream_seed_hash_by_hand():
    t = 20260218
    # First mixing step, by hand: t >> 16 == 309, and the product reduced mod 2**32.
    assert t >> 16 == 309
    assert ((t ^ 309) * 2246822507) % TWO32 == 3479274245
    first = (hashed_state(t) * 1664525 + 1013904223) % TWO32
    assert first == data.stream(t)() * TWO32


@pytest.mark.parametrize("t", [0, 1, 20260218, 20260219, 2**31 + 12345, 987654321])
def test_stream_matches_integer_arithmetic(t):
    draw = data.stream(t)
    got = [draw() for _ in range(40)]
    assert got == lcg_uniforms(t, 40)
    assert all(0.0 <= u < 1.0 for u in got)


def test_region_pick_boundaries():
    # Cumulative weights 0.28, 0.50, 0.68, 0.82, 1.00: first one that exceeds u.
    assert data.pick_region(0.0) == "north"
    assert data.pick_region(0.2799) == "north"
    assert data.pick_region(0.28) == "south"  # not "exceeds" at equality
    assert data.pick_region(0.6) == "east"
    assert data.pick_region(0.75) == "west"
    assert data.pick_region(0.9) == "centre"
    assert data.pick_region(0.999999) == "centre"


def test_sequence_zero_of_the_lesson(lesson_frame):
    row = lesson_frame.iloc[0]
    readings = [float(row[f"reading_{t}"]) for t in range(12)]
    assert row["region"] == "centre"
    assert readings == [
        0.0,
        0.893,
        -0.222,
        -0.542,
        -0.404,
        -1.114,
        0.234,
        -1.03,
        -1.493,
        0.534,
        -1.807,
        0.05,
    ]
    assert int(row["marked_step"]) == 8
    assert int(row["label"]) == 0
    assert row["split"] == "train"


def test_sequence_zero_drawn_by_hand():
    # 1 region draw, 11 readings of 3 draws each, then the marked-step draw.
    u = lcg_uniforms(20260218, 1 + 33 + 1)
    assert u[0] >= 0.82  # centre
    readings = [0.0] + [
        round((u[1 + 3 * j] + u[2 + 3 * j] + u[3 + 3 * j] - 1.5) * 1.9, 3) for j in range(11)
    ]
    marked = 2 + int(u[34] * 10)
    frame = data.generate(DataConfig(sequences=3, split=[1, 1, 1]))
    assert frame.loc[0, data.reading_columns(12)].tolist() == readings
    assert frame.loc[0, "marked_step"] == marked == 8


def test_lesson_frame_layout(lesson_frame):
    assert len(lesson_frame) == 720
    assert lesson_frame["id"].tolist() == list(range(720))
    assert (lesson_frame["split"].iloc[:360] == "train").all()
    assert (lesson_frame["split"].iloc[360:540] == "validation").all()
    assert (lesson_frame["split"].iloc[540:] == "heldout").all()
    assert (lesson_frame["reading_0"] == 0.0).all()
    marked = lesson_frame["marked_step"]
    assert marked.between(2, 11).all()
    at_marker = [lesson_frame.loc[i, f"reading_{m}"] for i, m in enumerate(marked)]
    assert (lesson_frame["label"] == [int(r > 0.35) for r in at_marker]).all()


@pytest.mark.parametrize(("seed", "steps", "split"), [(777, 7, [20, 10, 10]), (5, 16, [6, 3, 3])])
def test_generator_matches_reference_lesson(seed, steps, split):
    n = sum(split)
    frame = data.generate(DataConfig(seed=seed, sequences=n, steps=steps, split=split))
    expected = lesson.build_sequences(n, seed, steps)
    assert frame["region"].tolist() == [s["region"] for s in expected]
    assert frame[data.reading_columns(steps)].to_numpy().tolist() == [
        s["readings"] for s in expected
    ]
    assert frame["marked_step"].tolist() == [s["marked"] for s in expected]
    assert frame["label"].tolist() == [s["label"] for s in expected]


def test_summarize_lesson_numbers(lesson_frame):
    summary = data.summarize(lesson_frame, DataConfig())
    assert summary["sequences"] == 720
    rounded = {k: round(v, 4) for k, v in summary.items() if k != "sequences"}
    assert rounded == GOLDEN_DATA
    # Exact fractions behind the rounded numbers.
    assert summary["train_positive_rate"] == pytest.approx(137 / 360, abs=1e-15)
    assert summary["heldout_positive_rate"] == pytest.approx(66 / 180, abs=1e-15)
    assert summary["max_reading_at_marker"] == pytest.approx(11 / 180, abs=1e-15)


def test_summarize_matches_reference_on_small_config():
    cfg = DataConfig(seed=99, sequences=50, steps=9, split=[20, 10, 20])
    summary = data.summarize(data.generate(cfg), cfg)
    seqs = lesson.build_sequences(50, 99, 9)
    train, heldout = seqs[:20], seqs[30:]
    rate = sum(s["label"] for s in heldout) / 20
    assert summary["train_positive_rate"] == sum(s["label"] for s in train) / 20
    assert summary["heldout_positive_rate"] == rate
    assert summary["baseline"] == max(rate, 1 - rate)
    any_above = sum(any(s["readings"][t] > 0.35 for t in range(2, 9)) for s in seqs) / 50
    assert summary["any_step_above_threshold"] == any_above
    at_marker = sum(
        max(range(2, 9), key=lambda t, s=s: s["readings"][t]) == s["marked"] for s in heldout
    )
    assert summary["max_reading_at_marker"] == at_marker / 20
    assert summary["uniform_weight"] == 1 / 9


def test_summarize_first_max_wins_on_ties():
    cfg = DataConfig(sequences=3, steps=4, split=[1, 1, 1])
    frame = pd.DataFrame(
        {
            "id": [0, 1, 2],
            "split": ["train", "validation", "heldout"],
            "region": ["north"] * 3,
            "reading_0": [0.0] * 3,
            "reading_1": [0.0] * 3,
            "reading_2": [0.0, 0.0, 0.7],
            "reading_3": [0.0, 0.0, 0.7],  # tie between steps 2 and 3
            "marked_step": [2, 2, 3],
            "label": [0, 0, 1],
        }
    )
    # The largest reading is taken at step 2 (first max), so the marked step 3 misses.
    assert data.summarize(frame, cfg)["max_reading_at_marker"] == 0.0
    frame.loc[2, "marked_step"] = 2
    assert data.summarize(frame, cfg)["max_reading_at_marker"] == 1.0


def test_parquet_bytes_identical_across_writes(tmp_path, lesson_frame):
    first, second = tmp_path / "a" / "sequences.parquet", tmp_path / "b" / "sequences.parquet"
    files.write_parquet(first, lesson_frame)
    files.write_parquet(second, data.generate(DataConfig()))
    assert first.read_bytes() == second.read_bytes()
    pd.testing.assert_frame_equal(files.read_parquet(first), lesson_frame)
    # No temporary siblings are left behind.
    assert sorted(p.name for p in first.parent.iterdir()) == ["sequences.parquet"]


def test_features_shapes_and_marker(lesson_frame):
    heldout = data.split_frame(lesson_frame, "heldout")
    inputs, labels, marked = frames.features(heldout, 12)
    assert inputs.shape == (180, 12, 2) and inputs.dtype == torch.float64
    assert labels.shape == (180,) and labels.dtype == torch.float64
    assert marked.shape == (180,) and marked.dtype == torch.long
    # The indicator channel is one-hot at the marked step.
    assert torch.equal(inputs[..., 1].sum(-1), torch.ones(180, dtype=torch.float64))
    assert torch.equal(inputs[..., 1].argmax(-1), marked)
    assert set(inputs[..., 1].unique().tolist()) == {0.0, 1.0}
    # Held-out row 0 is sequence 540 of the lesson, with marked step 11 (SPEC section 5).
    assert int(marked[0]) == 11
    expected = lesson.model_inputs(lesson.build_sequences(720)[540:])
    assert torch.equal(inputs, torch.tensor([x for x, _, _ in expected], dtype=torch.float64))
    assert labels.tolist() == [float(y) for _, y, _ in expected]
    assert marked.tolist() == [m for _, _, m in expected]


def test_features_float32():
    frame = data.generate(DataConfig(sequences=3, split=[1, 1, 1]))
    inputs, labels, _ = frames.features(frame, 12, dtype=torch.float32)
    assert inputs.dtype == labels.dtype == torch.float32
    assert inputs.shape == (3, 12, 2)
