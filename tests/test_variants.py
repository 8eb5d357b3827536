"""Issue 12: the model variants (pipeline.variants) against the lesson and by hand."""

from __future__ import annotations

import math

import pytest
import reference_lesson as lesson
import torch

from pipeline import data, faithfulness, frames, metrics, model, study, train, variants
from pipeline.attention import scaled_dot_product_attention, sliding_window_mask
from pipeline.config import EvalConfig, ModelConfig, compose, validate
from pipeline.stages import evaluate, generate
from pipeline.stages import train as train_stage
from tests.conftest import small_overrides

F64 = torch.float64
STEPS = 12
VARIANTS = ["sink", "multihead", "posenc", "window"]


def random_inputs(n: int, steps: int, seed: int) -> torch.Tensor:
    """(n, steps, 2): random readings and a one-hot marker at a random step."""
    gen = torch.Generator().manual_seed(seed)
    readings = torch.randn(n, steps, generator=gen, dtype=F64)
    marked = torch.randint(0, steps, (n,), generator=gen)
    return torch.stack([readings, torch.nn.functional.one_hot(marked, steps).to(F64)], -1)


def random_params(cfg: ModelConfig, runs: int, seed: int, steps: int = STEPS):
    """Parameters of `runs` runs drawn from N(0, 1), not from the init stream."""
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randn(runs, variants.parameter_count(cfg, steps), generator=gen, dtype=F64)
    return variants.from_flat(flat, cfg, steps)


def lesson_part(params: variants.VariantParams) -> model.Params:
    return variants.lesson_view(params)


def small_set(steps: int = STEPS):
    cfg = validate(compose(small_overrides()))
    frame = data.generate(cfg.data)
    train_x, train_y, _ = frames.features(data.split_frame(frame, "train"), steps)
    heldout = frames.features(data.split_frame(frame, "heldout"), steps)
    return (train_x, train_y), heldout


# --- layout and init -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "count"),
    [
        (ModelConfig(), 19),  # (3 + 3) * 2 + 3 + 3 + 1
        (ModelConfig(kind="sink"), 20),  # + one sink logit
        (ModelConfig(kind="multihead", heads=1), 19),
        (ModelConfig(kind="multihead", heads=2), 37),  # 2 * (6 + 6 + 3) + 2 * 3 + 1
        (ModelConfig(kind="multihead", heads=3), 55),  # 3 * 15 + 9 + 1
        (ModelConfig(kind="posenc"), 43),  # + a learned (12, 2) encoding
        (ModelConfig(kind="posenc", positional="sinusoidal"), 19),  # fixed encoding
        (ModelConfig(kind="window"), 35),  # + Wq, Wk (3 x 2) and Wv (2 x 2) of the layer
    ],
)
def test_parameter_count(cfg, count):
    assert variants.parameter_count(cfg, STEPS) == count
    assert len(variants.flat_names(cfg, STEPS)) == count
    assert len(set(variants.flat_names(cfg, STEPS))) == count


def test_lesson_layout_and_init_are_the_models():
    cfg = ModelConfig()
    assert variants.flat_names(cfg, STEPS) == model.flat_names(cfg)
    assert variants.init_run(20260219, cfg, STEPS) == model.init_run(20260219, cfg)
    params = variants.init_params(20260218, [1, 2], cfg, STEPS)
    assert isinstance(params, model.Params)


def test_variant_names():
    names = variants.flat_names(ModelConfig(kind="posenc"), STEPS)
    assert names[:19] == model.flat_names(ModelConfig())
    assert names[19:23] == ["P_0_0", "P_0_1", "P_1_0", "P_1_1"] and names[-1] == "P_11_1"
    heads = variants.flat_names(ModelConfig(kind="multihead", heads=2), STEPS)
    assert heads[:3] == ["Wk_000", "Wk_001", "Wk_010"] and heads[-7:] == [
        *(f"w_{i}" for i in range(6)),
        "b",
    ]


