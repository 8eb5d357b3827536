"""Every number the pipeline reports about a run, every faithfulness score and every
explainer, declared once: the tables, the prose, the headline file, `dvc repro`'s
summary, the study's summary and the tracking commands all derive from these.

Torch-free, for the prose and tables (pipeline/reporting/) and the track stage.
The values come from functions registered under the same keys:
`metrics.per_example` (a run's numbers), `faithfulness` (the scores) and
`explainers.EXPLAINERS`. A new per-example metric is one function there plus one
`Metric` here; a new explainer, one function plus one `Explainer`
(docs/architecture.md has both recipes; tests register a toy of each).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Metric:
    """A per-run number of the lesson, computed per example and reduced over a split.

    `reduce` "mean": per example, then the mean over the split's examples (a share or
    a mean; the seed study describes its distribution over seeds); "count": the
    number of examples where the per-example indicator holds.
    """

    key: str  # metrics.json's, summary.json's, and MLflow's (lesson/<key>)
    label: str  # the study table's row
    short: str  # the run tables' column and `dvc repro`'s; {high} and {low}: eval's thresholds
    measures: str  # what it measures, in a sentence
    table: str  # report.md's run table: accuracy, weights or ablation
    higher_is_better: bool | None = True
    reduce: str = "mean"
    split: str = "heldout"  # the examples it is computed on: heldout or train
    headline: bool = False  # in reports/headline.json, which `dvc exp show` lists

    @property
    def column(self) -> str:
        """A name for wide tables (`python -m pipeline history`, `compare`): the short
        label as one word, held-out spelled as in the keys ("held-out" heldout,
        "marker mass" marker_mass, "top-weight effect" top_weight_effect)."""
        word = self.short.lower().replace("held-out", "heldout")
        return re.sub(r"[^a-z0-9]+", "_", word).strip("_")


# In the order of the study's summary and the report's rows; metrics.json lists a
# run's numbers on the training split first (`run_order`).
METRICS: dict[str, Metric] = {
    metric.key: metric
    for metric in (
        Metric(
            "heldout_accuracy",
            "held-out accuracy",
            "held-out",
            "the same on the held-out sequences",
            "accuracy",
            headline=True,
        ),
        Metric(
            "train_accuracy",
            "train accuracy",
            "train",
            "share of training sequences classified right",
            "accuracy",
            split="train",
            headline=True,
        ),
        Metric(
            "marker_mass",
            "marker mass",
            "marker mass",
            "mean attention weight on the marked step",
            "weights",
            headline=True,
        ),
        Metric(
            "argmax_hit",
            "argmax hit",
            "argmax hit",
            "share of held-out sequences whose largest weight sits on the marked step",
            "weights",
        ),
        Metric(
            "weight_effect_agreement",
            "agreement",
            "agreement",
            "share of held-out sequences where the top-weight step is the step whose "
            "ablation moves the output most",
            "ablation",
            headline=True,
        ),
        Metric(
            "top_weight_effect",
            "top-weight effect",
            "top-weight effect",
            "mean |change of P(y=1)| when the highest-weight step is dropped",
            "ablation",
        ),
        Metric(
            "high_weight",
            "weight above the threshold",
            "weight > {high}",
            "held-out sequences whose top weight exceeds eval.high_weight",
            "ablation",
            higher_is_better=None,
            reduce="count",
        ),
        Metric(
            "high_weight_low_effect",
            "high weight, low effect",
            "of those effect < {low}",
            "of those, the sequences whose top-weight step moves P(y=1) by less than "
            "eval.low_effect when dropped: a high weight that is not a causal effect",
            "ablation",
            higher_is_better=False,
            reduce="count",
            headline=True,
        ),
    )
}
REDUCTIONS = ("mean", "count")
SPLITS = ("heldout", "train")
RUN_TABLES = ("accuracy", "weights", "ablation")


def register_metric(metric: Metric) -> None:
    """Declare a per-run metric (its values: `metrics.per_example`)."""
    if metric.reduce not in REDUCTIONS or metric.split not in SPLITS:
        raise ValueError(f"metric {metric.key}: reduce in {REDUCTIONS}, split in {SPLITS}")
    if metric.table not in RUN_TABLES:
        raise ValueError(f"metric {metric.key}: table in {RUN_TABLES}")
    METRICS[metric.key] = metric


def run_order() -> list[str]:
    """A run's numbers in metrics.json: the training split's first, then the held-out
    means, then the counts."""
    rank = {("mean", "train"): 0, ("mean", "heldout"): 1, ("count", "heldout"): 2}
    return sorted(METRICS, key=lambda key: rank[METRICS[key].reduce, METRICS[key].split])


def means() -> list[str]:
    """The means over examples, in the study's order: what summary.json describes."""
    return [key for key, metric in METRICS.items() if metric.reduce == "mean"]


def counts() -> list[str]:
    return [key for key, metric in METRICS.items() if metric.reduce == "count"]


def on_split(split: str) -> list[str]:
    """The metrics computed on `split`'s examples (each a value per example)."""
    return [key for key, metric in METRICS.items() if metric.split == split]


def heldout_means() -> list[str]:
    """The per-example values the study keeps for each held-out example."""
    return [key for key in means() if METRICS[key].split == "heldout"]


