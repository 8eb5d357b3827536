"""Hydra jobs and sweeps: what the apps (pipeline.run, pipeline.study) share.

A job that fails on an expected error (a bad value, a divergence, an
unreachable tracking server) prints one line and records itself in job.json;
the sweep's other jobs go on, whatever the launcher (basic, joblib, ray,
submitit). When the sweep ends, `SweepReport` (a Hydra callback, conf/config.yaml)
lists every job and exits 1 naming the failed ones with their overrides.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from pipeline import tracking
from pipeline.config import PROJECT_ROOT, Config, validate
from pipeline.errors import PipelineError
from pipeline.files import read_json, write_json

JOB_FILE = "job.json"


def job_tags() -> dict[str, str]:
    """The job's place in a sweep, as MLflow tags: `sweep` (the sweep directory),
    `sweep.job` (its number) and `overrides` (the job's command-line overrides)."""
    hydra = HydraConfig.get()
    tags = {"overrides": " ".join(hydra.overrides.task)}
    if hydra.mode == RunMode.MULTIRUN:
        tags["sweep"] = str(Path(hydra.sweep.dir).resolve())
        tags["sweep.job"] = str(hydra.job.num)
    return tags


def run_tags(cfg: Config) -> dict[str, str]:
    """A job's parent-run tags: git commit, torch and device, its place in the sweep."""
    from pipeline.train import resolve_device  # torch: `pipeline.history` reads JOB_FILE only

    device = resolve_device(cfg.train.device).type
    return {
        **tracking.git_tags(PROJECT_ROOT),
        **tracking.environment_tags(device),
        **job_tags(),
    }


def shown(overrides: list[str]) -> str:
    return " ".join(overrides) or "no overrides"


def output_dir() -> Path:
    return Path(HydraConfig.get().runtime.output_dir)


def run_job(task: Callable[[Config], dict], raw: DictConfig) -> None:
    """Validate the config and run `task`; its result (a few numbers) goes to
    job.json. An expected failure ends a single run with exit code 1, and a sweep's
    job with a failed record, so that the other jobs still run and are logged."""
    hydra = HydraConfig.get()
    record: dict = {"overrides": list(hydra.overrides.task)}
    if hydra.mode == RunMode.MULTIRUN:
        record["job"] = hydra.job.num
    try:
        record |= {"status": "finished", "result": task(validate(raw))}
    except PipelineError as err:
        if hydra.mode != RunMode.MULTIRUN:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(1)
        print(f"error: job {record['job']} ({shown(record['overrides'])}): {err}", file=sys.stderr)
        record |= {"status": "failed", "error": str(err)}
    write_json(output_dir() / JOB_FILE, record)


class SweepReport(Callback):
    """At the end of a sweep: one line per job, and exit code 1 if any failed."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self.started = time.time()

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        sweep = Path(config.hydra.sweep.dir)
        started = getattr(self, "started", 0.0)
        # job.json files this sweep wrote (the directory may hold an earlier sweep's)
        paths = [p for p in sweep.rglob(JOB_FILE) if p.stat().st_mtime >= started - 1]
        records = sorted((read_json(p) for p in paths), key=lambda r: r["job"])
        for record in records:
            outcome = record.get("error") or ", ".join(
                f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                for k, v in record["result"].items()
            )
            print(
                f"job {record['job']} {record['status']} ({shown(record['overrides'])}): {outcome}"
            )
        failed = [r for r in records if r["status"] == "failed"]
        if failed:
            named = "; ".join(f"job {r['job']} ({shown(r['overrides'])})" for r in failed)
            print(f"error: {len(failed)} of {len(records)} jobs failed: {named}", file=sys.stderr)
            sys.exit(1)
