"""report.md's section "Seeds at scale": the seed study's reading, tables and figures."""

from __future__ import annotations

import pandas as pd

from pipeline.core import measures
from pipeline.reporting.inputs import ReportInputs, image_lines
from pipeline.reporting.lesson_tables import markdown_table
from pipeline.reporting.study_reading import study_reading

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


def seeds_at_scale(inputs: ReportInputs) -> list[str]:
    if inputs.study is None:
        return []
    return study_section(*inputs.study, inputs.images.get("study", []))
