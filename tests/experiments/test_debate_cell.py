"""One cell of the attention debate (pipeline/experiments/debate/cell.py): every test on a small
config, against numbers that can be worked out apart; a toy kind registered here
goes through every experiment; and the stage's bad input."""

from __future__ import annotations

import json

import pytest
import torch

from pipeline.config import validate
from pipeline.core import kinds, ranking
from pipeline.core.errors import ConfigError, DivergenceError
from pipeline.experiments.debate import cell as debate_cell
from tests.conftest import composed, small_overrides
from tests.models.helpers import toy_kind


@pytest.fixture(scope="module")
def small():
    cfg = validate(composed(small_overrides()))
    return cfg, debate_cell.run_cell(cfg, "lesson", "lesson")


def test_a_cell_holds_every_experiment_on_its_seeds(small):
    cfg, document = small
    assert (document["seeds"], document["trained_seeds"]) == (4, 2)
    assert [row["eps"] for row in document["adversary"]] == cfg.debate.epsilons
    assert [row["penalty"] for row in document["deception"]] == cfg.debate.penalties
    consistent = document["consistent_adversary"]
    assert [row["penalty"] for row in consistent] == cfg.debate.consistent_penalties
    assert len(document["seed_variance"]["per_pair_jsd"]) == 2
    assert document["seed_variance"]["pairs"] == 2  # disjoint pairs of 4 seeds
    for row in document["adversary"]:
        assert 0 <= row["median_max_jsd"]["min"] <= row["median_max_jsd"]["max"] <= 0.6932
        assert len(row["per_seed_median_max_jsd"]) == 4
    # The adversary may move at most as far as a wider band lets it.
    narrow, wide = document["adversary"]
    per_seed = zip(narrow["per_seed_median_max_jsd"], wide["per_seed_median_max_jsd"], strict=True)
    assert all(a <= b + 1e-12 for a, b in per_seed)
    for binned in (document["permutation"]["binned"], document["adversary"][0]["binned"]):
        pairs = sum(part["pairs"] for part in binned)
        assert pairs == 4 * cfg.data.split[2]  # every (run, held-out example) in one bin


def test_no_penalty_is_the_learned_runs(small):
    _, document = small
    ordinary = document["deception"][0]
    assert ordinary["penalty"] == 0 and ordinary["diverged_seeds"] == []
    assert ordinary["heldout_accuracy"] == document["fixed_attention"]["learned"]


def test_the_seed_summary_is_the_spread_and_the_mean_s_interval():
    cfg = validate(composed())
    constant = debate_cell.seed_summary(torch.full((7,), 0.25, dtype=torch.float64), cfg)
    assert constant["median"] == constant["q05"] == constant["q95"] == 0.25
    assert constant["mean_interval"] == [0.25, 0.25]
    spread = debate_cell.seed_summary(torch.arange(10, dtype=torch.float64), cfg)
    low, high = spread["mean_interval"]
    assert 0 <= low < 4.5 < high <= 9


def test_the_permutation_bins_take_each_pair_by_its_largest_weight():
    moved = torch.tensor([[0.1, 0.2, 0.3, 0.4]], dtype=torch.float64)
    largest = torch.tensor([[0.1, 0.5, 0.55, 1.0]], dtype=torch.float64)
    rows = debate_cell.binned_median(moved, largest, bins=2)
    assert [row["pairs"] for row in rows] == [1, 3]  # 0.5 is the second bin's lower edge
    assert [row["median"] for row in rows] == [0.1, 0.3]
    empty = debate_cell.binned_median(moved, largest, bins=10)
    assert empty[3] == {"largest_weight": [0.3, 0.4], "pairs": 0, "median": None}


def test_a_kind_defined_in_a_test_goes_through_every_experiment(monkeypatch):
    toy = toy_kind()
    monkeypatch.setitem(kinds.MODEL_KINDS, "toy", "")
    monkeypatch.setitem(kinds.VARIANTS, "toy", {"kind": "toy"})
    kinds.register_model("toy", toy, pooling=True)
    try:
        toy_cell = [
            "~debate.cells.lesson-lesson",
            "+debate.cells.lesson-toy={task:lesson,variant:toy}",
        ]
        cfg = validate(composed([*small_overrides(), *toy_cell]))
        document = debate_cell.run_cell(cfg, "lesson", "toy")
    finally:
        kinds.POOLING_KINDS.discard("toy")
    assert document["variant"] == "toy" and len(document["adversary"]) == 2
    assert document["deception"][0]["heldout_accuracy"] == (document["fixed_attention"]["learned"])
    assert document["deception"][-1]["penalty"] == 10.0
    with pytest.raises(ConfigError, match=r"variant='toy': allowed: lesson, "):
        validate(composed(["debate.cells.lesson-lesson.variant=toy"]))  # no longer registered


