"""Erasure and disagreement on trained runs: the lesson's and the study's seeds.

Each run's held-out examples go through the explainer battery's explainers
(pipeline/analysis/explainers.py: the ones that apply to the model) and a random
ranking (uniform noise from numpy.random.default_rng([erasure.order_seed, run seed]),
`faithfulness.random_scores`), then through the erasure test (`field.erasure`) and
the agreement metrics (`field.agreement`). Every number is first per (run, example),
then a mean over a run's held-out examples (nan examples left out: a conditional
share), then summarised over runs with the study's bootstrap interval
(pipeline/analysis/stats.py).

Signs (the agreement metrics' sign and signed rank agreement): loo, grad_x_input and
integrated_gradients have signed forms (`SIGNED`: the attribution to P(y=1) before
its absolute value); the other explainers score magnitudes, positive everywhere.

Does disagreement predict that both explainers are wrong? Per run, over every pair
of explainers and held-out example: Pearson's r between the pair's pairwise rank
agreement and "neither explainer's top step is in the rationale", and the share of
both-wrong examples where the pair's top-1 agree and where they differ.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial

import torch

from pipeline.analysis import explainers, faithfulness, stats
from pipeline.config import Config
from pipeline.core import ranking, ties
from pipeline.core.measures import ATTENTION, RANDOM
from pipeline.experiments.erasure import agreement, decision_flips
from pipeline.models.interface import forward
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability
from pipeline.models.threads import run_jobs, workers

RATIONALE = "rationale"
SEED_CHUNK = faithfulness.SEED_CHUNK  # runs per batch, as the battery's (the memory bound)
Values = dict[tuple[str, str, str], torch.Tensor]  # (test, row, metric) -> (S,) per run


def signed_loo(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """P(y=1) - P(y=1 | step t erased): (S, N, T), loo's value before |.|."""
    steps = inputs.shape[1]
    logits, _ = forward(params, inputs)
    one_step = torch.eye(steps, dtype=torch.bool, device=inputs.device)[:, None, None, :]
    erased, _ = forward(params, inputs, dropped=one_step)  # (T, S, N)
    return (probability(logits) - probability(erased)).permute(1, 2, 0)


