"""Model variants from the glossary (issue 12), S independent runs at once.

Every variant pools the T steps with single-query attention, as the lesson does,
and differs in what it pools or how:

- `lesson`: the lesson's classifier (`pipeline.model`, 19 parameters, hand-derived
  fast path in training).
- `sink`: the lesson plus one learned, value-less sink logit per run in the softmax
  (seed 002, gpt-oss): the weights over the real steps sum to 1 - sink mass.
- `multihead`: `heads` single-query heads h, each with its own Wk_h, Wv_h, q_h;
  their contexts concatenated and read out by one w (heads * d_v) and b.
- `posenc`: the lesson on x_t + p_t, with p (T, C) learned or sinusoidal
  (p_{t,2i} = sin(t / 10000^(2i/C)), p_{t,2i+1} = cos(...); with C = 2, [sin t, cos t]).
- `window`: one causal sliding-window self-attention layer (seed 003), residual,
  h_t = x_t + sum_{j=t-w+1..t} softmax_j(Q_t . K_j / sqrt(d_k)) V_j with
  Q = Wq_layer x, K = Wk_layer x, V = Wv_layer x (Wv_layer: C x C), then the lesson's
  pooling on h (the whole sequence h_0..h_{T-1}).

Parameters: a variant is an ordered list of named shapes (`layout`), which fixes
the flat (S, P) layout of models/parameters.parquet and the study's seeds table,
the column names and the parameter count. The lesson's entries come first, in the
lesson's order, then the variant's extras.

Init: run k draws every parameter from stream(data.seed + k) with the lesson's rule
(u1 + u2 + u3 - 1.5) * init_scale, in layout order, except the bias b, which starts
at 0 and draws nothing (as in the lesson). So the first 18 draws of sink, posenc
and window are the lesson's init exactly, and multihead with heads = 1 is the
lesson (its per-head tensors are laid out head-major: Wk of all heads, then Wv, q).
The sink logit, the learned encoding and the window layer take the draws after.

The forward: `forward(params, inputs, dropped)` -> logits (..., S, N), pooling weights
(..., S, N, T), for lesson `Params` (model.forward, unchanged) and `VariantParams`
alike. What the metrics read: the pooling weights over the T real steps; for
multihead the mean over heads of each head's weights (per-head numbers come from
`head_weights`); for sink they sum to 1 - sink mass; for window they weigh the
positions h_t, whose receptive field is the steps t-w+1..t of the input.
`dropped` removes steps from the pooling softmax (every head's; the sink cannot be
dropped; for window the layer still sees every step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pipeline import model
from pipeline.attention import attention_weights, drop_steps_mask
from pipeline.config import KINDS, ModelConfig
from pipeline.data import stream
from pipeline.model import CHANNELS, Params

Shape = tuple[int, ...]


@dataclass(frozen=True)
class VariantParams:
    """Parameters of S runs of a variant: name -> (S, *shape), in layout order."""

    cfg: ModelConfig
    named: dict[str, torch.Tensor]

    @property
    def runs(self) -> int:
        return self.named["b"].shape[0]

    def tensors(self) -> list[torch.Tensor]:
        return list(self.named.values())

    def map(self, fn) -> VariantParams:
        return VariantParams(self.cfg, {name: fn(t) for name, t in self.named.items()})


AnyParams = Params | VariantParams


def layout(cfg: ModelConfig, steps: int) -> list[tuple[str, Shape]]:
    """(name, shape of one run) of every parameter tensor, in flat and init order."""
    d_k, d_v, c = cfg.d_k, cfg.d_v, CHANNELS
    if cfg.kind == "multihead":
        h = cfg.heads
        return [
            ("Wk", (h, d_k, c)),
            ("Wv", (h, d_v, c)),
            ("q", (h, d_k)),
            ("w", (h * d_v,)),
            ("b", ()),
        ]
    lesson = [("Wk", (d_k, c)), ("Wv", (d_v, c)), ("q", (d_k,)), ("w", (d_v,)), ("b", ())]
    extras: dict[str, list[tuple[str, Shape]]] = {
        "lesson": [],
        "sink": [("sink", ())],
        "posenc": [("P", (steps, c))] if cfg.positional == "learned" else [],
        "window": [("Wq_layer", (d_k, c)), ("Wk_layer", (d_k, c)), ("Wv_layer", (c, c))],
    }
    if cfg.kind not in extras:
        raise ValueError(f"unknown model kind {cfg.kind!r}; allowed: {', '.join(KINDS)}")
    return lesson + extras[cfg.kind]


def parameter_count(cfg: ModelConfig, steps: int) -> int:
    return sum(math.prod(shape) for _, shape in layout(cfg, steps))


def flat_names(cfg: ModelConfig, steps: int) -> list[str]:
    """Column names: name_<indices>, digits run together while every dim is <= 10
    (the lesson's Wk_01, q_2, b), joined by '_' otherwise (P_11_1)."""
    names = []
    for name, shape in layout(cfg, steps):
        if not shape:
            names.append(name)
            continue
        sep = "" if max(shape) <= 10 else "_"
        for index in torch.cartesian_prod(*(torch.arange(n) for n in shape)).reshape(
            -1, len(shape)
        ):
            names.append(f"{name}_{sep.join(str(int(i)) for i in index)}")
    return names


def init_run(seed: int, cfg: ModelConfig, steps: int) -> list[float]:
    """One run's flat init: every value drawn from stream(seed) in layout order, b = 0."""
    draw = stream(seed)
    values: list[float] = []
    for name, shape in layout(cfg, steps):
        count = math.prod(shape)
        if name == "b":
            values += [0.0] * count
        else:
            values += [(draw() + draw() + draw() - 1.5) * cfg.init_scale for _ in range(count)]
    return values


def from_flat(flat: torch.Tensor, cfg: ModelConfig, steps: int) -> AnyParams:
    """(S, P) rows in layout order -> the lesson's Params or VariantParams."""
    if cfg.kind == "lesson":
        return model.from_flat(flat, cfg)
    shapes = layout(cfg, steps)
    parts = flat.split([math.prod(shape) for _, shape in shapes], dim=1)
    runs = flat.shape[0]
    named = {
        name: part.reshape(runs, *shape).contiguous()
        for (name, shape), part in zip(shapes, parts, strict=True)
    }
    return VariantParams(cfg, named)


def to_flat(params: AnyParams) -> torch.Tensor:
    """Params of either kind -> (S, P) rows in layout order."""
    if isinstance(params, Params):
        return model.to_flat(params)
    return torch.cat([t.reshape(params.runs, -1) for t in params.tensors()], dim=1)


def with_tensors(params: AnyParams, tensors: list[torch.Tensor]) -> AnyParams:
    """The same kind of parameters holding `tensors` (in `tensors()` order)."""
    if isinstance(params, Params):
        return Params(*tensors)
    return VariantParams(params.cfg, dict(zip(params.named, tensors, strict=True)))


def init_params(
    data_seed: int,
    run_seeds: list[int],
    cfg: ModelConfig,
    steps: int,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> AnyParams:
    """Run k starts from stream(data_seed + k); the lesson through model.init_params."""
    if cfg.kind == "lesson":
        return model.init_params(data_seed, run_seeds, cfg, dtype, device)
    rows = [init_run(data_seed + k, cfg, steps) for k in run_seeds]
    return from_flat(torch.tensor(rows, dtype=dtype, device=device), cfg, steps)


# --- the forward ------------------------------------------------------------------------------


def sinusoidal_encoding(steps: int, channels: int, dtype: torch.dtype) -> torch.Tensor:
    """(T, C): p_{t,2i} = sin(t / 10000^(2i/C)), p_{t,2i+1} = cos(t / 10000^(2i/C))."""
    position = torch.arange(steps, dtype=dtype)[:, None]
    rates = 10000.0 ** (-(torch.arange(channels) // 2 * 2).to(dtype) / channels)
    angles = position * rates  # (T, C)
    even = torch.arange(channels) % 2 == 0
    return torch.where(even, angles.sin(), angles.cos())


def lesson_view(params: VariantParams, head: int | None = None) -> Params:
    """The lesson-shaped pooling parameters (one head's, for multihead)."""
    n = params.named
    if head is None:
        return Params(n["Wk"], n["Wv"], n["q"], n["w"], n["b"])
    d_v = params.cfg.d_v
    readout = n["w"][:, head * d_v : (head + 1) * d_v]
    return Params(n["Wk"][:, head], n["Wv"][:, head], n["q"][:, head], readout, n["b"])


def shifted(steps_last: torch.Tensor, offset: int) -> torch.Tensor:
    """Step t takes the value of step t - offset (zero before step 0): (..., T)."""
    if offset == 0:
        return steps_last
    return torch.nn.functional.pad(steps_last, (offset, 0))[..., : steps_last.shape[-1]]


def total(terms) -> torch.Tensor:
    """t1 + t2 + ... in order, without `sum`'s extra pass for its 0 start."""
    terms = iter(terms)
    out = next(terms)
    for term in terms:
        out = out + term
    return out


def project_channels(channels: list[torch.Tensor], direction: torch.Tensor) -> torch.Tensor:
    """model.project on channel slabs (..., N, T) each, with the same operations in the
    same order (so equal bits): direction (S, C) -> (..., S, N, T)."""
    return total(x * direction[:, c, None, None] for c, x in enumerate(channels))


def layer_bilinear(params: VariantParams) -> torch.Tensor:
    """The window layer's A = Wq^T Wk / sqrt(d_k), (S, C, C): Q_t . K_j = x_t^T A x_j."""
    n = params.named
    return torch.einsum("sic,sid->scd", n["Wq_layer"], n["Wk_layer"]) / math.sqrt(
        n["Wq_layer"].shape[1]
    )


def window_channels(params: VariantParams, inputs: torch.Tensor) -> list[torch.Tensor]:
    """h = x + causal sliding-window self-attention of x, per channel: (..., S, N, T) each.

    Q_t . K_j = x_t^T A x_j with A = Wq^T Wk / sqrt(d_k) (C x C), so the scores need
    only C channels. Banded: position t scores the w positions t-w+1..t, one offset
    at a time, T * w scores, not T * T. Channels and offsets are kept as separate
    (..., S, N, T) slabs: elementwise work, no reduction over a tiny last dim.
    """
    n, window = params.named, params.cfg.window
    bilinear = layer_bilinear(params)
    xs = list(inputs.unbind(-1))  # (..., N, T) or (..., S, N, T) each
    keys = [project_channels(xs, bilinear[:, c]) for c in range(len(xs))]  # (A x)_c
    values = [project_channels(xs, n["Wv_layer"][:, c]) for c in range(len(xs))]
    steps = torch.arange(inputs.shape[-2], device=inputs.device)
    scores = torch.stack(
        [
            total(x * shifted(k, offset) for x, k in zip(xs, keys, strict=True))
            + drop_steps_mask(steps < offset, inputs.dtype)
            for offset in range(window)
        ]
    )  # (w, ..., S, N, T): offset first
    weights = torch.softmax(scores, dim=0).unbind(0)
    return [
        x + total(a * shifted(v, offset) for offset, a in enumerate(weights))
        for x, v in zip(xs, values, strict=True)
    ]


def window_layer(params: VariantParams, inputs: torch.Tensor) -> torch.Tensor:
    """The window layer's output h: (..., S, N, T, C)."""
    return torch.stack(window_channels(params, inputs), -1)


def pooled_channels(params: VariantParams, inputs: torch.Tensor) -> list[torch.Tensor]:
    """What the pooling attends over, per channel: x, x + p, or the window layer's h."""
    xs = list(inputs.unbind(-1))
    kind = params.cfg.kind
    if kind == "posenc":
        if params.cfg.positional == "learned":
            encoding = params.named["P"][:, None]  # (S, 1, T, C)
        else:
            steps, channels = inputs.shape[-2:]
            encoding = sinusoidal_encoding(steps, channels, inputs.dtype).to(inputs.device)
        return [x + encoding[..., c] for c, x in enumerate(xs)]
    if kind == "window":
        return window_channels(params, inputs)
    return xs


def scores_and_readouts(
    params: VariantParams, inputs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per head and step: pooling scores and readouts w_h . V_{h,t}, (..., S, N, H, T) each."""
    xs = pooled_channels(params, inputs)
    if params.cfg.kind == "multihead":
        views = [lesson_view(params, h) for h in range(params.cfg.heads)]
    else:
        views = [lesson_view(params)]
    scores = [project_channels(xs, model.key_direction(v)) for v in views]
    readouts = [project_channels(xs, model.value_direction(v)) for v in views]
    if len(views) == 1:  # a view, not a copy: one head is most variants
        return scores[0].unsqueeze(-2), readouts[0].unsqueeze(-2)
    return torch.stack(scores, -2), torch.stack(readouts, -2)


def attend(
    params: VariantParams, inputs: torch.Tensor, dropped: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits (..., S, N), per-head weights and readouts (..., S, N, H, T)."""
    scores, readouts = scores_and_readouts(params, inputs)
    mask = None if dropped is None else drop_steps_mask(dropped, scores.dtype).unsqueeze(-2)
    sink = params.named.get("sink")
    sink = None if sink is None else sink[:, None, None]  # (S, 1, 1): one per run
    weights = attention_weights(scores, mask, sink)
    logits = (weights * readouts).sum((-2, -1)) + params.named["b"][:, None]
    return logits, weights, readouts


def forward(
    params: AnyParams, inputs: torch.Tensor, dropped: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (..., S, N) and pooling weights (..., S, N, T) of any variant.

    The lesson goes through model.forward unchanged; for multihead the weights are
    the mean over heads. `dropped` as in model.forward.
    """
    if isinstance(params, Params):
        return model.forward(params, inputs, dropped)
    logits, weights, _ = attend(params, inputs, dropped)
    if weights.shape[-2] == 1:
        return logits, weights.squeeze(-2)  # the mean over one head, without a pass
    return logits, weights.mean(-2)


def head_weights(params: AnyParams, inputs: torch.Tensor) -> torch.Tensor:
    """Each head's pooling weights (..., S, N, H, T); the lesson has one head."""
    if isinstance(params, Params):
        return model.forward(params, inputs)[1].unsqueeze(-2)
    return attend(params, inputs)[1]


def value_norm(params: AnyParams, inputs: torch.Tensor) -> torch.Tensor:
    """sum_h a_{h,t} |w_h . V_{h,t}|: how much step t moves the logit through its
    value (the lesson's a_t |w . V_t|; for window V_t is read from h_t): (S, N, T)."""
    if isinstance(params, Params):
        weights = model.forward(params, inputs)[1]
        return weights * model.project(inputs, model.value_direction(params)).abs()
    _, weights, readouts = attend(params, inputs)
    return (weights * readouts.abs()).sum(-2)


def sink_mass(params: AnyParams, inputs: torch.Tensor) -> torch.Tensor | None:
    """The weight each example puts on the sink, its share of the softmax (1 - sum_t a_t
    up to rounding): (S, N); None for a model without one."""
    if isinstance(params, Params) or "sink" not in params.named:
        return None
    scores, _ = scores_and_readouts(params, inputs)  # (S, N, 1, T)
    sink = params.named["sink"][:, None, None].expand(scores.shape[:-1]).unsqueeze(-1)
    return torch.softmax(torch.cat([scores, sink], -1), -1)[..., -1].sum(-1)


# --- training: the same forward, runs innermost -----------------------------------------------


def _project(xs: list[torch.Tensor], directions: torch.Tensor) -> torch.Tensor:
    """`project_channels` with the runs last: channel slabs xs (N, T, ...) and
    directions (..., C) -> sum_c xs[c] * directions[..., c]."""
    return total(x * directions[..., c] for c, x in enumerate(xs))


def uses_window_kernel(params: AnyParams, inputs: torch.Tensor) -> bool:
    """Whether training runs the window variant through `pipeline.window_kernel`
    (compiled for the CPU)."""
    window = isinstance(params, VariantParams) and params.cfg.kind == "window"
    return window and inputs.device.type == "cpu"


def training_logits(
    params: AnyParams, inputs: torch.Tensor, threads: int | None = None
) -> torch.Tensor:
    """The logits (S, N) of `forward` on inputs (N, T, C), for training.

    The same operations as `forward`, laid out example-major with the runs
    innermost, (N, T, H, S): every broadcast, softmax and sum over steps runs
    along S contiguous numbers instead of T = 12. The window variant's layer and
    pooling are one compiled autograd node on the CPU (`pipeline.window_kernel`),
    and `forward` itself elsewhere. Equal to `forward` up to float rounding
    (tests/test_variants.py); the metrics keep `forward`. The lesson's Params go
    through model.forward. `threads`: the window kernel's (default torch's count).
    """
    if isinstance(params, Params):
        return model.forward(params, inputs)[0]
    kind = params.cfg.kind
    n = params.named
    if kind == "window":
        if not uses_window_kernel(params, inputs):
            return forward(params, inputs)[0]
        from pipeline.window_kernel import WindowContext  # numba: 0.5 s to import

        view = lesson_view(params)
        key_dir, value_dir = model.key_direction(view), model.value_direction(view)
        context = WindowContext.apply(
            layer_bilinear(params),
            key_dir,
            value_dir,
            torch.einsum("scd,sc->sd", n["Wv_layer"], key_dir),  # beta = Wv^T u_k
            torch.einsum("scd,sc->sd", n["Wv_layer"], value_dir),  # gamma = Wv^T u_v
            inputs,
            params.cfg.window,
            threads or torch.get_num_threads(),
        )
        return context + n["b"][:, None]
    xs = [x[..., None] for x in inputs.unbind(-1)]  # (N, T, 1) each
    if kind == "posenc":
        if params.cfg.positional == "learned":
            encoding = n["P"].permute(1, 2, 0)  # (T, C, S)
        else:
            steps, channels = inputs.shape[-2:]
            encoding = sinusoidal_encoding(steps, channels, inputs.dtype).to(inputs.device)
            encoding = encoding[..., None]  # (T, C, 1)
        xs = [x + encoding[:, c] for c, x in enumerate(xs)]
    xs = [x[:, :, None] for x in xs]  # (N, T, 1, S or 1): heads next to the runs
    heads = range(params.cfg.heads) if kind == "multihead" else [None]
    views = [lesson_view(params, head) for head in heads]
    keys = torch.stack([model.key_direction(view) for view in views])  # (H, S, C)
    values = torch.stack([model.value_direction(view) for view in views])
    scores, readouts = _project(xs, keys), _project(xs, values)  # (N, T, H, S)
    sink = params.named.get("sink")
    if sink is None:
        weights = torch.softmax(scores, dim=1)
    else:
        slot = sink.expand(scores.shape[0], 1, 1, -1)  # (N, 1, 1, S)
        weights = torch.softmax(torch.cat([scores, slot], 1), dim=1)[:, :-1]
    logits = (weights * readouts).sum((1, 2))  # (N, S)
    return (logits + params.named["b"]).T
