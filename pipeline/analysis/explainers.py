"""Explainers: one importance score per (run, held-out example, step), shape (S, N, T).

Every explainer takes the seed-batched parameters of S runs of any model variant
(pipeline/models/; the gradient family goes through `interface.forward`) and
held-out inputs (N, T, C) and scores each step for each run and example at once. They answer
different questions about the same prediction:

- `attention`: where the model looks, the softmax weight a_t (the lesson's view).
- `loo`: what the output loses without the step, |P(y=1 | t dropped) - P(y=1)|,
  dropping t from the softmax (the lesson's step ablation).
- `gradient`: how sensitive P(y=1) is to a small change of the step's input,
  the L2 norm over channels of dP/dx_t (captum `Saliency`).
- `grad_x_input`: the first-order contribution of the step's input,
  |sum_c x_{t,c} dP/dx_{t,c}| (captum `InputXGradient`).
- `integrated_gradients`: the step's share of P(x) - P(0) along the straight
  path from the all-zero input, |sum_c IG_{t,c}| (captum `IntegratedGradients`,
  Gauss-Legendre rule with `IG_STEPS` nodes).
- `value_norm`: how much the step moves the logit through its value, the weight
  times the size of the step's readout, a_t |w . V_t| = a_t |value_direction . x_t|
  (the norm-based view of Kobayashi et al. 2020).

Where a kind has a layer before the pooling (window), the pooling weighs the
layer's outputs h_t, each a mix of its window of inputs, so a_t is not about
input step t. Abnar & Zuidema, "Quantifying Attention Flow in Transformers" (ACL
2020), carry the weights through the layer, its residual counted as attention to
itself: R = (L + I) / 2, L the layer's attention (rows sum to 1, so R's do too):

- `attention_rollout`: sum_t a_t R[t, j], the pooling's weights times the rolled-out
  layer (their rollout: the product of every layer's R, here one).
- `attention_flow`: the maximum flow from the output to input step j through the
  graph output -> h_t (capacity a_t) -> x_j (capacity R[t, j]). Every path to x_j
  has two edges and passes one h_t, so the maximum flow is sum_t min(a_t, R[t, j]);
  tests/analysis/test_explainers.py checks it against networkx's maximum_flow_value.

Where a kind has several pooling heads (multihead), `attention` is their mean;
`attention_max_head` is the max over heads of a_{h,t}, and `attention_head<h>` each
head's own weights (the heads experiment's "division of labour").

The gradient family explains P(y=1) = pooling.probability(logit) with captum.
captum sees one batch row holding every run and example, inputs (1, S, N, T, C),
and a forward that returns sum_{s,n} P(y=1 | x_{s,n}) per row
(`summed_probability`). Runs and examples do not interact, so the gradient of
that sum with respect to x_{s,n} is exactly dP(y=1 | x_{s,n})/dx_{s,n}, and IG
of a separable sum is the sum of the per-example IGs: every attribution is per
example, and completeness holds per example. (captum differentiates each output
row separately, unbinding them into Python scalars: one row keeps that overhead
constant, where one row per example would cost O((S N)^2) in the backward.)
The forward broadcasts inputs (..., S, N, T, C) against the runs, so captum's
own expansion (IG's n_steps path points) is a leading dim. No Python loop over
examples or runs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from pipeline.analysis.metrics import ablation_effects
from pipeline.config import FaithfulnessConfig, ModelConfig
from pipeline.core import measures
from pipeline.models import interface
from pipeline.models.interface import forward
from pipeline.models.parameters import Params
from pipeline.models.pooling import channels, lesson_head, probability, project, value_direction

# Gauss-Legendre nodes of IntegratedGradients (captum's default rule and count; the
# config's faithfulness.ig_steps). Largest completeness error |sum IG - (P(x) - P(0))|
# over the 180 held-out examples: 5.6e-9 for the lesson's runs; on 128 study runs
# 6.1e-9 with 50 nodes, 6.9e-6 with 32, 2.8e-4 with 24. IG is about half of the
# battery's time.
IG_STEPS = FaithfulnessConfig.ig_steps
DEFAULTS = FaithfulnessConfig()  # the explainers' settings where a caller gives none

Explainer = Callable[..., torch.Tensor]  # (params, inputs, **its declared settings) -> (S, N, T)


def seed_expanded(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Inputs (N, T, C) repeated for every run as captum's single batch row:
    (1, S, N, T, C), a fresh leaf requiring grad."""
    return inputs.expand(1, params.runs, *inputs.shape).clone().requires_grad_()


