"""The faithfulness battery: every explainer scored against the model and the rationale.

Scores are (S, N, T) per explainer (see `pipeline.analysis.explainers`). Each metric is
first computed per (run, example), shape (S, N), then averaged over the held-out
examples, shape (S,).

Ordering: an explainer ranks the steps by descending score, ties by step index
("first max wins", a stable sort), so the order is deterministic.

Removal: a removed step leaves the softmax and the rest renormalise, through
interface.forward's `dropped` mask: the lesson's own ablation. At least one step
always stays, so k runs over 1..T-1.

Faithfulness, against the model's own behaviour:
- `tau_loo`: Kendall tau_b (scipy's definition, ties included) between the scores
  and the `loo` effects over the T steps (ferret's taucorr_loo). Two scores within
  float noise of the example's largest |score| tie (pipeline/core/ties.py).
  An example on which either vector is constant has no tau_b (scipy gives nan)
  and is left out of the mean.
- `aopc_comprehensiveness`: (1 / (T-1)) sum_{k=1}^{T-1} [P(yhat | x) - P(yhat | x
  without its top-k steps)]. Higher: the top steps carry the prediction.
- `aopc_sufficiency`: (1 / (T-1)) sum_{k=1}^{T-1} [P(yhat | x) - P(yhat | only the
  top-k steps of x)]. Lower: the top steps alone keep the prediction.
  yhat is the predicted class (logit > 0) on the full input, and
  P(0 | .) = 1 - P(1 | .), computed as sigmoid(-logit). ERASER bins k by
  percentages and ferret by thresholds; with T = 12 steps every k is used.
- `flips_to_decision`: the number of steps removed in the explainer's order until
  the predicted class changes; T when no removal of 1..T-1 steps flips it
  (capped at T). Lower: the explainer finds the decisive steps sooner.

Plausibility, against the true rationale R: the steps that decide the label
(`rationale` of the task module, pipeline/tasks/; the lesson's is the marked step m):
- `hit_at_1`: the first-max-wins top step is in R (for `attention` on the lesson,
  the lesson's argmax_hit).
- `marked_rank`: |R| + the number of other steps scoring strictly above R's
  lowest step; for R = {m}, 1 + the number of steps with a strictly larger score
  than m: 1 is the top, and a tie with m is not counted against it.
- `auprc`: average precision of the scores against R, as scikit-learn's
  average_precision_score: for R = {m}, 1 / #(steps with score >= score of m),
  so unlike `marked_rank` ties count against m.

The `random` row is a chance baseline: each run's scores are uniform noise from
numpy.random.default_rng([order_seed, run seed]) (explicit, not a global RNG), so
its order is a uniformly random permutation and a run's numbers do not depend on
which other runs share the batch. Its `flips_to_decision` is the
random-order reference for every explainer's.
"""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np
import torch

from pipeline.analysis.explainers import DEFAULTS, applicable, explain
from pipeline.analysis.explainers import rows as explainer_rows
from pipeline.config import FaithfulnessConfig
from pipeline.core import ties
from pipeline.core.measures import RANDOM, SCORES, competitors, higher_is_better, model_scores
from pipeline.core.ranking import (
    average_precision,
    hit_at_1,
    kendall_tau_b,
    marked_rank,
    order_positions,
    rationale_mask,
    top_k_masks,
)
from pipeline.memory import BATTERY_RUNS
from pipeline.models.interface import forward
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability
from pipeline.models.threads import run_jobs, workers

SEED_CHUNK = BATTERY_RUNS  # runs per batch, sized with the memory bound


# --- faithfulness ---------------------------------------------------------------------------


def predicted_probability(logits: torch.Tensor, predicted: torch.Tensor) -> torch.Tensor:
    """P(yhat) from logits, for predicted classes (bool, True = 1), broadcast."""
    return probability(torch.where(predicted, logits, -logits))


