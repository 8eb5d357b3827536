"""Issue 9: the faithfulness battery, by hand, against scipy and on the default lesson."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from heldout_lesson import heldout_lesson
from scipy.stats import kendalltau

from pipeline.analysis import explainers, faithfulness, metrics
from pipeline.config import PROJECT_ROOT, FaithfulnessConfig, ModelConfig, validate
from pipeline.core import measures, ranking, ties
from pipeline.core.errors import ConfigError
from pipeline.models import interface
from pipeline.models import lesson as lesson_model
from pipeline.models.parameters import Params
from tests.conftest import composed

F64 = torch.float64
FEW_NODES = FaithfulnessConfig(ig_steps=8)


def t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


@pytest.fixture(scope="module")
def lesson(default_cfg):
    return heldout_lesson(default_cfg)


@pytest.fixture(scope="module")
def lesson_battery(lesson):
    return faithfulness.battery(
        lesson.params, lesson.inputs, lesson.labels, lesson.marked, lesson.seeds
    )


# --- Kendall tau_b ---------------------------------------------------------------------------


def test_kendall_tau_b_matches_scipy_with_ties():
    generator = torch.Generator().manual_seed(9)
    # Small integer ranges force ties in x, in y and in both; several lengths.
    for steps, levels in [(12, 4), (12, 3), (5, 2), (2, 2), (30, 6)]:
        x = torch.randint(levels, (40, steps), generator=generator).to(F64)
        y = torch.randint(levels, (40, steps), generator=generator).to(F64)
        got = ranking.kendall_tau_b(x, y)  # integers: exact ties only, as in scipy
        for i in range(40):
            expected = kendalltau(x[i].numpy(), y[i].numpy()).statistic
            if math.isnan(expected):
                assert math.isnan(float(got[i]))
            else:
                assert float(got[i]) == pytest.approx(expected, abs=1e-12)


def test_kendall_tau_b_batched_and_degenerate():
    x = t([[[1, 2, 3, 4], [1, 1, 2, 2]], [[4, 3, 2, 1], [5, 5, 5, 5]]])
    y = t([[[1, 2, 3, 4], [1, 2, 2, 3]], [[1, 2, 3, 4], [1, 2, 3, 4]]])
    got = ranking.kendall_tau_b(x, y)
    assert got.shape == (2, 2)
    assert got[0, 0] == 1 and got[1, 0] == -1
    assert float(got[0, 1]) == pytest.approx(kendalltau([1, 1, 2, 2], [1, 2, 2, 3]).statistic)
    assert math.isnan(float(got[1, 1]))  # constant scores: no tau_b, as in scipy


def test_kendall_tau_b_ties_float_noise():
    """Values within ties.RTOL of the largest |value| tie, where scipy sees an order."""
    noisy = t([0.5, 0.5 + 1e-16, 0.25, 0.125])  # a tie broken by one rounding
    clean = t([0.5, 0.5, 0.25, 0.125])
    assert float(ranking.kendall_tau_b(noisy, clean)) == 1.0
    assert kendalltau(noisy.numpy(), clean.numpy()).statistic < 1.0
    # A real difference of 1e-9 relative is still an order.
    step = t([0.5, 0.5 * (1 + 1e-9), 0.25, 0.125])
    assert float(ranking.kendall_tau_b(step, clean)) < 1.0


# --- orders, ranks, precision ----------------------------------------------------------------

SCORES = t([[[0.1, 0.5, 0.3, 0.5], [0.2, 0.2, 0.2, 0.2], [0.0, 0.9, 0.4, 0.1]]])  # (1, 3, 4)


def test_descending_order_first_max_wins():
    order = ties.descending_order(SCORES)
    assert order.tolist() == [[[1, 3, 2, 0], [0, 1, 2, 3], [1, 2, 3, 0]]]
    positions = ranking.order_positions(order)
    assert positions.tolist() == [[[3, 0, 2, 1], [0, 1, 2, 3], [3, 0, 1, 2]]]


def test_hit_rank_and_precision_with_ties():
    # Marked steps 3, 2, 1: a tie for the top, a four-way tie, a clear top.
    marked = torch.tensor([3, 2, 1])
    assert ranking.hit_at_1(SCORES, marked).tolist() == [[0.0, 0.0, 1.0]]  # first max wins
    assert ranking.marked_rank(SCORES, marked).tolist() == [[1.0, 1.0, 1.0]]  # ties not larger
    assert ranking.average_precision(SCORES, marked).tolist() == [[0.5, 0.25, 1.0]]
    marked = torch.tensor([0, 0, 3])
    assert ranking.marked_rank(SCORES, marked).tolist() == [[4.0, 1.0, 3.0]]
    assert ranking.average_precision(SCORES, marked).tolist() == [[0.25, 0.25, 1 / 3]]


def reference_average_precision(scores: list[float], positive: int | set[int]) -> float:
    """scikit-learn's definition: sum over thresholds of (R_n - R_{n-1}) P_n."""
    positives = {positive} if isinstance(positive, int) else positive
    total, recall_before = 0.0, 0.0
    for threshold in sorted(set(scores), reverse=True):
        chosen = [i for i, s in enumerate(scores) if s >= threshold]
        hits = len(positives & set(chosen))
        recall = hits / len(positives)
        total += (recall - recall_before) * (hits / len(chosen))
        recall_before = recall
    return total


