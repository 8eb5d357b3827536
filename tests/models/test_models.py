"""Issue 12: the model kinds (pipeline/models/: the plug-ins, the interface every caller
uses and the registry) against the lesson and by hand."""

from __future__ import annotations

import math
import types

import pytest
import reference_lesson as lesson
import torch
from glossary import scaled_dot_product_attention, sliding_window_mask

import pipeline.models
from pipeline import data
from pipeline.analysis import explainers, faithfulness, metrics, seed_study
from pipeline.config import EvalConfig, FaithfulnessConfig, ModelConfig, compose, validate
from pipeline.core import kinds, measures
from pipeline.models import frames, interface, multihead, posenc, sink, train
from pipeline.models import lesson as lesson_kind
from pipeline.models import window as window_kind
from pipeline.models.parameters import (
    CHANNELS,
    Params,
    cat_runs,
    flat_names,
    init_run,
    init_runs,
    lesson_layout,
    to_flat,
)
from pipeline.models.pooling import (
    Head,
    channels,
    key_direction,
    lesson_head,
    probability,
    project,
)
from pipeline.stages import evaluate, generate
from pipeline.stages import train as train_stage
from tests.conftest import small_overrides

F64 = torch.float64
STEPS = 12
VARIANTS = ["sink", "multihead", "posenc", "window"]
FEW_NODES = FaithfulnessConfig(ig_steps=8)  # integrated gradients, fast


def random_inputs(n: int, steps: int, seed: int) -> torch.Tensor:
    """(n, steps, 2): random readings and a one-hot marker at a random step."""
    gen = torch.Generator().manual_seed(seed)
    readings = torch.randn(n, steps, generator=gen, dtype=F64)
    marked = torch.randint(0, steps, (n,), generator=gen)
    return torch.stack([readings, torch.nn.functional.one_hot(marked, steps).to(F64)], -1)


def random_params(cfg: ModelConfig, runs: int, seed: int, steps: int = STEPS):
    """Parameters of `runs` runs drawn from N(0, 1), not from the init stream."""
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randn(runs, interface.parameter_count(cfg, steps), generator=gen, dtype=F64)
    return interface.from_flat(flat, cfg, steps)


def as_lesson(head: Head, bias: torch.Tensor) -> Params:
    """A lesson-kind Params holding one head's Wk, Wv, q, w and the bias."""
    tensors = [head.key_proj, head.value_proj, head.query, head.readout, bias]
    return Params(ModelConfig(), dict(zip(["Wk", "Wv", "q", "w", "b"], tensors, strict=True)))


def lesson_part(params: Params, head: int | None = None) -> Params:
    """The lesson-shaped pooling parameters of a kind (one head's, for multihead)."""
    if head is None:
        return as_lesson(lesson_head(params), params.named["b"])
    return as_lesson(multihead.heads(params)[head], params.named["b"])


def kind_init_run(seed: int, cfg: ModelConfig) -> list[float]:
    """One run's flat init of a kind."""
    return init_run(seed, interface.layout(cfg, STEPS), cfg.init_scale)


def lesson_init_run(seed: int) -> list[float]:
    cfg = ModelConfig()
    return init_run(seed, lesson_layout(cfg), cfg.init_scale)


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
    assert interface.parameter_count(cfg, STEPS) == count
    assert len(interface.flat_names(cfg, STEPS)) == count
    assert len(set(interface.flat_names(cfg, STEPS))) == count


def test_lesson_layout_and_init_are_the_lessons():
    cfg = ModelConfig()
    assert interface.layout(cfg, STEPS) == lesson_layout(cfg)
    assert interface.flat_names(cfg, STEPS) == flat_names(lesson_layout(cfg))
    assert kind_init_run(20260219, cfg) == lesson_init_run(20260219)
    params = interface.init_params(20260218, [1, 2], cfg, STEPS)
    assert isinstance(params, Params) and list(params.named) == ["Wk", "Wv", "q", "w", "b"]
    rows = [lesson_init_run(20260218 + k) for k in (1, 2)]
    assert torch.equal(to_flat(params), torch.tensor(rows, dtype=F64))


