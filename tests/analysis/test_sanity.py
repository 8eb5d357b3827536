"""Issue 33, part 1: the randomisation sanity checks (pipeline/analysis/sanity.py),
against scipy, by hand on the lesson's attention, and on the default lesson."""

from __future__ import annotations

import math

import pytest
import torch
from heldout_lesson import heldout_lesson
from scipy.stats import rankdata, spearmanr

from pipeline.analysis import explainers, sanity
from pipeline.config import validate
from pipeline.core.kinds import VARIANTS
from pipeline.experiments.faithfulness.sanity_reading import sanity_reading
from pipeline.experiments.faithfulness.section import sanity_table
from pipeline.experiments.grid.cell import cell_config
from pipeline.models import interface
from pipeline.stages import generate
from tests.conftest import composed

F64 = torch.float64


def test_average_ranks_match_scipy_with_ties():
    assert sanity.average_ranks(torch.tensor([3.0, 1.0, 2.0, 2.0])).tolist() == [4, 1, 2.5, 2.5]
    generator = torch.Generator().manual_seed(33)
    for levels in (3, 5, 1000):  # heavy ties, some ties, almost none
        x = torch.randint(levels, (50, 12), generator=generator).to(F64)
        expected = torch.from_numpy(rankdata(x.numpy(), axis=-1))
        assert torch.equal(sanity.average_ranks(x), expected)


def test_spearman_matches_scipy_and_is_nan_on_a_constant_vector():
    generator = torch.Generator().manual_seed(34)
    x = torch.randint(4, (40, 12), generator=generator).to(F64)
    y = torch.randint(4, (40, 12), generator=generator).to(F64)
    got = sanity.spearman(x, y)
    for i in range(40):
        assert float(got[i]) == pytest.approx(spearmanr(x[i], y[i]).statistic, abs=1e-12)
    scores = torch.rand(12, generator=generator, dtype=F64)
    assert float(sanity.spearman(scores, scores)) == 1.0
    assert float(sanity.spearman(scores, -scores)) == -1.0
    assert float(sanity.spearman(scores, 3 * scores + 1)) == 1.0  # ranks only
    assert math.isnan(float(sanity.spearman(scores, torch.ones(12, dtype=F64))))
    # Float noise is a tie (pipeline/core/ties.py), so it never moves a rank.
    noisy = torch.tensor([1.0, 1.0 + 1e-15, 2.0], dtype=F64)
    assert sanity.average_ranks(noisy).tolist() == [1.5, 1.5, 3.0]


def test_the_cascade_re_draws_from_the_output_side_inwards():
    tests = sanity.randomised_groups(validate(composed()).model)
    assert tests == {
        ("cascading", "readout"): {"w", "b"},
        ("cascading", "values"): {"w", "b", "Wv"},
        ("cascading", "keys"): {"w", "b", "Wv", "Wk", "q"},
        ("independent", "readout"): {"w", "b"},
        ("independent", "values"): {"Wv"},
        ("independent", "keys"): {"Wk", "q"},
    }
    window = validate(composed(["model=window"])).model
    assert list(sanity.randomised_groups(window))[3] == ("cascading", "layer")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_kind_s_groups_hold_each_of_its_parameters_once(default_cfg, variant):
    cfg = cell_config(default_cfg, "lesson", variant)
    names = [name for _, group in interface.randomisation_groups(cfg.model) for name in group]
    layout = [name for name, _ in interface.layout(cfg.model, cfg.data.steps)]
    assert sorted(names) == sorted(layout), variant


def test_re_drawn_groups_come_from_a_fresh_init_and_the_rest_stay_trained(default_cfg):
    lesson = heldout_lesson(default_cfg)
    fresh = interface.init_params(10**6, lesson.seeds, default_cfg.model, default_cfg.data.steps)
    model = sanity.redrawn(lesson.params, fresh, frozenset({"w", "b"}))
    for name, tensor in model.named.items():
        source = fresh if name in {"w", "b"} else lesson.params
        assert torch.equal(tensor, source.named[name]), name


