"""Work split over threads of our own, torch's ops on one thread meanwhile.

Training's small batched ops (50 runs a pass) gain little from torch's intra-op
threads, and under OMP_WAIT_POLICY=PASSIVE (pipeline/__init__.py) every parallel op
pays to wake them (docs/speed.md: posenc seeds train faster on spinning threads).
Independent jobs (the study's and the battery's chunks of runs, a kind's blocks, a
compiled kernel's tiles) instead run whole in threads of their own, each on one
torch thread: no wake-ups, and a job's numbers do not depend on how many threads
there are. One level of threads: a job that splits its own work (a chunk of seeds
whose kind trains in blocks) runs it in turn; a lone job, run in the caller's
thread, leaves the threads to its own blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from threading import Event, current_thread, local
from typing import TypeVar

import torch

Result = TypeVar("Result")
PREFIX = "pipeline"  # our threads' names
# Jobs at once at most: each holds its own temporaries (a study chunk's, a battery
# chunk's), so memory grows with them; pipeline/memory/ counts them.
MAX_WORKERS = 8
_in_turn = local()  # `threads`: the count set aside while this thread runs jobs in turn
_stopping = Event()  # set by a stage's SIGTERM or Ctrl-C (pipeline/stages/__init__.py)


class JobsStopped(RuntimeError):
    """A signal stopped the process: a job ends at its next `check_stopped`."""


def stop() -> None:
    """A signal arrived: queued jobs never start, running ones end at their next
    `check_stopped` (training checks every epoch), so the stage ends within moments
    instead of after every queued chunk of seeds."""
    _stopping.set()


def check_stopped() -> None:
    if _stopping.is_set():
        raise JobsStopped("stopped by a signal")


def inside_job() -> bool:
    return current_thread().name.startswith(PREFIX)


def available() -> int:
    """Threads for our jobs here: one inside a job of ours; else torch's thread count
    (OMP_NUM_THREADS) as the caller had it, also while a lone job runs in turn here
    (its own blocks of runs may then take the threads)."""
    if inside_job():
        return 1
    return getattr(_in_turn, "threads", None) or torch.get_num_threads()


def workers(jobs: int) -> int:
    """Threads for `jobs` independent jobs: `available`, at most one per job and
    MAX_WORKERS."""
    return max(1, min(jobs, available(), MAX_WORKERS))


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix=PREFIX)


def _started(job: Callable[[], Result]) -> Result:
    check_stopped()
    return job()


def run_jobs(jobs: list[Callable[[], Result]], threads: int) -> list[Result]:
    """Every job's result, in order, computed on up to `threads` threads (torch's ops
    in them on one thread each; the jobs must not share mutable state). Inside a job
    of ours, in turn (a pool thread waiting on its own pool could deadlock)."""
    threads = 1 if inside_job() else max(1, min(threads, len(jobs)))
    previous, set_aside = torch.get_num_threads(), getattr(_in_turn, "threads", None)
    torch.set_num_threads(1)  # a pool thread keeps the count it first sees
    try:
        if threads == 1:
            _in_turn.threads = set_aside or previous
            return [_started(job) for job in jobs]
        futures = [_pool(threads).submit(_started, job) for job in jobs]
        try:
            return [future.result() for future in futures]
        finally:  # a failed job or a signal: the queued ones never start
            for future in futures:
                future.cancel()
    finally:
        _in_turn.threads = set_aside
        torch.set_num_threads(previous)