def test_variant_names():
    names = interface.flat_names(ModelConfig(kind="posenc"), STEPS)
    assert names[:19] == interface.flat_names(ModelConfig(), STEPS)
    assert names[19:23] == ["P_0_0", "P_0_1", "P_1_0", "P_1_1"] and names[-1] == "P_11_1"
    heads = interface.flat_names(ModelConfig(kind="multihead", heads=2), STEPS)
    assert heads[:3] == ["Wk_000", "Wk_001", "Wk_010"] and heads[-7:] == [
        *(f"w_{i}" for i in range(6)),
        "b",
    ]


BULK_KINDS = [
    ModelConfig(),
    ModelConfig(kind="sink"),
    ModelConfig(kind="multihead", heads=4, init_scale=0.37),
    ModelConfig(kind="posenc"),
    ModelConfig(kind="window"),
]


@pytest.mark.parametrize("cfg", BULK_KINDS, ids=[cfg.kind for cfg in BULK_KINDS])
def test_init_in_bulk_draws_the_bits_of_the_python_stream(cfg):
    """`init_runs` (tensor ops over every seed at once) against `init_run` (the
    lesson's stream, a seed at a time), bit for bit: the config's seeds, both ends
    of int64 and others, the 32-bit boundaries where the stream's hash wraps."""
    shapes = interface.layout(cfg, STEPS)
    gen = torch.Generator().manual_seed(57)
    drawn = torch.randint(-(2**63), 2**63 - 1, (300,), generator=gen, dtype=torch.int64)
    seeds = [20260218 + k for k in range(200)] + drawn.tolist()
    seeds += [0, 1, -1, 2**16 - 1, 2**16, 2**32 - 1, 2**32, -(2**32), 2**63 - 1, -(2**63)]
    want = torch.tensor([init_run(seed, shapes, cfg.init_scale) for seed in seeds], dtype=F64)
    assert torch.equal(init_runs(seeds, shapes, cfg.init_scale), want)
    params = interface.init_params(20260218, list(range(1, 40)), cfg, STEPS, torch.float32)
    rows = [init_run(20260218 + k, shapes, cfg.init_scale) for k in range(1, 40)]
    assert torch.equal(to_flat(params), torch.tensor(rows, dtype=torch.float32))


def test_init_in_bulk_takes_seeds_beyond_int64_and_none():
    shapes = lesson_layout(ModelConfig())
    seeds = [2**64 + 5, 3]
    want = torch.tensor([init_run(seed, shapes, 0.9) for seed in seeds], dtype=F64)
    assert torch.equal(init_runs(seeds, shapes, 0.9), want)
    assert init_runs([], shapes, 0.9).shape == (0, 19)


@pytest.mark.parametrize("kind", ["sink", "posenc", "window"])
def test_init_draws_the_lesson_first_then_the_extras(kind):
    """The lesson's 18 draws (b = 0), then every extra value from the same stream."""
    cfg = ModelConfig(kind=kind)
    seed = 20260219
    draw = lesson.stream(seed)
    count = interface.parameter_count(cfg, STEPS)
    uniforms = [draw() for _ in range(3 * (count - 1))]
    drawn = [sum(uniforms[3 * j : 3 * j + 3]) - 1.5 for j in range(count - 1)]
    expected = [v * 0.9 for v in drawn[:18]] + [0.0] + [v * 0.9 for v in drawn[18:]]
    assert kind_init_run(seed, cfg) == expected
    assert expected[:19] == lesson_init_run(seed)


def test_multihead_with_one_head_is_the_lesson():
    cfg = ModelConfig(kind="multihead", heads=1)
    assert kind_init_run(20260219, cfg) == lesson_init_run(20260219)
    params = random_params(cfg, 3, seed=1)
    inputs = random_inputs(9, STEPS, seed=2)
    the_lesson = interface.from_flat(to_flat(params), ModelConfig(), STEPS)
    for got, want in zip(
        interface.forward(params, inputs), lesson_kind.forward(the_lesson, inputs), strict=True
    ):
        assert torch.equal(got, want)


