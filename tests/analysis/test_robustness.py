"""Issue 33: captum's robustness metrics of the explainers it drives
(pipeline/analysis/robustness.py), on cases whose answer is known."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from heldout_lesson import heldout_lesson

from pipeline.analysis import robustness
from pipeline.config import FaithfulnessConfig
from pipeline.core import measures
from pipeline.experiments.faithfulness.section import robustness_table

FEW = FaithfulnessConfig(ig_steps=8, robustness_samples=4)


@pytest.fixture(scope="module")
def lesson(default_cfg):
    return heldout_lesson(default_cfg)


def test_captum_drives_three_of_the_battery_s_explainers():
    assert set(robustness.ATTRIBUTIONS) <= set(measures.EXPLAINERS)
    assert list(robustness.ATTRIBUTIONS) == ["gradient", "grad_x_input", "integrated_gradients"]


def test_a_model_that_ignores_its_input_has_nothing_to_perturb(lesson):
    """With w = 0 the output is sigmoid(b) whatever the input: every attribution is 0,
    so it never changes (sensitivity 0) and predicts the output's change exactly (0)."""
    still = lesson.params.map(lambda t: t.clone())
    still.named["w"].zero_()
    numbers = robustness.run_robustness(still, 0, 1, lesson.inputs[:20], FEW)
    for name, values in numbers.items():
        assert values == {"sensitivity_max": 0.0, "infidelity": 0.0}, name


def test_the_gradient_is_the_first_order_change_so_its_infidelity_vanishes_first(lesson):
    """As the perturbation shrinks, f(x) - f(x - I) -> I . grad f: the gradient's
    infidelity falls as r^4, gradient x input's error stays of order r^2 (its
    direction is another)."""
    tiny = replace(FEW, robustness_radius=1e-4)
    numbers = robustness.run_robustness(lesson.params, 0, 1, lesson.inputs[:40], tiny)
    assert numbers["gradient"]["infidelity"] < 1e-6 * numbers["grad_x_input"]["infidelity"]


def test_the_perturbations_are_seeded_and_not_torch_s_global_stream(lesson):
    inputs = lesson.inputs[:20]
    first = robustness.run_robustness(lesson.params, 0, 1, inputs, FEW)
    torch.manual_seed(12345)  # the global stream does not enter
    assert robustness.run_robustness(lesson.params, 0, 1, inputs, FEW) == first
    other = robustness.run_robustness(lesson.params, 0, 1, inputs, replace(FEW, robustness_seed=1))
    assert other["gradient"] != first["gradient"]


def test_the_ball_stays_within_its_radius_and_the_noise_is_subtracted():
    inputs = torch.zeros(3, 4, 2, dtype=torch.float64)
    moved = robustness.uniform_ball(np.random.default_rng(0))(inputs, perturb_radius=0.5)
    assert float(moved.abs().max()) <= 0.5 and float(moved.abs().max()) > 0
    noise, perturbed = robustness.gaussian(np.random.default_rng(0), 0.1)(inputs + 1)
    assert torch.equal(perturbed, inputs + 1 - noise)


def test_the_report_table_has_a_row_per_run_and_explainer():
    numbers = {"sensitivity_max": 0.1234, "infidelity": 2.25e-6}
    table = robustness_table({"1": {"gradient": numbers}, "2": {"gradient": numbers}})
    assert list(table.index) == ["run 1: gradient", "run 2: gradient"]
    assert table.loc["run 1: gradient"].tolist() == ["0.123", "2.25e-06"]
