"""Parameters of S runs of any model kind: named tensors in the kind's layout.

A kind's `layout(cfg, steps)` is an ordered list of (name, shape of one run). It
fixes the flat (S, P) rows of models/parameters.parquet and the study's seeds
table, their column names, the parameter count and the init order.

Init: run k draws every parameter from stream(data.seed + k) with the lesson's rule
(u1 + u2 + u3 - 1.5) * init_scale, in layout order, except the bias b, which starts
at 0 and draws nothing (as in the lesson). Kinds that extend the lesson list its
entries first, so their first draws are the lesson's init exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from pipeline.config import ModelConfig
from pipeline.data import stream

CHANNELS = 2  # reading, marked-step indicator
Shape = tuple[int, ...]
Layout = list[tuple[str, Shape]]


@dataclass(frozen=True)
class Params:
    """Parameters of S runs: name -> (S, *shape), in layout order."""

    cfg: ModelConfig
    named: dict[str, torch.Tensor]

    @property
    def runs(self) -> int:
        return self.named["b"].shape[0]

    def tensors(self) -> list[torch.Tensor]:
        return list(self.named.values())

    def with_tensors(self, tensors: list[torch.Tensor]) -> Params:
        """The same layout holding `tensors` (in `tensors()` order)."""
        return Params(self.cfg, dict(zip(self.named, tensors, strict=True)))

    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Params:
        return self.with_tensors([fn(t) for t in self.tensors()])

    def blocks(self, size: int) -> list[tuple[int, Params]]:
        """(first run, the `size` runs from it) for each block of runs, in order: the
        chunks that training, the battery and the debate pass at a time."""
        return [
            (start, self.map(lambda t, s=start: t[s : s + size]))
            for start in range(0, self.runs, size)
        ]


def cat_runs(parts: list[Params]) -> Params:
    """The runs of `parts` (one layout) in one Params, in order."""
    tensors = zip(*(part.tensors() for part in parts), strict=True)
    return parts[0].with_tensors([torch.cat(list(group)) for group in tensors])


def lesson_layout(cfg: ModelConfig) -> Layout:
    """The lesson's 19 parameters (d_k = d_v = 3): Wk, Wv, q, w, b, in its init order."""
    return [
        ("Wk", (cfg.d_k, CHANNELS)),
        ("Wv", (cfg.d_v, CHANNELS)),
        ("q", (cfg.d_k,)),
        ("w", (cfg.d_v,)),
        ("b", ()),
    ]


# The sanity checks' parameter groups (pipeline/analysis/sanity.py), from the output
# side inwards: what reads the pooled value out, the values, then what sets the weights.
Groups = list[tuple[str, tuple[str, ...]]]
LESSON_GROUPS: Groups = [("readout", ("w", "b")), ("values", ("Wv",)), ("keys", ("Wk", "q"))]


def parameter_count(layout: Layout) -> int:
    return sum(math.prod(shape) for _, shape in layout)


def flat_names(layout: Layout) -> list[str]:
    """Column names: name_<indices>, digits run together while every dim is <= 10
    (the lesson's Wk_01, q_2, b), joined by '_' otherwise (P_11_1)."""
    names = []
    for name, shape in layout:
        if not shape:
            names.append(name)
            continue
        sep = "" if max(shape) <= 10 else "_"
        for index in torch.cartesian_prod(*(torch.arange(n) for n in shape)).reshape(
            -1, len(shape)
        ):
            names.append(f"{name}_{sep.join(str(int(i)) for i in index)}")
    return names


def init_run(seed: int, layout: Layout, init_scale: float) -> list[float]:
    """One run's flat init: every value drawn from stream(seed) in layout order, b = 0."""
    draw = stream(seed)
    values: list[float] = []
    for name, shape in layout:
        count = math.prod(shape)
        if name == "b":
            values += [0.0] * count
        else:
            values += [(draw() + draw() + draw() - 1.5) * init_scale for _ in range(count)]
    return values


MASK32 = 0xFFFFFFFF
INT64 = (-(2**63), 2**63 - 1)


def _times(x: torch.Tensor, factor: int) -> torch.Tensor:
    """x * factor mod 2^32 for int64 x in [0, 2^32) and a 32-bit factor, in 16-bit
    halves of the factor so that no int64 product overflows."""
    low, high = factor & 0xFFFF, factor >> 16
    return (x * low + (((x * high) & 0xFFFF) << 16)) & MASK32


def uniforms(seeds: torch.Tensor, draws: int) -> torch.Tensor:
    """(draws, S) float64: the first `draws` values of `data.stream(seed)` for each of
    the int64 `seeds` (a row a draw), bit for bit: the same hash and 32-bit LCG on
    integer tensors, whose products keep the low 32 bits the stream keeps."""
    x = _times((seeds ^ (seeds >> 16)) & MASK32, 2246822507)
    x = _times((x ^ (x >> 13)) & MASK32, 3266489909)
    state = (x ^ (x >> 16)) & MASK32
    out = torch.empty(draws, seeds.shape[0], dtype=torch.float64)
    for j in range(draws):  # < 2^53: the LCG's product fits an int64
        state.mul_(1664525).add_(1013904223).bitwise_and_(MASK32)
        out[j] = state  # exact: a 32-bit integer in a float64
    return out.div_(4294967296)  # exact: a power of 2


def init_runs(seeds: list[int], layout: Layout, init_scale: float) -> torch.Tensor:
    """(S, P) float64: `init_run` of each seed, drawn in bulk with tensor ops, the same
    bits (the same IEEE operations in the same order), without a Python loop's cost
    per seed (docs/speed.md). Seeds beyond int64 take `init_run` itself."""
    sizes = [math.prod(shape) for _, shape in layout]
    if not all(INT64[0] <= seed <= INT64[1] for seed in seeds):
        rows = [init_run(seed, layout, init_scale) for seed in seeds]
        return torch.tensor(rows, dtype=torch.float64)
    drawn = sum(size for (name, _), size in zip(layout, sizes, strict=True) if name != "b")
    u = uniforms(torch.tensor(seeds, dtype=torch.int64), 3 * drawn).reshape(drawn, 3, -1)
    values = ((u[:, 0] + u[:, 1] + u[:, 2] - 1.5) * init_scale).T
    parts, taken = [], 0
    for (name, _), size in zip(layout, sizes, strict=True):
        if name == "b":
            parts.append(torch.zeros(len(seeds), size, dtype=torch.float64))
        else:
            parts.append(values[:, taken : taken + size])
            taken += size
    return torch.cat(parts, dim=1)


def from_flat(flat: torch.Tensor, cfg: ModelConfig, layout: Layout) -> Params:
    """(S, P) rows in layout order -> Params."""
    parts = flat.split([math.prod(shape) for _, shape in layout], dim=1)
    runs = flat.shape[0]
    named = {
        name: part.reshape(runs, *shape).contiguous()
        for (name, shape), part in zip(layout, parts, strict=True)
    }
    return Params(cfg, named)


def to_flat(params: Params) -> torch.Tensor:
    """Params -> (S, P) rows in layout order."""
    return torch.cat([t.reshape(params.runs, -1) for t in params.tensors()], dim=1)
