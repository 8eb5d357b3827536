"""What the lesson measures: accuracy, where the weights fall, and step ablation.

Every function takes all runs at once: weights (S, N, T), effects (S, N, T),
logits (S, N). Every argmax and threshold follows pipeline/core/ties.py: first max wins,
as in the lesson, and values within float noise tie.

Every model kind (pipeline/models/) gets every number: the weights are its
pooling weights over the real steps (for multihead the mean over heads), the
ablation drops a step from its pooling softmax. A kind adds its own per-run
numbers (`interface.extra_values`): the sink mass, per head the marker mass and
argmax hit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from pipeline.config import EvalConfig
from pipeline.core import measures, ties
from pipeline.core.errors import PipelineError
from pipeline.models import interface
from pipeline.models.interface import forward
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability


def marked_weight(weights: torch.Tensor, marked: torch.Tensor) -> torch.Tensor:
    """Weight on each example's marked step: (S, N)."""
    return weights.gather(-1, marked.expand(weights.shape[:-1]).unsqueeze(-1)).squeeze(-1)


def marker_mass(weights: torch.Tensor, marked: torch.Tensor) -> torch.Tensor:
    """Mean weight on the marked step: (S,)."""
    return marked_weight(weights, marked).mean(-1)


def argmax_hit(weights: torch.Tensor, marked: torch.Tensor) -> torch.Tensor:
    """Share of examples whose largest weight sits on the marked step: (S,)."""
    return (ties.first_max(weights) == marked).to(weights.dtype).mean(-1)