@pytest.mark.parametrize("kind", ["sink", "posenc", "window"])
def test_init_draws_the_lesson_first_then_the_extras(kind):
    """The lesson's 18 draws (b = 0), then every extra value from the same stream."""
    cfg = ModelConfig(kind=kind)
    seed = 20260219
    draw = lesson.stream(seed)
    count = variants.parameter_count(cfg, STEPS)
    uniforms = [draw() for _ in range(3 * (count - 1))]
    drawn = [sum(uniforms[3 * j : 3 * j + 3]) - 1.5 for j in range(count - 1)]
    expected = [v * 0.9 for v in drawn[:18]] + [0.0] + [v * 0.9 for v in drawn[18:]]
    assert variants.init_run(seed, cfg, STEPS) == expected
    assert expected[:19] == model.init_run(seed, ModelConfig())


def test_multihead_with_one_head_is_the_lesson():
    cfg = ModelConfig(kind="multihead", heads=1)
    assert variants.init_run(20260219, cfg, STEPS) == model.init_run(20260219, ModelConfig())
    params = random_params(cfg, 3, seed=1)
    inputs = random_inputs(9, STEPS, seed=2)
    as_lesson = model.from_flat(variants.to_flat(params), ModelConfig())
    for got, want in zip(
        variants.forward(params, inputs), model.forward(as_lesson, inputs), strict=True
    ):
        assert torch.equal(got, want)


def test_sink_at_minus_infinity_is_the_lesson():
    params = random_params(ModelConfig(kind="sink"), 3, seed=3)
    params.named["sink"].fill_(-math.inf)
    inputs = random_inputs(9, STEPS, seed=4)
    ours, theirs = params, lesson_part(params)
    for got, want in zip(
        variants.forward(ours, inputs), model.forward(theirs, inputs), strict=True
    ):
        assert torch.equal(got, want)
    assert torch.equal(
        metrics.ablation_effects(ours, inputs), metrics.ablation_effects(theirs, inputs)
    )
    assert float(variants.sink_mass(ours, inputs).abs().max()) == 0.0


def test_sink_mass_is_the_sinks_softmax_share():
    params = random_params(ModelConfig(kind="sink"), 2, seed=5)
    inputs = random_inputs(4, STEPS, seed=6)
    scores = model.project(inputs, model.key_direction(lesson_part(params)))  # (S, N, T)
    sink = params.named["sink"][:, None]
    by_hand = sink.exp() / (scores.exp().sum(-1) + sink.exp())
    torch.testing.assert_close(variants.sink_mass(params, inputs), by_hand, rtol=1e-13, atol=0)
    weights = variants.forward(params, inputs)[1]
    torch.testing.assert_close(weights.sum(-1), 1 - by_hand, rtol=1e-13, atol=1e-15)


def test_posenc_with_a_zero_encoding_is_the_lesson():
    params = random_params(ModelConfig(kind="posenc"), 3, seed=7)
    params.named["P"].zero_()
    inputs = random_inputs(9, STEPS, seed=8)
    for got, want in zip(
        variants.forward(params, inputs), model.forward(lesson_part(params), inputs), strict=True
    ):
        assert torch.equal(got, want)


def test_posenc_adds_the_encoding_to_the_inputs():
    for positional in ("learned", "sinusoidal"):
        cfg = ModelConfig(kind="posenc", positional=positional)
        params = random_params(cfg, 2, seed=9)
        inputs = random_inputs(5, STEPS, seed=10)
        if positional == "learned":
            shifted = inputs + params.named["P"][:, None]  # (S, N, T, C)
        else:
            steps = torch.arange(STEPS, dtype=F64)
            shifted = inputs + torch.stack([steps.sin(), steps.cos()], -1)
        logits, weights = model.forward(lesson_part(params), shifted)
        torch.testing.assert_close(variants.forward(params, inputs)[0], logits, rtol=0, atol=0)
        torch.testing.assert_close(variants.forward(params, inputs)[1], weights, rtol=0, atol=0)


