"""What `dvc repro` ends with: the lesson's answer, read back from the outputs.

The track stage runs on every repro, cached stages or not, and prints this last.
Plain dicts in, text out: no torch, no pandas (the track stage's no-op path).
"""

from __future__ import annotations

from pipeline.analysis.golden import golden_mismatches, is_lesson_config
from pipeline.config import Config

# (metrics.json key, column, what it measures)
COLUMNS = [
    ("train_accuracy", "train", "share of training sequences classified right"),
    ("heldout_accuracy", "held-out", "the same on the held-out sequences"),
    ("marker_mass", "marker mass", "mean attention weight on the marked step"),
    (
        "weight_effect_agreement",
        "agreement",
        "share of held-out sequences where the top-weight step is the step whose "
        "ablation moves the output most",
    ),
]


def study_line(summary: dict) -> str:
    """The seed study in one line (also what the study app and merge_study print)."""
    gap = summary["pair_gap"]
    return (
        f"{summary['seeds']} seeds: held-out accuracy mean "
        f"{summary['heldout_accuracy']['mean']:.4f}; pairs at least {gap['observed']:.4f} "
        f"apart: {gap['p_at_least_observed']:.4f}"
    )


def golden_line(cfg: Config, metrics: dict) -> str:
    if not is_lesson_config(cfg):
        return "golden check: not the lesson's settings, so its golden numbers do not apply"
    mismatches = golden_mismatches(metrics)
    if mismatches:
        count = "1 number differs" if len(mismatches) == 1 else f"{len(mismatches)} numbers differ"
        return f"golden check: {count} from the lesson's: {'; '.join(mismatches)}"
    return "golden check: every golden number of the lesson (docs/lesson.md) matches at 4 decimals"


def lesson_lines(cfg: Config, metrics: dict) -> list[str]:
    widths = [max(len(column), 8) for _, column, _ in COLUMNS]
    header = "       " + " ".join(f"{c:>{w}}" for (_, c, _), w in zip(COLUMNS, widths, strict=True))
    rows = [
        f"run {seed:<3}"
        + " ".join(f"{run[key]:>{w}.4f}" for (key, _, _), w in zip(COLUMNS, widths, strict=True))
        for seed, run in metrics["runs"].items()
    ]
    heldout = cfg.data.split[2]
    gap = metrics["seed_gap"]
    return [
        header,
        *rows,
        f"run-to-run gap {gap:.4f} in held-out accuracy ({round(gap * heldout)} of {heldout} "
        "sequences)",
        *(f"  {column}: {meaning}" for _, column, meaning in COLUMNS),
    ]


def answer(cfg: Config, metrics: dict, study: dict, ui_command: str) -> str:
    """The closing summary of `dvc repro`."""
    return "\n".join(
        [
            "",
            f"== the lesson ({cfg.paths.metrics})",
            *lesson_lines(cfg, metrics),
            golden_line(cfg, metrics),
            f"== the seed study ({cfg.paths.study_summary})",
            study_line(study),
            f"== the report: {cfg.paths.report}",
            f"== the next lesson (a second head, the order of steps): {cfg.paths.report}, "
            "section 'The next lesson'",
            f"== the gap across versions in the MLflow UI: {ui_command}",
        ]
    )
