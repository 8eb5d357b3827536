"""Seconds of training on one CUDA device beside the same work on this machine's CPU.

    python benchmarks/bench_gpu.py [--sizes 1000 100000 1000000] [--kinds lesson ...]
        [--cpu-max-seeds 2000] [--peak-gflops G --peak-gbs B] [--cpu-only | --simulate]

Rows (float64, `--epochs` epochs, the lesson's 360 training sequences):

- `train <kind>` for each size and kind: `train.train` of that many runs, on cuda the
  fused kernel (pipeline/models/cuda_pooling.py, cuda_window.py). The runs start from
  their seeds' init (`interface.init_params`, drawn in bulk), outside the timed region;
- `study`: the study stage's work (`seed_study.run`, training, every metric, the
  bootstrap) on `--stage-seeds` seeds; `grid <cell>` and `debate <cell>`: one cell of
  each (`grid.run_cell`, `debate.cell.run_cell`) on `--stage-seeds` seeds.

Columns: the device's seconds and seeds/s; the CPU's seconds for the same work and
the ratio CPU / device. A `train` row with more than `--cpu-max-seeds` runs times the
CPU on that many and scales linearly (marked `~`: training is linear in runs). Then
the kernel's achieved float64 rate and its fraction of the device's peak, and the same
for memory bandwidth. The flops are counted on the compiled code: the kind's kernel,
compiled to PTX as `python -m pipeline cuda-check` compiles it, is run for one thread
on the CPU by `pipeline/models/ptx_count.py`, which counts every float64 add, sub, mul,
fma (2 flops), div, rcp, sqrt, min and max it executes, over 8 examples and one epoch
against none (`cuda_check.fp64_counts`): loops, their unrolling and libdevice's
branches are counted as they run. A `fp64 <kind>` line before the kind's first row
gives the count per example and epoch beside the hand count (`FusedTraining.flops`).
A PTX division counts as one flop (several DFMA in SASS): the share is a lower bound
where a kernel divides. The bytes are counted by hand (`cuda_launch.dram_bytes`). The
peaks come from `PEAKS` by the device's name, or from `--peak-gflops` and `--peak-gbs`.

Before a kind's first row on a device, a `compile <kind>` line gives the seconds of
one untimed epoch of two runs: numba compiles the kind's kernel there (a kernel a
shape, `cuda_pooling.pooling_kernel`), CUDA loads it, and every timed row after it
reuses that code (the same kernel object and signature).

`--cpu-only` times the CPU column alone (no device). `--simulate` runs the device
column in numba's CUDA simulator on CPU tensors (NUMBA_ENABLE_CUDASIM=1, set before
numba loads): a check of this script and the kernels' wiring without a GPU, at tiny
`--sizes`; its seconds mean nothing. scripts/gpu_check.sh runs the defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Callable, Iterator

import torch

from pipeline import data
from pipeline.config import Config, compose, validate
from pipeline.models import cuda_launch, frames, interface, train

KINDS = ["lesson", "sink", "multihead", "posenc", "window"]
# NVIDIA's datasheets, float64 without tensor cores (the kernels use none), and HBM
# bandwidth: (a part of torch.cuda.get_device_name(), GFLOP/s, GB/s), first match wins.
PEAKS = [
    ("H200 NVL", 30_000, 4_800),
    ("H200", 34_000, 4_800),
    ("H100 NVL", 30_000, 3_900),
    ("H100 PCIe", 26_000, 2_000),
    ("H100", 34_000, 3_350),
]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--cpu-max-seeds", type=int, default=2_000)
    parser.add_argument("--stage-seeds", type=int, default=1_000)
    parser.add_argument("--no-stages", action="store_true", help="the train rows alone")
    parser.add_argument("--peak-gflops", type=float)
    parser.add_argument("--peak-gbs", type=float)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cpu-only", action="store_true")
    mode.add_argument("--simulate", action="store_true")
    return parser.parse_args()


def peaks(args: argparse.Namespace, name: str) -> tuple[float | None, float | None]:
    """The device's float64 GFLOP/s and GB/s: the overrides, else `PEAKS`."""
    found = next(((f, b) for part, f, b in PEAKS if part in name), (None, None))
    return args.peak_gflops or found[0], args.peak_gbs or found[1]


