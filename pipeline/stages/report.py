"""Stage report: tables, a plain-language reading and figures -> report.md, report.html
(the same, figures embedded), PNGs, plot data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.analysis.golden import is_lesson_config
from pipeline.config import Config, provenance
from pipeline.config.outputs import from_report
from pipeline.config.results import experiment_results
from pipeline.core.files import (
    read_csv,
    read_json,
    remove,
    write_bytes,
    write_csv,
    write_json,
    write_text,
)
from pipeline.core.kinds import experiment_part
from pipeline.reporting import figures
from pipeline.reporting.drawing import Plot
from pipeline.reporting.headline import headline
from pipeline.reporting.html_report import html_report
from pipeline.reporting.inputs import ReportInputs
from pipeline.reporting.lesson_tables import step_weights
from pipeline.reporting.report import TITLE, markdown_report
from pipeline.stages import entry
from pipeline.stages.start import checked_params


def report_results(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
    """Each experiment's results as its sections read them: its section module's
    `report_results(cfg, results)` where it reads more (a per-seed table), else as
    they are; None where its stage has not run."""
    reported = {}
    for name, found in results.items():
        module = experiment_part(name, "section")
        expand = getattr(module, "report_results", None)
        reported[name] = expand(cfg, found) if expand is not None and found is not None else found
    return reported


def plots(
    cfg: Config,
    document: dict,
    steps: pd.DataFrame,
    curves: pd.DataFrame,
    experiments: dict[str, Any] | None = None,
) -> list[Plot]:
    """The report stage's own figures, and each experiment's where its section module
    draws some (`plots(cfg, results)`)."""
    high, low = cfg.eval.high_weight, cfg.eval.low_effect
    drawn = figures.lesson_figures(document, steps, curves, high, low)
    for name, results in (experiments or {}).items():
        module = experiment_part(name, "section")
        if results is not None and hasattr(module, "plots"):
            drawn += module.plots(cfg, results)
    return drawn


def run(
    cfg: Config,
    document: dict,
    steps: pd.DataFrame,
    curves: pd.DataFrame,
    experiments: dict[str, Any] | None = None,
) -> tuple[str, dict[str, bytes], pd.DataFrame, str]:
    """report.md, the PNGs by name, the step-weight plot data and report.html.
    `experiments`: each experiment's results as its sections read them
    (`report_results`)."""
    drawn = plots(cfg, document, steps, curves, experiments)
    prefix = from_report(cfg, cfg.paths.figures)
    images: dict[str, list[tuple[str, str]]] = {}
    for figure in drawn:
        images.setdefault(figure.section, []).append((figure.caption, f"{prefix}/{figure.name}"))
    inputs = ReportInputs(
        cfg,
        document,
        steps,
        is_lesson_config(cfg),
        images,
        experiments=experiments or {},
    )
    markdown = markdown_report(inputs)
    pngs = {figure.name: figure.png for figure in drawn}
    linked = {f"{prefix}/{name}": png for name, png in pngs.items()}
    page = html_report(markdown, Path(cfg.paths.report).parent, TITLE, linked)
    return markdown, pngs, step_weights(steps), page


def write_figures(directory: Path, pngs: dict[str, bytes]) -> None:
    """Each PNG atomically; then drop the per-seed PNGs of an earlier run whose seeds
    this one no longer has, since the outputs persist between runs."""
    directory = Path(directory)
    for name, png in pngs.items():
        write_bytes(directory / name, png)
    for stale in sorted(directory.glob("attention_seed_*.png")):
        if stale.name not in pngs:
            remove(stale)


def main() -> None:
    cfg = checked_params("report")
    document = read_json(cfg.paths.metrics)
    steps = read_csv(cfg.paths.step_table)
    curves = read_csv(cfg.paths.training_curves)
    results = experiment_results(cfg)
    markdown, pngs, weights, page = run(cfg, document, steps, curves, report_results(cfg, results))
    with provenance.publishing(cfg, "report"):
        write_figures(cfg.paths.figures, pngs)
        write_csv(cfg.paths.step_weights, weights)
        write_text(cfg.paths.report, markdown)
        write_text(cfg.paths.report_html, page)
        headline_document = headline(document, results)
        write_json(cfg.paths.headline, headline_document)


if __name__ == "__main__":
    entry(main)
