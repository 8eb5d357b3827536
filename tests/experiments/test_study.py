"""The seed study: per-seed numbers, chunking, the summary, bad input, the Hydra app."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import reference_lesson as lesson
import torch

from pipeline import data
from pipeline import study as study_app
from pipeline.analysis import seed_study
from pipeline.config import validate
from pipeline.core import measures, precision
from pipeline.core.errors import ConfigError, DivergenceError
from pipeline.memory.device import training_piece
from pipeline.stages import generate
from tests.conftest import GOLDEN_RUNS, composed, small_overrides

SMALL = [*small_overrides(), "study.seeds=6", "study.bootstrap=50"]


def study_cfg(*overrides: str):
    return validate(composed([*SMALL, *overrides]))


@pytest.fixture(scope="module")
def small_frame():
    return data.generate(study_cfg().data)


def test_lesson_seeds_have_the_golden_numbers():
    cfg = validate(composed(["study.seeds=3", "study.bootstrap=10"]))
    frame, _ = generate.run(cfg)
    table, summary = seed_study.run(cfg, frame)
    assert table["seed"].tolist() == [1, 2, 3]
    for seed, golden in GOLDEN_RUNS.items():
        row = table[table["seed"] == int(seed)].iloc[0]
        for key, value in golden.items():
            got = row[key]
            assert (got == value) if isinstance(value, int) else (round(got, 4) == value), key
    assert round(summary["pair_gap"]["observed"], 4) == 0.1056
    assert summary["lesson_seeds"]["1"]["heldout_accuracy"] == pytest.approx(160 / 180)


def test_other_seeds_match_the_lessons_own_code(small_frame):
    cfg = study_cfg()
    table, _ = seed_study.run(cfg, small_frame)
    ref = lesson.Lesson(cfg.data.seed, 120, 12, (60, 30, 30), cfg.train.epochs, cfg.train.lr)
    for seed in (3, 5, 6):
        trained = ref.train_run(seed)
        row = table[table["seed"] == seed].iloc[0]
        names = [c for c in table.columns if c[:2] in ("Wk", "Wv", "q_", "w_") or c == "b"]
        torch.testing.assert_close(
            torch.tensor(row[names].to_numpy(dtype=float)),
            precision.settle(torch.tensor(lesson.flat(trained), dtype=torch.float64)),
            rtol=1e-12,
            atol=1e-14,
        )
        assert row["train_accuracy"] == lesson.accuracy(trained, ref.train_set)
        assert row["heldout_accuracy"] == lesson.accuracy(trained, ref.heldout_set)
        mass, hit = lesson.attention_measures(trained, ref.heldout_set)
        agree, top_effect, high, high_low = lesson.causality(trained, ref.heldout_set)
        # The reference keeps its unsettled parameters: 5e-9 apart at most.
        assert math.isclose(row["marker_mass"], mass, abs_tol=1e-7)
        assert row["argmax_hit"] == hit and row["weight_effect_agreement"] == agree
        assert math.isclose(row["top_weight_effect"], top_effect, abs_tol=1e-7)
        assert (row["high_weight"], row["high_weight_low_effect"]) == (high, high_low)


def test_chunk_size_changes_no_number(small_frame):
    """Chunks of 1 and of 4 seeds: accuracies, hits and counts exactly equal, real
    numbers to float64 rounding (a batch of other size rounds differently at 1e-16)."""
    one, one_summary = seed_study.run(study_cfg("study.chunk=1"), small_frame)
    four, four_summary = seed_study.run(study_cfg("study.chunk=4"), small_frame)
    exact = ["seed", "train_accuracy", "heldout_accuracy", "argmax_hit"]
    exact += ["weight_effect_agreement", "high_weight", "high_weight_low_effect"]
    assert one[exact].equals(four[exact])
    for column in one.columns:
        torch.testing.assert_close(
            torch.tensor(one[column].to_numpy(dtype=float)),
            torch.tensor(four[column].to_numpy(dtype=float)),
            rtol=1e-12,
            atol=1e-14,
        )
    assert one_summary["pair_gap"] == four_summary["pair_gap"]
    assert one_summary["lesson_seeds"] == four_summary["lesson_seeds"]
    for name in measures.means():
        for key, value in one_summary[name].items():
            assert four_summary[name][key] == pytest.approx(value, rel=1e-12, abs=1e-14)


def assert_threads_change_no_byte(cfg, frame, torch_threads, threads: int) -> None:
    """The study of `cfg` on one torch thread and on `threads`: the same per-seed
    table and the same summary, byte for byte."""
    torch_threads(1)
    one, one_summary = seed_study.run(cfg, frame)
    torch_threads(threads)
    many, many_summary = seed_study.run(cfg, frame)
    assert one.equals(many)
    assert json.dumps(one_summary) == json.dumps(many_summary)


def test_chunks_on_threads_give_the_bytes_of_one_thread(small_frame, torch_threads):
    """Chunks run on threads of their own, each on one torch thread: every number is
    that of a single thread, byte for byte."""
    cfg = study_cfg("study.chunk=2")
    assert_threads_change_no_byte(cfg, small_frame, torch_threads, 2)


@pytest.mark.parametrize("kind", ["lesson", "sink", "multihead"])
def test_pieces_of_a_chunk_train_each_run_to_the_chunk_s_bits(small_frame, torch_threads, kind):
    """One chunk of 6 seeds: on one thread one piece; on three, its training is three
    pieces of 2 (every thread has work), then the chunk is evaluated whole. These
    kinds train every run in one pass, whose runs never meet: every byte the same."""
    cfg = study_cfg(f"model={kind}", "study.chunk=6")
    assert training_piece(6, 6, 3) == 2
    assert_threads_change_no_byte(cfg, small_frame, torch_threads, 3)


def test_pieces_keep_posenc_s_blocks_whole(torch_threads, monkeypatch):
    """Posenc trains in blocks of 50 whose sums round by where a run sits: seeds 51..150
    in one chunk of 100 are two blocks. On 16 threads their pieces are 50 runs each
    (63 rounded up to whole blocks), every byte as on one thread; pieces of 7, cut
    through the blocks, move seeds 59 and 74 (measured on the lesson's data)."""
    cfg = validate(composed(["model=posenc", "study.chunk=100"]))
    frame = data.generate(cfg.data)
    seeds = list(range(51, 151))
    torch_threads(1)
    one = seed_study.train_seeds(cfg, frame, seeds)
    torch_threads(16)
    assert training_piece(100, 100, 16, together=50) == 50
    many = seed_study.train_seeds(cfg, frame, seeds)
    assert torch.equal(one.params, many.params)
    monkeypatch.setattr(seed_study, "runs_together", lambda *_: 1)
    cut = seed_study.train_seeds(cfg, frame, seeds)
    moved = (one.params != cut.params).any(1).nonzero().flatten().tolist()
    assert [seeds[i] for i in moved] == [59, 74]


def test_summary_is_deterministic_and_follows_its_definitions(small_frame):
    cfg = study_cfg()
    table, summary = seed_study.run(cfg, small_frame)
    assert json.dumps(seed_study.run(cfg, small_frame)[1]) == json.dumps(summary)
    assert summary["seeds"] == 6
    accuracy = table["heldout_accuracy"]
    assert summary["heldout_accuracy"]["mean"] == pytest.approx(accuracy.mean(), abs=1e-15)
    assert summary["heldout_accuracy"]["std"] == pytest.approx(accuracy.std(ddof=0), abs=1e-15)
    assert summary["share_marker_mass_above_half"] == (table["marker_mass"] > 0.5).mean()
    lesson_gap = abs(accuracy[0] - accuracy[1])
    assert summary["pair_gap"]["observed"] == pytest.approx(lesson_gap, abs=1e-15)
    for seed in ("1", "2"):
        mine = summary["lesson_seeds"][seed]["heldout_accuracy"]
        assert summary["lesson_seeds"][seed]["percentile"] == (accuracy < mine - 1e-9).mean()
    for name in measures.means():
        numbers = summary[name]
        assert numbers["min"] <= numbers["q05"] <= numbers["median"] <= numbers["q95"]
        assert numbers["ci95_low"] <= numbers["ci95_high"]
    # The bootstrap seed draws the resamples: it moves the intervals and nothing else.
    other = seed_study.run(study_cfg("study.bootstrap_seed=1"), small_frame)[1]
    interval = ("ci95_low", "ci95_high")
    for name in measures.means():
        assert {k: v for k, v in other[name].items() if k not in interval} == {
            k: v for k, v in summary[name].items() if k not in interval
        }
    assert other["pair_gap"] == summary["pair_gap"]


def test_lesson_seeds_outside_the_study_are_trained_for_the_gap(small_frame):
    table, summary = seed_study.run(study_cfg("train.seeds=[2,40]"), small_frame)
    assert 40 not in table["seed"].tolist()
    assert list(summary["lesson_seeds"]) == ["2", "40"]
    alone, _ = seed_study.run(study_cfg("study.seeds=40", "study.chunk=40"), small_frame)
    expected = alone.set_index("seed").loc[40, "heldout_accuracy"]
    assert summary["lesson_seeds"]["40"]["heldout_accuracy"] == expected


def test_diverging_seeds_are_named(small_frame):
    with pytest.raises(DivergenceError, match=r"study diverged: seeds 1, 2, .*\(\d+ of 6\)"):
        seed_study.run(study_cfg("train.lr=1e6", "study.chunk=2"), small_frame)


@pytest.mark.parametrize(
    ("override", "key"),
    [("study.seeds=1", "study.seeds"), ("study.bootstrap=0", "study.bootstrap")]
    + [("study.chunk=0", "study.chunk")],
)
def test_bad_study_values_name_the_key(override, key):
    with pytest.raises(ConfigError, match=rf"invalid config value {key}="):
        study_cfg(override)


def test_hydra_app_sweeps_one_study_per_config(tmp_path):
    overrides = [o for o in SMALL if not o.startswith("study.seeds")] + ["study.seeds=3"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.study",
            "-m",
            *overrides,
            "train.lr=0.3,0.6",
            "tracking.enabled=false",
        ]
        + [f"hydra.sweep.dir={tmp_path}"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    for job, lr in (("0", "0.3"), ("1", "0.6")):
        cfg = validate(composed([*overrides, f"train.lr={lr}"]))
        expected = seed_study.run(cfg, data.generate(cfg.data))[1]
        written = json.loads((tmp_path / job / "summary.json").read_text())
        assert written == json.loads(json.dumps(precision.rounded(expected)))


def test_hydra_app_bad_value_is_one_line(app_in_process, tmp_path):
    code, _, stderr = app_in_process(study_app, "study.chunk=0", f"hydra.run.dir={tmp_path}")
    assert code == 1
    assert stderr == "error: invalid config value study.chunk=0: must be an integer >= 1\n"