def test_average_precision_against_definition():
    generator = torch.Generator().manual_seed(3)
    scores = torch.randint(5, (1, 200, 8), generator=generator).to(F64)
    marked = torch.randint(8, (200,), generator=generator)
    got = ranking.average_precision(scores, marked)[0]
    for i in range(200):
        expected = reference_average_precision(scores[0, i].tolist(), int(marked[i]))
        assert float(got[i]) == pytest.approx(expected, abs=1e-15)


def test_rationale_metrics_against_a_set_of_steps():
    """A rationale of several steps (the rise task's m - 1 and m): hit@1 is the top step
    being one of them, the rank how far down both are, AUPRC scikit-learn's."""
    generator = torch.Generator().manual_seed(4)
    scores = torch.randint(5, (1, 300, 8), generator=generator).to(F64)
    rationale = torch.rand(300, 8, generator=generator) < 0.3
    rationale[torch.arange(300), torch.randint(8, (300,), generator=generator)] = True
    hits = ranking.hit_at_1(scores, rationale)[0]
    ranks = ranking.marked_rank(scores, rationale)[0]
    precision = ranking.average_precision(scores, rationale)[0]
    for i in range(300):
        row, steps = scores[0, i].tolist(), set(rationale[i].nonzero().flatten().tolist())
        assert hits[i] == float(row.index(max(row)) in steps)
        lowest = min(row[t] for t in steps)
        others_above = sum(1 for t, v in enumerate(row) if t not in steps and v > lowest)
        assert ranks[i] == len(steps) + others_above
        assert float(precision[i]) == pytest.approx(
            reference_average_precision(row, steps), abs=1e-15
        )


def test_a_one_step_rationale_is_scored_as_the_lessons_marked_step():
    """With one step the set formulas give the single-step ones bit for bit (the
    lesson's committed numbers)."""
    generator = torch.Generator().manual_seed(5)
    scores = torch.randint(4, (3, 50, 12), generator=generator).to(F64)  # with ties
    marked = torch.randint(12, (50,), generator=generator)
    mask = torch.nn.functional.one_hot(marked, 12).to(torch.bool)
    at_marked = scores.gather(-1, marked.expand(3, 50).unsqueeze(-1))
    hit = (scores.argmax(-1) == marked).to(F64)
    rank = 1 + (scores > at_marked).sum(-1).to(F64)
    precision = 1 / (scores >= at_marked).sum(-1).to(F64)
    assert torch.equal(ranking.hit_at_1(scores, mask), hit)
    assert torch.equal(ranking.marked_rank(scores, mask), rank)
    assert torch.equal(ranking.average_precision(scores, mask), precision)


# --- removal: AOPC and flips, by hand ---------------------------------------------------------


