"""The capacity table: what each model kind can express on each task, by hand.

A hand-set model is one run whose parameters are written down, not trained; its
held-out accuracy says how well the kind can do the task at all, so a trained
model's shortfall is about optimisation. Every construction pools through the
lesson's key and value directions (pipeline/models/pooling.py): with
Wk = [[kappa, beta], 0, 0], q = [sqrt(d_k), 0, 0] a step's score is
kappa * channel_0 + beta * channel_1, and with Wv = [[alpha, gamma], 0, 0],
w = [1, 0, 0] its readout alpha * channel_0 + gamma * channel_1. Each task module
declares which construction suits each variant (HAND_SET), or why the kind cannot
express its rule (CANNOT; docs/next_lesson.md has the derivations; a reason that
starts with "open" is a cell with no construction and no proof).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pipeline.config import ModelConfig
from pipeline.config.cells import variant_config
from pipeline.core import ties
from pipeline.core.errors import PipelineError
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.tasks import task_module

FOCUS = 30.0  # a marker score this far above the rest puts ~all the weight on it
FLAT = 1e-3  # a reading score this small makes the log-sum-exp approach the mean


def lesson_head(d_k: int, d_v: int, key: tuple[float, float], value: tuple[float, float]):
    """Wk, Wv, q, w of one head whose key direction is `key` and value direction `value`."""
    wk, wv = torch.zeros(d_k, 2, dtype=torch.float64), torch.zeros(d_v, 2, dtype=torch.float64)
    wk[0], wv[0] = torch.tensor(key), torch.tensor(value)
    q, w = torch.zeros(d_k, dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64)
    q[0], w[0] = math.sqrt(d_k), 1.0
    return {"Wk": wk, "Wv": wv, "q": q, "w": w}


def head_count(cfg: ModelConfig, steps: int) -> int:
    """How many pooling heads the kind's layout holds (Wk is heads x d_k x C)."""
    shapes = dict(interface.layout(cfg, steps))
    return math.prod(shapes["Wk"]) // (cfg.d_k * 2)


def hand_set(
    cfg: ModelConfig, steps: int, heads: list[dict], bias: float, **extra: torch.Tensor
) -> Params:
    """One run of `cfg`'s kind: `heads` (the rest of its heads pool nothing), the bias,
    `extra` tensors, zeros elsewhere, and a sink logit that takes no weight where the
    kind has one. Every tensor takes its shape from the kind's layout."""
    count = head_count(cfg, steps)
    if len(heads) > count:
        raise ValueError(f"{len(heads)} heads set by hand, the kind has {count}")
    idle = lesson_head(cfg.d_k, cfg.d_v, (0.0, 0.0), (0.0, 0.0))
    heads = heads + [idle] * (count - len(heads))
    named = {name: torch.stack([h[name] for h in heads]) for name in ("Wk", "Wv", "q")}
    named["w"] = torch.cat([h["w"] for h in heads])
    named["b"] = torch.tensor(bias, dtype=torch.float64)
    named["sink"] = torch.tensor(-100.0, dtype=torch.float64)
    named |= extra
    tensors = {
        name: named[name].reshape(shape) if name in named else torch.zeros(shape)
        for name, shape in interface.layout(cfg, steps)
    }
    return Params(cfg, {name: t.to(torch.float64)[None] for name, t in tensors.items()})


def pooled(cfg: ModelConfig, steps: int, key, value, bias: float, **extra) -> Params:
    """One head pooling with `key` and `value`."""
    return hand_set(cfg, steps, [lesson_head(cfg.d_k, cfg.d_v, key, value)], bias, **extra)