def test_sinusoidal_encoding_by_hand():
    encoding = variants.sinusoidal_encoding(3, 4, F64)
    t = 2.0
    expected = [math.sin(t), math.cos(t), math.sin(t / 100), math.cos(t / 100)]
    torch.testing.assert_close(encoding[2], torch.tensor(expected, dtype=F64))


def test_window_with_zero_layer_values_is_the_lesson():
    params = random_params(ModelConfig(kind="window"), 3, seed=11)
    params.named["Wv_layer"].zero_()
    inputs = random_inputs(9, STEPS, seed=12)
    for got, want in zip(
        variants.forward(params, inputs), model.forward(lesson_part(params), inputs), strict=True
    ):
        assert torch.equal(got, want)


def test_window_of_one_is_the_lesson_on_a_linear_map():
    """A token that sees only itself gets h = (I + Wv_layer) x: the lesson with
    Wk (I + Wv_layer) and Wv (I + Wv_layer)."""
    params = random_params(ModelConfig(kind="window", window=1), 2, seed=13)
    inputs = random_inputs(6, STEPS, seed=14)
    mapping = torch.eye(2, dtype=F64) + params.named["Wv_layer"]  # (S, C, C)
    base = lesson_part(params)
    folded = model.Params(
        base.key_proj @ mapping, base.value_proj @ mapping, base.query, base.readout, base.bias
    )
    for got, want in zip(
        variants.forward(params, inputs), model.forward(folded, inputs), strict=True
    ):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("window", [1, 3, 4, 12])
def test_banded_window_layer_equals_full_masked_attention(window):
    """The banded layer against plain attention with seed 003's (T, T) sliding-window mask."""
    params = random_params(ModelConfig(kind="window", window=window), 2, seed=15)
    inputs = random_inputs(5, STEPS, seed=16)
    n = params.named
    x = inputs.expand(2, *inputs.shape)  # (S, N, T, C)
    queries = x @ n["Wq_layer"].transpose(-1, -2)[:, None]
    keys = x @ n["Wk_layer"].transpose(-1, -2)[:, None]
    values = x @ n["Wv_layer"].transpose(-1, -2)[:, None]
    context, _ = scaled_dot_product_attention(
        queries, keys, values, sliding_window_mask(STEPS, window)
    )
    torch.testing.assert_close(
        variants.window_layer(params, inputs), x + context, rtol=1e-12, atol=1e-13
    )


def test_multihead_weights_are_the_mean_over_heads():
    cfg = ModelConfig(kind="multihead", heads=3)
    params = random_params(cfg, 2, seed=17)
    inputs = random_inputs(7, STEPS, seed=18)
    heads = variants.head_weights(params, inputs)  # (S, N, H, T)
    assert heads.shape == (2, 7, 3, STEPS)
    torch.testing.assert_close(variants.forward(params, inputs)[1], heads.mean(-2))
    # Each head is a lesson classifier's attention with that head's Wk, q.
    for h in range(3):
        view = variants.lesson_view(params, h)
        torch.testing.assert_close(heads[:, :, h], model.forward(view, inputs)[1])
    # The logit adds every head's context through its slice of w, plus one bias.
    contexts = [model.forward(variants.lesson_view(params, h), inputs)[0] for h in range(3)]
    expected = sum(c - params.named["b"][:, None] for c in contexts) + params.named["b"][:, None]
    torch.testing.assert_close(variants.forward(params, inputs)[0], expected)