@pytest.mark.parametrize(
    "override, message",
    [
        ("debate.epsilons=[0.01,1.0]", "debate.epsilons=1.0: each eps must be in (0, 1)"),
        ("debate.epsilons=[0]", "debate.epsilons=0.0: each eps must be in (0, 1)"),
        ("debate.penalties=[0,-1]", "debate.penalties=-1.0: each lam must be a finite number >= 0"),
        (
            "debate.consistent_penalties=[-2]",
            "debate.consistent_penalties=-2.0: each lam must be a finite number >= 0",
        ),
        ("debate.penalties=[]", "debate.penalties=[]: must list at least one lam"),
        ("debate.consistent_start=0", "debate.consistent_start=0.0: must be in (0, 1]"),
        ("debate.consistent_start=1.5", "debate.consistent_start=1.5: must be in (0, 1]"),
        ("debate.permutations=0", "debate.permutations=0: must be an integer >= 1"),
        ("debate.seeds=1", "debate.seeds=1: must be an integer >= 2"),
        ("debate.trained_seeds=0", "debate.trained_seeds=0: must be an integer >= 1"),
        (
            "debate.cells.lesson-lesson.task=nope",
            "debate.cells.lesson-lesson.task='nope': allowed: lesson, ",
        ),
        (  # its rationale is every step: nothing for the penalty to hide
            "debate.cells.lesson-lesson.task=two_patterns",
            "debate.cells.lesson-lesson.task='two_patterns': allowed: lesson, first_half, rise",
        ),
    ],
)
def test_bad_debate_settings_are_refused_in_one_line(override, message):
    with pytest.raises(ConfigError) as error:
        validate(composed([override]))
    text = str(error.value)
    assert text.startswith(f"invalid config value {message}"), text
    assert "\n" not in text


def test_the_stage_writes_its_cell_and_refuses_an_unknown_variant(tmp_path, monkeypatch, capsys):
    from pipeline.config.load import composed_yaml
    from pipeline.experiments.debate import stage

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(composed_yaml(small_overrides()))
    stage.main(["lesson", "lesson"])
    assert capsys.readouterr().out.startswith("lesson x lesson: eps 0.01: median max JSD ")
    document = json.loads((tmp_path / "reports/debate/lesson-lesson.json").read_text())
    assert document["seeds"] == 4 and document["params"]["debate.seeds"] == 4
    with pytest.raises(ConfigError, match=r"unknown model variant 'transformer'; allowed: lesson"):
        stage.main(["lesson", "transformer"])


def test_diverged_runs_are_named_by_their_seeds_not_their_positions():
    from pipeline.experiments.debate.cell import diverged

    finite = torch.tensor([True, False, True, False])
    assert diverged([5, 9, 12, 40], finite, "deceptive attention", 10.0) == [9, 40]
    assert diverged([1, 2], torch.tensor([True, True]), "deceptive attention", 10.0) == []
    with pytest.raises(DivergenceError, match=r"^deceptive attention at lam 10.0: all 2 runs "):
        diverged([1, 2], torch.tensor([False, False]), "deceptive attention", 10.0)


def test_deception_s_hits_are_the_battery_s_hit_at_1():
    """rationale_hits computes only the battery's scores and hit@1: the same numbers as
    the whole battery, over more runs than one chunk."""
    from pipeline.analysis import faithfulness
    from pipeline.models import interface

    cfg = validate(composed(small_overrides()))
    seeds = list(range(1, faithfulness.SEED_CHUNK + 3))
    params = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps)
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(7, cfg.data.steps, 2, generator=generator, dtype=torch.float64)
    rationale = torch.randint(0, cfg.data.steps, (7,), generator=generator)
    mask = ranking.rationale_mask(rationale, cfg.data.steps)
    hits = debate_cell.rationale_hits(params, inputs, mask, cfg)
    table = faithfulness.battery_tensors(
        params, inputs, mask, seeds, list(debate_cell.EXPLAINERS_ASKED), cfg.faithfulness
    )
    for name in debate_cell.EXPLAINERS_ASKED:
        assert hits[name].shape == (len(seeds),)
        assert torch.equal(hits[name], table[name]["hit_at_1"]), name
    assert len({tuple(h.tolist()) for h in hits.values()}) > 1  # the explainers differ
