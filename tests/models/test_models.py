"""Issue 12: the model kinds as plug-ins (the package pipeline/models/: the
registry, the contract of pipeline/models/kind.py and the interface every caller
uses). Every kind drops a step, trains with every metric, runs the battery, the
stages and the study; each fast path is autograd's; a toy kind
(tests/models/helpers.py) plugs in with no change to the pipeline."""

from __future__ import annotations

import math
import types

import pytest
import torch

import pipeline.models
from pipeline import data
from pipeline.analysis import explainers, faithfulness, metrics, seed_study
from pipeline.config import EvalConfig, ModelConfig, validate
from pipeline.core import kinds, measures
from pipeline.models import frames, interface, train
from pipeline.models import lesson as lesson_kind
from pipeline.models.parameters import init_run, to_flat
from pipeline.models.pooling import probability
from pipeline.stages import evaluate, generate
from pipeline.stages import train as train_stage
from tests.conftest import composed, small_overrides
from tests.models.helpers import (
    F64,
    FEW_NODES,
    STEPS,
    VARIANTS,
    random_inputs,
    random_params,
    small_set,
    toy_kind,
)


def test_the_registry_names_one_module_per_kind():
    assert set(kinds.MODEL_KINDS) == {"lesson", *VARIANTS}
    for kind in kinds.MODEL_KINDS:
        module = pipeline.models.kind_module(kind)
        assert module.__name__ == f"pipeline.models.{kind}"
        assert hasattr(module, "layout") and (
            hasattr(module, "attend") or hasattr(module, "forward")
        )
    assert pipeline.models.kind_module("lesson") is lesson_kind


def test_an_unregistered_kind_is_refused():
    from pipeline.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"model\.kind='toy'.*allowed: lesson"):
        validate(composed([*small_overrides(), "model.kind=toy"]))


def test_the_contract_refuses_a_kind_without_attend_and_fills_in_the_defaults():
    from pipeline.models.kind import Kind, kind_of

    with pytest.raises(TypeError, match="no_attend lacks layout, attend"):
        kind_of(types.ModuleType("no_attend", "neither layout nor attend"))
    toy = toy_kind()
    kind = kind_of(toy)
    assert kind.attend is toy.attend  # the module's own
    assert kind.gradient_step(None, None) is None and kind.pooling_heads(ModelConfig()) == 1
    assert type(kind).forward is Kind.forward  # the default, through the toy's attend