def mean_model(bias: float = 0.0) -> Params:
    """One run, d_k = d_v = 1: uniform weights over the kept steps, logit = bias +
    mean of the kept readings (key direction 0, value direction (1, 0))."""
    return Params(
        ModelConfig(d_k=1, d_v=1),
        {
            "Wk": torch.zeros(1, 1, 2, dtype=F64),
            "Wv": t([[[1.0, 0.0]]]),
            "q": torch.ones(1, 1, dtype=F64),
            "w": torch.ones(1, 1, dtype=F64),
            "b": t([bias]),
        },
    )


INPUTS = t([[[3.0, 0.0], [0.0, 0.0], [-1.0, 0.0]]])  # readings 3, 0, -1: logit 2/3


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_aopc_and_flips_by_hand():
    params = mean_model()
    order = ties.descending_order(t([[[0.9, 0.5, 0.1]]]))  # steps 0, 1, 2
    got = faithfulness.aopc_and_flips(params, INPUTS, order)
    full = sigmoid(2 / 3)  # predicted class 1
    # Without step 0: mean(0, -1); without 0, 1: -1. Only step 0: 3; only 0, 1: 1.5.
    comprehensiveness = ((full - sigmoid(-0.5)) + (full - sigmoid(-1))) / 2
    sufficiency = ((full - sigmoid(3)) + (full - sigmoid(1.5))) / 2
    assert float(got["aopc_comprehensiveness"]) == pytest.approx(comprehensiveness, abs=1e-15)
    assert float(got["aopc_sufficiency"]) == pytest.approx(sufficiency, abs=1e-15)
    assert float(got["flips_to_decision"]) == 1.0  # removing step 0 flips 2/3 to -0.5


def test_aopc_follows_the_predicted_class():
    params = mean_model(bias=-1.0)  # logit 2/3 - 1 = -1/3: predicted class 0
    order = ties.descending_order(t([[[0.1, 0.5, 0.9]]]))  # steps 2, 1, 0
    got = faithfulness.aopc_and_flips(params, INPUTS, order)
    full = 1 - sigmoid(-1 / 3)
    # Without step 2: mean(3, 0) - 1 = 0.5 (flips); without 2, 1: 2. Only 2: -2; only 2, 1: -1.5.
    comprehensiveness = ((full - (1 - sigmoid(0.5))) + (full - (1 - sigmoid(2)))) / 2
    sufficiency = ((full - (1 - sigmoid(-2))) + (full - (1 - sigmoid(-1.5)))) / 2
    assert float(got["aopc_comprehensiveness"]) == pytest.approx(comprehensiveness, abs=1e-15)
    assert float(got["aopc_sufficiency"]) == pytest.approx(sufficiency, abs=1e-15)
    assert float(got["flips_to_decision"]) == 1.0


# ERASER (DeYoung et al., ACL 2020; jayded/eraserbenchmark, rationale_benchmark/metrics.py).


def eraser_aopc(instances: list[dict], key: str) -> float:
    """ERASER's `_instances_aopc`, as it reads: per instance beta_0 - beta_k of the
    predicted class at every threshold, then the average of the flattened array."""
    scores = [
        [inst["classification_scores"][inst["classification"]] - step[key][inst["classification"]]
         for step in inst["thresholded_scores"]]
        for inst in instances
    ]  # fmt: skip
    return float(np.average(np.array(scores)))


