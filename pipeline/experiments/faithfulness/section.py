"""report.md's section "Which explanation is faithful?": the battery's reading, its
tables per run and over the study, the sanity checks and the figures; attention's
two scores per run in headline.json.

The scores come in two groups (measures.Score.against): against the model's own
behaviour and against the marked step. Each table shows one group, so that no
table is wider than a page, and its columns carry the registry's labels.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from pipeline.core import measures
from pipeline.experiments.faithfulness.sanity_reading import sanity_reading
from pipeline.reporting.faithfulness_reading import (
    advantage,
    amount,
    faithfulness_reading,
    pair_key,
    table,
)
from pipeline.reporting.inputs import image_lines
from pipeline.reporting.lesson_tables import markdown_table

GROUPS = {"model": "against the model's behaviour", "rationale": "against the marked step"}


def group_scores(group: str, present: list[str]) -> list[str]:
    """The scores of `group` (measures.Score.against) among `present`, in the
    registry's order."""
    return [key for key, s in measures.SCORES.items() if s.against == group and key in present]


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={key: s.label for key, s in measures.SCORES.items()})


def explainer_table(run: dict, group: str = "model") -> pd.DataFrame:
    """One row per explainer (the random baseline last), one column per score of
    `group`."""
    frame = pd.DataFrame.from_dict(run, orient="index")
    return labelled(frame[group_scores(group, list(frame.columns))])


