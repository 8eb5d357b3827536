"""Remove and retrain (ROAR), on the lesson's task, where the answer is known.

Hooker, Erhan, Kindermans & Kim, "A Benchmark for Interpretability Methods in Deep
Neural Networks" (NeurIPS 2019): a ranking of each input's features removes its top k
fraction, in the training and the held-out data alike; models trained from scratch on
the modified training data are evaluated on the modified held-out data, and their
accuracy drop against models trained on the unmodified data says how much of what the
task needs the ranking put first. Retraining is what separates it from removal on a
fixed model: the replacement value is then part of the model's training data, not
out of it.
With it, the check of Song, Cha & Seo, "On Pitfalls of RemOve-And-Retrain: Data
Processing Inequality Perspective" (2023, arXiv:2304.13836): a smoothed ranking is a
function of the explainer's scores alone, so it carries no more information about the
model (the data processing inequality) and must not score better.

Here (docs/field.md, "Remove and retrain"):

- Which model ranks: as in Hooker et al., a model trained on the original data, each
  of the lesson's runs (train.seeds), with every explainer of the battery on every
  training and held-out sequence (`model_rankings`). Two rankings read no model
  (`reference_rankings`): `random` (uniform noise from numpy's
  default_rng(roar.random_seed)) and `rationale` (the task's rationale steps first, by
  the task module: the known answer).
- Removal: the step's reading becomes the training split's mean reading, Hooker et
  al.'s uninformative value (their per-channel mean). The marker channel is kept. The
  marked step is drawn independently of the readings, so the marker carries no label
  information by itself; zeroing it would make removal visible (a sequence without a
  marker), which a retrained model can read as a label signal wherever a ranking's
  choice to remove the marked step depends on the label (ROAR's masks leaking the
  class, Rong et al., ICML 2022, "ROAD"). Kept, a removed marked step is an ordinary
  marked step whose reading is the mean: the label's only information is gone, and
  nothing at the marked step shows that it was removed. Which *other* steps a ranking
  removes can still depend on the label (a model's effects follow its prediction), and
  what is left then says the label: `leaks` flags each fraction at which every
  held-out marked step is removed and the retrained runs still beat chance.
- How many: k T steps rounded to the nearest whole step (T = 12: 1, 4, 6, 8, 11 for
  k = 0.1 .. 0.9); tied scores go to the earlier step (pipeline/core/ties.py), so k = 0.1
  of the `rationale` ranking removes exactly the lesson's marked step.
- Retraining: runs 1..roar.seeds, each from stream(data.seed + k) with the lesson's
  training (train.epochs, train.lr), on the unmodified data and on every modified set
  (`seed_study.train_sets`): the drop is paired per run and held-out example, and its
  interval is the study's multi-bootstrap over runs and examples (study.bootstrap).
- Smoothing: a moving average over roar.window neighbouring steps, zero outside the
  sequence. The lesson's readings are independent across steps, so a neighbour of the
  marked step carries nothing of the label: smoothing can only move a ranking's top
  away from the marked step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from pipeline.analysis import faithfulness, stats
from pipeline.analysis.explainers import explain
from pipeline.analysis.seed_study import train_sets
from pipeline.config import Config, FaithfulnessConfig
from pipeline.core import ties
from pipeline.core.errors import ConfigError
from pipeline.core.ranking import order_positions
from pipeline.data import reading_columns, split_frame
from pipeline.experiments.roar.config import check_fractions, removed_count
from pipeline.models import frames
from pipeline.models.parameters import Params

SMOOTHED = "_smoothed"  # a smoothed explainer's row: <explainer>_smoothed
RATIONALE, RANDOM = "rationale", "random"
MODEL_FREE = "model_free"  # the rankings that read no model, beside each ranking run's


# --- masks, removal, smoothing ---------------------------------------------------------------


def top_mask(scores: torch.Tensor, count: int) -> torch.Tensor:
    """Bool (..., T): each row's `count` highest-scoring steps, a tie to the earlier step."""
    positions = order_positions(ties.descending_order(scores))
    return positions < count


