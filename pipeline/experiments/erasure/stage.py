"""Stage erasure: the field's erasure and disagreement tests (docs/field.md).

On the lesson's runs (models/parameters.parquet) and the study's first erasure.seeds
runs (reports/study/params.parquet), over the held-out sequences: Serrano & Smith's
erasure and decision flips, Krishna et al.'s agreement metrics between explainers and
against the task's rationale (this folder). Writes reports/erasure/metrics.json
(per lesson run, and over the study's runs with the study's bootstrap intervals) and
reports/erasure/seeds.csv (one row per study run, test, row and metric).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.analysis import faithfulness
from pipeline.config import Config, provenance
from pipeline.core.files import read_parquet, write_csv, write_json
from pipeline.experiments.erasure import erasure_study
from pipeline.models import frames
from pipeline.models.train import device_and_dtype
from pipeline.stages import entry
from pipeline.stages.start import checked_params


def values_of(cfg: Config, frame: pd.DataFrame, table: pd.DataFrame) -> erasure_study.Values:
    """Every test's per-run values for the runs of a parameter table (one row per seed)."""
    device, dtype = device_and_dtype(cfg.train)
    seeds, params = frames.params_from_frame(table, cfg.model, cfg.data.steps, dtype)
    inputs, _, marked = frames.split_tensors(cfg, frame, "heldout", device, dtype)
    rationale = faithfulness.task_rationale(cfg.task.kind, marked, cfg.data.steps)
    return erasure_study.per_run(cfg, params.map(lambda t: t.to(device)), inputs, rationale, seeds)


def seeds_frame(values: erasure_study.Values, seeds: list[int]) -> pd.DataFrame:
    """One row per (seed, test, row, metric): the study runs' values."""
    parts = [
        pd.DataFrame(
            {"seed": seeds, "test": test, "row": row, "metric": metric, "value": v.cpu().numpy()}
        )
        for (test, row, metric), v in values.items()
    ]
    return pd.concat(parts, ignore_index=True).sort_values(["seed"], kind="stable")


def run(
    cfg: Config, frame: pd.DataFrame, lesson: pd.DataFrame, study: pd.DataFrame
) -> tuple[dict, pd.DataFrame]:
    """(metrics.json, seeds.csv)."""
    chosen = study.head(cfg.erasure.seeds)
    lesson_values = values_of(cfg, frame, lesson)
    study_values = values_of(cfg, frame, chosen)
    seeds = chosen["seed"].tolist()
    document = {
        "runs": erasure_study.run_documents(lesson_values, lesson["seed"].tolist()),
        "study": {
            "seeds": len(seeds),
            **erasure_study.over_seeds(study_values, cfg.study.bootstrap, cfg.study.bootstrap_seed),
        },
    }
    return document, seeds_frame(study_values, seeds)


def main() -> None:
    cfg = checked_params("erasure")
    frame = read_parquet(cfg.paths.sequences)
    lesson = read_parquet(cfg.paths.parameters)
    study = read_parquet(cfg.paths.study_params)
    document, seeds = run(cfg, frame, lesson, study)
    folder = Path(cfg.paths.erasure)
    with provenance.publishing(cfg, "erasure"):
        write_json(folder / "metrics.json", document)
        write_csv(folder / "seeds.csv", seeds)


if __name__ == "__main__":
    entry(main)
