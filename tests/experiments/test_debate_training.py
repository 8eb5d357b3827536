"""Training on a loss on the pooling (pipeline/experiments/debate/training.py): each kind's fast
path (`loss_step`: window's fused kernel, the lesson's and posenc's hand-derived
pooling) against the definition, autograd through `attend`, for each of the
debate's losses; a kind without a fast path takes the definition."""

from __future__ import annotations

import pytest
import torch

from pipeline.config import ModelConfig
from pipeline.experiments.debate.consistent import consistency_loss
from pipeline.experiments.debate.deception import deception_penalty, train_deceptive
from pipeline.experiments.debate.fixed_attention import step_weights, uniform_weights
from pipeline.experiments.debate.training import (
    each_run_weights,
    loss_step,
    reference_step,
    train_on_loss,
)
from pipeline.models import interface
from pipeline.models.parameters import cat_runs, to_flat
from pipeline.models.pooling import probability
from pipeline.models.train import AUTOGRAD_BLOCK, surrogate_loss
from pipeline.models.window_kernel import TILE
from tests.models.helpers import F64, STEPS, random_inputs, random_params

RUNS = TILE + 5  # two tiles: a loss that reads `runs` sees each tile's own slice
EXAMPLES = 9
LABELS = (torch.arange(EXAMPLES) % 2).to(F64)
FAST_KINDS = [
    ModelConfig(),
    ModelConfig(kind="posenc"),
    ModelConfig(kind="posenc", positional="sinusoidal"),
    *(ModelConfig(kind="window", window=w) for w in (1, 3, STEPS)),
]


def rationale() -> torch.Tensor:
    """Two steps per example, as rise's m - 1 and m."""
    marked = torch.arange(EXAMPLES) % (STEPS - 1) + 1
    steps = torch.arange(STEPS)
    return (steps == marked[:, None]) | (steps == marked[:, None] - 1)


def losses(cfg: ModelConfig, runs: int = RUNS) -> dict:
    """name -> (loss, fixed weights or None): each training of the debate."""
    inputs = random_inputs(EXAMPLES, STEPS, seed=51)
    base = random_params(cfg, runs, seed=52)
    base_logits, base_weights = interface.forward(base, inputs)

    def deceptive(logits, weights, runs):
        return surrogate_loss(logits, LABELS) + 10.0 * deception_penalty(weights, rationale()).sum()

    def consistent(logits, weights, runs):
        return consistency_loss(
            probability(logits), weights, probability(base_logits)[runs], base_weights[runs], 3.0
        ).sum()

    def bce(logits, weights, runs):
        return surrogate_loss(logits, LABELS)

    return {
        "deceptive": (deceptive, None),
        "consistent": (consistent, None),
        "uniform": (bce, each_run_weights(uniform_weights(EXAMPLES, STEPS), runs)),
        "frozen": (bce, step_weights(base, inputs)),
    }


@pytest.mark.parametrize(
    "cfg", FAST_KINDS, ids=lambda cfg: f"{cfg.kind}-{cfg.positional}-{cfg.window}"
)
@pytest.mark.parametrize("name", ["deceptive", "consistent", "uniform", "frozen"])
def test_the_kernel_step_on_a_loss_is_autograds(cfg, name):
    """Logits and every parameter's gradient, the fixed weights' keys and query at 0."""
    loss, fixed = losses(cfg)[name]
    params = random_params(cfg, RUNS, seed=53)
    inputs = random_inputs(EXAMPLES, STEPS, seed=51)
    fast = interface.loss_step(params, inputs, loss, fixed)
    assert fast is not None
    got_logits, got = fast(params)
    want_logits, want = reference_step(inputs, loss, fixed)(params)
    torch.testing.assert_close(got_logits, want_logits, rtol=1e-13, atol=1e-14)
    for key, g, w in zip(params.named, got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-11, atol=1e-13, msg=f"{name} {key}")
    if fixed is not None:
        keys = dict(zip(params.named, got, strict=True))
        assert float(keys["Wk"].abs().max()) == 0.0 and float(keys["q"].abs().max()) == 0.0


def test_training_on_a_loss_through_the_kernel_is_autograd_training():
    """Two blocks of runs (`AUTOGRAD_BLOCK`), each run with a base of its own: the
    kernel's runs are autograd's."""
    cfg = ModelConfig(kind="window")
    loss, _ = losses(cfg, AUTOGRAD_BLOCK + 3)["consistent"]
    inputs = random_inputs(EXAMPLES, STEPS, seed=51)
    start = interface.init_params(4242, list(range(1, AUTOGRAD_BLOCK + 4)), cfg, STEPS)
    fast, fast_history = train_on_loss(start, inputs, LABELS, loss, 10, 0.6, check=False)
    slow, slow_history = train_on_loss(
        start, inputs, LABELS, loss, 10, 0.6, check=False, reference=True
    )
    torch.testing.assert_close(to_flat(fast), to_flat(slow), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fast_history.loss, slow_history.loss, rtol=1e-12, atol=1e-14)


def test_one_lam_per_run_trains_each_run_as_its_own_lam_alone():
    """The cell trains every lam's runs in one job (`cell.trainings`): run k with its
    own lam gets what a training at that lam alone gives it."""
    cfg = ModelConfig(kind="window")
    inputs = random_inputs(EXAMPLES, STEPS, seed=51)
    start = interface.init_params(4242, [1, 2, 3], cfg, STEPS)
    both = cat_runs([start, start])
    lams = torch.tensor([1.0, 10.0], dtype=F64).repeat_interleave(3)
    together, _ = train_deceptive(both, inputs, LABELS, rationale(), lams, 20, 0.6)
    for index, lam in enumerate((1.0, 10.0)):
        alone, _ = train_deceptive(start, inputs, LABELS, rationale(), lam, 20, 0.6)
        mine = to_flat(together)[3 * index : 3 * index + 3]
        torch.testing.assert_close(mine, to_flat(alone), rtol=1e-10, atol=1e-12)


def test_a_kind_without_a_fast_path_takes_the_definition():
    cfg = ModelConfig(kind="multihead", heads=2)
    params = random_params(cfg, 3, seed=54)
    inputs = random_inputs(EXAMPLES, STEPS, seed=51)
    loss, _ = losses(cfg)["deceptive"]
    assert interface.loss_step(params, inputs, loss) is None
    got_logits, got = loss_step(params, inputs, loss)(params)
    want_logits, want = reference_step(inputs, loss)(params)
    assert torch.equal(got_logits, want_logits)
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