def smoothed(scores: torch.Tensor, window: int = 3) -> torch.Tensor:
    """The moving average of each row over `window` steps centred on the step, zero
    outside the sequence (every step divides by `window`): (..., T)."""
    rows = scores.reshape(-1, 1, scores.shape[-1])
    average = F.avg_pool1d(rows, window, stride=1, padding=window // 2, count_include_pad=True)
    return average.reshape(scores.shape)


def uninformative_reading(frame: pd.DataFrame, steps: int) -> float:
    """The training split's mean reading, over every sequence and step."""
    return float(split_frame(frame, "train")[reading_columns(steps)].to_numpy().mean())


def removed_frame(frame: pd.DataFrame, mask: torch.Tensor, value: float) -> pd.DataFrame:
    """The sequences with each masked step's reading replaced by `value`; the marker
    (`marked_step`) and the label stay. `mask`: bool (N, T), one row per sequence."""
    columns = reading_columns(mask.shape[-1])
    readings = np.where(mask.cpu().numpy(), value, frame[columns].to_numpy())
    removed = frame.copy()
    removed[columns] = readings
    return removed


def marked_removed(mask: torch.Tensor, rationale: torch.Tensor) -> torch.Tensor:
    """(..., N) True where every rationale step of the example is removed; masks (..., N, T)."""
    return (rationale & ~mask).sum(-1) == 0


# --- the rankings ----------------------------------------------------------------------------


def model_rankings(
    params: Params,
    inputs: torch.Tensor,
    names: list[str],
    window: int,
    settings: FaithfulnessConfig,
) -> dict[str, torch.Tensor]:
    """Every battery row's scores (S, N, T) of the runs `params` on inputs (N, T, C), and
    each named row smoothed (`<row>_smoothed`), in the battery's order."""
    scores = explain(params, inputs, settings=settings)
    unknown = [name for name in names if name not in scores]
    if unknown:
        raise ConfigError(
            f"invalid config value roar.smoothed={list(names)!r}: allowed: {', '.join(scores)}"
        )
    rows: dict[str, torch.Tensor] = {}
    for row, values in scores.items():
        rows[row] = values
        if row in names:
            rows[row + SMOOTHED] = smoothed(values, window)
    return rows


def reference_rankings(rationale: torch.Tensor, random_seed: int) -> dict[str, torch.Tensor]:
    """The rankings that read no model, (N, T) each: the task's rationale steps first, and
    uniform noise from numpy.random.default_rng(random_seed)."""
    noise = np.random.default_rng(random_seed).random(tuple(rationale.shape))
    return {RATIONALE: rationale.to(torch.float64), RANDOM: torch.from_numpy(noise)}


def ranking_masks(cfg: Config, frame: pd.DataFrame, lesson: pd.DataFrame) -> dict:
    """{ranking: {row: {fraction: bool mask (N, T)}}} over the sequences of `frame`: one
    ranking per lesson run (its seed) and MODEL_FREE."""
    steps, dtype = cfg.data.steps, getattr(torch, cfg.train.dtype)
    inputs, _, marked = frames.features(frame, steps, dtype)
    seeds, params = frames.params_from_frame(lesson, cfg.model, steps, dtype)
    scores = model_rankings(
        params, inputs, list(cfg.roar.smoothed), cfg.roar.window, cfg.faithfulness
    )
    rationale = faithfulness.task_rationale(cfg.task.kind, marked, steps)
    rankings = {
        str(seed): {row: values[i] for row, values in scores.items()}
        for i, seed in enumerate(seeds)
    }
    rankings[MODEL_FREE] = reference_rankings(rationale, cfg.roar.random_seed)
    counts = {k: removed_count(k, steps) for k in cfg.roar.fractions}
    return {
        ranking: {
            row: {k: top_mask(values, count) for k, count in counts.items()}
            for row, values in rows.items()
        }
        for ranking, rows in rankings.items()
    }


# --- retraining ------------------------------------------------------------------------------


def retrained(cfg: Config, frame: pd.DataFrame, masks: dict) -> tuple[torch.Tensor, dict]:
    """Runs 1..roar.seeds trained on the unmodified sequences and on each distinct
    modified set: (correct (S, N) on the unmodified held-out data, {mask bytes: correct
    (S, N) on its modified held-out data}). Two rankings that remove the same steps
    everywhere make one set."""
    value = uninformative_reading(frame, cfg.data.steps)
    distinct: dict[bytes, torch.Tensor] = {}
    for rows in masks.values():
        for by_fraction in rows.values():
            for mask in by_fraction.values():
                distinct.setdefault(mask.numpy().tobytes(), mask)
    sets = [(frame, True)] + [(removed_frame(frame, m, value), True) for m in distinct.values()]
    seeds = list(range(1, cfg.roar.seeds + 1))
    runs = train_sets(cfg, sets, seeds)
    correct = [run.values["heldout_accuracy"] for run in runs]
    return correct[0], dict(zip(distinct, correct[1:], strict=True))


# --- the numbers -----------------------------------------------------------------------------


class Bootstrap:
    """The study's multi-bootstrap over runs and held-out examples, one set of draws
    for every number (torch.Generator(study.bootstrap_seed): runs, then examples).

    A resample's mean is linear in the values, so each retrained set's correct (S, N)
    is resampled once (`resampled`) and a drop or a difference of two sets is the
    difference of their resampled means: the same draws, paired by construction."""

    def __init__(self, runs: int, examples: int, resamples: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.runs = stats.resample_counts(runs, resamples, generator)
        self.examples = stats.resample_counts(examples, resamples, generator)

    def resampled(self, values: torch.Tensor) -> torch.Tensor:
        """The mean of `values` (S, N) in each resample: (B,)."""
        return stats.multi_bootstrap_means(values, self.runs, self.examples)


def mean_interval(values: torch.Tensor, resampled: torch.Tensor) -> dict[str, float]:
    """The mean of `values` (S, N) with the 95% interval of its resampled means (B,)."""
    low, high = stats.interval(resampled)
    return {"mean": float(stats.on_host(values).mean()), "ci95_low": low, "ci95_high": high}


class Retrained:
    """One retrained set: correct (S, N) on its held-out data and its resampled means."""

    def __init__(self, correct: torch.Tensor, bootstrap: Bootstrap) -> None:
        self.correct = stats.on_host(correct)
        self.resampled = bootstrap.resampled(self.correct)

    def minus(self, other: Retrained) -> dict[str, float]:
        """This set's accuracy minus `other`'s, paired per run and example."""
        return mean_interval(self.correct - other.correct, self.resampled - other.resampled)


def cell(base: Retrained, modified: Retrained, chance: Retrained, removed: torch.Tensor) -> dict:
    """One ranking at one fraction: held-out accuracy, its drop against the unmodified
    retrain (paired per run and example), its excess over the majority class (chance),
    and the share of held-out sequences whose rationale steps it removed."""
    return {
        "heldout_accuracy": float(modified.correct.mean()),
        "accuracy_drop": base.minus(modified),
        "above_chance": modified.minus(chance),
        "marked_removed": float(removed.to(torch.float64).mean()),
    }


def at_chance_from(cells: dict[str, dict]) -> float | None:
    """The first fraction whose accuracy is not above chance (the 95% interval of its
    excess over the majority class reaches 0): where the ranking destroyed the task."""
    for fraction, numbers in cells.items():
        if numbers["above_chance"]["ci95_low"] <= 0:
            return float(fraction)
    return None


def leaks(cells: dict[str, dict]) -> list[str]:
    """The fractions at which the ranking removed every held-out sequence's rationale
    steps, yet the retrained runs stay above chance: with the marked reading gone, the
    label can only come from which other steps were removed (ROAR's known leak)."""
    return [
        fraction
        for fraction, numbers in cells.items()
        if numbers["marked_removed"] == 1.0 and numbers["above_chance"]["ci95_low"] > 0
    ]


def verdict(low: float, high: float) -> str:
    """A paired difference's reading: `better` when its interval is above 0."""
    return "better" if low > 0 else "worse" if high < 0 else "no different"


def smoothing_check(sets: dict[str, dict[float, Retrained]], names: list[str]) -> dict:
    """Per smoothed row and fraction, its drop minus its source's (paired: the source's
    accuracy minus the smoothed one's) and whether the smoothed ranking scored better."""
    checks = {}
    for name in names:
        source, smooth = sets[name], sets[name + SMOOTHED]
        per_fraction = {}
        for k in source:
            difference = source[k].minus(smooth[k])
            per_fraction[f"{k:g}"] = {
                **difference,
                "verdict": verdict(difference["ci95_low"], difference["ci95_high"]),
            }
        better = any(entry["verdict"] == "better" for entry in per_fraction.values())
        checks[name] = {"fractions": per_fraction, "scored_better": better}
    return checks


def summary(
    cfg: Config, frame: pd.DataFrame, masks: dict, base: torch.Tensor, by_mask: dict
) -> dict:
    """metrics.json: every ranking's cells, where each reaches chance, the smoothing
    check, and the headline (attention's drop at the smallest fraction). `base`: the
    unmodified retrain's correct (S, N); `by_mask`: each modified set's (`retrained`)."""
    steps = cfg.data.steps
    heldout = torch.tensor((frame["split"] == "heldout").to_numpy())
    _, labels, marked = frames.features(split_frame(frame, "heldout"), steps)
    rationale = faithfulness.task_rationale(cfg.task.kind, marked, steps)
    majority = float(labels.mean() > 0.5)
    bootstrap = Bootstrap(base.shape[0], len(labels), cfg.study.bootstrap, cfg.study.bootstrap_seed)
    unmodified = Retrained(base, bootstrap)
    # The best constant guess, the majority class, as a set of its own: chance.
    chance = Retrained((labels == majority).to(torch.float64).expand_as(base), bootstrap)
    retrained_sets = {key: Retrained(correct, bootstrap) for key, correct in by_mask.items()}
    tables, first, leaking, checks = {}, {}, {}, {}
    for ranking, rows in masks.items():
        sets = {
            row: {k: retrained_sets[m.numpy().tobytes()] for k, m in by_k.items()}
            for row, by_k in rows.items()
        }
        tables[ranking] = {
            row: {
                f"{k:g}": cell(
                    unmodified, sets[row][k], chance, marked_removed(m[heldout], rationale)
                )
                for k, m in by_k.items()
            }
            for row, by_k in rows.items()
        }
        first[ranking] = {row: at_chance_from(cells) for row, cells in tables[ranking].items()}
        leaking[ranking] = {row: leaks(cells) for row, cells in tables[ranking].items()}
        smoothed_names = [row for row in rows if row + SMOOTHED in rows]
        if smoothed_names:
            checks[ranking] = smoothing_check(sets, smoothed_names)
    smallest = f"{cfg.roar.fractions[0]:g}"
    lesson_runs = [ranking for ranking in tables if ranking != MODEL_FREE]
    return {
        "seeds": cfg.roar.seeds,
        "removed_reading": uninformative_reading(frame, steps),
        "removed_steps": {f"{k:g}": removed_count(k, steps) for k in cfg.roar.fractions},
        "majority_share": float(chance.correct[0].mean()),
        "unmodified": {"heldout_accuracy": mean_interval(base, unmodified.resampled)},
        "rankings": tables,
        "at_chance_from": first,
        "leaks": leaking,
        "smoothing": checks,
        "headline": {
            "fraction": cfg.roar.fractions[0],
            "attention_drop": {
                run: tables[run]["attention"][smallest]["accuracy_drop"]["mean"]
                for run in lesson_runs
            },
            "rationale_drop": tables[MODEL_FREE][RATIONALE][smallest]["accuracy_drop"]["mean"],
            "random_drop": tables[MODEL_FREE][RANDOM][smallest]["accuracy_drop"]["mean"],
        },
    }


def run(cfg: Config, frame: pd.DataFrame, lesson: pd.DataFrame) -> dict:
    """The whole test: rankings of the lesson's runs (`lesson`: the parameters table,
    one row per train.seeds run), masks, retraining, metrics.json."""
    check_fractions(cfg)
    # Training and held-out sequences only: the validation split trains and scores nothing.
    used = frame[frame["split"].isin(["train", "heldout"])].reset_index(drop=True)
    masks = ranking_masks(cfg, used, lesson)
    base, by_mask = retrained(cfg, used, masks)
    return summary(cfg, used, masks, base, by_mask)