def study_explainer_table(summary: dict, group: str = "model") -> pd.DataFrame:
    """Mean over study runs [95% interval], with the share of runs on which the
    explainer ranks first."""
    rows = {}
    for name, entry in summary["explainers"].items():
        rows[name] = {
            metric: f"{numbers['mean']:.4f} [{numbers['ci95_low']:.4f}, {numbers['ci95_high']:.4f}]"
            + (f" {numbers['share_first']:.0%}" if "share_first" in numbers else "")
            for metric, numbers in entry.items()
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    return labelled(frame[group_scores(group, list(frame.columns))])


def paired_table(
    summary: dict, group: str = "model", reference: str = measures.ATTENTION
) -> pd.DataFrame:
    """One row per explainer against `reference`: per score of `group`, how far
    `reference` is ahead in the score's better direction [95% interval] (negative:
    behind), then the shares of seeds on which each is better."""
    higher = measures.higher_is_better()
    scores = group_scores(group, list(summary["paired"]))
    rows: dict[str, dict[str, str]] = {}
    for name in summary["explainers"]:
        for metric in scores:
            entry = summary["paired"][metric].get(pair_key(reference, name))
            if entry is None:
                continue
            rows.setdefault(f"against {name}", {})[metric] = (
                f"{amount(advantage(entry, higher[metric]), signed=True)} "
                f"{entry['share_first_better']:.0%}/{entry['share_second_better']:.0%}"
            )
    return labelled(pd.DataFrame.from_dict(rows, orient="index").reindex(columns=scores))


def robustness_table(robustness: dict) -> pd.DataFrame:
    """One row per (run, explainer): sensitivity_max and infidelity, 3 significant
    digits (infidelity is small: a few 1e-6 to 1e-4 on the lesson)."""
    rows = {
        f"run {seed}: {name}": {metric: f"{value:.3g}" for metric, value in numbers.items()}
        for seed, explainers in robustness.items()
        for name, numbers in explainers.items()
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def sanity_table(sanity: dict) -> pd.DataFrame:
    """One row per explainer, one column per randomisation step (cascading: re-drawn up
    to the group; alone: that group only; labels: trained on permuted labels): the
    mean Spearman with the trained model's scores."""
    prefixes = {"cascading": "up to ", "independent": "only ", "labels": ""}
    columns = {
        f"{prefixes[test]}{step}".replace("_", " "): {
            row: f"{e['spearman']['mean']:.4f}" for row, e in rows.items()
        }
        for test, steps in sanity["tests"].items()
        for step, rows in steps.items()
    }
    return pd.DataFrame(columns)


def per_group(title: str, build: Callable[[str], pd.DataFrame], show=table) -> list[str]:
    """`title` and the table `build(group)` makes, shown by `show`, for each group that
    has scores."""
    parts = []
    for group, words in GROUPS.items():
        frame = build(group)
        if len(frame.columns):
            parts += [f"{title}, {words}:", show(frame)]
    return parts


def robustness_parts(document: dict) -> list[str]:
    if "robustness" not in document:
        return []
    return [
        "Robustness of the explainers captum drives (captum.metrics; Yeh et al. 2019), "
        "mean over held-out sequences per run: `sensitivity_max`, the largest change of "
        "the attributions under a perturbation in a small L-infinity ball (lower is "
        "steadier); `infidelity` with normalize=True, the squared error of what the "
        "attributions predict a Gaussian perturbation does to P(y=1) (lower is more "
        "faithful):",
        table(robustness_table(document["robustness"])),
    ]


def faithfulness_section(document: dict, summary: dict, images: list[tuple[str, str]]) -> list[str]:
    """The "Which explanation is faithful?" section."""
    explainers = [row for row in next(iter(document["runs"].values())) if row != measures.RANDOM]
    parts = [
        "## Which explanation is faithful?",
        f"{measures.explainers_sentence(explainers)}; `{measures.RANDOM}` is a random order, for "
        "reference.",
        *faithfulness_reading(document, summary, measures.higher_is_better()),
    ]
    for seed, run in document["runs"].items():
        parts += per_group(
            f"Run {seed}",
            lambda group, run=run: explainer_table(run, group),
            lambda frame: markdown_table(frame, None),
        )
    parts += [
        f"Over the {summary['seeds']} study runs: mean [95% bootstrap interval over runs] and "
        "the share of runs on which the explainer ranks first.",
        *per_group("Over the study", lambda group: study_explainer_table(summary, group)),
        f"Attention against each explainer, paired on the same {summary['seeds']} runs and "
        "held-out sequences: how far attention is ahead in the score's better direction "
        "(negative: behind) [95% multi-bootstrap interval, seeds and sequences resampled "
        "together], then the shares of runs on which attention / the explainer is better "
        "(the rest tie; '-': the pair does not compete on that score).",
        *per_group("Attention paired", lambda group: paired_table(summary, group).fillna("-")),
        *robustness_parts(document),
    ]
    if "sanity" in summary:
        parts += [
            "\n".join(sanity_reading(summary["sanity"])),
            table(sanity_table(summary["sanity"])),
        ]
    return parts + image_lines(images)


def report_results(cfg, results: dict) -> tuple[dict, dict, pd.DataFrame]:
    """What the section and its figures read: faithfulness.json, its study summary and
    one row per study run and explainer."""
    from pipeline.core.files import read_parquet

    return results["runs"], results["study"], read_parquet(cfg.paths.study_faithfulness_seeds)


def plots(cfg, results: tuple[dict, dict, pd.DataFrame]) -> list:
    """The section's figures (`drawing.Plot`s): tau_loo against hit@1, the sanity
    checks. matplotlib loads here, on use."""
    from pipeline.experiments.faithfulness import figures

    document, summary, frame = results
    lesson_seeds = [int(seed) for seed in document["runs"]]
    return figures.faithfulness_figures(frame, lesson_seeds, summary)


def faithful(results: tuple[dict, dict, pd.DataFrame], images: list[tuple[str, str]]) -> str:
    """The section in markdown: its parts a blank line apart, as report.md joins them."""
    return "\n\n".join(faithfulness_section(*results[:2], images))


# Attention's scores per lesson run: rank agreement with step ablation (faithfulness)
# and the hit rate on the marked step (plausibility).
ATTENTION_NUMBERS = ("tau_loo", "hit_at_1")


def headline(results: dict) -> dict:
    return {}  # its numbers are per lesson run: run_headline


def run_headline(results: dict, seed: str) -> dict:
    """Attention's two scores of one lesson run, beside the run's own in headline.json."""
    attention = results["runs"]["runs"][seed]["attention"]
    return {f"attention_{name}": attention[name] for name in ATTENTION_NUMBERS}


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(2, faithful)]
