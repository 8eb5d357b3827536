"""The Hydra app: the whole lesson in one process, logged to MLflow.

    python -m pipeline.run [overrides]      e.g. train.lr=0.9 data.seed=7
    python -m pipeline.run -m train.lr=0.3,0.6 data.seed=1,2 [hydra/launcher=joblib]

Prints the lesson's tables, writes metrics.json into the Hydra run directory and
logs a parent run with one run per seed (tags `sweep`, `sweep.job`, `overrides`
in a sweep). Any Hydra launcher runs the sweep's jobs (README: Sweeps).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from pipeline import tracking
from pipeline.config import Config, run_hydra_app
from pipeline.core.files import write_json
from pipeline.reporting.lesson_tables import text_tables
from pipeline.scaleout import sweep


def lesson(cfg: Config) -> dict:
    """One job: generate, train, evaluate, print, write metrics.json, log."""
    # torch: imported once the job's config passed its check (sweep.run_job), so a
    # bad value is one line at once, not after torch's start-up.
    from pipeline.stages import evaluate, generate, train

    if cfg.tracking.enabled:  # an unreachable server fails the job now, not after training
        tracking.check_server(tracking.store_uri(cfg.tracking))
    frame, summary = generate.run(cfg)
    params, history = train.run(cfg, frame)
    document, steps = evaluate.run(cfg, frame, summary, params)
    print(text_tables(document, steps, cfg.eval.high_weight, cfg.eval.low_effect))
    out = sweep.output_dir() / "metrics.json"
    write_json(out, document)
    result = {"seed_gap": document["seed_gap"]}
    if cfg.tracking.enabled:
        state = tracking.PipelineState(
            cfg=cfg,
            metrics=document,
            curves=train.curves_frame(history, cfg.train.seeds),
            tags=sweep.run_tags(cfg),
            artifacts=[out],
            sequences=frame,
            source="python -m pipeline.run",
        )
        result["run"], _ = tracking.log_state(state)
        print(f"wrote {out}; logged run {result['run']} in {tracking.store_uri(cfg.tracking)}")
    else:
        print(f"wrote {out} (tracking disabled)")
    return result


@hydra.main(config_path="../conf", config_name="config", version_base=None)
def main(raw: DictConfig) -> None:
    sweep.run_job(lesson, raw)


if __name__ == "__main__":
    run_hydra_app(main)