def test_sink_at_minus_infinity_is_the_lesson():
    params = random_params(ModelConfig(kind="sink"), 3, seed=3)
    params.named["sink"].fill_(-math.inf)
    inputs = random_inputs(9, STEPS, seed=4)
    ours, theirs = params, lesson_part(params)
    for got, want in zip(
        interface.forward(ours, inputs), lesson_kind.forward(theirs, inputs), strict=True
    ):
        assert torch.equal(got, want)
    assert torch.equal(
        metrics.ablation_effects(ours, inputs), metrics.ablation_effects(theirs, inputs)
    )
    assert float(sink.sink_mass(ours, inputs).abs().max()) == 0.0


def test_sink_mass_is_the_sinks_softmax_share():
    params = random_params(ModelConfig(kind="sink"), 2, seed=5)
    inputs = random_inputs(4, STEPS, seed=6)
    scores = project(channels(inputs), key_direction(lesson_head(params)))  # (S, N, T)
    sink_logit = params.named["sink"][:, None]
    by_hand = sink_logit.exp() / (scores.exp().sum(-1) + sink_logit.exp())
    torch.testing.assert_close(sink.sink_mass(params, inputs), by_hand, rtol=1e-13, atol=0)
    weights = interface.forward(params, inputs)[1]
    torch.testing.assert_close(weights.sum(-1), 1 - by_hand, rtol=1e-13, atol=1e-15)


