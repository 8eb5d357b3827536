"""What the model tests share (here and in tests/analysis/, tests/experiments/):
random inputs and parameters of any kind, a small data set, a kind's lesson-shaped
part, and a toy kind defined in plain torch that plugs in through the registry."""

from __future__ import annotations

import types

import torch

from pipeline import data
from pipeline.config import FaithfulnessConfig, ModelConfig, validate
from pipeline.models import frames, interface, multihead
from pipeline.models import lesson as lesson_kind
from pipeline.models.parameters import CHANNELS, Params, init_run, lesson_layout
from pipeline.models.pooling import Head, lesson_head
from tests.conftest import composed, small_overrides

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


def is_lesson(kind: str, zeroed: str, seed: int) -> bool:
    """Whether the model kind `kind`, its own parameter `zeroed` set to zero (an
    encoding, the layer's values) and the rest random, computes what the lesson does:
    every output (logits, weights) the lesson's on its lesson-shaped part, bit for bit."""
    params = random_params(ModelConfig(kind=kind), 3, seed=seed)
    params.named[zeroed].zero_()
    inputs = random_inputs(9, STEPS, seed=seed + 1)
    outputs = zip(
        interface.forward(params, inputs),
        lesson_kind.forward(lesson_part(params), inputs),
        strict=True,
    )
    return all(torch.equal(got, want) for got, want in outputs)


def kind_init_run(seed: int, cfg: ModelConfig) -> list[float]:
    """One run's flat init of a kind."""
    return init_run(seed, interface.layout(cfg, STEPS), cfg.init_scale)


def lesson_init_run(seed: int) -> list[float]:
    cfg = ModelConfig()
    return init_run(seed, lesson_layout(cfg), cfg.init_scale)


def small_set(steps: int = STEPS):
    cfg = validate(composed(small_overrides()))
    frame = data.generate(cfg.data)
    train_x, train_y, _ = frames.features(data.split_frame(frame, "train"), steps)
    heldout = frames.features(data.split_frame(frame, "heldout"), steps)
    return (train_x, train_y), heldout


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
