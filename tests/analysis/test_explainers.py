"""Issue 9: the explainers, on the default lesson's two runs and by hand."""

from __future__ import annotations

import pytest
import torch
from captum.attr import FeatureAblation
from heldout_lesson import heldout_lesson

from pipeline.analysis import explainers, metrics
from pipeline.config import ModelConfig
from pipeline.core import ranking
from pipeline.models import interface
from pipeline.models import lesson as lesson_model
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability

F64 = torch.float64


@pytest.fixture(scope="module")
def lesson(default_cfg):
    return heldout_lesson(default_cfg)


@pytest.fixture(scope="module")
def scores(lesson):
    return explainers.explain(lesson.params, lesson.inputs)


def full_probability(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    return probability(lesson_model.forward(params, inputs)[0])


def test_every_explainer_scores_every_step(lesson, scores):
    # The lesson has one head and no layer: rollout, flow and the per-head views do not apply.
    assert list(scores) == [
        "attention",
        "loo",
        "gradient",
        "grad_x_input",
        "integrated_gradients",
        "value_norm",
    ]
    for name, values in scores.items():
        assert values.shape == (2, 180, 12), name
        assert values.dtype == F64, name
        assert not values.requires_grad, name
        assert bool(torch.isfinite(values).all()), name
        assert bool((values >= 0).all()), name


def test_attention_and_loo_are_the_lessons(lesson, scores):
    logits, weights = lesson_model.forward(lesson.params, lesson.inputs)
    assert torch.equal(scores["attention"], weights)
    assert torch.equal(scores["loo"], metrics.ablation_effects(lesson.params, lesson.inputs))


def test_closed_form_ablation_matches_loo_on_every_heldout_example(lesson, scores):
    """o(without t) - o = a_t / (1 - a_t) (c - v_t), with v_t = w . V_t, c = sum_s a_s v_s."""
    params, inputs = lesson.params, lesson.inputs
    _, weights = lesson_model.forward(params, inputs)
    # Readouts from the 3-dim values themselves, not through value_direction.
    values = torch.einsum("sdc,ntc->sntd", params.named["Wv"], inputs)  # V_t (S, N, T, d_v)
    readouts = torch.einsum("sntd,sd->snt", values, params.named["w"])  # w . V_t
    context = (weights * readouts).sum(-1, keepdim=True)
    shift = weights / (1 - weights) * (context - readouts)
    torch.testing.assert_close(
        shift, explainers.ablation_logit_shift(params, inputs), rtol=1e-10, atol=1e-13
    )
    logits = lesson_model.forward(params, inputs)[0][..., None]
    closed = (probability(logits + shift) - probability(logits)).abs()
    assert weights.amax() < 0.999  # 1 - a_t stays well away from 0
    torch.testing.assert_close(closed, scores["loo"], rtol=1e-9, atol=1e-13)
    # And the logit shift itself against an explicit one-step drop.
    one_step = torch.eye(12, dtype=torch.bool)[:, None, None, :]
    dropped = lesson_model.forward(params, inputs, dropped=one_step)[0].permute(1, 2, 0)
    torch.testing.assert_close(dropped - logits, shift, rtol=1e-9, atol=1e-12)


def test_feature_ablation_of_a_step_gate_agrees_with_loo(lesson, scores):
    """captum FeatureAblation: zeroing step t's gate removes t from the softmax."""
    params, inputs = lesson.params, lesson.inputs
    ablation = FeatureAblation(explainers.gated_probability(params, inputs))
    kept = torch.ones(params.runs * inputs.shape[0], inputs.shape[1], dtype=F64)
    step_mask = torch.arange(inputs.shape[1])[None, :]  # feature t = step t's gate
    attributions = ablation.attribute(kept, baselines=0.0, feature_mask=step_mask)
    got = attributions.reshape(params.runs, *inputs.shape[:2]).abs()
    torch.testing.assert_close(got, scores["loo"], rtol=1e-12, atol=1e-15)


def test_integrated_gradients_completeness(lesson):
    """Attributions sum to P(x) - P(baseline) for every run and example."""
    params, inputs = lesson.params, lesson.inputs
    attributions = explainers.integrated_gradient_attributions(params, inputs)
    assert attributions.shape == (2, 180, 12, 2)
    gap = full_probability(params, inputs) - full_probability(params, torch.zeros_like(inputs))
    torch.testing.assert_close(attributions.sum((-2, -1)), gap, rtol=0, atol=1e-7)
    assert gap.abs().amax() > 0.5  # not a vacuous check
    # Too few nodes visibly break completeness: n_steps matters and is honoured.
    coarse = explainers.integrated_gradient_attributions(params, inputs, n_steps=4)
    assert (coarse.sum((-2, -1)) - gap).abs().amax() > 1e-3


def test_gradient_family_matches_per_example_autograd(lesson, scores):
    """Summing P over examples for captum leaves every per-example gradient intact."""
    params, inputs = lesson.params, lesson.inputs
    grads = []
    for s in range(params.runs):
        x = inputs.clone().requires_grad_()
        one_run = params.map(lambda t, s=s: t[s : s + 1])
        (grad,) = torch.autograd.grad(full_probability(one_run, x).sum(), x)
        grads.append(grad)
    grads = torch.stack(grads)  # (S, N, T, C)
    torch.testing.assert_close(scores["gradient"], grads.norm(dim=-1), rtol=1e-12, atol=1e-15)
    expected = (grads * inputs).sum(-1).abs()
    torch.testing.assert_close(scores["grad_x_input"], expected, rtol=1e-12, atol=1e-15)


def test_value_norm_by_hand():
    # One run, d_k = d_v = 1: key direction (0, 0) gives uniform weights 1/3;
    # value direction Wv^T w = (2, -1) * 0.5 = (1, -0.5).
    params = Params(
        ModelConfig(d_k=1, d_v=1),
        {
            "Wk": torch.zeros(1, 1, 2, dtype=F64),
            "Wv": torch.tensor([[[2.0, -1.0]]], dtype=F64),
            "q": torch.ones(1, 1, dtype=F64),
            "w": torch.tensor([[0.5]], dtype=F64),
            "b": torch.zeros(1, dtype=F64),
        },
    )
    inputs = torch.tensor([[[0.0, 0.0], [-3.0, 0.0], [1.0, 1.0]]], dtype=F64)
    expected = torch.tensor([[[0.0, 1.0, 1 / 6]]], dtype=F64)  # a_t |x_t0 - 0.5 x_t1|
    torch.testing.assert_close(explainers.value_norm(params, inputs), expected)


def test_runs_are_explained_independently(lesson, scores):
    """A run's scores do not depend on the other runs in the batch."""
    params, inputs = lesson.params, lesson.inputs
    for s in range(params.runs):
        alone = explainers.explain(params.map(lambda t, s=s: t[s : s + 1]), inputs[:40])
        for name, values in alone.items():
            torch.testing.assert_close(values[0], scores[name][s, :40], rtol=1e-9, atol=1e-14)


def test_explain_rejects_unknown_names():
    params = interface.init_params(1, [1], ModelConfig(), 3)
    with pytest.raises(ValueError, match="unknown explainers \\['lime'\\]"):
        explainers.explain(params, torch.zeros(1, 3, 2, dtype=F64), ["attention", "lime"])


def test_explain_refuses_an_explainer_that_does_not_apply():
    params = interface.init_params(1, [1], ModelConfig(), 3)
    with pytest.raises(ValueError, match="attention_rollout does not apply to model kind lesson"):
        explainers.explain(params, torch.zeros(1, 3, 2, dtype=F64), ["attention_rollout"])


# --- through the window layer, and per head -------------------------------------------


def window_run(window: int, seeds: list[int], steps: int = 6) -> Params:
    return interface.init_params(3, seeds, ModelConfig(kind="window", window=window), steps)


def test_the_layer_attention_matrix_is_what_the_layer_mixes():
    params = window_run(3, [1, 2])
    inputs = torch.randn(5, 6, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    layer = interface.layer_attention(params, inputs)  # (S, N, T, T)
    assert layer.shape == (2, 5, 6, 6)
    torch.testing.assert_close(layer.sum(-1), torch.ones(2, 5, 6, dtype=F64))
    steps = torch.arange(6)
    outside = (steps[:, None] < steps[None, :]) | (steps[:, None] - steps[None, :] >= 3)
    assert bool((layer[..., outside] == 0).all())  # causal, window of 3
    values = torch.einsum("scd,ntd->sntc", params.named["Wv_layer"], inputs)
    mixed = inputs + torch.einsum("sntj,snjc->sntc", layer, values)
    from pipeline.models import window

    torch.testing.assert_close(window.layer(params, inputs), mixed, rtol=1e-12, atol=1e-14)


def test_rollout_and_flow_by_hand():
    """Zero layer and pooling keys: the layer attends uniformly over its window of 2
    (step 0 only to itself), the pooling 1/4 on each of T = 4 steps. R = (L + I) / 2:
    R[0, 0] = 1, R[t, t] = 3/4 and R[t, t-1] = 1/4 for t >= 1.
    Rollout sum_t a_t R[t, j]: (1 + 1/4) / 4, (3/4 + 1/4) / 4 twice, (3/4) / 4.
    Flow sum_t min(a_t, R[t, j]): 1/4 + 1/4, twice the same, and 1/4 from step 3 alone."""
    params = window_run(2, [1], steps=4)
    for name in ("Wq_layer", "Wk_layer", "Wk"):
        params.named[name].zero_()
    inputs = torch.randn(3, 4, 2, generator=torch.Generator().manual_seed(1), dtype=F64)
    scores = explainers.explain(
        params, inputs, ["attention", "attention_rollout", "attention_flow"]
    )
    torch.testing.assert_close(scores["attention"], torch.full((1, 3, 4), 0.25, dtype=F64))
    rollout = torch.tensor([1.25, 1.0, 1.0, 0.75], dtype=F64) / 4
    flow = torch.tensor([0.5, 0.5, 0.5, 0.25], dtype=F64)
    torch.testing.assert_close(scores["attention_rollout"], rollout.expand(1, 3, 4))
    torch.testing.assert_close(scores["attention_flow"], flow.expand(1, 3, 4))


def test_flow_is_networkx_s_maximum_flow_through_the_layer():
    """Abnar & Zuidema's graph: output -> h_t (capacity a_t) -> x_j (capacity R[t, j]);
    networkx's maximum flow to each x_j against the explainer's closed form."""
    import networkx as nx

    params = window_run(3, [4, 5], steps=5)
    inputs = torch.randn(3, 5, 2, generator=torch.Generator().manual_seed(2), dtype=F64)
    weights = explainers.attention(params, inputs)
    rolled = explainers.rolled_out_layer(params, inputs)
    flow = explainers.attention_flow(params, inputs)
    for s in range(2):
        for n in range(3):
            graph = nx.DiGraph()
            for t in range(5):
                graph.add_edge("output", ("h", t), capacity=float(weights[s, n, t]))
                for j in range(5):
                    graph.add_edge(("h", t), ("x", j), capacity=float(rolled[s, n, t, j]))
            for j in range(5):
                expected = nx.maximum_flow_value(graph, "output", ("x", j))
                assert float(flow[s, n, j]) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_each_head_and_the_largest_head_are_rows_of_their_own():
    params = interface.init_params(1, [1, 2], ModelConfig(kind="multihead", heads=3), 4)
    inputs = torch.randn(5, 4, 2, generator=torch.Generator().manual_seed(3), dtype=F64)
    names = ["attention", "attention_max_head", "attention_head"]
    scores = explainers.explain(params, inputs, names)
    assert list(scores) == [*names[:2], "attention_head1", "attention_head2", "attention_head3"]
    heads = interface.head_weights(params, inputs)  # (S, N, H, T)
    for h in range(3):
        assert torch.equal(scores[f"attention_head{h + 1}"], heads[:, :, h])
    assert torch.equal(scores["attention_max_head"], heads.amax(-2))
    torch.testing.assert_close(scores["attention"], heads.mean(-2))
    assert explainers.rows(params.cfg) == [
        *explainers.applicable(ModelConfig()),
        "attention_max_head",
        "attention_head1",
        "attention_head2",
        "attention_head3",
    ]


def test_the_hand_set_marker_model_s_explanations_are_derived_by_hand(lesson, default_cfg):
    """The capacity table's marker-reading construction (pipeline/experiments/grid/capacity.py):
    the score of step t is FOCUS [t = m] and its value the reading r_t, so with
    E = exp(FOCUS) and T steps, by hand:

    - attention: a_m = E / (E + T - 1), every other step 1 / (E + T - 1);
    - leave-one-out: dropping m leaves the mean of the other readings; dropping j != m
      leaves (E r_m + sum of the rest but j) / (E + T - 2);
    - gradient: dlogit/dr_t = a_t and dlogit/dmarker_t = FOCUS a_t (r_t - c), with c
      the pooled reading, times P'(logit) = P (1 - P), the L2 norm over the two.

    And every rationale metric of attention is perfect: the marked step is on top."""
    from pipeline.experiments.grid import capacity

    steps, threshold = default_cfg.data.steps, default_cfg.data.threshold
    params = capacity.marker_reading(default_cfg.model, steps, threshold)
    readings, marked = lesson.inputs[..., 0], lesson.marked
    is_marked = torch.nn.functional.one_hot(marked, steps).to(torch.bool)
    e = torch.exp(torch.tensor(capacity.FOCUS, dtype=F64))
    weights = torch.where(is_marked, e, 1.0) / (e + steps - 1)
    pooled = (weights * readings).sum(-1)
    p = torch.sigmoid(pooled - threshold)
    r_m = readings.gather(-1, marked[:, None])
    rest = readings.sum(-1, keepdim=True) - r_m
    without = torch.where(
        is_marked, rest / (steps - 1), (e * r_m + rest - readings) / (e + steps - 2)
    )
    loo = (torch.sigmoid(without - threshold) - p[:, None]).abs()
    slope = (p * (1 - p))[:, None]
    gradient = slope * torch.hypot(weights, capacity.FOCUS * weights * (readings - pooled[:, None]))

    assert torch.allclose(explainers.attention(params, lesson.inputs)[0], weights, rtol=1e-12)
    assert torch.allclose(explainers.loo(params, lesson.inputs)[0], loo, rtol=1e-9, atol=1e-15)
    assert torch.allclose(explainers.gradient(params, lesson.inputs)[0], gradient, rtol=1e-9)
    attention = explainers.attention(params, lesson.inputs)
    assert torch.equal(ranking.hit_at_1(attention, marked), torch.ones_like(attention[..., 0]))
    assert torch.equal(ranking.marked_rank(attention, marked), torch.ones_like(attention[..., 0]))
