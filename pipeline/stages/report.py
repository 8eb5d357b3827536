"""Stage report: tables, a plain-language reading and figures -> report.md, PNGs, plot data."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import torch

from pipeline import provenance
from pipeline.analysis import stats
from pipeline.analysis.golden import is_lesson_config
from pipeline.config import Config, load_params
from pipeline.files import (
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
from pipeline.reporting import figures, report
from pipeline.reporting.debate import debate_section
from pipeline.reporting.headline import headline
from pipeline.reporting.next_lesson import next_lesson_section
from pipeline.reporting.roar import roar_section
from pipeline.stages import entry


def run(
    cfg: Config,
    document: dict,
    steps: pd.DataFrame,
    curves: pd.DataFrame,
    study: tuple[dict, pd.DataFrame] | None = None,
    faithfulness: tuple[dict, dict, pd.DataFrame] | None = None,
) -> tuple[str, dict[str, bytes], pd.DataFrame]:
    high, low = cfg.eval.high_weight, cfg.eval.low_effect
    rendered = figures.lesson_figures(document, steps, curves, high, low)
    if study is not None:
        summary, table = study
        gaps = stats.pair_gap_counts(torch.tensor(table["heldout_accuracy"].to_numpy()))
        step = 1 / cfg.data.split[2]  # held-out accuracy moves in steps of one sequence
        rendered += figures.study_figures(table, summary, tuple(g.tolist() for g in gaps), step)
    if faithfulness is not None:
        lesson_seeds = [int(seed) for seed in faithfulness[0]["runs"]]
        rendered += figures.faithfulness_figures(faithfulness[2], lesson_seeds, faithfulness[1])
    prefix = from_report(cfg, cfg.paths.figures)
    images: dict[str, list[tuple[str, str]]] = {}
    for figure in rendered:
        images.setdefault(figure.section, []).append((figure.caption, f"{prefix}/{figure.name}"))
    pngs = {figure.name: figure.png for figure in rendered}
    markdown = report.markdown_report(
        document,
        steps,
        cfg,
        is_lesson_config(cfg),
        images,
        study,
        faithfulness and faithfulness[:2],
    )
    return markdown, pngs, report.step_weights(steps)


def from_report(cfg: Config, directory: str | Path) -> str:
    """`directory` as report.md links to it: relative to report.md's folder."""
    return Path(os.path.relpath(directory, Path(cfg.paths.report).parent)).as_posix()


def folder_images(cfg: Config, folder: str) -> list[str]:
    """The PNGs of a stage's figure folder, as report.md links them, by name."""
    prefix = from_report(cfg, folder)
    return [f"{prefix}/{png.name}" for png in sorted(Path(folder).glob("*.png"))]


def next_lesson(cfg: Config) -> str:
    """The section "The next lesson" from the grid's cells, with the next_lesson
    stage's figures; none without cells."""
    cells = [document for _, document in provenance.grid_cells(cfg)]
    if not cells:
        return ""
    return "\n" + next_lesson_section(cells, folder_images(cfg, cfg.paths.next_lesson))


def debate(cfg: Config) -> str:
    """The section "The attention debate" from the debate's cells, with the
    debate_figures stage's figures; none without cells."""
    cells = [document for _, document in provenance.grid_cells(cfg, stage="debate")]
    if not cells:
        return ""
    return "\n" + debate_section(cells, folder_images(cfg, cfg.paths.debate_figures))


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
    markdown, pngs, step_weights = run(cfg, document, steps, curves, study, faithfulness)
    roar = read_json(cfg.paths.roar)
    markdown += next_lesson(cfg) + debate(cfg) + "\n" + roar_section(roar)
    with provenance.publishing(cfg, "report"):
        write_figures(cfg.paths.figures, pngs)
        write_csv(cfg.paths.step_weights, step_weights)
        write_text(cfg.paths.report, markdown)
        write_json(cfg.paths.headline, headline(document, study[0], faithfulness[0], roar))


if __name__ == "__main__":
    entry(main)