@pytest.mark.parametrize("kind", VARIANTS)
def test_dropping_a_step_is_removing_it_from_the_pooling_softmax(kind):
    """One batched ablation pass equals dropping each step alone, for every variant."""
    params = random_params(ModelConfig(kind=kind), 2, seed=19)
    inputs = random_inputs(4, STEPS, seed=20)
    effects = metrics.ablation_effects(params, inputs)  # (S, N, T)
    full = model.probability(variants.forward(params, inputs)[0])
    for step in (0, 5, 11):
        dropped = torch.zeros(STEPS, dtype=torch.bool)
        dropped[step] = True
        logits, weights = variants.forward(params, inputs, dropped=dropped)
        assert float(weights[..., step].abs().max()) == 0.0
        expected = (model.probability(logits) - full).abs()
        torch.testing.assert_close(effects[..., step], expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", VARIANTS)
def test_frame_round_trip_is_exact(kind):
    cfg = ModelConfig(kind=kind)
    params = random_params(cfg, 3, seed=21)
    frame = frames.params_to_frame(params, [4, 5, 6], cfg, STEPS)
    seeds, back = frames.params_from_frame(frame, cfg, STEPS)
    assert seeds == [4, 5, 6] and list(frame.columns[1:]) == variants.flat_names(cfg, STEPS)
    assert torch.equal(variants.to_flat(back), variants.to_flat(params))


# --- training and every metric ---------------------------------------------------------------


@pytest.mark.parametrize("kind", VARIANTS)
def test_every_variant_trains_deterministically_with_every_metric(kind):
    (train_x, train_y), heldout = small_set()
    cfg = ModelConfig(kind=kind)

    def once():
        params = variants.init_params(4242, [1, 2], cfg, STEPS)
        trained, history = train.train(params, train_x, train_y, 8, 0.6)
        numbers, weights, effects = metrics.run_metrics(
            trained, (train_x, train_y), heldout, EvalConfig()
        )
        return variants.to_flat(trained), history, numbers, weights

    flat, history, numbers, weights = once()
    again = once()
    assert torch.equal(flat, again[0]) and torch.equal(history.loss, again[1].loss)
    assert bool((history.loss[-1] < history.loss[0]).all())
    assert set(numbers) >= {*metrics.EXAMPLE_MEANS, *metrics.EXAMPLE_COUNTS}
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
            - metrics.variant_values(variants.from_flat(flat, cfg, STEPS), heldout[0], heldout[2])[
                "sink_mass"
            ],
        )
    else:
        torch.testing.assert_close(total, torch.ones_like(total))


def test_batched_seeds_equal_seeds_alone_for_a_variant():
    (train_x, train_y), _ = small_set()
    cfg = ModelConfig(kind="window")
    together, _ = train.train(
        variants.init_params(4242, [1, 3], cfg, STEPS), train_x, train_y, 6, 0.6
    )
    for i, k in enumerate([1, 3]):
        alone, _ = train.train(
            variants.init_params(4242, [k], cfg, STEPS), train_x, train_y, 6, 0.6
        )
        torch.testing.assert_close(
            variants.to_flat(alone)[0], variants.to_flat(together)[i], rtol=1e-12, atol=1e-12
        )


