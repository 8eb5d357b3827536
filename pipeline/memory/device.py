"""The memory of the device that trains, and the study's chunks sized for it.

A chunk is what the study trains and evaluates in one job (pipeline/analysis/
seed_study.py). On the CPU it is study.chunk seeds: the bound on the CPU's memory,
and the grouping the committed bytes were written with (the step ablation's sums
round differently in a batch of other size, at 1e-16). Its training is cut into
pieces so that every thread of ours has work (`training_piece`): the runs of one
pass never meet, so a piece trains each run to the same bits, and a piece keeps
the kind's blocks whole where a block's size moves its sums.

On cuda the GPU's own memory sizes the chunks, not the CPU's bound: as many runs as
the study's per-run tensors let fit in DEVICE_SHARE of the free memory, with a
chunk in flight per thread of ours (`gpu_chunk`). Those tensors then live on the
GPU, so the host's estimate leaves them out (DEVICE_PHASES). Each rule is a pure
function of the numbers (tests/memory/test_memory_device.py); `free_bytes` and
`study_chunk` read them from the device.
"""

from __future__ import annotations

import math

import torch

from pipeline.config.schema import MAX_BYTES, Config
from pipeline.core.device import resolve_device
from pipeline.models.threads import MAX_WORKERS, available

# Of the GPU's free memory, the share a chunk's tensors may fill: the rest is for the
# caching allocator's rounding, cuBLAS's workspace and what the caller already holds.
DEVICE_SHARE = 0.8
# The phases of the study's machinery whose tensors live on train.device: training
# and evaluating a chunk (the study, a cell), and the sanity checks' label-randomised
# models. What comes back (parameters, per-example values) is on the CPU.
DEVICE_PHASES = ("training", "labels")


def on_gpu(device: torch.device) -> bool:
    """Whether `device` has memory of its own: CUDA's (the device guard's simulated
    cuda holds CPU data and is sized as the CPU)."""
    return device.type == "cuda"


def free_bytes(device: torch.device) -> int:
    """Bytes the device has for the study's chunks: the GPU's free memory on cuda, the
    CPU's bound (MAX_BYTES, the limit every stage's estimate is held to) otherwise."""
    if on_gpu(device):
        return torch.cuda.mem_get_info(device)[0]
    return MAX_BYTES


def gpu_chunk(runs: int, run_bytes: int, free: int, threads: int) -> int:
    """Runs per chunk on a GPU with `free` bytes: all `runs` in one chunk if they fit
    DEVICE_SHARE of it, else as many as fit with one chunk in flight per thread
    (`threads`, our jobs at once), at least one."""
    budget = int(free * DEVICE_SHARE)
    if runs * run_bytes <= budget:
        return max(1, runs)
    return max(1, budget // (run_bytes * max(1, threads)))


def training_piece(
    chunk: int, runs: int, threads: int, together: int = 1, device: torch.device | None = None
) -> int:
    """Runs per training job on the CPU: a chunk, cut so that `runs` (every chunk's)
    give each of `threads` threads work, a multiple of `together` (the kind's block,
    `train.runs_together`), never more than the chunk. On a GPU the whole chunk: one
    series of kernel launches trains all its runs at once (pipeline/models/cuda_launch.py),
    and pieces would only add launches that wait on each other."""
    if device is not None and on_gpu(device):
        return chunk
    piece = min(chunk, math.ceil(runs / max(1, threads)))
    return min(chunk, together * math.ceil(piece / together))


def pieces(chunk: list[int], size: int) -> list[list[int]]:
    """`chunk`'s seeds cut into pieces of `size` from its start: the blocks training
    cuts a chunk into begin at its start too, so a piece of a multiple of their size
    holds whole blocks."""
    return [chunk[start : start + size] for start in range(0, len(chunk), size)]


def study_chunk(cfg: Config, runs: int, run_bytes: int) -> int:
    """Runs per chunk of the study's machinery on `runs` runs on cfg.train.device:
    study.chunk on the CPU; on cuda as many as fit its free memory (`gpu_chunk`)."""
    device = resolve_device(cfg.train.device)
    if not on_gpu(device):
        return min(cfg.study.chunk, max(1, runs))
    return gpu_chunk(runs, run_bytes, free_bytes(device), min(available(), MAX_WORKERS))