def summed_probability(params: Params) -> Callable[[torch.Tensor], torch.Tensor]:
    """The forward captum differentiates: (K, S, N, T, C) -> (K,), the sum of
    P(y=1) over every run and example of a row (separable: see the module docstring)."""

    def fn(batch: torch.Tensor) -> torch.Tensor:
        logits, _ = forward(params, batch)  # (K, S, N)
        return probability(logits).sum((-2, -1))

    return fn


def gated_probability(params: Params, inputs: torch.Tensor) -> Callable[..., torch.Tensor]:
    """P(y=1) as a function of a step gate: kept (S * N, T), run-major, 1 keeps a step
    in the softmax and 0 drops it -> (S * N,). The form captum's FeatureAblation
    perturbs (a zero baseline on one step's gate is the step ablation)."""

    def fn(kept: torch.Tensor) -> torch.Tensor:
        dropped = kept.reshape(params.runs, *inputs.shape[:-1]) < 0.5
        logits, _ = forward(params, inputs, dropped=dropped)
        return probability(logits).reshape(-1)

    return fn


def attention(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """The attention weight a_t of every step: (S, N, T)."""
    return forward(params, inputs)[1]


def loo(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Leave-one-out: |P(y=1 | step t dropped from the softmax) - P(y=1)|: (S, N, T)."""
    return ablation_effects(params, inputs)


def ablation_logit_shift(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Closed form of the logit change when step t leaves the softmax: (S, N, T).
    The lesson's model only (tests check loo against it).

    With readouts v_t = value_direction . x_t and c = sum_s a_s v_s, the rest
    renormalises by 1 / (1 - a_t), so o(without t) - o = a_t / (1 - a_t) (c - v_t).
    """
    logits, weights = forward(params, inputs)
    readouts = project(channels(inputs), value_direction(lesson_head(params)))
    context = logits - params.named["b"][:, None]
    return weights / (1 - weights) * (context[..., None] - readouts)


def gradient(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Sensitivity: the L2 norm over channels of dP(y=1)/dx_t (captum Saliency): (S, N, T)."""
    from captum.attr import Saliency  # here: captum imports matplotlib, which reports avoid

    saliency = Saliency(summed_probability(params))
    grads = saliency.attribute(seed_expanded(params, inputs), abs=False)
    return grads.detach()[0].norm(dim=-1)


def grad_x_input(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """|sum_c x_{t,c} dP(y=1)/dx_{t,c}| (captum InputXGradient): (S, N, T)."""
    from captum.attr import InputXGradient

    explainer = InputXGradient(summed_probability(params))
    attributions = explainer.attribute(seed_expanded(params, inputs))
    return attributions.detach()[0].sum(-1).abs()


def integrated_gradient_attributions(
    params: Params, inputs: torch.Tensor, n_steps: int = IG_STEPS
) -> torch.Tensor:
    """Signed IG attributions of P(y=1) from the all-zero baseline: (S, N, T, C).

    Completeness: summed over (T, C) they approach P(x) - P(0) per example.
    """
    from captum.attr import IntegratedGradients

    explainer = IntegratedGradients(summed_probability(params))
    attributions = explainer.attribute(
        seed_expanded(params, inputs), baselines=0.0, n_steps=n_steps, method="gausslegendre"
    )
    return attributions.detach()[0]


def integrated_gradients(
    params: Params, inputs: torch.Tensor, n_steps: int = IG_STEPS
) -> torch.Tensor:
    """|sum_c IG_{t,c}|: the step's share of P(x) - P(0), zero baseline: (S, N, T)."""
    attributions = integrated_gradient_attributions(params, inputs, n_steps)
    return attributions.sum(-1).abs()


def value_norm(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """a_t |w . V_t| = a_t |value_direction . x_t|: the weighted size of the readout: (S, N, T).

    For a variant, sum_h a_{h,t} |w_h . V_{h,t}| over its heads, V read from what the
    pooling attends over (x + p for posenc, the window layer's h_t for window).
    """
    return interface.value_norm(params, inputs)


def rolled_out_layer(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """R = (L + I) / 2, the layer's attention with its residual: (S, N, T, T)."""
    layer = interface.layer_attention(params, inputs)
    identity = torch.eye(layer.shape[-1], dtype=layer.dtype, device=layer.device)
    return (layer + identity) / 2


def attention_rollout(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """sum_t a_t R[t, j]: the pooling weights carried to the input steps: (S, N, T)."""
    weights = attention(params, inputs)
    return (weights[..., :, None] * rolled_out_layer(params, inputs)).sum(-2)


def attention_flow(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """sum_t min(a_t, R[t, j]): the maximum flow from the output to input step j: (S, N, T)."""
    weights = attention(params, inputs)
    return torch.minimum(weights[..., :, None], rolled_out_layer(params, inputs)).sum(-2)


def attention_max_head(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """max_h a_{h,t}: (S, N, T)."""
    return interface.head_weights(params, inputs).amax(-2)


def attention_head(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Each head's weights a_{h,t}, head first: (H, S, N, T)."""
    return interface.head_weights(params, inputs).movedim(-2, 0)


# Each function under its declaration's key (pipeline/core/measures.py).
EXPLAINERS: dict[str, Explainer] = {
    "attention": attention,
    "loo": loo,
    "gradient": gradient,
    "grad_x_input": grad_x_input,
    "integrated_gradients": integrated_gradients,
    "value_norm": value_norm,
    "attention_rollout": attention_rollout,
    "attention_flow": attention_flow,
    "attention_max_head": attention_max_head,
    "attention_head": attention_head,
}
# Which models an explainer applies to, by its declaration's `applies`.
APPLIES: dict[str, Callable[[ModelConfig], bool]] = {
    "every": lambda model: True,
    "layer": interface.has_layer_attention,
    "heads": lambda model: interface.pooling_heads(model) > 1,
}


def applicable(model: ModelConfig) -> list[str]:
    """The explainers that apply to `model`, in the registry's order."""
    return [key for key, e in measures.EXPLAINERS.items() if APPLIES[e.applies](model)]


def rows(model: ModelConfig, names: list[str] | None = None) -> list[str]:
    """The battery's rows for the named explainers (the applicable ones by default): a
    per-head explainer gives one row per head, `<key><h>` from 1."""
    chosen = applicable(model) if names is None else names
    return [
        row
        for name in chosen
        for row in (
            [f"{name}{h + 1}" for h in range(interface.pooling_heads(model))]
            if measures.EXPLAINERS[name].per_head
            else [name]
        )
    ]


def explain(
    params: Params,
    inputs: torch.Tensor,
    names: list[str] | None = None,
    settings: FaithfulnessConfig = DEFAULTS,
) -> dict[str, torch.Tensor]:
    """Scores (S, N, T) of every named explainer (those that apply to the model by
    default), each given the settings its declaration names (measures.EXPLAINERS);
    a per-head explainer's under one row per head (`rows`)."""
    model = params.cfg
    chosen = applicable(model) if names is None else names
    unknown = sorted(set(chosen) - set(EXPLAINERS))
    if unknown:
        raise ValueError(f"unknown explainers {unknown}; allowed: {', '.join(EXPLAINERS)}")
    for name in chosen:
        if not APPLIES[measures.EXPLAINERS[name].applies](model):
            raise ValueError(
                f"explainer {name} does not apply to model kind {model.kind}; it applies to "
                f"{', '.join(applicable(model))}"
            )
    scores = {}
    for name in chosen:
        declared = measures.EXPLAINERS[name]
        options = {argument: getattr(settings, key) for argument, key in declared.settings.items()}
        values = EXPLAINERS[name](params, inputs, **options)
        named = rows(model, [name])
        scores.update(zip(named, values if declared.per_head else [values], strict=True))
    return scores