def test_trained_one_head_multihead_is_the_trained_lesson():
    (train_x, train_y), _ = small_set()
    heads = variants.init_params(4242, [1, 2], ModelConfig(kind="multihead", heads=1), STEPS)
    plain = variants.init_params(4242, [1, 2], ModelConfig(), STEPS)
    got, _ = train.train(heads, train_x, train_y, 10, 0.6)
    want, _ = train.train(plain, train_x, train_y, 10, 0.6, autograd=True)
    # training_logits sums in its own order: equal up to float rounding
    torch.testing.assert_close(
        variants.to_flat(got), variants.to_flat(want), rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("kind", VARIANTS)
def test_battery_runs_for_every_variant(kind):
    _, (inputs, labels, marked) = small_set()
    params = random_params(ModelConfig(kind=kind), 2, seed=22)
    inputs, labels, marked = inputs[:6], labels[:6], marked[:6]
    runs = faithfulness.battery(params, inputs, labels, marked, [1, 2], n_steps=8)
    for run in runs.values():
        assert run["loo"]["tau_loo"] == 1.0
        for numbers in run.values():
            assert all(math.isfinite(v) for k, v in numbers.items() if k != "tau_loo")


def test_value_norm_of_a_variant_sums_its_heads():
    from pipeline import explainers

    params = random_params(ModelConfig(kind="multihead", heads=2), 2, seed=23)
    inputs = random_inputs(3, STEPS, seed=24)
    expected = 0
    for h in range(2):
        view = variants.lesson_view(params, h)
        expected = expected + explainers.value_norm(view, inputs)
    torch.testing.assert_close(explainers.value_norm(params, inputs), expected)


# --- through the stages and the study ---------------------------------------------------------


@pytest.mark.parametrize("kind", VARIANTS)
def test_stages_and_study_run_for_every_variant(kind):
    cfg = validate(compose([*small_overrides(), f"model={kind}", "train.epochs=5"]))
    frame, summary = generate.run(cfg)
    params, _ = train_stage.run(cfg, frame)
    document, _ = evaluate.run(cfg, frame, summary, params)
    assert document["parameters"] == variants.parameter_count(cfg.model, cfg.data.steps)
    assert set(document["runs"]) == {"1", "2"} and "seed_gap" in document
    table, study_summary = study.run(cfg, frame)
    assert len(table) == cfg.study.seeds
    extras = metrics.variant_names(document["runs"]["1"])
    for name in extras:
        assert name in table.columns and name in study_summary
    # The study's seeds 1 and 2 are the train stage's runs.
    row = table[table["seed"] == 1].iloc[0]
    assert row["heldout_accuracy"] == document["runs"]["1"]["heldout_accuracy"]


def test_autograd_lesson_matches_the_fast_path():
    (train_x, train_y), _ = small_set()
    params = model.init_params(4242, [1, 2, 3], ModelConfig())
    fast, fast_history = train.train(params, train_x, train_y, 30, 0.6)
    slow, slow_history = train.train(params, train_x, train_y, 30, 0.6, autograd=True)
    torch.testing.assert_close(model.to_flat(slow), model.to_flat(fast), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(slow_history.loss, fast_history.loss, rtol=1e-12, atol=1e-14)
    assert torch.equal(slow_history.accuracy, fast_history.accuracy)


@pytest.mark.parametrize(
    "cfg",
    [
        ModelConfig(kind="sink"),
        ModelConfig(kind="multihead", heads=3),
        ModelConfig(kind="posenc"),
        ModelConfig(kind="posenc", positional="sinusoidal"),
        ModelConfig(kind="window"),
        ModelConfig(kind="window", window=1),
        ModelConfig(kind="window", window=STEPS),
    ],
    ids=lambda cfg: f"{cfg.kind}-{cfg.heads}-{cfg.positional}-{cfg.window}",
)
def test_training_logits_and_their_gradients_are_the_forwards(cfg):
    """Training's runs-innermost layout computes the same model as `forward`; for
    window, with its hand-derived backward, the gradients are autograd's through
    `forward` (the definition)."""
    params = random_params(cfg, 4, seed=21)
    inputs = random_inputs(7, STEPS, seed=22)
    labels = (torch.arange(7) % 2).to(F64)

    def logits_and_gradients(logits_of):
        leaves = params.map(lambda t: t.detach().requires_grad_(True))
        logits = logits_of(leaves)
        gradients = torch.autograd.grad(train.surrogate_loss(logits, labels), leaves.tensors())
        return logits, gradients

    ours = logits_and_gradients(lambda p: variants.training_logits(p, inputs))
    theirs = logits_and_gradients(lambda p: variants.forward(p, inputs)[0])
    torch.testing.assert_close(ours[0], theirs[0], rtol=1e-13, atol=1e-14)
    for got, want in zip(ours[1], theirs[1], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
