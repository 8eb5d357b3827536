"""SPEC section 3: the hand gradients, full-batch training, divergence and device checks."""

from __future__ import annotations

import math

import pytest
import reference_lesson as lesson
import torch

from pipeline import data
from pipeline.config import DataConfig, ModelConfig
from pipeline.core import precision
from pipeline.core.errors import ConfigError
from pipeline.models import frames, interface, train
from pipeline.models import lesson as lesson_model
from pipeline.models.lesson import TrainingSet, logits_and_gradients
from pipeline.models.parameters import Params, to_flat
from tests.models.helpers import small_set

CFG = ModelConfig()
F64 = torch.float64
STEPS = 12


def random_set(n: int, steps: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, steps, 2) inputs with a one-hot marker at a random step, and random 0/1 labels."""
    gen = torch.Generator().manual_seed(seed)
    readings = torch.randn(n, steps, generator=gen, dtype=F64) * 1.3
    marked = torch.randint(0, steps, (n,), generator=gen)
    inputs = torch.stack([readings, torch.nn.functional.one_hot(marked, steps).to(F64)], -1)
    labels = (torch.rand(n, generator=gen) < 0.5).to(F64)
    return inputs, labels


def random_params(runs: int, seed: int, scale: float) -> Params:
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randn(runs, 19, generator=gen, dtype=F64) * scale
    return interface.from_flat(flat, CFG, STEPS)


def init_params(data_seed: int, seeds: list[int], cfg: ModelConfig = CFG) -> Params:
    return interface.init_params(data_seed, seeds, cfg, STEPS)


def autograd_gradients(params: Params, inputs, labels) -> tuple[torch.Tensor, Params]:
    leaves = params.map(lambda t: t.detach().clone().requires_grad_(True))
    logits, _ = lesson_model.forward(leaves, inputs)
    # Runs are independent, so d(sum of per-run losses) / d(run s) is run s's gradient.
    train.mean_bce(logits, labels).sum().backward()
    return logits.detach(), leaves.map(lambda t: t.grad)


def small_lesson(seed: int, sequences: int, split: list[int], steps: int = 12):
    cfg = DataConfig(seed=seed, sequences=sequences, steps=steps, split=split)
    frame = data.generate(cfg)
    train_x, train_y, _ = frames.features(data.split_frame(frame, "train"), steps)
    return train_x, train_y


# --- gradients ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "steps", "seed"), [(1.0, 7, 1), (1.0, 12, 2), (5.0, 7, 3), (5.0, 12, 4)]
)
def test_hand_gradients_equal_autograd(scale, steps, seed):
    params = random_params(4, seed, scale)
    inputs, labels = random_set(11, steps, seed + 100)
    expected_logits, expected = autograd_gradients(params, inputs, labels)
    if scale == 5.0:
        # Large parameters: logits well past the clamp; the clamp moves p by < 1e-13 there.
        assert float(expected_logits.abs().max()) > 30.0
    logits, gradients = logits_and_gradients(params, TrainingSet.build(inputs, labels))
    torch.testing.assert_close(logits, expected_logits, rtol=1e-12, atol=1e-12)
    assert list(expected.named) == ["Wk", "Wv", "q", "w", "b"]
    for name, got, want in zip(
        ("Wk", "Wv", "q", "w", "b"), gradients, expected.tensors(), strict=True
    ):
        assert got.shape == want.shape, name
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12, msg=name)


def test_hand_gradients_marked_step_extremes():
    """The marked reading as the largest, the smallest, and tied with another step."""
    inputs, labels = random_set(3, 6, seed=9)
    inputs[:, :, 1] = 0.0
    inputs[:, 2, 1] = 1.0
    inputs[0, 2, 0] = 5.0  # marked step holds the largest reading
    inputs[1, 2, 0] = -5.0  # ... the smallest
    inputs[2, 2, 0] = inputs[2, 4, 0]  # ... a tie with an unmarked step
    for seed in (5, 6):
        params = random_params(3, seed, 1.5)
        expected_logits, expected = autograd_gradients(params, inputs, labels)
        batch = TrainingSet.build(inputs, labels)
        logits, gradients = logits_and_gradients(params, batch)
        torch.testing.assert_close(logits, expected_logits, rtol=1e-12, atol=1e-12)
        for got, want in zip(gradients, expected.tensors(), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_training_logits_equal_forward_logits():
    inputs, labels = small_lesson(31, 30, [20, 5, 5])
    params = init_params(31, [1, 2, 3])
    logits, _ = logits_and_gradients(params, TrainingSet.build(inputs, labels))
    expected, _ = lesson_model.forward(params, inputs)
    torch.testing.assert_close(logits, expected, rtol=1e-12, atol=1e-13)


def test_hand_gradients_equal_lesson_gradient_step():
    """One epoch of the lesson's egit equals one pipeline step (same init, same data)."""
    inputs, labels = small_lesson(5150, 24, [12, 6, 6])
    examples = lesson.model_inputs(lesson.build_sequences(24, 5150))[:12]
    for k in (1, 2):
        after, _ = train.train(init_params(5150, [k]), inputs, labels, 1, 0.6)
        expected = torch.tensor(lesson.flat(lesson.train(5150 + k, examples, 1, 0.6)), dtype=F64)
        expected = precision.settle(expected)  # train() settles what it returns
        torch.testing.assert_close(to_flat(after)[0], expected, rtol=1e-13, atol=1e-15)