def test_randomised_keys_rank_the_unmarked_steps_by_reading_up_or_down(default_cfg):
    """By hand: the lesson's score of step t is u . x_t = u0 r_t + u1 [t = m] with
    u = q Wk, and the softmax keeps its order. So on the unmarked steps any two key
    draws rank by the readings, the same way or reversed: Spearman sign(u0 u0')."""
    lesson = heldout_lesson(default_cfg)
    fresh = interface.init_params(10**6, lesson.seeds, default_cfg.model, default_cfg.data.steps)
    model = sanity.redrawn(lesson.params, fresh, frozenset({"Wk", "q"}))
    first = explainers.attention(lesson.params, lesson.inputs)
    second = explainers.attention(model, lesson.inputs)
    unmarked = lesson.inputs[..., 1] < 0.5  # (N, T)
    steps = lesson.inputs.shape[1] - 1

    def key_reading(params):  # u0 of every run
        return torch.einsum("sk,sk->s", params.named["q"], params.named["Wk"][..., 0])

    signs = torch.sign(key_reading(lesson.params) * key_reading(model))
    for run in range(len(lesson.seeds)):
        a = first[run][unmarked].reshape(-1, steps)
        b = second[run][unmarked].reshape(-1, steps)
        correlations = sanity.spearman(a, b)
        assert torch.equal(correlations, torch.full_like(correlations, float(signs[run])))


def test_permuted_labels_shuffle_the_training_split_alone(small_cfg):
    frame, _ = generate.run(small_cfg)
    permuted = sanity.permuted_labels(frame, 0)
    train = frame["split"] == "train"
    assert permuted.loc[~train, "label"].equals(frame.loc[~train, "label"])
    assert sorted(permuted.loc[train, "label"]) == sorted(frame.loc[train, "label"])
    assert not permuted.loc[train, "label"].equals(frame.loc[train, "label"])
    assert permuted.equals(sanity.permuted_labels(frame, 0))
    assert not permuted.equals(sanity.permuted_labels(frame, 1))


def test_the_random_baseline_s_fresh_noise_is_a_stream_of_its_own():
    from pipeline.analysis.faithfulness import random_scores

    trained = random_scores([1, 2], 30, 12, 0, F64)
    fresh = random_scores([1, 2], 30, 12, 0, F64, salt=(1,))
    assert fresh.shape == trained.shape and not torch.equal(fresh, trained)
    assert torch.equal(fresh, random_scores([1, 2], 30, 12, 0, F64, salt=(1,)))
    assert abs(float(sanity.spearman(trained, fresh).mean())) < 0.1


@pytest.fixture(scope="module")
def lesson_checks(default_cfg):
    """The checks on the lesson's two trained runs."""
    lesson = heldout_lesson(default_cfg)
    frame, _ = generate.run(default_cfg)
    return sanity.checks(default_cfg, frame, lesson.params, lesson.seeds, lesson.inputs)


def test_attention_does_not_move_until_the_keys_are_re_drawn(lesson_checks):
    """Written down before the first run: attention reads only the keys and the query,
    so re-drawing the readout or the values leaves its scores exactly as they were."""
    cascade = lesson_checks["tests"]["cascading"]
    for step in ("readout", "values"):
        entry = cascade[step]["attention"]["spearman"]
        assert (entry["mean"], entry["ci95_low"], entry["ci95_high"]) == (1.0, 1.0, 1.0)
    assert cascade["keys"]["attention"]["spearman"]["mean"] < 1.0
    independent = lesson_checks["tests"]["independent"]
    assert independent["readout"] == cascade["readout"]  # one model, computed once