def marker_reading(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """The lesson's rule: focus on the marker, read its reading against the threshold."""
    return pooled(cfg, steps, (0.0, FOCUS), (1.0, 0.0), -threshold)


def softmax_normalisation(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """Two patterns with one softmax: score kappa r_t + log(T - 1) [t = m], so the
    marked weight exceeds 1/2 iff kappa r_m > log sum_{t != m} exp(kappa r_t) - log(T-1),
    which tends to kappa * mean_{t != m} r_t as kappa -> 0; read out a_m - 1/2."""
    return pooled(cfg, steps, (FLAT, math.log(steps - 1)), (0.0, 1.0), -0.5)


def two_heads(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """Two patterns with two heads: one on the marker reads r_m, one spread evenly
    (zero scores) reads -mean_t r_t; the logit is their sum."""
    focus = lesson_head(cfg.d_k, cfg.d_v, (0.0, FOCUS), (1.0, 0.0))
    level = lesson_head(cfg.d_k, cfg.d_v, (0.0, 0.0), (-1.0, 0.0))
    return hand_set(cfg, steps, [focus, level], 0.0)


def learned_halves(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """Absolute position with a learned encoding: p_t = (0, +1/4) in the first half,
    (0, -1/4) in the second; focus on the marker, read 1 + p_m - 1."""
    half = torch.tensor([0.25 if t < steps / 2 else -0.25 for t in range(steps)])
    encoding = torch.stack([torch.zeros(steps), half], -1).to(torch.float64)
    return pooled(cfg, steps, (0.0, FOCUS), (0.0, 1.0), -1.0, P=encoding)


def calibrated_marker(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """The suppressor task with a learned encoding: p_0 = (threshold - beta / kappa, 2),
    p_t = 0 elsewhere. Step 0 scores kappa (o + threshold) + beta, the marker
    kappa (r_m + o) + beta, the rest beta less: the softmax is over {0, m}, with
    a_m = sigmoid(kappa (r_m - threshold)), the offset o cancelled. The readout
    -channel_1 reads -(a_m + 2 a_0) = a_m - 2; + 1.5 makes the logit a_m - 1/2."""
    kappa, beta = 100.0, 1000.0  # a 0.001 reading step moves a_m by 0.025; beta >> kappa * 6
    encoding = torch.zeros(steps, 2, dtype=torch.float64)
    encoding[0] = torch.tensor([threshold - beta / kappa, 2.0])
    return pooled(cfg, steps, (kappa, beta), (0.0, -1.0), 1.5, P=encoding)


def window_count(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """Absolute position with a causal window w >= T / 2 + 1: even layer attention
    (A = 0) over the w positions before t; at the marker h_{m,1} = 1 + c / (m + 1)
    tells m < T / 2 from m >= T / 2. Focus on the marker, threshold between them."""
    c = 0.5
    layer_value = torch.tensor([[0.0, 0.0], [0.0, c]], dtype=torch.float64)
    cut = 1.0 + c / (steps / 2 + 0.5)  # between 1 + c / (T/2) and 1 + c / (T/2 + 1)
    return pooled(cfg, steps, (0.0, 2 * FOCUS), (0.0, 1.0), -cut, Wv_layer=layer_value)


def window_previous(cfg: ModelConfig, steps: int, threshold: float) -> Params:
    """Relative order with a causal window of width 2: at the marked position the
    layer's score x_t^T A x_j = -lambda [t = m][j = m] puts the weight on m - 1, and
    Wv = [[-1, 0], [0, 0]] makes h_{m,0} = r_m - r_{m-1}; focus on the marker, read it."""
    bilinear_key = torch.zeros(cfg.d_k, 2, dtype=torch.float64)
    bilinear_query = torch.zeros(cfg.d_k, 2, dtype=torch.float64)
    bilinear_query[0, 1], bilinear_key[0, 1] = 1.0, -FOCUS * math.sqrt(cfg.d_k)
    layer_value = torch.tensor([[-1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    return pooled(
        cfg,
        steps,
        (0.0, FOCUS),
        (1.0, 0.0),
        0.0,
        Wq_layer=bilinear_query,
        Wk_layer=bilinear_key,
        Wv_layer=layer_value,
    )


Construction = Callable[[ModelConfig, int, float], Params]

# The hand-set models a task's HAND_SET names (pipeline/tasks/).
CONSTRUCTIONS: dict[str, Construction] = {
    construction.__name__: construction
    for construction in (
        marker_reading,
        softmax_normalisation,
        two_heads,
        learned_halves,
        calibrated_marker,
        window_count,
        window_previous,
    )
}


def capacity(task: str, variant: str) -> tuple[Construction | None, str | None]:
    """The cell's hand-set model, or the task's reason the variant cannot express its
    rule: exactly one of the two, as the task module declares (HAND_SET, CANNOT)."""
    module = task_module(task)
    name = getattr(module, "HAND_SET", {}).get(variant)
    reason = getattr(module, "CANNOT", {}).get(variant)
    if (name is None) == (reason is None):
        raise PipelineError(
            f"task {task} must declare variant {variant} in exactly one of HAND_SET (a "
            f"hand-set model of pipeline/experiments/grid/capacity.py) and CANNOT (why not), in "
            f"{module.__name__}"
        )
    return (None if name is None else CONSTRUCTIONS[name]), reason


def hand_set_accuracy(
    task: str, variant: str, base: ModelConfig, heldout: tuple[torch.Tensor, ...], threshold: float
) -> float | None:
    """Held-out accuracy of the cell's hand-set model; None where the task declares
    that the variant cannot express its rule."""
    construction, _ = capacity(task, variant)
    if construction is None:
        return None
    inputs, labels, _ = heldout
    params = construction(variant_config(variant, base), inputs.shape[1], threshold)
    logits, _ = interface.forward(params, inputs)
    return float((ties.above(logits[0], 0.0) == (labels > 0.5)).double().mean())
