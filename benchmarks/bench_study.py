"""The seed study's speed against the thread count, and its peak memory.

    python benchmarks/bench_study.py [--seeds 1000 ...] [--threads 1 2 ...] [--repeat 3]

Each (seeds, threads) case runs `--repeat` times, each in a fresh process with
OMP_NUM_THREADS set (torch's thread count, which is how many threads of ours the
study's jobs get: pipeline/models/threads.py), so its peak resident memory
(ru_maxrss) is its own. The time is the whole study (training, every metric, the
bootstrap) after imports and data generation, on the default config (float64, 200
epochs). Threads default to 1, 2 and every core. Each row gives the best run's
seeds/s, its speed-up over the best one-thread run, the spread of the repeats (on a
shared machine the best is the machine's speed, the spread its contention), its
CPU seconds (every thread's: equal across thread counts where no work is wasted),
the training jobs and the chunks. Where Linux shares the CPU fairly between
sessions (autogroup) and others are busy, a session's share does not grow with its
threads: measure on a quiet machine. Targets: 1000 seeds in 10 s and 10,000 in 100 s with
at most 2 GB on 2 cores (issue 8); 2 threads at least 1.7x one (issue 47).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, resource, sys, time
import torch
from pipeline import data
from pipeline.analysis import seed_study
from pipeline.config import compose, validate
from pipeline.memory.device import pieces, training_piece
from pipeline.memory.study import chunk_runs
from pipeline.models.threads import available
cfg = validate(compose([f"study.seeds={sys.argv[1]}"]))
frame = data.generate(cfg.data)
start, cpu = time.perf_counter(), time.process_time()
seed_study.run(cfg, frame)
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
seeds = list(range(1, cfg.study.seeds + 1))
chunk = chunk_runs(cfg, len(seeds))
piece = training_piece(chunk, len(seeds), available())  # the lesson: one pass, any piece
chunks = [seeds[i : i + chunk] for i in range(0, len(seeds), chunk)]
jobs = sum(len(pieces(c, piece)) for c in chunks)
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mib": peak, "chunk": chunk,
                  "chunks": len(chunks), "jobs": jobs, "threads": torch.get_num_threads()}))
"""


def measure(seeds: int, threads: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(seeds)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1000])
    parser.add_argument("--threads", type=int, nargs="+", default=sorted({1, 2, cores}))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{cores} cores, load average {load:.2f} at the start; best of {args.repeat} runs")
    print(
        f"{'seeds':>6} {'threads':>7} {'seconds':>8} {'seeds/s':>8} {'speed-up':>8} "
        f"{'spread s':>15} {'CPU s':>6} {'jobs':>5} {'chunks':>6} {'peak MiB':>8}"
    )
    for seeds in args.seeds:
        # The thread counts take turns, so that a change in the machine's load falls on
        # each of them alike.
        rows = {threads: [] for threads in args.threads}
        for _ in range(args.repeat):
            for threads in args.threads:
                rows[threads].append(measure(seeds, threads))
        one_thread = None
        for threads, runs in rows.items():
            best = min(runs, key=lambda row: row["seconds"])
            times = sorted(row["seconds"] for row in runs)
            rate = seeds / best["seconds"]
            one_thread = one_thread or (rate if threads == 1 else None)
            speedup = f"{rate / one_thread:.2f}x" if one_thread else "-"
            print(
                f"{seeds:>6} {threads:>7} {best['seconds']:>8.2f} {rate:>8.1f} {speedup:>8} "
                f"{times[0]:>7.2f}-{times[-1]:<7.2f} {best['cpu']:>6.2f} "
                f"{best['jobs']:>5} {best['chunks']:>6} "
                f"{max(row['peak_mib'] for row in runs):>8.0f}"
            )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
