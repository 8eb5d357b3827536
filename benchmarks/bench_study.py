"""Wall time and peak memory of the seed study (training, every metric, bootstrap).

    python benchmarks/bench_study.py [SEEDS ...]      default: 1000 10000

Each size runs in a fresh process, so its peak resident memory (ru_maxrss) is
its own; the wall time is measured after imports and data generation, on the
default config (float64, 200 epochs, study.chunk from conf/). Targets (issue 8,
2-core CPU): 1000 seeds <= 10 s, 10,000 seeds <= 100 s and <= 2 GB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CHILD = """
import json, resource, sys, time
import torch
from pipeline import data
from pipeline.analysis import seed_study
from pipeline.config import compose, validate
cfg = validate(compose([f"study.seeds={sys.argv[1]}"]))
frame = data.generate(cfg.data)
start = time.perf_counter()
seed_study.run(cfg, frame)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
print(json.dumps({"seconds": seconds, "peak_mib": peak, "chunk": cfg.study.chunk,
                  "device": str(cfg.train.device), "threads": torch.get_num_threads()}))
"""


def main(sizes: list[int]) -> None:
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'seeds':>7} {'chunk':>6} {'seconds':>8} {'seeds/s':>8} {'peak MiB':>9}")
    for seeds in sizes:
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(seeds)], check=True, capture_output=True, text=True
        ).stdout
        row = json.loads(out.strip().splitlines()[-1])
        print(
            f"{seeds:>7} {row['chunk']:>6} {row['seconds']:>8.2f} "
            f"{seeds / row['seconds']:>8.1f} {row['peak_mib']:>9.0f}"
            f"   (process total {time.perf_counter() - start:.1f} s)"
        )


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1000, 10000])
