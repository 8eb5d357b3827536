"""Hydra jobs and sweeps: what the apps (pipeline.run, pipeline.study) share.

A job that fails on an expected error (a bad value, a divergence, an
unreachable tracking server) prints one line and records itself in job.json;
the sweep's other jobs go on, whatever the launcher (basic, joblib, ray,
submitit). When the sweep ends, `SweepReport` (a Hydra callback, conf/config.yaml)
lists every job and exits 1 naming the failed ones with their overrides.

A stopped sweep stops its jobs: SIGTERM to the sweep's process ends the job
processes it started (joblib's loky workers, submitit_local's jobs), and a job
process on the sweep's machine publishes nothing once the sweep is gone, even
after `kill -9` (`follow_sweep`).
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from pipeline.config import PROJECT_ROOT, Config, validate
from pipeline.config.load import check_job_folder
from pipeline.config.store_choice import check_store_choice, project_roots
from pipeline.core import files
from pipeline.core.errors import ConfigError, OrphanedError, PipelineError
from pipeline.core.files import read_json, write_json
from pipeline.core.processes import descendants, process_start
from pipeline.tracking.state import environment_tags, git_tags

JOB_FILE = "job.json"
# "<host> <pid> <start time>" of the sweep's process, for the jobs it starts.
SWEEP_ENV = "PIPELINE_SWEEP"
_sigterm_before: Callable | int = signal.SIG_DFL  # the sweep's SIGTERM handler before stop_jobs


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
    # torch: `pipeline history` reads JOB_FILE only
    from pipeline.core.device import resolve_device

    device = resolve_device(cfg.train.device).type
    return {
        **git_tags(PROJECT_ROOT),
        **environment_tags(device),
        **job_tags(),
    }


def shown(overrides: list[str]) -> str:
    return " ".join(overrides) or "no overrides"


def output_dir() -> Path:
    return Path(HydraConfig.get().runtime.output_dir)


def run_job(task: Callable[[Config], dict], raw: DictConfig) -> None:
    """Validate the config, check that it fits in memory, and run `task`; its result
    (a few numbers) goes to job.json. An expected failure ends a single run with exit
    code 1, and a sweep's job with a failed record, so that the other jobs still run
    and are logged.
    A job whose sweep is gone ends its process and publishes nothing."""
    # Exact where JobFolderCheck resolved a sweep's subdir as job 0 would: a job whose
    # own folder is refused writes nothing more there (no job.json, no metrics.json).
    folder = output_dir()
    refuse_job_folder(folder, f"hydra.runtime.output_dir={str(folder)!r}")
    hydra = HydraConfig.get()
    record: dict = {"overrides": list(hydra.overrides.task)}
    if hydra.mode == RunMode.MULTIRUN:
        record["job"] = hydra.job.num
        follow_sweep(record)
    try:
        cfg = validate(raw)
        flag = any(o.split("=", 1)[0].lstrip("+~") == "tracking.uri" for o in record["overrides"])
        check_store_choice(cfg.tracking.uri, project_roots(Path.cwd()), "conf/", flag)
        # torch: only where a job computes, once its config passed (a bad value is one
        # line at once, not after torch's start-up)
        from pipeline.memory import check_memory

        check_memory(cfg)
        record |= {"status": "finished", "result": task(cfg)}
    except OrphanedError as err:
        abandon(record, err)
    except PipelineError as err:
        if hydra.mode != RunMode.MULTIRUN:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(1)
        print(f"error: job {record['job']} ({shown(record['overrides'])}): {err}", file=sys.stderr)
        record |= {"status": "failed", "error": str(err)}
    write_json(output_dir() / JOB_FILE, record)


def job_folder(config: DictConfig, mode: RunMode) -> tuple[Path, str]:
    """The folder Hydra will make for a job of `config`, joined as its run_job joins it,
    and the settings that name it. A sweep's subdir is resolved as for job 0 (each job's
    number and id are set only as it starts)."""
    if mode == RunMode.RUN:
        run_dir = OmegaConf.select(config, "hydra.run.dir")
        return Path(str(run_dir)), f"hydra.run.dir={run_dir!r}"
    config = copy.deepcopy(config)
    job = config.hydra.job
    with read_write(job), open_dict(job):
        if OmegaConf.is_missing(job, "num"):
            job.num = 0
        if OmegaConf.is_missing(job, "id"):
            job.id = "0"
    sweep_dir = OmegaConf.select(config, "hydra.sweep.dir")
    subdir = OmegaConf.select(config, "hydra.sweep.subdir")
    return (
        Path(str(sweep_dir)) / str(subdir),
        f"hydra.sweep.dir={sweep_dir!r} with hydra.sweep.subdir={subdir!r}",
    )


def refuse_job_folder(folder: Path, setting: str) -> None:
    """A refused job folder (check_job_folder) ends the app in one line, before Hydra
    (or the job) writes there. (Hydra turns a callback's exception into a warning.)"""
    try:
        check_job_folder(folder, setting)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(1)


class JobFolderCheck(Callback):
    """Before Hydra makes a job's folder: refuse one inside the project's outputs,
    sources or store. The literal overrides are checked before Hydra starts
    (config.load.check_hydra_dirs); this sees the folder as resolved, subdir joined,
    so that `hydra.sweep.subdir=../../reports` cannot put a job's files into reports/."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        refuse_job_folder(*job_folder(config, RunMode.RUN))

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        refuse_job_folder(*job_folder(config, RunMode.MULTIRUN))


def sweep_identity() -> str | None:
    """SWEEP_ENV's value for this process; None where /proc cannot tell."""
    pid, started = os.getpid(), process_start(os.getpid())
    return None if started is None else f"{socket.gethostname()} {pid} {started}"


def follow_sweep(record: dict) -> None:
    """In a job process the sweep started on its own machine (joblib's workers,
    submitit_local's jobs): end at once if the sweep is gone, else publish files only
    while it lives (pipeline.core.files), and die with it (on Linux, SIGTERM at its death).

    A job on another machine (SLURM, Ray) cannot see the sweep's process, and the
    basic launcher's jobs run in the sweep's own process: both go on as before."""
    identity = os.environ.get(SWEEP_ENV, "").split()
    if len(identity) != 3 or identity[0] != socket.gethostname():
        return
    pid = int(identity[1])
    if pid == os.getpid():
        return
    if process_start(pid) != identity[2]:
        abandon(record, OrphanedError(f"the sweep that started it (pid {pid}) is gone"))
    if os.getppid() == pid:
        files.watch_launcher()


def abandon(record: dict, err: OrphanedError) -> None:
    """End a job whose sweep is gone: one line, no job.json, no run; the process
    exits at once (os._exit), since nobody collects its result."""
    job = f"job {record['job']}" if "job" in record else "run"
    with contextlib.suppress(OSError):  # stderr may be a closed pipe
        print(
            f"error: {job} ({shown(record['overrides'])}): {err}; not publishing",
            file=sys.stderr,
            flush=True,
        )
    os._exit(1)


def watch_sigterm() -> None:
    """Let SIGTERM to the sweep stop its jobs (stop_jobs), unless it is ignored."""
    global _sigterm_before
    before = signal.getsignal(signal.SIGTERM)
    if before in (signal.SIG_IGN, stop_jobs):
        return
    _sigterm_before = signal.SIG_DFL if before is None else before
    with contextlib.suppress(ValueError):  # signals are set in the main thread only
        signal.signal(signal.SIGTERM, stop_jobs)


def stop_jobs(signum: int, _frame) -> None:
    """SIGTERM to the sweep: end the job processes it started (their own children too),
    then take the signal as before (exit 143) through the handler that was there."""
    for pid in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    signal.signal(signum, _sigterm_before)
    os.kill(os.getpid(), signum)


class SweepReport(Callback):
    """At the end of a sweep: one line per job, and exit code 1 if any failed."""

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self.started = time.time()
        # Before the launcher starts a job process: each inherits the environment
        # (an outer sweep's value, where this sweep runs in one of its jobs, is replaced).
        identity = sweep_identity()
        if identity is None:
            os.environ.pop(SWEEP_ENV, None)
        else:
            os.environ[SWEEP_ENV] = identity
        watch_sigterm()

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