def test_aopc_is_eraser_s_on_the_same_removal_curves():
    """Our thresholds are k = 1..T-1 steps (ERASER's, shares of the tokens)."""
    generator = torch.Generator().manual_seed(20)
    inputs = torch.stack(
        [torch.randn(40, 5, generator=generator, dtype=F64), torch.zeros(40, 5, dtype=F64)], -1
    )
    order = ties.descending_order(torch.rand(1, 40, 5, generator=generator, dtype=F64))
    params = mean_model(bias=0.1)
    logits, without_top, only_top = faithfulness.removal_curves(params, inputs, order)

    def classes(logit: float) -> dict[int, float]:
        return {1: sigmoid(logit), 0: 1 - sigmoid(logit)}

    instances = [
        {
            "classification": int(float(logits[0, i]) > 0),
            "classification_scores": classes(float(logits[0, i])),
            "thresholded_scores": [
                {
                    "threshold": k,
                    "comprehensiveness_classification_scores": classes(float(without_top[k, 0, i])),
                    "sufficiency_classification_scores": classes(float(only_top[k, 0, i])),
                }
                for k in range(4)
            ],
        }
        for i in range(40)
    ]
    got = faithfulness.aopc_and_flips(params, inputs, order)
    for ours, key in [
        ("aopc_comprehensiveness", "comprehensiveness_classification_scores"),
        ("aopc_sufficiency", "sufficiency_classification_scores"),
    ]:
        assert float(got[ours].mean()) == pytest.approx(eraser_aopc(instances, key), abs=1e-14)


def test_auprc_is_eraser_s_average_precision_not_its_trapezoid_auprc():
    """By hand, scores (0.9, 0.1, 0.5, 0.3) against the rationale {0, 3}: the step-wise
    average precision is (1 + 2/3) / 2 = 5/6, scikit-learn's average_precision_score
    and ERASER's `average_precision`. ERASER's field named `auprc` integrates the
    precision-recall curve by trapezoids (sklearn's auc over precision_recall_curve):
    19/24 here. Ours is the first."""
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve

    scores, truth = [0.9, 0.1, 0.5, 0.3], [1, 0, 0, 1]
    got = float(ranking.average_precision(t([[scores]]), torch.tensor([truth]) > 0))
    assert got == pytest.approx(5 / 6, abs=1e-15)
    assert average_precision_score(truth, scores) == pytest.approx(5 / 6, abs=1e-15)
    precision, recall, _ = precision_recall_curve(truth, scores)
    assert auc(recall, precision) == pytest.approx(19 / 24, abs=1e-15)


def test_flips_capped_at_the_number_of_steps():
    params = mean_model()
    # Removing step 2 (-1), then step 1 (0) leaves 1.5, then 3: the class never flips.
    order = ties.descending_order(t([[[0.1, 0.5, 0.9]]]))
    assert float(faithfulness.aopc_and_flips(params, INPUTS, order)["flips_to_decision"]) == 3.0
    # Order 1, 0, 2: without 1 -> mean(3, -1) = 1; without 1, 0 -> -1: flips at 2.
    order = ties.descending_order(t([[[0.5, 0.9, 0.1]]]))
    assert float(faithfulness.aopc_and_flips(params, INPUTS, order)["flips_to_decision"]) == 2.0


def test_removal_curves_against_a_loop(lesson):
    """The batched top-k removal against one forward per (run, example, k)."""
    params, inputs = lesson.params, lesson.inputs[:15]
    scores = explainers.value_norm(params, inputs)
    order = ties.descending_order(scores)
    got = faithfulness.aopc_and_flips(params, inputs, order)
    steps = inputs.shape[1]
    for s in range(params.runs):
        run = params.map(lambda x, s=s: x[s : s + 1])
        for n in range(inputs.shape[0]):
            x = inputs[n : n + 1]
            logit = float(lesson_model.forward(run, x)[0])
            sign = 1.0 if logit > 0 else -1.0
            full = sigmoid(sign * logit)
            comp, suff, flip = 0.0, 0.0, steps
            for k in range(1, steps):
                top = torch.zeros(1, 1, steps, dtype=torch.bool)
                top[..., order[s, n, :k]] = True
                without = float(lesson_model.forward(run, x, dropped=top)[0])
                only = float(lesson_model.forward(run, x, dropped=~top)[0])
                comp += (full - sigmoid(sign * without)) / (steps - 1)
                suff += (full - sigmoid(sign * only)) / (steps - 1)
                if flip == steps and (without > 0) != (logit > 0):
                    flip = k
            assert float(got["aopc_comprehensiveness"][s, n]) == pytest.approx(comp, abs=1e-12)
            assert float(got["aopc_sufficiency"][s, n]) == pytest.approx(suff, abs=1e-12)
            assert float(got["flips_to_decision"][s, n]) == flip


