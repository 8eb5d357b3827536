"""Stage abstraction: interchange interventions on the context vector -> reports/abstraction/.

The study's first abstraction.seeds runs, trained (reports/study/params.parquet)
and at their init (the same seeds drawn again), each aligned with the task's
intermediate variable by a linear and a non-linear map (interchange.py, docs/field.md);
the interchange-intervention accuracy per run and its summary.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pipeline.config import Config, provenance
from pipeline.core.errors import ConfigError
from pipeline.core.files import read_parquet, write_json
from pipeline.experiments.abstraction import interchange
from pipeline.experiments.abstraction.memory import RUNS_AT_ONCE
from pipeline.models import frames, interface
from pipeline.models.parameters import Params
from pipeline.models.threads import run_jobs, workers
from pipeline.stages import entry
from pipeline.stages.start import checked_params

BLOCK = RUNS_AT_ONCE  # runs per job: each job trains its maps on one torch thread


def runs(cfg: Config, study, dtype: torch.dtype) -> tuple[list[int], dict[str, Params]]:
    """The first abstraction.seeds study runs, trained and at their init."""
    seeds, trained = frames.params_from_frame(
        study.head(cfg.abstraction.seeds), cfg.model, cfg.data.steps, dtype
    )
    initial = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps, dtype)
    return seeds, {"trained": trained, "random": initial}


def run(cfg: Config, frame, study) -> dict:
    """The stage's document (reports/abstraction/abstraction.json)."""
    names = [name for name, _ in interface.layout(cfg.model, cfg.data.steps)]
    if names != interchange.LAYOUT:
        raise ConfigError(
            f"model.kind: the abstraction stage needs one pooling over the inputs with the "
            f"lesson's parameters ({', '.join(interchange.LAYOUT)}); {cfg.model.kind} has "
            f"{', '.join(names)}"
        )
    dtype = torch.float64
    seeds, conditions = runs(cfg, study, dtype)
    train, heldout = (
        interchange.Split(*frames.split_tensors(cfg, frame, split, "cpu", dtype)[:2])
        for split in ("train", "heldout")
    )
    jobs = [
        (
            condition,
            lambda b=block, s=seeds[start : start + BLOCK]: interchange.measure_runs(
                b, s, train, heldout, cfg.abstraction
            ),
        )
        for condition, params in conditions.items()
        for start, block in params.blocks(BLOCK)
    ]
    results = run_jobs([job for _, job in jobs], workers(len(jobs)))
    scores = {
        condition: interchange.join_blocks(
            [result for (name, _), result in zip(jobs, results, strict=True) if name == condition]
        )
        for condition in conditions
    }
    accuracy = {
        condition: interchange.heldout_accuracy(params, heldout)
        for condition, params in conditions.items()
    }
    return interchange.summary(
        scores, accuracy, seeds, cfg.abstraction, cfg.study.bootstrap, cfg.study.bootstrap_seed
    )


def main() -> None:
    cfg = checked_params("abstraction")
    frame = read_parquet(cfg.paths.sequences)
    study = read_parquet(cfg.paths.study_params)
    document = run(cfg, frame, study)
    with provenance.publishing(cfg, "abstraction"):
        write_json(Path(cfg.paths.abstraction) / "abstraction.json", document)
    for condition, entry_ in document["conditions"].items():
        numbers = ", ".join(
            f"{name} {entry_[name]['iia']['mean']:.4f}" for name in interchange.MAPS
        )
        print(f"abstraction, {condition} runs: mean IIA {numbers}")


if __name__ == "__main__":
    entry(main)