# --- training -------------------------------------------------------------------------------


def test_batched_seeds_equal_seeds_alone():
    inputs, labels = small_lesson(4242, 60, [30, 15, 15])
    seeds = [1, 2, 3, 5, 8]
    together, history = train.train(init_params(4242, seeds), inputs, labels, 30, 0.6)
    for i, k in enumerate(seeds):
        alone, alone_history = train.train(init_params(4242, [k]), inputs, labels, 30, 0.6)
        # Not bitwise: the batched contractions round differently at ~1e-16 (see report).
        torch.testing.assert_close(to_flat(alone)[0], to_flat(together)[i], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(
            alone_history.loss[:, 0], history.loss[:, i], rtol=1e-12, atol=1e-12
        )
        assert torch.equal(alone_history.accuracy[:, 0], history.accuracy[:, i])


@pytest.mark.parametrize(
    ("data_seed", "sequences", "split", "steps", "epochs", "lr", "run_seeds"),
    [
        (4242, 60, [30, 15, 15], 12, 30, 0.6, [1, 2]),
        (97, 40, [24, 8, 8], 9, 25, 1.1, [3, 1]),
    ],
)
def test_training_matches_reference_lesson(
    data_seed, sequences, split, steps, epochs, lr, run_seeds
):
    inputs, labels = small_lesson(data_seed, sequences, split, steps)
    trained, history = train.train(init_params(data_seed, run_seeds), inputs, labels, epochs, lr)
    examples = lesson.model_inputs(lesson.build_sequences(sequences, data_seed, steps))
    examples = examples[: split[0]]
    for i, k in enumerate(run_seeds):
        expected = lesson.train(data_seed + k, examples, epochs, lr)
        torch.testing.assert_close(
            to_flat(trained)[i],
            precision.settle(torch.tensor(lesson.flat(expected), dtype=F64)),
            rtol=1e-10,
            atol=1e-10,
        )
        # History: the accuracy after the last update is not in it, the one before is.
        before_last = lesson.train(data_seed + k, examples, epochs - 1, lr)
        assert float(history.accuracy[-1, i]) == lesson.accuracy(before_last, examples)
    assert history.loss.shape == history.accuracy.shape == (epochs, len(run_seeds))


def test_training_matches_reference_when_the_clamp_binds():
    """Large init (scale 6): some logits start beyond 30, where the lesson clamps p."""
    inputs, labels = small_lesson(4242, 60, [30, 15, 15])
    examples = lesson.model_inputs(lesson.build_sequences(60, 4242))[:30]
    params = init_params(4242, [1, 2], ModelConfig(init_scale=6.0))
    start, _ = lesson_model.forward(params, inputs)
    assert float(start.abs().max()) > 30.0
    trained, _ = train.train(params, inputs, labels, 30, 0.6)
    for i, k in enumerate([1, 2]):
        expected = lesson.train(4242 + k, examples, 30, 0.6, init_scale=6.0)
        torch.testing.assert_close(
            to_flat(trained)[i],
            precision.settle(torch.tensor(lesson.flat(expected), dtype=F64)),
            rtol=1e-10,
            atol=1e-10,
        )


def test_history_loss_is_before_each_update():
    inputs, labels = small_lesson(8, 20, [10, 5, 5])
    params = init_params(8, [1])
    _, history = train.train(params, inputs, labels, 3, 0.6)
    logits, _ = lesson_model.forward(params, inputs)
    by_hand = -(
        labels * torch.log(torch.sigmoid(logits)) + (1 - labels) * torch.log(torch.sigmoid(-logits))
    )
    torch.testing.assert_close(history.loss[0], by_hand.mean(-1), rtol=1e-12, atol=1e-14)
    assert float(history.accuracy[0, 0]) == float(
        ((logits[0] > 0) == (labels > 0.5)).double().mean()
    )


def test_divergence_raises_and_names_lr():
    inputs, labels = small_lesson(4242, 60, [30, 15, 15])
    params = init_params(4242, [1, 2], ModelConfig(init_scale=50.0))
    with pytest.raises(train.DivergenceError, match=r"train\.lr"):
        train.train(params, inputs, labels, 20, 1e6)


def test_resolve_device():
    assert train.resolve_device("cpu") == torch.device("cpu")
    auto = train.resolve_device("auto")
    assert auto.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present here")
def test_resolve_cuda_without_cuda_is_a_config_error():
    with pytest.raises(ConfigError, match=r"train\.device"):
        train.resolve_device("cuda")


# --- the autograd path: the definition, of which the hand gradients are a fast path ----------


def test_autograd_training_reproduces_the_golden_numbers(default_cfg):
    """The lesson trained with torch autograd through interface.forward, not the
    hand-derived gradients, gives every golden number."""
    from pipeline.stages import evaluate, generate
    from tests.conftest import assert_golden

    frame, summary = generate.run(default_cfg)
    inputs, labels, _ = frames.features(data.split_frame(frame, "train"), 12)
    params = init_params(default_cfg.data.seed, [1, 2])
    trained, history = train.train(params, inputs, labels, 200, 0.6, autograd=True)
    fast, fast_history = train.train(params, inputs, labels, 200, 0.6)
    torch.testing.assert_close(to_flat(trained), to_flat(fast), rtol=1e-10, atol=1e-12)
    assert torch.equal(history.accuracy, fast_history.accuracy)
    document, _ = evaluate.run(default_cfg, frame, summary, trained)
    assert_golden(document)


def test_surrogate_gradient_is_the_clamped_bce_gradient():
    logits = torch.tensor([[-40.0, -2.0, 0.5, 35.0]], dtype=F64, requires_grad=True)
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=F64)
    (grad,) = torch.autograd.grad(train.surrogate_loss(logits, labels), logits)
    clamped = torch.sigmoid(logits.detach().clamp(-30, 30))
    torch.testing.assert_close(grad, (clamped - labels) / 4, rtol=1e-15, atol=0)
    # The clamp binds at -40 and 35: sigmoid(-30) - 1, not sigmoid(-40) - 1.
    assert float(grad[0, 0]) == (1 / (1 + math.exp(30.0)) - 1) / 4


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


def test_blocks_on_threads_give_the_bytes_of_one_thread():
    """A block's numbers do not depend on how many threads share the blocks."""
    (train_x, train_y), _ = small_set()
    cfg = ModelConfig(kind="multihead", heads=2)
    params = interface.init_params(4242, list(range(1, 8)), cfg, STEPS)
    step = interface.gradient_step(params, train_x, train_y)
    one, _ = train.descend_blocks(params, step, train_y, 5, 0.6, 3, threads=1)
    two, _ = train.descend_blocks(params, step, train_y, 5, 0.6, 3, threads=2)
    assert torch.equal(to_flat(one), to_flat(two))
