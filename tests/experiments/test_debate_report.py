"""The section "The attention debate" (pipeline/experiments/debate/section.py): its tables
hold every cell's numbers, and the reading follows them."""

from __future__ import annotations

import copy
import re

import pytest

from pipeline.config import validate
from pipeline.experiments.debate import section as debate
from pipeline.experiments.debate.cell import run_cell
from tests.conftest import composed, small_overrides


@pytest.fixture(scope="module")
def cell():
    return run_cell(validate(composed(small_overrides())), "lesson", "lesson")


def test_the_section_has_a_table_per_test_and_a_reading_per_cell(cell):
    text = debate.debate_section([cell])
    assert text.startswith("## The attention debate\n")
    for title in ("Adversarial attention", "Permuted attention", "Seed variance", "Deceptive"):
        assert title in text
    adversary = cell["adversary"][1]
    assert re.search(rf"\| lesson x lesson \| +{adversary['eps']:g} \| ", text)
    assert debate.spread(adversary["median_max_jsd"]) in text
    assert debate.mean_interval(cell["fixed_attention"]["uniform"]) in text
    assert text.count("- **lesson x lesson**") == 1


def test_the_reading_says_whether_hiding_the_rationale_costs_the_accuracy(cell):
    strongest = cell["deception"][-1]
    uniform = cell["fixed_attention"]["uniform"]["mean"]
    costly = copy.deepcopy(cell)
    costly["fixed_attention"]["learned"]["mean"] = uniform + 0.3  # the task learned
    costly["deception"][-1]["heldout_accuracy"]["mean"] = uniform
    assert "cannot hide the rationale" in debate.cell_reading(costly)
    free = copy.deepcopy(cell)
    free["deception"][-1]["heldout_accuracy"]["mean"] = uniform + 0.2
    free["fixed_attention"]["learned"]["mean"] = uniform + 0.3
    reading = debate.cell_reading(free)
    assert "hides the rationale from its attention and still reads it" in reading
    assert f"at lam {strongest['penalty']:g}" in reading


def test_the_reading_says_when_uniform_pooling_does_as_well(cell):
    """Learned attention within 0.05 of uniform: the reading says so first, and keeping
    that accuracy under the penalty is not called hiding."""
    uniform = cell["fixed_attention"]["uniform"]["mean"]
    unlearned = copy.deepcopy(cell)
    unlearned["fixed_attention"]["learned"]["mean"] = uniform + 0.04
    unlearned["deception"][-1]["heldout_accuracy"]["mean"] = uniform + 0.04
    reading = debate.cell_reading(unlearned)
    assert "Uniform pooling does about as well as the learned weights here" in reading
    assert "there was little to hide" in reading
    assert "still reads it" not in reading and "cannot hide" not in reading
    learned = copy.deepcopy(unlearned)
    learned["fixed_attention"]["learned"]["mean"] = uniform + 0.06
    assert "Uniform pooling does about as well" not in debate.cell_reading(learned)


def test_the_reading_says_where_the_model_s_weight_sits(cell):
    on, off = copy.deepcopy(cell), copy.deepcopy(cell)
    on["learned_rationale_weight"]["median"] = 0.9
    off["learned_rationale_weight"]["median"] = 0.1
    assert "the model's weight sits on it" in debate.cell_reading(on)
    assert "the model's weight is mostly elsewhere" in debate.cell_reading(off)


def test_the_reading_says_whether_the_other_explainers_still_find_the_rationale(cell):
    found, lost = copy.deepcopy(cell), copy.deepcopy(cell)
    for name in ("loo", "gradient", "integrated_gradients"):
        found["deception"][-1]["hit_at_1"][name]["mean"] = 0.9
        lost["deception"][-1]["hit_at_1"][name]["mean"] = 0.1
    assert "The other explainers still find it there (hit@1: loo 0.9000, " in (
        debate.cell_reading(found)
    )
    assert "Nor do the other explainers find it there (hit@1: loo 0.1000, " in (
        debate.cell_reading(lost)
    )


def test_the_reading_compares_the_model_consistent_adversary_with_the_per_example_one(cell):
    near, none = copy.deepcopy(cell), copy.deepcopy(cell)
    for row in near["consistent_adversary"]:
        row["tvd"]["mean"], row["jsd"]["mean"] = 0.01, 0.02
    assert "moves its attention by a mean JSD of at most 0.0200" in debate.cell_reading(near)
    assert "far more constrained than the per-example adversary's" in debate.cell_reading(near)
    for row in none["consistent_adversary"]:
        row["tvd"]["mean"] = 0.3
    assert "No model-consistent adversary kept its outputs" in debate.cell_reading(none)