@pytest.mark.parametrize("kind", VARIANTS)
def test_dropping_a_step_is_removing_it_from_the_pooling_softmax(kind):
    """One batched ablation pass equals dropping each step alone, for every variant."""
    params = random_params(ModelConfig(kind=kind), 2, seed=19)
    inputs = random_inputs(4, STEPS, seed=20)
    effects = metrics.ablation_effects(params, inputs)  # (S, N, T)
    full = probability(interface.forward(params, inputs)[0])
    for step in (0, 5, 11):
        dropped = torch.zeros(STEPS, dtype=torch.bool)
        dropped[step] = True
        logits, weights = interface.forward(params, inputs, dropped=dropped)
        assert float(weights[..., step].abs().max()) == 0.0
        expected = (probability(logits) - full).abs()
        torch.testing.assert_close(effects[..., step], expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", VARIANTS)
def test_every_variant_trains_deterministically_with_every_metric(kind):
    (train_x, train_y), heldout = small_set()
    cfg = ModelConfig(kind=kind)

    def once():
        params = interface.init_params(4242, [1, 2], cfg, STEPS)
        trained, history = train.train(params, train_x, train_y, 8, 0.6)
        numbers, weights, effects = metrics.run_metrics(
            trained, (train_x, train_y), heldout, EvalConfig()
        )
        return to_flat(trained), history, numbers, weights

    flat, history, numbers, weights = once()
    again = once()
    assert torch.equal(flat, again[0]) and torch.equal(history.loss, again[1].loss)
    assert bool((history.loss[-1] < history.loss[0]).all())
    assert set(numbers) >= set(measures.METRICS)
    for name, values in numbers.items():
        assert values.shape == (2,) and bool(torch.isfinite(values.double()).all()), name
        assert torch.equal(values, again[2][name]), name
    extras = metrics.variant_names(numbers)
    expected = {
        "sink": ["sink_mass"],
        "multihead": [f"head_{h}_{m}" for h in (1, 2) for m in ("marker_mass", "argmax_hit")],
        "posenc": [],
        "window": [],
    }
    assert extras == expected[kind]
    total = weights.sum(-1)
    if kind == "sink":
        torch.testing.assert_close(
            total,
            1
            - interface.extra_values(interface.from_flat(flat, cfg, STEPS), heldout[0], heldout[2])[
                "sink_mass"
            ],
        )
    else:
        torch.testing.assert_close(total, torch.ones_like(total))


@pytest.mark.parametrize("kind", VARIANTS)
def test_battery_runs_for_every_variant(kind):
    _, (inputs, labels, marked) = small_set()
    params = random_params(ModelConfig(kind=kind), 2, seed=22)
    inputs, labels, marked = inputs[:6], labels[:6], marked[:6]
    runs = faithfulness.battery(params, inputs, labels, marked, [1, 2], settings=FEW_NODES)
    for run in runs.values():
        assert run["loo"]["tau_loo"] == 1.0
        for numbers in run.values():
            assert all(math.isfinite(v) for k, v in numbers.items() if k != "tau_loo")


@pytest.mark.parametrize("kind", VARIANTS)
def test_stages_and_study_run_for_every_variant(kind):
    cfg = validate(composed([*small_overrides(), f"model={kind}", "train.epochs=5"]))
    frame, summary = generate.run(cfg)
    params, _ = train_stage.run(cfg, frame)
    document, _ = evaluate.run(cfg, frame, summary, params)
    assert document["parameters"] == interface.parameter_count(cfg.model, cfg.data.steps)
    assert set(document["runs"]) == {"1", "2"} and "seed_gap" in document
    table, study_summary = seed_study.run(cfg, frame)
    assert len(table) == cfg.study.seeds
    extras = metrics.variant_names(document["runs"]["1"])
    for name in extras:
        assert name in table.columns and name in study_summary
    # The study's seeds 1 and 2 are the train stage's runs.
    row = table[table["seed"] == 1].iloc[0]
    assert row["heldout_accuracy"] == document["runs"]["1"]["heldout_accuracy"]


def test_autograd_lesson_matches_the_fast_path():
    (train_x, train_y), _ = small_set()
    params = interface.init_params(4242, [1, 2, 3], ModelConfig(), STEPS)
    fast, fast_history = train.train(params, train_x, train_y, 30, 0.6)
    slow, slow_history = train.train(params, train_x, train_y, 30, 0.6, autograd=True)
    torch.testing.assert_close(to_flat(slow), to_flat(fast), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(slow_history.loss, fast_history.loss, rtol=1e-12, atol=1e-14)
    assert torch.equal(slow_history.accuracy, fast_history.accuracy)


POOLING_KINDS = [
    ModelConfig(kind="sink"),
    ModelConfig(kind="multihead", heads=3),
    ModelConfig(kind="posenc"),
    ModelConfig(kind="posenc", positional="sinusoidal"),
]


HAND_GRADIENT_KINDS = [
    *POOLING_KINDS,
    ModelConfig(kind="window"),
    ModelConfig(kind="window", window=1),
    ModelConfig(kind="window", window=STEPS),
]


@pytest.mark.parametrize(
    "cfg", HAND_GRADIENT_KINDS, ids=lambda cfg: f"{cfg.kind}-{cfg.positional}-{cfg.window}"
)
def test_hand_gradients_of_every_kind_are_autograds(cfg):
    """pipeline/models/pooling_gradients.py and window's fused kernel against autograd
    through `forward`, the definition: the logits and every parameter's gradient."""
    params = random_params(cfg, 4, seed=23)
    inputs = random_inputs(7, STEPS, seed=24)
    labels = (torch.arange(7) % 2).to(F64)
    leaves = params.map(lambda t: t.detach().requires_grad_(True))
    logits = interface.forward(leaves, inputs)[0]
    want = torch.autograd.grad(train.surrogate_loss(logits, labels), leaves.tensors())
    got_logits, got = interface.gradient_step(params, inputs, labels)(params)
    torch.testing.assert_close(got_logits, logits.detach(), rtol=1e-13, atol=1e-14)
    for name, g, w in zip(params.named, got, want, strict=True):
        assert g.shape == w.shape, name
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-14, msg=name)


@pytest.mark.parametrize(
    "cfg", HAND_GRADIENT_KINDS, ids=lambda cfg: f"{cfg.kind}-{cfg.positional}-{cfg.window}"
)
def test_fast_training_is_autograd_training(cfg):
    """Blocks of runs on threads of their own, hand-derived gradients: the same runs
    as autograd's, one block per pass."""
    (train_x, train_y), _ = small_set()
    params = interface.init_params(4242, list(range(1, 8)), cfg, STEPS)
    fast, fast_history = train.train(params, train_x, train_y, 20, 0.6)
    slow, slow_history = train.train(params, train_x, train_y, 20, 0.6, autograd=True)
    torch.testing.assert_close(to_flat(fast), to_flat(slow), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fast_history.loss, slow_history.loss, rtol=1e-12, atol=1e-14)


def test_a_kind_defined_in_a_test_is_a_plug_in(monkeypatch):
    """A toy kind registered here trains, gets every metric, runs through the seed
    study and the explainer battery, with no change to the pipeline."""
    toy = toy_kind()
    monkeypatch.setitem(kinds.MODEL_KINDS, "toy", "")  # removed again after the test
    kinds.register_model("toy", toy)
    assert pipeline.models.kind_module("toy") is toy
    cfg = validate(composed([*small_overrides(), "model.kind=toy", "train.epochs=40"]))
    seeds, steps = [1, 2, 3], cfg.data.steps

    # The layout: the toy's own parameters, named and drawn as every kind's.
    names = ["u_0", "u_1", "v_0", "v_1", "b"]
    assert interface.parameter_count(cfg.model, steps) == 5
    assert interface.flat_names(cfg.model, steps) == names
    initial = interface.init_params(cfg.data.seed, seeds, cfg.model, steps)
    assert list(initial.named) == ["u", "v", "b"] and initial.runs == 3
    rows = [init_run(cfg.data.seed + k, toy.layout(cfg.model, steps), 0.9) for k in seeds]
    assert torch.equal(to_flat(initial), torch.tensor(rows, dtype=F64))
    assert float(initial.named["b"].abs().max()) == 0.0

    # Training: autograd through the toy's attend (it has no fast path), loss lowered.
    frame = data.generate(cfg.data)
    train_x, train_y, _ = frames.features(data.split_frame(frame, "train"), steps)
    heldout = frames.features(data.split_frame(frame, "heldout"), steps)
    inputs, labels, marked = heldout
    trained, history = train.train(initial, train_x, train_y, cfg.train.epochs, cfg.train.lr)
    assert history.loss.shape == (cfg.train.epochs, 3)
    assert bool(torch.isfinite(history.loss).all())
    assert bool((history.loss[-1] < history.loss[0]).all())
    assert not torch.equal(to_flat(trained), to_flat(initial))
    logits = interface.forward(trained, train_x)[0]  # after the last step
    assert bool((train.mean_bce(logits, train_y) < history.loss[0]).all())

    # Every metric, plus the toy's own number, from its pooling weights.
    numbers, weights, effects = metrics.run_metrics(trained, (train_x, train_y), heldout, cfg.eval)
    assert list(numbers) == [*measures.run_order(), "toy_marked_readout"]
    assert metrics.variant_names(numbers) == ["toy_marked_readout"]
    for name, values in numbers.items():
        assert values.shape == (3,) and bool(torch.isfinite(values.double()).all()), name
    assert weights.shape == effects.shape == (3, len(labels), steps)
    n = trained.named
    scores = (inputs[None] * n["u"][:, None, None, :]).sum(-1)  # (S, N, T) by hand
    readouts = (inputs[None] * n["v"][:, None, None, :]).sum(-1)
    torch.testing.assert_close(weights, torch.softmax(scores, -1), rtol=1e-14, atol=1e-16)
    heldout_logits = (weights * readouts).sum(-1) + n["b"][:, None]
    accuracy = ((heldout_logits > 0) == (labels > 0.5)).to(F64).mean(-1)
    torch.testing.assert_close(numbers["heldout_accuracy"], accuracy, rtol=0, atol=0)
    torch.testing.assert_close(
        numbers["marker_mass"], weights.gather(-1, marked.expand(3, -1)[..., None]).mean((1, 2))
    )
    on_marked = readouts.gather(-1, marked.expand(3, -1)[..., None]).squeeze(-1)
    torch.testing.assert_close(numbers["toy_marked_readout"], on_marked.mean(-1))
    assert bool((effects >= 0).all()) and float(effects.max()) > 0

    # The seed study: the same runs, the toy's numbers and parameter columns.
    runs = seed_study.train_seeds(cfg, frame, seeds)
    assert runs.seeds == seeds and runs.params.shape == (3, 5)
    torch.testing.assert_close(runs.params, to_flat(trained), rtol=1e-12, atol=1e-14)
    table = seed_study.seeds_table(runs, cfg)
    assert table.columns.tolist() == ["seed", *numbers, *names]
    assert table["seed"].tolist() == seeds
    torch.testing.assert_close(
        torch.tensor(table["heldout_accuracy"].to_numpy()), numbers["heldout_accuracy"]
    )
    torch.testing.assert_close(
        torch.tensor(table["toy_marked_readout"].to_numpy()), numbers["toy_marked_readout"]
    )
    assert "toy_marked_readout" in seed_study.summarized(runs)

    # The explainers and the faithfulness battery, on a few held-out examples.
    few = slice(0, 12)
    scores_by = explainers.explain(trained, inputs[few], settings=FEW_NODES)
    # The toy has one head and no layer: the explainers that apply to every kind.
    everywhere = {key for key, e in measures.EXPLAINERS.items() if e.applies == "every"}
    assert set(scores_by) == everywhere
    for name, values in scores_by.items():
        assert values.shape == (3, 12, steps) and bool(torch.isfinite(values).all()), name
    torch.testing.assert_close(scores_by["attention"], weights[:, few], rtol=0, atol=0)
    torch.testing.assert_close(scores_by["loo"], effects[:, few], rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(
        scores_by["value_norm"], weights[:, few] * readouts[:, few].abs(), rtol=1e-13, atol=0
    )
    table = faithfulness.battery_tensors(
        trained, inputs[few], marked[few], seeds, settings=FEW_NODES
    )
    assert set(table) == {*everywhere, measures.RANDOM}
    for row, row_metrics in table.items():
        assert list(row_metrics) == list(measures.SCORES), row
        for metric, values in row_metrics.items():
            assert values.shape == (3,), (row, metric)
            if metric != "tau_loo":
                assert bool(torch.isfinite(values).all()), (row, metric)
    torch.testing.assert_close(table["loo"]["tau_loo"], torch.ones(3, dtype=F64))
    hits = (weights[:, few].argmax(-1) == marked[few]).to(F64).mean(-1)
    torch.testing.assert_close(table["attention"]["hit_at_1"], hits, rtol=0, atol=0)
    ranks = table["attention"]["marked_rank"]
    assert bool(((ranks >= 1) & (ranks <= steps)).all())