def headline() -> list[str]:
    return [key for key, metric in METRICS.items() if metric.headline]


def in_table(table: str) -> list[str]:
    """The columns of one of report.md's run tables, in metrics.json's order."""
    return [key for key in run_order() if METRICS[key].table == table]


# --- the faithfulness battery's scores -------------------------------------------------


@dataclass(frozen=True)
class Score:
    """A faithfulness score of an explainer's step scores, per run (a mean over the
    held-out sequences). `against` "model": the model's own behaviour, on every task;
    "rationale": the task's rationale, only where it singles out steps."""

    key: str
    label: str  # report.md's column and row headers
    measures: str  # the glossary's line, the better direction in parentheses
    higher_is_better: bool
    against: str = "model"


SCORES: dict[str, Score] = {
    score.key: score
    for score in (
        Score(
            "tau_loo",
            "tau with leave-one-out",
            "Kendall tau_b between the explainer's step scores and the leave-one-out "
            "effects over all steps (higher: it orders every step as removal does)",
            True,
        ),
        Score(
            "aopc_comprehensiveness",
            "comprehensiveness (AOPC)",
            "mean drop of P(predicted class) when the explainer's top 1..T-1 steps are "
            "removed (higher: its top steps carry the prediction)",
            True,
        ),
        Score(
            "aopc_sufficiency",
            "sufficiency (AOPC)",
            "mean drop of P(predicted class) when only its top 1..T-1 steps are kept "
            "(lower: its top steps suffice)",
            False,
        ),
        Score(
            "flips_to_decision",
            "removals to flip",
            "steps removed in its order until the predicted class flips, T if never "
            "(lower: it finds the decisive steps sooner)",
            False,
        ),
        Score(
            "hit_at_1",
            "hit@1",
            "share of sequences whose top step is the marked one (higher)",
            True,
            "rationale",
        ),
        Score(
            "marked_rank",
            "rank of the marked step",
            "mean rank of the marked step, 1 the top (lower)",
            False,
            "rationale",
        ),
        Score(
            "auprc",
            "AUPRC",
            "average precision of the scores against the marked step (higher)",
            True,
            "rationale",
        ),
    )
}
RANDOM = "random"  # the battery's reference row: a random order of the steps
ATTENTION = "attention"  # the explainer the debate is about, the others paired against it


def higher_is_better() -> dict[str, bool]:
    return {key: score.higher_is_better for key, score in SCORES.items()}


def model_scores() -> list[str]:
    """The scores against the model's own behaviour: they apply on every task."""
    return [key for key, score in SCORES.items() if score.against == "model"]


def competitors(rows: list[str], score: str) -> list[str]:
    """The rows that compete for first place on `score`: not the random baseline, and
    for tau_loo not loo itself, the reference (tau 1 by construction)."""
    return [r for r in rows if r != RANDOM and not (score == "tau_loo" and r == "loo")]


# --- the explainers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Explainer:
    """An explainer of the battery (its function: `explainers.EXPLAINERS[key]`).
    `note`: what report.md says of it in parentheses; `settings`: the function's
    keyword arguments, each read from the faithfulness config's field; `applies`:
    the models it explains, every one, those with a layer before the pooling, or
    those with several heads (APPLIES); `per_head`: one row per head, `<key><h>`."""

    key: str
    note: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    applies: str = "every"
    per_head: bool = False


EXPLAINERS: dict[str, Explainer] = {
    explainer.key: explainer
    for explainer in (
        Explainer("attention", "the weight"),
        Explainer("loo", "the step ablation"),
        Explainer("gradient"),
        Explainer("grad_x_input"),
        Explainer("integrated_gradients", "captum", {"n_steps": "ig_steps"}),
        Explainer("value_norm", "weight times |readout|"),
        Explainer("attention_rollout", "the weight through the layer", applies="layer"),
        Explainer("attention_flow", "the maximum flow through the layer", applies="layer"),
        Explainer("attention_max_head", "the largest head's weight", applies="heads"),
        Explainer("attention_head", "each head's weight", applies="heads", per_head=True),
    )
}
APPLIES = ("every", "layer", "heads")


def explainer_of(row: str) -> str:
    """The declaration a battery row comes from: a per-head row `<key><h>` is `key`'s."""
    if row in EXPLAINERS:
        return row
    key = row.rstrip("0123456789")
    if key in EXPLAINERS and EXPLAINERS[key].per_head and key != row:
        return key
    raise KeyError(f"no explainer gives the battery row {row}")


NUMBER_WORDS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


def explainers_sentence(rows: list[str] | None = None) -> str:
    """report.md's list of the battery's explainers (those whose rows are in `rows`,
    every declared one by default), from the declarations."""
    keys = list(EXPLAINERS) if rows is None else list(dict.fromkeys(map(explainer_of, rows)))
    named = [
        f"`{key}`" + (f" ({EXPLAINERS[key].note})" if EXPLAINERS[key].note else "") for key in keys
    ]
    listed = ", ".join(named[:-1]) + f" and {named[-1]}" if len(named) > 1 else named[0]
    count = len(named)
    word = NUMBER_WORDS[count] if count < len(NUMBER_WORDS) else str(count)
    return f"{word} explainers score every step of every held-out sequence: {listed}"
