"""Stage faithfulness: the explainer battery (pipeline/analysis/) for the lesson's runs
and the study's.

Writes reports/faithfulness.json (per train.seeds run, every explainer and
metric; the rationale metrics score against the task's rationale, its
`rationale` of pipeline/tasks/; captum's robustness metrics of the explainers it
drives), and for every study run the per-run numbers (a DVC-cached parquet) and
their summary (reports/study/faithfulness.json), with the paired comparisons and
the randomisation sanity checks on the first study seeds.
"""

from __future__ import annotations

import pandas as pd

from pipeline.analysis import faithfulness, robustness, sanity
from pipeline.config import Config, provenance
from pipeline.core.files import read_parquet, write_json, write_parquet
from pipeline.models import frames
from pipeline.models.train import device_and_dtype
from pipeline.stages import entry
from pipeline.stages.start import checked_params


def battery_table(cfg: Config, frame: pd.DataFrame, table: pd.DataFrame) -> dict:
    """{explainer: {metric: (S, N)}} per (run, held-out example) for the runs of a
    parameter table (one row per seed)."""
    device, dtype = device_and_dtype(cfg.train)
    seeds, params = frames.params_from_frame(table, cfg.model, cfg.data.steps, dtype)
    inputs, _, marked = frames.split_tensors(cfg, frame, "heldout", device, dtype)
    return faithfulness.battery_tensors(
        params.map(lambda t: t.to(device)),
        inputs,
        faithfulness.task_rationale(cfg.task.kind, marked, cfg.data.steps),
        seeds,
        settings=cfg.faithfulness,
        per_example=True,
    )


def sanity_checks(cfg: Config, frame: pd.DataFrame, table: pd.DataFrame) -> dict:
    """The randomisation sanity checks on the first faithfulness.sanity_seeds study runs."""
    device, dtype = device_and_dtype(cfg.train)
    first = table.head(cfg.faithfulness.sanity_seeds)
    seeds, params = frames.params_from_frame(first, cfg.model, cfg.data.steps, dtype)
    inputs, _, _ = frames.split_tensors(cfg, frame, "heldout", device, dtype)
    return sanity.checks(cfg, frame, params.map(lambda t: t.to(device)), seeds, inputs)


def long_frame(seeds: list[int], table: dict) -> pd.DataFrame:
    """One row per (seed, explainer): every metric."""
    parts = [
        pd.DataFrame(
            {"seed": seeds, "explainer": row, **{m: v.cpu().numpy() for m, v in metrics.items()}}
        )
        for row, metrics in table.items()
    ]
    return pd.concat(parts, ignore_index=True)


def run(
    cfg: Config, frame: pd.DataFrame, lesson: pd.DataFrame, study: pd.DataFrame
) -> tuple[dict, pd.DataFrame, dict]:
    """(faithfulness.json, one row per study run and explainer, the study summary)."""
    device, dtype = device_and_dtype(cfg.train)
    seeds, params = frames.params_from_frame(lesson, cfg.model, cfg.data.steps, dtype)
    inputs, labels, marked = frames.split_tensors(cfg, frame, "heldout", device, dtype)
    runs = faithfulness.battery(
        params.map(lambda t: t.to(device)),
        inputs,
        labels,
        faithfulness.task_rationale(cfg.task.kind, marked, cfg.data.steps),
        seeds,
        settings=cfg.faithfulness,
    )
    per_example = battery_table(cfg, frame, study)
    study_table = {row: faithfulness.run_means(metrics) for row, metrics in per_example.items()}
    resamples, bootstrap_seed = cfg.study.bootstrap, cfg.study.bootstrap_seed
    summary = faithfulness.study_summary(study_table, resamples, bootstrap_seed)
    summary["paired"] = faithfulness.study_pairs(per_example, resamples, bootstrap_seed)
    summary["sanity"] = sanity_checks(cfg, frame, study)
    robust = robustness.robustness(
        params.map(lambda t: t.to(device)), seeds, inputs, cfg.faithfulness
    )
    document = {"runs": runs, "robustness": robust}
    return document, long_frame(study["seed"].tolist(), study_table), summary


def main() -> None:
    cfg = checked_params("faithfulness")
    frame = read_parquet(cfg.paths.sequences)
    lesson = read_parquet(cfg.paths.parameters)
    study = read_parquet(cfg.paths.study_params)
    document, seeds_frame, summary = run(cfg, frame, lesson, study)
    with provenance.publishing(cfg, "faithfulness"):
        write_json(cfg.paths.faithfulness, document)
        write_parquet(cfg.paths.study_faithfulness_seeds, seeds_frame)
        write_json(cfg.paths.study_faithfulness, summary)


if __name__ == "__main__":
    entry(main)