# --- the battery on the default lesson --------------------------------------------------------


def test_battery_document_shape(lesson_battery):
    rows = [*explainers.applicable(ModelConfig()), measures.RANDOM]
    assert list(lesson_battery) == ["1", "2"]
    for seed in ("1", "2"):
        assert list(lesson_battery[seed]) == rows
        for row in rows:
            values = lesson_battery[seed][row]
            assert list(values) == list(measures.SCORES)
            assert all(isinstance(v, float) and math.isfinite(v) for v in values.values())
            assert 1 <= values["flips_to_decision"] <= 12
            assert 1 <= values["marked_rank"] <= 12
            assert 0 <= values["hit_at_1"] <= 1 and 0 < values["auprc"] <= 1
    assert json.loads(json.dumps(lesson_battery)) == lesson_battery


def test_battery_lesson_identities(lesson, lesson_battery):
    _, weights = lesson_model.forward(lesson.params, lesson.inputs)
    hits = metrics.argmax_hit(weights, lesson.marked).tolist()
    for i, seed in enumerate(("1", "2")):
        runs = lesson_battery[seed]
        assert runs["attention"]["hit_at_1"] == hits[i]
    # SPEC golden argmax hit.
    assert round(lesson_battery["1"]["attention"]["hit_at_1"], 4) == 0.3444
    assert lesson_battery["2"]["attention"]["hit_at_1"] == 1.0


def test_battery_does_not_depend_on_batching(lesson, lesson_battery):
    """Chunking the runs, or scoring one run alone, changes no number (random included)."""
    chunked = faithfulness.battery(
        lesson.params, lesson.inputs, lesson.labels, lesson.marked, lesson.seeds, seed_chunk=1
    )
    alone = faithfulness.battery(
        lesson.params.map(lambda x: x[1:]), lesson.inputs, lesson.labels, lesson.marked, [2]
    )
    for seed, rows in chunked.items():
        for row, values in rows.items():
            assert values == pytest.approx(lesson_battery[seed][row], rel=1e-9, abs=1e-12)
    for row, values in alone["2"].items():
        assert values == pytest.approx(lesson_battery["2"][row], rel=1e-9, abs=1e-12)


def test_battery_chunks_on_threads_give_the_bytes_of_one_thread(lesson, torch_threads):
    args = (lesson.params, lesson.inputs, lesson.marked, lesson.seeds)
    torch_threads(1)
    one = faithfulness.battery_tensors(*args, seed_chunk=1)
    torch_threads(2)
    two = faithfulness.battery_tensors(*args, seed_chunk=1)
    for row, metrics_of_row in one.items():
        for metric, values in metrics_of_row.items():
            assert torch.equal(values, two[row][metric]), (row, metric)


def test_random_order_is_seeded_explicitly(lesson):
    args = (lesson.inputs.shape[0], 12)
    first = faithfulness.random_scores([1, 2], *args, order_seed=0, dtype=F64)
    torch.manual_seed(123)  # the global RNG plays no part
    again = faithfulness.random_scores([1, 2], *args, order_seed=0, dtype=F64)
    other = faithfulness.random_scores([1, 2], *args, order_seed=1, dtype=F64)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    assert not torch.equal(first[0], first[1])


def test_battery_checks_its_inputs(lesson):
    with pytest.raises(ValueError, match="held-out sizes differ"):
        faithfulness.battery(
            lesson.params, lesson.inputs, lesson.labels[:5], lesson.marked, lesson.seeds
        )
    with pytest.raises(ValueError, match="1 seeds for 2 runs"):
        faithfulness.battery(lesson.params, lesson.inputs, lesson.labels, lesson.marked, [1])
    with pytest.raises(ValueError, match="must be >= 0"):
        faithfulness.battery(
            lesson.params,
            lesson.inputs,
            lesson.labels,
            lesson.marked,
            [1, 2],
            settings=FaithfulnessConfig(order_seed=-1),
        )