def test_the_checks_cover_every_row_step_and_measure(lesson_checks, default_cfg):
    rows = [*explainers.rows(default_cfg.model), "random"]
    assert lesson_checks["seeds"] == 2
    assert lesson_checks["groups"] == {"readout": ["w", "b"], "values": ["Wv"], "keys": ["Wk", "q"]}
    steps = {test: list(entries) for test, entries in lesson_checks["tests"].items()}
    assert steps == {
        "cascading": ["readout", "values", "keys"],
        "independent": ["readout", "values", "keys"],
        "labels": ["permuted_labels"],
    }
    for entries in lesson_checks["tests"].values():
        for entry in entries.values():
            assert list(entry) == rows
            for row in rows:
                for measure in sanity.MEASURES:
                    numbers = entry[row][measure]
                    assert numbers["ci95_low"] <= numbers["mean"] <= numbers["ci95_high"]
                    assert numbers["runs"] == 2
    random = lesson_checks["tests"]["cascading"]["keys"]["random"]["spearman"]
    assert abs(random["mean"]) < 0.1  # 2 runs x 180 sequences of two unrelated orders
    assert 0.0 <= lesson_checks["label_heldout_accuracy"] <= 1.0
    assert lesson_checks["heldout_majority_share"] == pytest.approx(1 - 66 / 180)  # 66 positive


def summary_of(values: dict[str, list[float]]) -> dict:
    """A sanity summary whose every step gives row r's Spearman values[r][step]."""

    def entry(mean: float) -> dict:
        return {
            "spearman": {"mean": mean, "ci95_low": mean - 0.05, "ci95_high": mean + 0.05,
                         "q05": mean - 0.3, "median": mean, "q95": mean + 0.3, "runs": 100}
        }  # fmt: skip

    def step(index: int) -> dict:
        return {row: entry(means[index]) for row, means in values.items()}

    return {
        "seeds": 100,
        "label_heldout_accuracy": 0.6333,
        "heldout_majority_share": 0.6333,
        "tests": {
            "cascading": {"readout": step(0), "values": step(1), "keys": step(2)},
            "independent": {"readout": step(0), "values": step(3), "keys": step(4)},
            "labels": {"permuted_labels": step(5)},
        },
    }


def test_the_reading_says_who_passes_who_fails_and_what_leaves_scores_unchanged():
    summary = summary_of(
        {
            "attention": [1.0, 1.0, 0.02, 1.0, 0.02, 0.1],
            "loo": [0.9, 0.6, 0.45, 0.55, 0.34, 0.45],
            "random": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        }
    )
    lines = sanity_reading(summary)
    attention = next(line for line in lines if line.startswith("- `attention`"))
    assert attention.startswith("- `attention` passes: 0.0200 [-0.0300, 0.0700]")
    assert "unchanged (exactly 1) while readout and values are re-drawn" in attention
    assert "re-drawing keys moves it most (0.0200)" in attention
    loo = next(line for line in lines if line.startswith("- `loo`"))
    assert loo.startswith("- `loo` fails: 0.4500 [0.4000, 0.5000]") and "unchanged" not in loo
    assert "labels, 0.4500" in loo
    assert lines[1].startswith("- `attention`")  # the lowest first
    assert "random baseline sits at 0.0000" in lines[-1] and "0.6333" in lines[-1]
    table = sanity_table(summary)
    assert list(table.columns)[:4] == [
        "up to readout",
        "up to values",
        "up to keys",
        "only readout",
    ]
    assert table.loc["loo", "only keys"] == "0.3400"


def test_re_drawn_streams_wrap_and_never_repeat_a_study_run_s():
    cfg = validate(composed(["data.seed=4294966295", "train.seeds=[1000]", "study.seeds=1000"]))
    streams = sanity.fresh_streams(cfg, list(range(1, 101)))
    study = {cfg.data.seed + k for k in range(1, 1001)}
    assert streams[0] == (4294966295 + 10**6 + 1) % 2**32 and not study & set(streams)
    assert all(0 <= stream < 2**32 for stream in streams)
