"""report.md's section "Seeds at scale": the seed study's reading, tables and figures
(from reports/study/summary.json and seeds.parquet), and its headline.json entry."""

from __future__ import annotations

import pandas as pd

from pipeline.core import measures
from pipeline.experiments.study.reading import study_reading
from pipeline.reporting.inputs import image_lines
from pipeline.reporting.lesson_tables import markdown_table

STUDY_COLUMNS = ("mean", "std", "min", "q05", "median", "q95", "max", "ci95_low", "ci95_high")


def study_table(summary: dict) -> pd.DataFrame:
    """One row per per-seed number: its distribution over the study's seeds."""
    rows = {
        measures.METRICS[key].label: [summary[key][c] for c in STUDY_COLUMNS]
        for key in measures.means()
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(STUDY_COLUMNS))


def study_lesson_markdown(summary: dict) -> str:
    gap = summary["pair_gap"]
    rows = {
        "lesson's gap (train.seeds)": gap["observed"],
        "mean gap over all seed pairs": gap["mean"],
        "share of pairs with gap >= lesson's": gap["p_at_least_observed"],
        "share of seeds with marker mass > 0.5": summary["share_marker_mass_above_half"],
        **{
            f"run {seed}: share of seeds strictly below": entry["percentile"]
            for seed, entry in summary["lesson_seeds"].items()
        },
    }
    table = pd.DataFrame({"value": list(rows.values())}, index=list(rows))
    return markdown_table(table, None)


def study_section(summary: dict, table: pd.DataFrame, images: list[tuple[str, str]]) -> list[str]:
    """The "Seeds at scale" section: reading, distribution table, gap table, figures."""
    return [
        "## Seeds at scale",
        f"Runs 1..{summary['seeds']}, each from its own init seed, on the same data and "
        "settings. ci95 is a 95% multi-bootstrap interval of the mean; std is the population "
        "std over seeds.",
        study_reading(summary, table),
        markdown_table(study_table(summary), None),
        study_lesson_markdown(summary),
        *image_lines(images),
    ]


def report_results(cfg, summary: dict) -> tuple[dict, pd.DataFrame]:
    """What the section and its figures read: the summary and the per-seed table."""
    from pipeline.core.files import read_parquet

    return summary, read_parquet(cfg.paths.study_seeds)


def plots(cfg, results: tuple[dict, pd.DataFrame]) -> list:
    """The section's figures (`drawing.Plot`s): held-out accuracy, marker mass, the
    pair gaps. torch and matplotlib load here, on use."""
    import torch

    from pipeline.analysis import stats
    from pipeline.experiments.study import figures

    summary, table = results
    gaps = stats.pair_gap_counts(torch.tensor(table["heldout_accuracy"].to_numpy()))
    step = 1 / cfg.data.split[2]  # held-out accuracy moves in steps of one sequence
    return figures.study_figures(table, summary, tuple(g.tolist() for g in gaps), step)


def seeds_at_scale(results: tuple[dict, pd.DataFrame], images: list[tuple[str, str]]) -> str:
    """The section in markdown: its parts a blank line apart, as report.md joins them."""
    return "\n\n".join(study_section(*results, images))


def headline(summary: dict) -> dict:
    """The study's held-out accuracy and how rare the lesson's gap is among its pairs."""
    heldout = summary["heldout_accuracy"]
    return {
        "study": {
            "seeds": summary["seeds"],
            "heldout_accuracy_mean": heldout["mean"],
            "heldout_accuracy_ci95_low": heldout["ci95_low"],
            "heldout_accuracy_ci95_high": heldout["ci95_high"],
            "share_pairs_at_least_gap": summary["pair_gap"]["p_at_least_observed"],
        }
    }


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(1, seeds_at_scale)]