def signed_grad_x_input(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """sum_c x_{t,c} dP(y=1)/dx_{t,c}: (S, N, T), grad_x_input's value before |.|."""
    from captum.attr import InputXGradient  # here: captum imports matplotlib

    explainer = InputXGradient(explainers.summed_probability(params))
    return explainer.attribute(explainers.seed_expanded(params, inputs)).detach()[0].sum(-1)


def signed_integrated_gradients(params: Params, inputs: torch.Tensor, n_steps: int) -> torch.Tensor:
    """sum_c IG_{t,c}: (S, N, T), integrated_gradients' value before |.|."""
    return explainers.integrated_gradient_attributions(params, inputs, n_steps).sum(-1)


# The explainers with a signed form, by key; |signed form| is the battery's score.
SIGNED: dict[str, Callable[..., torch.Tensor]] = {
    "loo": lambda params, inputs, cfg: signed_loo(params, inputs),
    "grad_x_input": lambda params, inputs, cfg: signed_grad_x_input(params, inputs),
    "integrated_gradients": lambda params, inputs, cfg: signed_integrated_gradients(
        params, inputs, cfg.faithfulness.ig_steps
    ),
}


def attributions(cfg: Config, params: Params, inputs: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every applicable explainer's attribution (S, N, T), signed where it has a form."""
    names = explainers.applicable(params.cfg)
    plain = [name for name in names if name not in SIGNED]
    scores = explainers.explain(params, inputs, plain, cfg.faithfulness)
    scores.update({name: SIGNED[name](params, inputs, cfg) for name in names if name in SIGNED})
    return {row: scores[row] for row in explainers.rows(params.cfg, names)}


def run_mean(values: torch.Tensor) -> torch.Tensor:
    """(S, N) -> (S,): the mean over a run's held-out examples, nan ones left out."""
    return values.nanmean(-1)


def erasure_values(
    params: Params, inputs: torch.Tensor, rationale: torch.Tensor, scores: dict
) -> Values:
    """The erasure test's per-run values: the single erasure on the pooling weights,
    and each ranking's flip curve."""
    flips = decision_flips.single_flips(params, inputs)
    weights = scores[ATTENTION].abs()
    single = {
        **decision_flips.top_and_other(flips, weights),
        "top_flip_marked": decision_flips.top_flip_marked(flips, weights, rationale),
        "rationale_flip": decision_flips.rationale_flip(flips, rationale, weights.dtype),
    }
    values = {("erasure", "attention", key): run_mean(v) for key, v in single.items()}
    for row, score in scores.items():
        order = ties.descending_order(score.abs())
        first = decision_flips.first_flips(params, inputs, order)
        curve = decision_flips.flip_curve(first, order, rationale, weights.dtype)
        values.update({("flip", row, key): run_mean(v) for key, v in curve.items()})
    return values


def agreement_values(scores: dict, rationale: torch.Tensor, top_k: list[int]) -> Values:
    """Krishna et al.'s metrics between every pair of explainers and against the
    rationale, and whether a pair's disagreement predicts that both miss it."""
    values: Values = {}
    rows = [row for row in scores if row != RANDOM]
    pra, both_wrong, same_top = [], [], []
    for a, b in itertools.combinations(rows, 2):
        pair, x, y = f"{a} vs {b}", scores[a], scores[b]
        for k in top_k:
            for name, metric in (
                ("feature", agreement.feature_agreement),
                ("rank", agreement.rank_agreement),
                ("sign", agreement.sign_agreement),
                ("signed_rank", agreement.signed_rank_agreement),
            ):
                values[("pairs", pair, f"{name}@{k}")] = run_mean(metric(x, y, k))
        values[("pairs", pair, "spearman")] = run_mean(agreement.spearman(x, y))
        pra.append(agreement.pairwise_rank_agreement(x, y))
        values[("pairs", pair, "pairwise_rank")] = run_mean(pra[-1])
        misses = [1 - ranking.hit_at_1(s.abs(), rationale) for s in (x, y)]
        both_wrong.append(misses[0] * misses[1])
        same_top.append(agreement.feature_agreement(x, y, 1))
    for row, score in scores.items():
        values[("rationale", row, "feature")] = run_mean(
            agreement.rationale_feature_agreement(score, rationale)
        )
        values[("rationale", row, "spearman")] = run_mean(
            agreement.rationale_spearman(score, rationale)
        )
        values[("rationale", row, "pairwise_rank")] = run_mean(
            agreement.rationale_pairwise_agreement(score, rationale)
        )
    if pra:  # (S, pairs x N): every pair's examples pooled per run
        x, wrong, same = (torch.cat(t, -1) for t in (pra, both_wrong, same_top))
        values[("disagreement", "pairs", "r_pairwise_rank_both_wrong")] = agreement.point_biserial(
            x, wrong
        )
        agree = same > 0.5
        for name, chosen in (("both_wrong_top1_agree", agree), ("both_wrong_top1_differ", ~agree)):
            values[("disagreement", "pairs", name)] = run_mean(
                torch.where(chosen, wrong, torch.nan)
            )
    return values


def per_run(
    cfg: Config,
    params: Params,
    inputs: torch.Tensor,
    rationale: torch.Tensor,
    seeds: list[int],
    seed_chunk: int = SEED_CHUNK,
) -> Values:
    """Every test's per-run values (S,), the runs `seed_chunk` at a time on our threads."""
    noise = faithfulness.random_scores(
        seeds, inputs.shape[0], inputs.shape[1], cfg.erasure.order_seed, inputs.dtype
    )

    def chunk(start: int, part: Params) -> Values:
        scores = attributions(cfg, part, inputs)
        scores[RANDOM] = noise[start : start + part.runs].to(inputs.device)
        return {
            **erasure_values(part, inputs, rationale, scores),
            **agreement_values(scores, rationale, cfg.erasure.top_k),
        }

    blocks = params.blocks(seed_chunk)
    parts = run_jobs([partial(chunk, *block) for block in blocks], workers(len(blocks)))
    return {key: torch.cat([part[key] for part in parts]) for key in parts[0]}


def nested(flat: dict[tuple[str, str, str], object]) -> dict:
    """{test: {row: {metric: value}}} from (test, row, metric) keys, in their order."""
    tree: dict = {}
    for (test, row, metric), value in flat.items():
        tree.setdefault(test, {}).setdefault(row, {})[metric] = value
    return tree


def run_documents(values: Values, seeds: list[int]) -> dict:
    """{"<seed>": {test: {row: {metric: value}}}}; nan (no example to average) as None."""
    host = {key: stats.on_host(v).tolist() for key, v in values.items()}
    return {
        str(seed): nested({key: _number(v[i]) for key, v in host.items()})
        for i, seed in enumerate(seeds)
    }


def _number(value: float) -> float | None:
    return None if value != value else value  # nan: JSON has none


def over_seeds(values: Values, resamples: int, bootstrap_seed: int) -> dict:
    """{test: {row: {metric: {mean, ci95_low, ci95_high, runs}}}} over the runs with a
    value: the mean over runs and the study's bootstrap interval of it (runs resampled,
    each run's number already a mean over its examples)."""
    summary = {}
    for key, per_run_values in values.items():
        kept = stats.on_host(per_run_values)
        kept = kept[~kept.isnan()]
        if kept.numel() == 0:
            summary[key] = {"mean": None, "ci95_low": None, "ci95_high": None, "runs": 0}
            continue
        generator = torch.Generator().manual_seed(bootstrap_seed)
        counts = stats.resample_counts(kept.numel(), resamples, generator)
        low, high = stats.interval(counts @ kept / kept.numel())
        summary[key] = {
            "mean": float(kept.mean()),
            "ci95_low": low,
            "ci95_high": high,
            "runs": kept.numel(),
        }
    return nested(summary)