# --- over the study's runs, and the committed outputs ---------------------------------------


def test_per_example_values_average_to_the_run_means(lesson):
    args = (lesson.params, lesson.inputs, lesson.marked, lesson.seeds)
    means = faithfulness.battery_tensors(*args)
    per_example = faithfulness.battery_tensors(*args, per_example=True)
    assert list(per_example) == list(means)
    for row, numbers in per_example.items():
        assert numbers["hit_at_1"].shape == (2, 180), row
        for metric, values in faithfulness.run_means(numbers).items():
            assert torch.equal(values, means[row][metric]), (row, metric)


def test_study_pairs_every_competitor_pair_or_each_against_a_reference(lesson):
    args = (lesson.params, lesson.inputs, lesson.marked, lesson.seeds)
    per_example = faithfulness.battery_tensors(*args, per_example=True)
    every = faithfulness.study_pairs(per_example, resamples=20, bootstrap_seed=0)
    assert "attention vs gradient" in every["hit_at_1"] and len(every["hit_at_1"]) == 15
    assert not any(
        "loo" in key for key in every["tau_loo"]
    )  # the reference of tau does not compete
    assert not any(measures.RANDOM in key for pairs in every.values() for key in pairs)
    against = faithfulness.study_pairs(per_example, 20, 0, reference="attention")
    assert list(against["auprc"]) == [
        f"{row} vs attention" for row in explainers.applicable(ModelConfig()) if row != "attention"
    ]
    entry = against["auprc"]["gradient vs attention"]
    mean = {row: per_example[row]["auprc"].mean(-1).mean() for row in ("gradient", "attention")}
    assert entry["difference"] == pytest.approx(float(mean["gradient"] - mean["attention"]))