def correct(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """1.0 where the prediction (logit > 0, `ties.above`) is the label, else 0.0: (S, N)."""
    return (ties.above(logits, 0.0) == (labels > 0.5)).to(logits.dtype)


def ablation_effects(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """|P(y=1 | step t dropped) - P(y=1)| for every run, example and step: (S, N, T).

    Dropping goes through `interface.forward`'s step mask: one batched pass with a
    leading dim of T masks, each removing one step from the softmax.
    """
    steps = inputs.shape[1]
    logits, _ = forward(params, inputs)  # (S, N)
    one_step = torch.eye(steps, dtype=torch.bool, device=inputs.device)[:, None, None, :]
    ablated, _ = forward(params, inputs, dropped=one_step)  # (T, S, N)
    return (probability(ablated) - probability(logits)).abs().permute(1, 2, 0)


def top_weight_effect(weights: torch.Tensor, effects: torch.Tensor) -> torch.Tensor:
    """Effect of dropping each example's highest-weight step: (S, N)."""
    return effects.gather(-1, ties.first_max(weights, keepdim=True)).squeeze(-1)


def agrees(weights: torch.Tensor, effects: torch.Tensor) -> torch.Tensor:
    """1.0 where the highest-weight step is also the most effective one: (S, N)."""
    return (ties.first_max(weights) == ties.first_max(effects)).to(weights.dtype)


def agreement(weights: torch.Tensor, effects: torch.Tensor) -> torch.Tensor:
    """Share of examples whose highest-weight step is also the most effective one: (S,)."""
    return agrees(weights, effects).mean(-1)


def high_weight_flags(
    weights: torch.Tensor, effects: torch.Tensor, cfg: EvalConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """(S, N) booleans: the top weight exceeds cfg.high_weight, and that, with the top
    step's effect below cfg.low_effect."""
    high = ties.above(weights.amax(-1), cfg.high_weight)
    return high, high & ties.below(top_weight_effect(weights, effects), cfg.low_effect)


@dataclass(frozen=True)
class Outputs:
    """What every per-example metric reads: the runs' outputs on both splits, the
    held-out weights and the step ablation's effects."""

    train_logits: torch.Tensor  # (S, N_train)
    train_labels: torch.Tensor
    logits: torch.Tensor  # (S, N) held-out
    labels: torch.Tensor
    marked: torch.Tensor  # (N,)
    weights: torch.Tensor  # (S, N, T)
    effects: torch.Tensor  # (S, N, T)
    cfg: EvalConfig


# Per-example values by metric key (pipeline/core/measures.py declares each one):
# (S, N) over the metric's split, 0/1 indicators where it counts examples.
PER_EXAMPLE: dict[str, Callable[[Outputs], torch.Tensor]] = {}


def per_example(key: str) -> Callable:
    """Register the per-example values of the declared metric `key`."""

    def register(function: Callable[[Outputs], torch.Tensor]) -> Callable:
        PER_EXAMPLE[key] = function
        return function

    return register


@per_example("train_accuracy")
def _train_correct(out: Outputs) -> torch.Tensor:
    return correct(out.train_logits, out.train_labels)


@per_example("heldout_accuracy")
def _heldout_correct(out: Outputs) -> torch.Tensor:
    return correct(out.logits, out.labels)


@per_example("marker_mass")
def _marked_weight(out: Outputs) -> torch.Tensor:
    return marked_weight(out.weights, out.marked)


@per_example("argmax_hit")
def _argmax_on_marked(out: Outputs) -> torch.Tensor:
    return (ties.first_max(out.weights) == out.marked).to(out.weights.dtype)


@per_example("weight_effect_agreement")
def _agrees(out: Outputs) -> torch.Tensor:
    return agrees(out.weights, out.effects)


@per_example("top_weight_effect")
def _top_weight_effect(out: Outputs) -> torch.Tensor:
    return top_weight_effect(out.weights, out.effects)


@per_example("high_weight")
def _high_weight(out: Outputs) -> torch.Tensor:
    return high_weight_flags(out.weights, out.effects, out.cfg)[0]


@per_example("high_weight_low_effect")
def _high_weight_low_effect(out: Outputs) -> torch.Tensor:
    return high_weight_flags(out.weights, out.effects, out.cfg)[1]


def example_values(
    params: Params,
    train_set: tuple[torch.Tensor, torch.Tensor],
    heldout_set: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    cfg: EvalConfig,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Every per-run number before it is averaged or counted over examples.

    Returns one (S, N) tensor per declared metric (measures.METRICS, in metrics.json's
    order; N is the metric's split), then the kind's own (`interface.extra_values`,
    held-out), and the held-out weights and effects (S, N, T). The seed study
    resamples these per-example values in its bootstrap.
    """
    train_inputs, train_labels = train_set
    inputs, labels, marked = heldout_set
    train_logits, _ = forward(params, train_inputs)
    logits, weights = forward(params, inputs)
    effects = ablation_effects(params, inputs)
    out = Outputs(train_logits, train_labels, logits, labels, marked, weights, effects, cfg)
    missing = [key for key in measures.run_order() if key not in PER_EXAMPLE]
    if missing:
        raise PipelineError(f"metrics {missing} are declared but have no @per_example values")
    values = {key: PER_EXAMPLE[key](out) for key in measures.run_order()}
    values.update(interface.extra_values(params, inputs, marked))
    return values, weights, effects


def per_run(values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """(S,) numbers from `example_values`: each declared metric reduced over its
    examples (means, integer counts), then the variant's own numbers (means)."""
    numbers = {
        key: values[key].mean(-1) if measures.METRICS[key].reduce == "mean" else values[key].sum(-1)
        for key in measures.run_order()
        if key in values  # a held-out-only pass (the study's outside seeds) has one
    }
    numbers.update({name: values[name].mean(-1) for name in variant_names(values)})
    return numbers


def variant_names(values: dict) -> list[str]:
    """The keys of a variant's own numbers, in their order (none for the lesson)."""
    return [name for name in values if name not in measures.METRICS]


def run_metrics(
    params: Params,
    train_set: tuple[torch.Tensor, torch.Tensor],
    heldout_set: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    cfg: EvalConfig,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Every per-run number of the lesson, plus the held-out weights and effects (S, N, T)."""
    values, weights, effects = example_values(params, train_set, heldout_set, cfg)
    return per_run(values), weights, effects


def across_seeds(heldout_accuracy: list[float]) -> dict[str, float]:
    """The run-to-run gap (max - min; |run 1 - run 2| for two runs) and the spread.

    The standard deviation is the population one (ddof=0), defined for one run too.
    """
    count = len(heldout_accuracy)
    mean = sum(heldout_accuracy) / count
    variance = sum((a - mean) ** 2 for a in heldout_accuracy) / count
    return {
        "seed_gap": max(heldout_accuracy) - min(heldout_accuracy),
        "heldout_accuracy_mean": mean,
        "heldout_accuracy_std": math.sqrt(variance),
    }


def metrics_document(
    data_summary: dict, seeds: list[int], per_run: dict[str, torch.Tensor]
) -> dict:
    """The metrics.json shape: data numbers, one entry per seed, cross-seed numbers."""
    columns = {name: values.tolist() for name, values in per_run.items()}
    runs = {
        str(seed): {name: values[i] for name, values in columns.items()}
        for i, seed in enumerate(seeds)
    }
    return {"data": data_summary, "runs": runs, **across_seeds(columns["heldout_accuracy"])}
