"""Every kind's parameters (pipeline/models/parameters.py through the kinds'
layouts): the count and names, the init drawn from the lesson's stream, in bulk
bit for bit as a seed at a time, and blocks of runs."""

from __future__ import annotations

import pytest
import reference_lesson as lesson
import torch

from pipeline.config import ModelConfig
from pipeline.models import interface
from pipeline.models.parameters import (
    Params,
    cat_runs,
    flat_names,
    init_run,
    init_runs,
    lesson_layout,
    to_flat,
)
from tests.models.helpers import F64, STEPS, kind_init_run, lesson_init_run


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


def test_blocks_of_runs_cover_every_run_once_and_concatenate_back():
    params = interface.init_params(4242, list(range(1, 8)), ModelConfig(), STEPS)
    blocks = params.blocks(3)
    assert [(start, part.runs) for start, part in blocks] == [(0, 3), (3, 3), (6, 1)]
    assert torch.equal(to_flat(blocks[1][1]), to_flat(params)[3:6])
    assert torch.equal(to_flat(cat_runs([part for _, part in blocks])), to_flat(params))