def removal_curves(
    params: Params, inputs: torch.Tensor, order: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits of the full input (S, N), without the top k steps (T-1, S, N) and with
    only the top k steps (T-1, S, N), for k = 1..T-1 of `order` (S, N, T)."""
    top = top_k_masks(order_positions(order))  # (T-1, S, N, T)
    logits, _ = forward(params, inputs)
    removed, _ = forward(params, inputs, dropped=torch.cat([top, ~top]))
    without_top, only_top = removed.chunk(2)
    return logits, without_top, only_top


def aopc_and_flips(
    params: Params, inputs: torch.Tensor, order: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Per-example comprehensiveness, sufficiency and flips for one order: (S, N) each."""
    logits, without_top, only_top = removal_curves(params, inputs, order)
    predicted = ties.above(logits, 0.0)
    full = predicted_probability(logits, predicted)
    flipped = ties.above(without_top, 0.0) != predicted  # (T-1, S, N)
    first_flip = flipped.to(torch.uint8).argmax(0) + 1
    steps = order.shape[-1]
    return {
        "aopc_comprehensiveness": (full - predicted_probability(without_top, predicted)).mean(0),
        "aopc_sufficiency": (full - predicted_probability(only_top, predicted)).mean(0),
        "flips_to_decision": torch.where(flipped.any(0), first_flip, steps).to(logits.dtype),
    }


# --- the battery ----------------------------------------------------------------------------


def random_scores(
    seeds: list[int],
    examples: int,
    steps: int,
    order_seed: int,
    dtype: torch.dtype,
    salt: tuple[int, ...] = (),
) -> torch.Tensor:
    """Uniform noise (S, N, T); run k's from numpy.random.default_rng([order_seed, k,
    *salt]): `salt` gives a stream of its own (the sanity checks' randomised models).

    numpy's SeedSequence mixes every integer (torch's CPU generator would keep
    only the low 32 bits of one combined seed).
    """
    if order_seed < 0 or any(seed < 0 for seed in seeds):
        raise ValueError(f"order_seed and run seeds must be >= 0, got {order_seed}, {seeds}")
    rows = [
        np.random.default_rng([order_seed, seed, *salt]).random((examples, steps)) for seed in seeds
    ]
    return torch.from_numpy(np.stack(rows)).to(dtype)


def example_metrics(
    params: Params,
    inputs: torch.Tensor,
    rationale: torch.Tensor,
    scores: torch.Tensor,
    effects: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Every metric of one explainer per (run, example): (S, N) each, keys `registry.SCORES`."""
    numbers = {"tau_loo": kendall_tau_b(scores, effects)}
    numbers.update(aopc_and_flips(params, inputs, ties.descending_order(scores)))
    numbers["hit_at_1"] = hit_at_1(scores, rationale)
    numbers["marked_rank"] = marked_rank(scores, rationale)
    numbers["auprc"] = average_precision(scores, rationale)
    return {name: numbers[name] for name in SCORES}


def run_means(per_example: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Average over held-out examples: (S, N) -> (S,); tau_b skips its nan examples."""
    return {name: values.nanmean(-1) for name, values in per_example.items()}


def battery_tensors(
    params: Params,
    inputs: torch.Tensor,
    rationale: torch.Tensor,
    seeds: list[int],
    explainers: list[str] | None = None,
    settings: FaithfulnessConfig = DEFAULTS,
    seed_chunk: int = SEED_CHUNK,
    per_example: bool = False,
) -> dict[str, dict[str, torch.Tensor]]:
    """{row: {metric: (S,)}} for the explainers (those that apply to the model by
    default; a per-head explainer gives a row per head) and `random`;
    with `per_example`, every (run, example)'s value: (S, N), nan where tau_b has none.

    Runs are processed `seed_chunk` at a time; every run and example of a chunk
    goes through each explainer and each removal curve in one batched pass. The
    chunks run on threads of our own (pipeline/models/threads.py), each on one torch
    thread: the numbers are those of OMP_NUM_THREADS=1.
    `rationale`: the marked steps (N,) or a bool (N, T) mask of the steps that
    decide each label. `settings`: the explainers' own (integrated gradients' nodes)
    and the random baseline's seed.
    """
    names = applicable(params.cfg) if explainers is None else list(explainers)
    rows = [*explainer_rows(params.cfg, names), RANDOM]
    steps = inputs.shape[1]
    rationale = rationale_mask(rationale, steps)
    noise = random_scores(seeds, inputs.shape[0], steps, settings.order_seed, inputs.dtype)

    # Allocated before the chunks, each chunk writing its own runs' rows in place: a
    # chunk leaves no small survivors among its freed temporaries to pin the heap.
    shape = (params.runs, inputs.shape[0]) if per_example else (params.runs,)
    table = {row: {metric: inputs.new_empty(shape) for metric in SCORES} for row in rows}

    def chunk(start: int, part: Params) -> None:
        scores = explain(part, inputs, sorted(set(names) | {"loo"}), settings)
        scores[RANDOM] = noise[start : start + part.runs].to(inputs.device)
        for row in rows:
            values = example_metrics(part, inputs, rationale, scores[row], scores["loo"])
            for metric, value in (values if per_example else run_means(values)).items():
                table[row][metric][start : start + part.runs] = value

    blocks = params.blocks(seed_chunk)
    run_jobs([partial(chunk, *block) for block in blocks], workers(len(blocks)))
    return table


def applicable_metrics(rationale_rows: list[list[bool]]) -> tuple[str, ...]:
    """The battery's metrics that apply to a task's rationale rows (N, T): the rationale
    metrics only where it singles out steps; against every step they are constant."""
    return tuple(model_scores() if all(map(all, rationale_rows)) else SCORES)


def task_rationale(kind: str, marked: torch.Tensor, steps: int) -> torch.Tensor:
    """The steps that decide each held-out label, as the task defines them (its
    `rationale`): a bool (N, T) mask. For the lesson, the one-hot of the marked step."""
    from pipeline import tasks

    rows = tasks.rationale_rows(kind, marked.tolist(), steps)
    return torch.tensor(rows, dtype=torch.bool, device=marked.device)


def battery(
    params: Params,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    rationale: torch.Tensor,
    seeds: list[int],
    explainers: list[str] | None = None,
    settings: FaithfulnessConfig = DEFAULTS,
    seed_chunk: int = SEED_CHUNK,
) -> dict[str, dict[str, dict[str, float]]]:
    """{"<seed>": {"<explainer>": {"<metric>": float}}} over held-out inputs (N, T, C).

    `labels` (N,) only checks that the held-out tensors line up: every metric
    follows the model's predicted class, and plausibility the rationale (the marked
    steps (N,) or a bool (N, T) mask, as in `battery_tensors`).
    """
    if not (len(labels) == len(rationale) == inputs.shape[0]):
        raise ValueError(
            f"held-out sizes differ: inputs {inputs.shape[0]}, labels {len(labels)}, "
            f"rationale {len(rationale)}"
        )
    if len(seeds) != params.runs:
        raise ValueError(f"{len(seeds)} seeds for {params.runs} runs")
    table = battery_tensors(params, inputs, rationale, seeds, explainers, settings, seed_chunk)
    columns = {
        row: {metric: values.tolist() for metric, values in metrics.items()}
        for row, metrics in table.items()
    }
    return {
        str(seed): {
            row: {metric: values[i] for metric, values in metrics.items()}
            for row, metrics in columns.items()
        }
        for i, seed in enumerate(seeds)
    }


# --- over the seeds of the study ------------------------------------------------------------


def first_shares(table: dict[str, dict[str, torch.Tensor]]) -> dict:
    """{row: {metric: share of runs on which the row is the best of its competitors}}.

    Ties count for every tied row (so shares may add up to more than 1).
    """
    shares: dict[str, dict[str, float]] = {row: {} for row in table}
    for metric in next(iter(table.values())):  # the metrics the table holds
        higher = higher_is_better()[metric]
        rows = competitors(list(table), metric)
        values = torch.stack([table[row][metric] for row in rows])  # (E, S)
        firsts = ties.at_max(values if higher else -values, dim=0).to(torch.float64).mean(1)
        for row, share in zip(rows, firsts.tolist(), strict=True):
            shares[row][metric] = share
    return shares


def study_pairs(
    table: dict[str, dict[str, torch.Tensor]],
    resamples: int,
    bootstrap_seed: int,
    reference: str | None = None,
) -> dict:
    """{metric: {"<a> vs <b>": paired difference}} from per-example values (S, N)
    (pipeline/analysis/paired.py): every pair of the metric's competitors, or with
    `reference` each competitor against it."""
    from pipeline.analysis import paired

    rows = list(table)
    pairs = {}
    for metric in next(iter(table.values())):
        rivals = competitors(rows, metric)
        pairs[metric] = (
            list(itertools.combinations(rivals, 2))
            if reference is None
            else [(row, reference) for row in rivals if row != reference]
        )
    return paired.paired_comparisons(table, pairs, higher_is_better(), resamples, bootstrap_seed)


def study_summary(
    table: dict[str, dict[str, torch.Tensor]], resamples: int, bootstrap_seed: int
) -> dict:
    """Per row and metric over S runs: the mean, a 95% interval of it (bootstrap over
    runs: each run's number is already a mean over held-out examples), and the
    share of runs on which the explainer ranks first (`competitors`: the random
    baseline is reported but does not compete, nor loo on tau_loo)."""
    from pipeline.analysis import stats

    rows = list(table)
    runs = len(next(iter(table[rows[0]].values())))
    generator = torch.Generator().manual_seed(bootstrap_seed)
    counts = stats.resample_counts(runs, resamples, generator)
    firsts = first_shares(table)
    summary: dict = {"seeds": runs, "explainers": {}}
    for row in rows:
        entry = {}
        for metric, values in table[row].items():
            values = values.to(torch.float64).cpu()
            low, high = stats.interval(counts @ values / runs)
            entry[metric] = {"mean": float(values.mean()), "ci95_low": low, "ci95_high": high}
            if metric in firsts[row]:
                entry[metric]["share_first"] = firsts[row][metric]
        summary["explainers"][row] = entry
    return summary