def test_the_window_battery_scores_rollout_and_flow_and_multihead_each_head():
    inputs = torch.randn(6, 5, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    marked = torch.tensor([0, 1, 2, 3, 4, 0])
    window = interface.init_params(1, [1, 2], ModelConfig(kind="window", window=2), 5)
    table = faithfulness.battery_tensors(window, inputs, marked, [1, 2], settings=FEW_NODES)
    assert list(table)[-3:] == ["attention_rollout", "attention_flow", measures.RANDOM]
    heads = interface.init_params(1, [1, 2], ModelConfig(kind="multihead", heads=2), 5)
    table = faithfulness.battery_tensors(heads, inputs, marked, [1, 2], settings=FEW_NODES)
    assert list(table)[-4:] == [
        "attention_max_head",
        "attention_head1",
        "attention_head2",
        measures.RANDOM,
    ]


def test_first_shares_count_ties_and_leave_out_the_reference_and_random():
    t = torch.tensor
    table = {
        "attention": {m: t([1.0, 0.0]) for m in measures.SCORES},
        "gradient": {m: t([1.0, 2.0]) for m in measures.SCORES},
        "loo": {m: t([5.0, 5.0]) for m in measures.SCORES},
        measures.RANDOM: {m: t([9.0, 9.0]) for m in measures.SCORES},
    }
    shares = faithfulness.first_shares(table)
    assert "tau_loo" not in shares["loo"] and shares[measures.RANDOM] == {}
    assert shares["attention"]["tau_loo"] == 0.5 and shares["gradient"]["tau_loo"] == 1.0
    assert shares["loo"]["hit_at_1"] == 1.0  # higher is better; random does not compete
    assert shares["attention"]["marked_rank"] == 1.0  # lower is better: 0 beats 1 and 5
    assert shares["gradient"]["marked_rank"] == 0.5  # tied at 1.0 with attention on run 1
    summary = faithfulness.study_summary(table, resamples=50, bootstrap_seed=0)
    assert summary["seeds"] == 2
    assert summary["explainers"]["gradient"]["tau_loo"]["mean"] == 1.5
    assert summary["explainers"]["loo"]["tau_loo"].keys() == {"mean", "ci95_low", "ci95_high"}


def test_committed_battery_agrees_with_the_lesson_metrics():
    reports = PROJECT_ROOT / "reports"
    battery = json.loads((reports / "faithfulness.json").read_text())["runs"]
    lesson = json.loads((reports / "metrics.json").read_text())["runs"]
    assert set(battery) == set(lesson) == {"1", "2"}
    for seed, run in battery.items():
        assert run["attention"]["hit_at_1"] == lesson[seed]["argmax_hit"]
        assert list(run) == [*explainers.applicable(ModelConfig()), measures.RANDOM]
        assert all(set(numbers) == set(measures.SCORES) for numbers in run.values())
    study = json.loads((reports / "study/faithfulness.json").read_text())
    assert study["seeds"] == 1000
    # Each paired difference is the difference of the two means the study table shows.
    means = study["explainers"]
    for metric, pairs in study["paired"].items():
        assert len(pairs) == math.comb(len(measures.competitors(list(means), metric)), 2)
        for key, entry in pairs.items():
            first, second = key.split(" vs ")
            gap = means[first][metric]["mean"] - means[second][metric]["mean"]
            assert entry["difference"] == pytest.approx(gap, abs=2e-8), (metric, key)
            assert entry["ci95_low"] <= entry["difference"] <= entry["ci95_high"], (metric, key)
            assert entry["share_first_better"] + entry["share_second_better"] <= 1.0


@pytest.mark.parametrize(
    ("override", "key"),
    [("faithfulness.ig_steps=0", "faithfulness.ig_steps")]
    + [("faithfulness.order_seed=-1", "faithfulness.order_seed")],
)
def test_bad_battery_values_name_the_key(override, key):
    with pytest.raises(ConfigError, match=rf"invalid config value {key}="):
        validate(composed([override]))


# --- the task's rationale (issue 30, item 6) --------------------------------------------------


def test_a_task_s_rationale_is_the_steps_its_rule_reads():
    """By hand: rise reads the marked step and the one before it; the lesson, the
    marked step alone; two_patterns, every step (its rationale metrics then apply
    nowhere)."""
    marked = torch.tensor([2, 5])
    rise = faithfulness.task_rationale("rise", marked, 6)
    assert rise.tolist() == [
        [False, True, True, False, False, False],
        [False, False, False, False, True, True],
    ]
    lesson = faithfulness.task_rationale("lesson", marked, 6)
    assert lesson.tolist() == torch.nn.functional.one_hot(marked, 6).bool().tolist()
    every = faithfulness.task_rationale("two_patterns", marked, 6)
    assert faithfulness.applicable_metrics(every.tolist()) == tuple(measures.model_scores())
    assert faithfulness.applicable_metrics(rise.tolist()) == tuple(measures.SCORES)


def test_the_lesson_stage_scores_against_the_task_s_rationale(monkeypatch):
    """With task.kind=rise, hit@1, rank and AUPRC were scored against the marked step
    alone; the stage now passes the task's rationale, as the grid does."""
    from pipeline import data
    from pipeline.experiments.faithfulness import stage
    from pipeline.models import frames

    cfg = validate(composed(["task=rise", "train.epochs=1"]))
    frame = data.generate(cfg.data, "rise")
    _, _, marked = frames.split_tensors(cfg, frame, "heldout", torch.device("cpu"), torch.float64)
    passed = {}

    def record(params, inputs, rationale, seeds, **_):
        passed["rationale"] = rationale
        return {}

    monkeypatch.setattr(stage.faithfulness, "battery_tensors", record)
    table = frames.params_to_frame(
        lesson_model_params(cfg), cfg.train.seeds, cfg.model, cfg.data.steps
    )
    stage.battery_table(cfg, frame, table)
    expected = faithfulness.task_rationale("rise", marked, cfg.data.steps)
    assert torch.equal(passed["rationale"], expected)
    assert int(expected.sum()) == 2 * len(marked)  # two steps per example, not one


def lesson_model_params(cfg) -> Params:
    from pipeline.models import interface

    return interface.init_params(
        cfg.data.seed,
        cfg.train.seeds,
        cfg.model,
        cfg.data.steps,
        torch.float64,
        torch.device("cpu"),
    )
