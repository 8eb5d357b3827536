"""Stage study (pipeline/analysis/seed_study.py): runs 1..study.seeds on the lesson's
data -> seeds.parquet (every per-seed number and the trained parameters),
params.parquet (the parameters alone, which the faithfulness stage reads: an eval.*
change rewrites seeds.parquet but not these bytes, so the battery does not rerun),
summary.json, dynamics.parquet (every seed's numbers at every epoch, measured during
the same training: pipeline/analysis/epochs.py)."""

from __future__ import annotations

from pipeline.analysis import epochs, seed_study
from pipeline.config import provenance
from pipeline.core.files import read_parquet, write_json, write_parquet
from pipeline.models import interface
from pipeline.reporting.summary import study_line
from pipeline.stages import entry
from pipeline.stages.start import checked_params


def main() -> None:
    cfg = checked_params("study")
    frame = read_parquet(cfg.paths.sequences)
    runs = seed_study.study_runs(cfg, frame, seed_study.show_progress(), dynamics=True)
    table, summary = seed_study.outcome(cfg, frame, runs)
    with provenance.publishing(cfg, "study"):
        write_parquet(cfg.paths.study_seeds, table)
        columns = ["seed", *interface.flat_names(cfg.model, cfg.data.steps)]
        write_parquet(cfg.paths.study_params, table[columns])
        write_parquet(cfg.paths.study_dynamics, epochs.epochs_table(runs.seeds, runs.epochs))
        write_json(cfg.paths.study_summary, summary)
    print(study_line(summary))


if __name__ == "__main__":
    entry(main)
