"""What `dvc repro` ends with: the lesson's answer, read back from the outputs.

The track stage prints this last, when it runs: on a fresh clone, and after any
change to what it logs (`dvc repro -sf track` prints it again).
Plain dicts in, text out: no torch, no pandas (the track stage's no-op path).
"""

from __future__ import annotations

from pipeline.analysis.golden import golden_mismatches, is_lesson_config
from pipeline.config import Config
from pipeline.core import measures


def columns() -> list[measures.Metric]:
    """The headline metrics that are means over examples, in metrics.json's order."""
    shown = set(measures.headline()) & set(measures.means())
    return [measures.METRICS[key] for key in measures.run_order() if key in shown]


def interval(summary: dict) -> str:
    """A mean and its 95% interval, the one form every report, log and doc uses:
    `0.8283 [0.8011, 0.8546]` (a dash between two numbers would read as a minus)."""
    return f"{summary['mean']:.4f} [{summary['ci95_low']:.4f}, {summary['ci95_high']:.4f}]"


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
    shown = columns()
    widths = [max(len(metric.short), 8) for metric in shown]
    header = "       " + " ".join(
        f"{metric.short:>{w}}" for metric, w in zip(shown, widths, strict=True)
    )
    rows = [
        f"run {seed:<3}"
        + " ".join(f"{run[m.key]:>{w}.4f}" for m, w in zip(shown, widths, strict=True))
        for seed, run in metrics["runs"].items()
    ]
    heldout = cfg.data.split[2]
    gap = metrics["seed_gap"]
    return [
        header,
        *rows,
        f"run-to-run gap {gap:.4f} in held-out accuracy ({round(gap * heldout)} of {heldout} "
        "sequences)",
        *(f"  {metric.short}: {metric.measures}" for metric in shown),
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
            f"== the report: {cfg.paths.report} (one page with its figures: "
            f"{cfg.paths.report_html})",
            f"== the next lesson (a second head, the order of steps): {cfg.paths.report}, "
            "section 'The next lesson'",
            f"== the attention debate, replayed where the answer is known: {cfg.paths.report}, "
            "section 'The attention debate'",
            f"== the field's newer tests (erasure, remove and retrain, disagreement, causal "
            f"abstraction, suppressors): {cfg.paths.report}, docs/field.md",
            f"== the gap across versions in the MLflow UI: {ui_command}",
        ]
    )