def timed(work: Callable[[], object], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    work()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def train_row(cfg: Config, seeds: int, device: torch.device, epochs: int):
    """(the work of `seeds` runs on `device`, the fused kernel's flops and bytes)."""
    frame = data.generate(cfg.data)
    inputs, labels = frames.split_tensors(cfg, frame, "train", device, torch.float64)[:2]
    params = interface.init_params(
        cfg.data.seed, list(range(1, seeds + 1)), cfg.model, cfg.data.steps, torch.float64, device
    )
    fused = interface.fused_training(params, inputs, labels)
    counts = None
    if fused is not None:
        examples, steps = inputs.shape[:2]
        per_run = compiled_fp64(cfg, examples)
        flops = None if per_run is None else seeds * epochs * per_run.flops(examples)
        size = sum(t[0].numel() for t in params.tensors())
        counts = flops, cuda_launch.dram_bytes(seeds, size, epochs, examples, steps)
    # check=False: a diverging run is timed like the others, not an error here
    return lambda: train.train(params, inputs, labels, epochs, cfg.train.lr, False), counts


_FP64: dict = {}


def compiled_fp64(cfg: Config, examples: int):
    """The float64 instructions the kind's compiled kernel executes
    (`cuda_check.fp64_counts`: its PTX run for one thread on the CPU), once a kind;
    None, with a line saying why, where it cannot be compiled here (the simulator)."""
    key = (repr(cfg.model), cfg.data.steps)
    if key not in _FP64:
        from pipeline.models import cuda_check

        shape = cuda_check.Shape(cfg.model.kind, cfg.model, cfg.data.steps, examples)
        try:
            counted = cuda_check.fp64_counts(shape)
        except Exception as error:  # noqa: BLE001 - the rate columns show '-'
            print(
                f"{'fp64 ' + cfg.model.kind:>22} not counted: {type(error).__name__}: "
                f"{cuda_launch.one_line(error, 200)}",
                flush=True,
            )
            counted = None
        else:
            hand = fused_hand_flops(cfg)
            print(
                f"{'fp64 ' + cfg.model.kind:>22} {counted.per_example.instructions} float64 "
                f"instructions ({counted.per_example.flops} flops, "
                f"{counted.per_example.divisions} div/rcp) per example and epoch, "
                f"{counted.per_epoch.flops} flops per epoch; hand count {hand} flops",
                flush=True,
            )
        _FP64[key] = counted
    return _FP64[key]


def fused_hand_flops(cfg: Config) -> int | None:
    """The kind's hand count of flops per example and epoch (`FusedTraining.flops`)."""
    params = interface.init_params(0, [1], cfg.model, cfg.data.steps, torch.float64)
    inputs = torch.zeros(1, cfg.data.steps, 2, dtype=torch.float64)
    from pipeline.models import cuda_check

    with cuda_check.planning():
        fused = interface.fused_training(params, inputs, torch.zeros(1, dtype=torch.float64))
    return None if fused is None else fused.flops(params)


def warm(cfg: Config, device: torch.device, warmed: set, column: str) -> None:
    """One epoch of two runs, once per kind and device, untimed in the rows and printed
    apart: numba compiles the kernel (or the window kind's CPU loops) and CUDA loads
    it on first use; the timed rows reuse it. `column`: 'device' or 'cpu' (under
    --simulate both train CPU tensors, by different code)."""
    key = (cfg.model.kind, column)
    if key not in warmed:
        seconds = timed(train_row(cfg, 2, device, 1)[0], device)
        print(f"{'compile ' + cfg.model.kind:>22} {column:>8} {seconds:9.3f}", flush=True)
        warmed.add(key)


def stage_rows(seeds: int) -> list[tuple[str, list[str], Callable[[Config], object]]]:
    """(name, overrides, work) of the study, a grid cell and a debate cell."""
    from pipeline.analysis import seed_study
    from pipeline.experiments.debate import cell as debate_cell
    from pipeline.experiments.grid import cell as grid

    cfg = validate(compose([]))
    grid_cell, debate_name = next(iter(cfg.grid.cells)), next(iter(cfg.debate.cells))
    g, d = cfg.grid.cells[grid_cell], cfg.debate.cells[debate_name]
    return [
        ("study", [f"study.seeds={seeds}"], lambda c: seed_study.run(c, data.generate(c.data))),
        (
            f"grid {grid_cell}",
            [f"grid.seeds={seeds}"],
            lambda c: grid.run_cell(c, g.task, g.variant),
        ),
        (
            f"debate {debate_name}",
            [f"debate.seeds={seeds}"],
            lambda c: debate_cell.run_cell(c, d.task, d.variant),
        ),
    ]


def rate(amount: float | None, seconds: float, peak: float | None, unit: float) -> str:
    """Achieved rate (per `unit`) and its share of `peak`: 'rate share'."""
    if amount is None or seconds <= 0:
        return f"{'-':>9} {'-':>6}"
    achieved = amount / seconds / unit
    share = f"{achieved / peak:6.1%}" if peak else f"{'-':>6}"
    return f"{achieved:9.4g} {share}"


@contextlib.contextmanager
def simulated(on: bool) -> Iterator[None]:
    """With `on`, float64 CPU runs take the fused kernels (in numba's simulator)."""
    chooses = cuda_launch.on_cuda
    if on:
        cuda_launch.on_cuda = lambda inputs: inputs.dtype == torch.float64
        from pipeline.models import cuda_pooling, cuda_window

        for module in (cuda_pooling, cuda_window):  # tests/cuda_simulated.py says why
            vars(module).setdefault("__warningregistry__", {})
    try:
        yield
    finally:
        cuda_launch.on_cuda = chooses


def main() -> None:
    args = arguments()
    if args.simulate:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba.cuda loads
    cpu = torch.device("cpu")
    device = cpu if args.cpu_only or args.simulate else torch.device("cuda")
    name = "cpu only" if args.cpu_only else "numba's CUDA simulator" if args.simulate else ""
    name = name or torch.cuda.get_device_name(device)
    peak_gflops, peak_gbs = peaks(args, name)
    print(f"torch {torch.__version__}, device: {name}, CPU threads {torch.get_num_threads()}")
    print(f"peaks: {peak_gflops or '-'} GFLOP/s float64, {peak_gbs or '-'} GB/s")
    header = f"{'work':>22} {'seeds':>8} {'device s':>9} {'seeds/s':>9} {'cpu s':>9} {'cpu/dev':>7}"
    print(f"{header} {'GFLOP/s':>9} {'peak':>6} {'GB/s':>9} {'peak':>6}")
    warmed: set = set()
    on_cpu: dict[tuple[str, int], float] = {}
    for seeds in args.sizes:
        for kind in args.kinds:
            cfg = validate(compose([f"model={kind}"]))
            dev_seconds, counts = None, None
            if not args.cpu_only:
                with simulated(args.simulate):
                    warm(cfg, device, warmed, "device")
                    work, counts = train_row(cfg, seeds, device, args.epochs)
                    dev_seconds = timed(work, device)
            cpu_seeds = min(seeds, args.cpu_max_seeds)
            if (kind, cpu_seeds) not in on_cpu:  # the larger sizes share one CPU timing
                warm(cfg, cpu, warmed, "cpu")
                on_cpu[kind, cpu_seeds] = timed(train_row(cfg, cpu_seeds, cpu, args.epochs)[0], cpu)
            cpu_seconds = on_cpu[kind, cpu_seeds] * seeds / cpu_seeds
            mark = "~" if cpu_seeds < seeds else " "
            show(
                f"train {kind}",
                seeds,
                dev_seconds,
                cpu_seconds,
                mark,
                counts,
                peak_gflops,
                peak_gbs,
            )
    if args.no_stages:
        return
    for label, overrides, work in stage_rows(args.stage_seeds):
        on = {}
        # the simulator would take hours over a stage: the CPU column alone there
        for where in ([] if args.cpu_only or args.simulate else ["cuda"]) + ["cpu"]:
            cfg = validate(compose([*overrides, f"train.device={where}"]))
            target = device if where == "cuda" else cpu
            on[where] = timed(lambda c=cfg, w=work: w(c), target)
        show(label, args.stage_seeds, on.get("cuda"), on["cpu"], " ", None, None, None)


def show(label, seeds, dev_seconds, cpu_seconds, mark, counts, peak_gflops, peak_gbs) -> None:
    if dev_seconds is None:
        dev, per_second, ratio = f"{'-':>9}", f"{seeds / cpu_seconds:9.0f}", f"{'-':>7}"
    else:
        dev, per_second = f"{dev_seconds:9.3f}", f"{seeds / dev_seconds:9.0f}"
        ratio = f"{cpu_seconds / dev_seconds:7.1f}"
    flops, traffic = counts if counts else (None, None)
    seconds = dev_seconds or 0.0
    print(
        f"{label:>22} {seeds:>8} {dev} {per_second} {mark}{cpu_seconds:8.3f} {ratio} "
        f"{rate(flops, seconds, peak_gflops, 1e9)} {rate(traffic, seconds, peak_gbs, 1e9)}",
        flush=True,
    )


if __name__ == "__main__":
    main()
