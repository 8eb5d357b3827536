"""What `dvc repro` ends with: the lesson's answer, read back from the outputs, and
each experiment's lines.

The track stage prints this last, when it runs: on a fresh clone, and after any
change to what it logs (`dvc repro -sf track` prints it again).
Plain dicts in, text out: no torch, no pandas (the track stage's no-op path).
"""

from __future__ import annotations

from typing import Any

from pipeline.analysis.golden import golden_mismatches, is_lesson_config
from pipeline.config import Config
from pipeline.core import measures
from pipeline.core.kinds import EXPERIMENTS, experiment_part, has_part


def columns() -> list[measures.Metric]:
    """The headline metrics that are means over examples, in metrics.json's order."""
    shown = set(measures.headline()) & set(measures.means())
    return [measures.METRICS[key] for key in measures.run_order() if key in shown]


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


def answer(cfg: Config, metrics: dict, results: dict[str, Any], ui_command: str) -> str:
    """The closing summary of `dvc repro`: the lesson, then each experiment's lines (its
    optional `summary` module, given its results where the track stage reads them),
    in the registry's order."""
    experiments = [
        line
        for name in EXPERIMENTS
        if has_part(name, "summary")
        for line in experiment_part(name, "summary").lines(cfg, results.get(name))
    ]
    return "\n".join(
        [
            "",
            f"== the lesson ({cfg.paths.metrics})",
            *lesson_lines(cfg, metrics),
            golden_line(cfg, metrics),
            f"== the report: {cfg.paths.report} (one page with its figures: "
            f"{cfg.paths.report_html})",
            *experiments,
            f"== the gap across versions in the MLflow UI: {ui_command}",
        ]
    )