def test_posenc_with_a_zero_encoding_is_the_lesson():
    params = random_params(ModelConfig(kind="posenc"), 3, seed=7)
    params.named["P"].zero_()
    inputs = random_inputs(9, STEPS, seed=8)
    for got, want in zip(
        interface.forward(params, inputs),
        lesson_kind.forward(lesson_part(params), inputs),
        strict=True,
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
        logits, weights = lesson_kind.forward(lesson_part(params), shifted)
        torch.testing.assert_close(interface.forward(params, inputs)[0], logits, rtol=0, atol=0)
        torch.testing.assert_close(interface.forward(params, inputs)[1], weights, rtol=0, atol=0)


def test_sinusoidal_encoding_by_hand():
    encoding = posenc.sinusoidal_encoding(3, 4, F64)
    t = 2.0
    expected = [math.sin(t), math.cos(t), math.sin(t / 100), math.cos(t / 100)]
    torch.testing.assert_close(encoding[2], torch.tensor(expected, dtype=F64))


def test_window_with_zero_layer_values_is_the_lesson():
    params = random_params(ModelConfig(kind="window"), 3, seed=11)
    params.named["Wv_layer"].zero_()
    inputs = random_inputs(9, STEPS, seed=12)
    for got, want in zip(
        interface.forward(params, inputs),
        lesson_kind.forward(lesson_part(params), inputs),
        strict=True,
    ):
        assert torch.equal(got, want)


def test_window_of_one_is_the_lesson_on_a_linear_map():
    """A token that sees only itself gets h = (I + Wv_layer) x: the lesson with
    Wk (I + Wv_layer) and Wv (I + Wv_layer)."""
    params = random_params(ModelConfig(kind="window", window=1), 2, seed=13)
    inputs = random_inputs(6, STEPS, seed=14)
    mapping = torch.eye(2, dtype=F64) + params.named["Wv_layer"]  # (S, C, C)
    base = lesson_part(params).named
    folded = Params(
        ModelConfig(),
        dict(
            zip(
                ["Wk", "Wv", "q", "w", "b"],
                [base["Wk"] @ mapping, base["Wv"] @ mapping, base["q"], base["w"], base["b"]],
                strict=True,
            )
        ),
    )
    for got, want in zip(
        interface.forward(params, inputs), lesson_kind.forward(folded, inputs), strict=True
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
        window_kind.layer(params, inputs), x + context, rtol=1e-12, atol=1e-13
    )


def test_multihead_weights_are_the_mean_over_heads():
    cfg = ModelConfig(kind="multihead", heads=3)
    params = random_params(cfg, 2, seed=17)
    inputs = random_inputs(7, STEPS, seed=18)
    heads = interface.head_weights(params, inputs)  # (S, N, H, T)
    assert heads.shape == (2, 7, 3, STEPS)
    torch.testing.assert_close(interface.forward(params, inputs)[1], heads.mean(-2))
    # Each head is a lesson classifier's attention with that head's Wk, q.
    for h in range(3):
        view = lesson_part(params, h)
        torch.testing.assert_close(heads[:, :, h], lesson_kind.forward(view, inputs)[1])
    # The logit adds every head's context through its slice of w, plus one bias.
    contexts = [lesson_kind.forward(lesson_part(params, h), inputs)[0] for h in range(3)]
    expected = sum(c - params.named["b"][:, None] for c in contexts) + params.named["b"][:, None]
    torch.testing.assert_close(interface.forward(params, inputs)[0], expected)


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
def test_frame_round_trip_is_exact(kind):
    cfg = ModelConfig(kind=kind)
    params = random_params(cfg, 3, seed=21)
    frame = frames.params_to_frame(params, [4, 5, 6], cfg, STEPS)
    seeds, back = frames.params_from_frame(frame, cfg, STEPS)
    assert seeds == [4, 5, 6] and list(frame.columns[1:]) == interface.flat_names(cfg, STEPS)
    assert torch.equal(to_flat(back), to_flat(params))


# --- training and every metric ---------------------------------------------------------------


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


def test_batched_seeds_equal_seeds_alone_for_a_variant():
    (train_x, train_y), _ = small_set()
    cfg = ModelConfig(kind="window")
    together, _ = train.train(
        interface.init_params(4242, [1, 3], cfg, STEPS), train_x, train_y, 6, 0.6
    )
    for i, k in enumerate([1, 3]):
        alone, _ = train.train(
            interface.init_params(4242, [k], cfg, STEPS), train_x, train_y, 6, 0.6
        )
        torch.testing.assert_close(to_flat(alone)[0], to_flat(together)[i], rtol=1e-12, atol=1e-12)


def test_trained_one_head_multihead_is_the_trained_lesson():
    (train_x, train_y), _ = small_set()
    heads = interface.init_params(4242, [1, 2], ModelConfig(kind="multihead", heads=1), STEPS)
    plain = interface.init_params(4242, [1, 2], ModelConfig(), STEPS)
    got, _ = train.train(heads, train_x, train_y, 10, 0.6)
    want, _ = train.train(plain, train_x, train_y, 10, 0.6, autograd=True)
    # multihead sums its one head in the pooling's order: equal up to float rounding
    torch.testing.assert_close(to_flat(got), to_flat(want), rtol=1e-12, atol=1e-14)


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


def test_value_norm_of_a_variant_sums_its_heads():
    params = random_params(ModelConfig(kind="multihead", heads=2), 2, seed=23)
    inputs = random_inputs(3, STEPS, seed=24)
    expected = 0
    for h in range(2):
        view = lesson_part(params, h)
        expected = expected + explainers.value_norm(view, inputs)
    torch.testing.assert_close(explainers.value_norm(params, inputs), expected)


# --- through the stages and the study ---------------------------------------------------------


@pytest.mark.parametrize("kind", VARIANTS)
def test_stages_and_study_run_for_every_variant(kind):
    cfg = validate(compose([*small_overrides(), f"model={kind}", "train.epochs=5"]))
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


def test_blocks_on_threads_give_the_bytes_of_one_thread():
    """A block's numbers do not depend on how many threads share the blocks."""
    (train_x, train_y), _ = small_set()
    cfg = ModelConfig(kind="multihead", heads=2)
    params = interface.init_params(4242, list(range(1, 8)), cfg, STEPS)
    step = interface.gradient_step(params, train_x, train_y)
    one, _ = train.descend_blocks(params, step, train_y, 5, 0.6, 3, threads=1)
    two, _ = train.descend_blocks(params, step, train_y, 5, 0.6, 3, threads=2)
    assert torch.equal(to_flat(one), to_flat(two))


def test_blocks_of_runs_cover_every_run_once_and_concatenate_back():
    params = interface.init_params(4242, list(range(1, 8)), ModelConfig(), STEPS)
    blocks = params.blocks(3)
    assert [(start, part.runs) for start, part in blocks] == [(0, 3), (3, 3), (6, 1)]
    assert torch.equal(to_flat(blocks[1][1]), to_flat(params)[3:6])
    assert torch.equal(to_flat(cat_runs([part for _, part in blocks])), to_flat(params))


# --- the registry: a kind is a plug-in ---------------------------------------------------------


def test_the_registry_names_one_module_per_kind():
    assert set(kinds.MODEL_KINDS) == {"lesson", *VARIANTS}
    for kind in kinds.MODEL_KINDS:
        module = pipeline.models.kind_module(kind)
        assert module.__name__ == f"pipeline.models.{kind}"
        assert hasattr(module, "layout") and (
            hasattr(module, "attend") or hasattr(module, "forward")
        )
    assert pipeline.models.kind_module("lesson") is lesson_kind


def toy_kind() -> types.ModuleType:
    """A model kind defined in this file alone, in plain torch: single-query pooling
    whose score and readout directions are the parameters themselves (score u . x_t,
    readout v . x_t, logit sum_t a_t v . x_t + b), plus one number of its own. It
    offers only `layout`, `attend` and `extra_values`: no forward, no fast path."""
    toy = types.ModuleType("toy_kind")

    def layout(cfg: ModelConfig, steps: int):
        return [("u", (CHANNELS,)), ("v", (CHANNELS,)), ("b", ())]

    def dot(inputs: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
        # inputs (..., N, T, C), direction (S, C) -> (..., S, N, T), as pooling.project
        return (inputs * direction[:, None, None, :]).sum(-1)

    def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
        n = params.named
        scores, readouts = dot(inputs, n["u"]), dot(inputs, n["v"])
        if dropped is not None:
            scores = scores.masked_fill(dropped, float("-inf"))
        weights = torch.softmax(scores, -1)
        logits = (weights * readouts).sum(-1) + n["b"][:, None]
        return logits, weights.unsqueeze(-2), readouts.unsqueeze(-2)

    def extra_values(params: Params, inputs: torch.Tensor, marked: torch.Tensor):
        readouts = dot(inputs, params.named["v"])  # (S, N, T)
        at_marked = readouts.gather(-1, marked.expand(readouts.shape[:-1]).unsqueeze(-1))
        return {"toy_marked_readout": at_marked.squeeze(-1)}

    toy.layout, toy.attend, toy.extra_values = layout, attend, extra_values
    return toy


def test_an_unregistered_kind_is_refused():
    from pipeline.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"model\.kind='toy'.*allowed: lesson"):
        validate(compose([*small_overrides(), "model.kind=toy"]))


def test_a_kind_defined_in_a_test_is_a_plug_in(monkeypatch):
    """A toy kind registered here trains, gets every metric, runs through the seed
    study and the explainer battery, with no change to the pipeline."""
    toy = toy_kind()
    monkeypatch.setitem(kinds.MODEL_KINDS, "toy", "")  # removed again after the test
    kinds.register_model("toy", toy)
    assert pipeline.models.kind_module("toy") is toy
    cfg = validate(compose([*small_overrides(), "model.kind=toy", "train.epochs=40"]))
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


def test_the_contract_refuses_a_kind_without_attend_and_fills_in_the_defaults():
    from pipeline.models.kind import Kind, kind_of

    with pytest.raises(TypeError, match="no_attend lacks layout, attend"):
        kind_of(types.ModuleType("no_attend", "neither layout nor attend"))
    toy = toy_kind()
    kind = kind_of(toy)
    assert kind.attend is toy.attend  # the module's own
    assert kind.gradient_step(None, None) is None and kind.pooling_heads(ModelConfig()) == 1
    assert type(kind).forward is Kind.forward  # the default, through the toy's attend


def test_the_lesson_s_attend_is_its_forward():
    """The contract's forward (the pooling every kind shares) and the lesson's own
    order of operations compute the same model."""
    params = random_params(ModelConfig(), 3, seed=41)
    inputs = random_inputs(5, STEPS, seed=42)
    dropped = torch.eye(STEPS, dtype=torch.bool)[:, None, None, :]
    for mask in (None, dropped):
        logits, weights, _ = lesson_kind.attend(params, inputs, mask)
        want_logits, want_weights = lesson_kind.forward(params, inputs, mask)
        torch.testing.assert_close(logits, want_logits, rtol=1e-13, atol=1e-14)
        torch.testing.assert_close(weights.squeeze(-2), want_weights, rtol=1e-13, atol=1e-15)
