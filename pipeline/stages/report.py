"""Stage report: tables, a plain-language reading and figures -> report.md, report.html
(the same, figures embedded), PNGs, plot data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from pipeline.analysis import stats
from pipeline.analysis.golden import is_lesson_config
from pipeline.config import Config, load_params, provenance
from pipeline.config.outputs import from_report
from pipeline.core.files import (
    read_csv,
    read_json,
    read_parquet,
    remove,
    write_bytes,
    write_csv,
    write_json,
    write_text,
)
from pipeline.memory import check_memory
from pipeline.reporting import faithfulness_figures, figures, study_figures
from pipeline.reporting.drawing import Plot
from pipeline.reporting.headline import headline
from pipeline.reporting.html_report import html_report
from pipeline.reporting.inputs import ReportInputs
from pipeline.reporting.lesson_tables import step_weights
from pipeline.reporting.report import TITLE, markdown_report
from pipeline.stages import entry


def plots(
    cfg: Config,
    document: dict,
    steps: pd.DataFrame,
    curves: pd.DataFrame,
    study: tuple[dict, pd.DataFrame] | None = None,
    faithfulness: tuple[dict, dict, pd.DataFrame] | None = None,
) -> list[Plot]:
    """The report stage's own figures."""
    high, low = cfg.eval.high_weight, cfg.eval.low_effect
    drawn = figures.lesson_figures(document, steps, curves, high, low)
    if study is not None:
        summary, table = study
        gaps = stats.pair_gap_counts(torch.tensor(table["heldout_accuracy"].to_numpy()))
        step = 1 / cfg.data.split[2]  # held-out accuracy moves in steps of one sequence
        drawn += study_figures.study_figures(table, summary, tuple(g.tolist() for g in gaps), step)
    if faithfulness is not None:
        lesson_seeds = [int(seed) for seed in faithfulness[0]["runs"]]
        drawn += faithfulness_figures.faithfulness_figures(
            faithfulness[2], lesson_seeds, faithfulness[1]
        )
    return drawn


def run(
    cfg: Config,
    document: dict,
    steps: pd.DataFrame,
    curves: pd.DataFrame,
    study: tuple[dict, pd.DataFrame] | None = None,
    faithfulness: tuple[dict, dict, pd.DataFrame] | None = None,
    cells: bool = False,
) -> tuple[str, dict[str, bytes], pd.DataFrame, str]:
    """report.md, the PNGs by name, the step-weight plot data and report.html; with
    `cells`, the experiments' sections from their results (the cells' files among them)."""
    drawn = plots(cfg, document, steps, curves, study, faithfulness)
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
        study,
        faithfulness and faithfulness[:2],
        **(cell_inputs(cfg) if cells else {}),
    )
    markdown = markdown_report(inputs)
    pngs = {figure.name: figure.png for figure in drawn}
    linked = {f"{prefix}/{name}": png for name, png in pngs.items()}
    page = html_report(markdown, Path(cfg.paths.report).parent, TITLE, linked)
    return markdown, pngs, step_weights(steps), page


def cell_inputs(cfg: Config) -> dict:
    """The experiments' results where their stages ran (the cells' sections read every
    cell's file, the figures their stages drew)."""
    return {"experiments": provenance.experiment_results(cfg)}


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
    cfg = load_params()
    check_memory(cfg)  # before any work: the largest stage of this config fits
    provenance.verify_inputs(cfg, "report")
    document = read_json(cfg.paths.metrics)
    steps = read_csv(cfg.paths.step_table)
    curves = read_csv(cfg.paths.training_curves)
    study = read_json(cfg.paths.study_summary), read_parquet(cfg.paths.study_seeds)
    faithfulness = (
        read_json(cfg.paths.faithfulness),
        read_json(cfg.paths.study_faithfulness),
        read_parquet(cfg.paths.study_faithfulness_seeds),
    )
    markdown, pngs, weights, page = run(
        cfg, document, steps, curves, study, faithfulness, cells=True
    )
    with provenance.publishing(cfg, "report"):
        write_figures(cfg.paths.figures, pngs)
        write_csv(cfg.paths.step_weights, weights)
        write_text(cfg.paths.report, markdown)
        write_text(cfg.paths.report_html, page)
        experiments = provenance.experiment_results(cfg)
        headline_document = headline(document, study[0], faithfulness[0], experiments)
        write_json(cfg.paths.headline, headline_document)


if __name__ == "__main__":
    entry(main)
