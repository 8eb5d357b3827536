"""The seed study as a Hydra app (pipeline/analysis/seed_study.py has the study itself).

    python -m pipeline.study [overrides]          e.g. study.seeds=200 train.lr=0.3
    python -m pipeline.study -m data.seed=1,2,3   one study per config

Writes summary.json into its run directory and logs it to MLflow; with
study.shard=i/n, one shard (shard.pt) for `python -m pipeline merge_study`.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from pipeline import tracking
from pipeline.config import Config, run_hydra_app
from pipeline.core.files import write_bytes, write_json
from pipeline.reporting.summary import study_line
from pipeline.scaleout import sweep


def study_job(cfg: Config) -> dict:
    """One job of the Hydra app: a study (summary.json, logged) or one shard (shard.pt)."""
    # torch: imported once the job's config passed its check (sweep.run_job), so a
    # bad value is one line at once, not after torch's start-up.
    from pipeline import data
    from pipeline.analysis.seed_study import (
        outside_accuracy,
        run,
        show_progress,
        study_seeds,
        train_seeds,
    )
    from pipeline.analysis.study_shards import SHARD_FILE, shard_bytes
    from pipeline.experiments.study.study_runs import log_study

    if cfg.tracking.enabled and cfg.study.shard is None:
        tracking.check_server(tracking.store_uri(cfg.tracking))
    frame = data.generate(cfg.data, cfg.task.kind)
    if cfg.study.shard is not None:
        runs = train_seeds(cfg, frame, study_seeds(cfg.study), show_progress())
        out = sweep.output_dir() / SHARD_FILE
        write_bytes(out, shard_bytes(cfg, runs, outside_accuracy(cfg, frame)))
        print(f"shard {cfg.study.shard}: seeds {runs.seeds[0]}..{runs.seeds[-1]}; wrote {out}")
        return {"shard": cfg.study.shard, "seeds": len(runs.seeds)}
    _, summary = run(cfg, frame, show_progress())
    out = sweep.output_dir() / "summary.json"
    write_json(out, summary)
    gap = summary["pair_gap"]
    print(f"{study_line(summary)}; wrote {out}")
    result = {
        "seed_gap": gap["observed"],
        "heldout_mean": summary["heldout_accuracy"]["mean"],
        "p_at_least_observed": gap["p_at_least_observed"],
    }
    if cfg.tracking.enabled:
        result["run"], _ = log_study(cfg, summary, sweep.run_tags(cfg), out)
    return result


@hydra.main(config_path="../conf", config_name="config", version_base=None)
def main(raw: DictConfig) -> None:
    sweep.run_job(study_job, raw)


if __name__ == "__main__":
    run_hydra_app(main)
