"""What the fused CUDA training kernels share: when they apply, how torch's tensors
reach them, and the launch loop (pipeline/models/cuda_pooling.py, cuda_window.py).

Why fused kernels: on a GPU, torch's ops stream (examples x steps x runs) float64
tensors through memory every epoch (issue 47: 10^6 lesson seeds took 125 s on an
H200, memory-bound past 20000 runs a chunk). A kernel with one CUDA thread per run
keeps that run's parameters and per-example sums in registers (local arrays), reads
the examples (the same address in every thread of a warp: one broadcast load, from
L1/L2 after the first epoch) and writes only each epoch's loss and accuracy.

The kernels take float64 runs on a cuda device. torch's tensors pass to numba
zero-copy (`numba.cuda.as_cuda_array`, the __cuda_array_interface__), on torch's
current stream. Under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, the tests
on a CPU: tests/test_cuda_kernels.py) the same kernels run on numpy views of CPU
tensors, each CUDA thread a Python thread.

Every kernel trains the runs in place, `first` .. `first + count` epochs per
launch, and records each epoch's loss and accuracy before its update, as
`train.descend` does: launches of `EPOCHS_PER_LAUNCH` epochs let a SIGTERM end a
long training between them (`threads.check_stopped`), and change no number.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch

from pipeline import ties
from pipeline.models.parameters import Params, from_flat, to_flat
from pipeline.models.threads import check_stopped

THREADS_PER_BLOCK = 128  # float64 kernels with ~100 registers a thread: 4 warps a block
EPOCHS_PER_LAUNCH = 25
# accuracy's `ties.above(logit, 0)`: a logit within float noise of 0 predicts 0
LOGIT_TIE = ties.tolerance(1.0)
LOGIT_CLAMP = 30.0  # the lesson's clamp of the logit in the probability

Trained = tuple[Params, torch.Tensor, torch.Tensor]  # params, loss and accuracy (epochs, S)


@dataclass(frozen=True)
class FusedTraining:
    """A kind's `fused_training`: (params, epochs, lr) -> trained params, loss and
    accuracy; and its float operations per (run, epoch, example), counted by hand in
    the kernel's module (benchmarks/bench_gpu.py reads them)."""

    train: Callable[[Params, int, float], Trained]
    flops: Callable[[Params], int]

    def __call__(self, params: Params, epochs: int, lr: float) -> Trained:
        return self.train(params, epochs, lr)


def dram_bytes(runs: int, size: int, epochs: int, examples: int, steps: int) -> int:
    """The bytes a training must move through device memory, counted by hand: each
    launch reads and writes every run's `size` parameters and reads the examples
    (N, T, C) and labels once (the threads of a warp share each load; later epochs
    hit the cache), and every epoch writes each run's loss and accuracy."""
    launches = math.ceil(epochs / EPOCHS_PER_LAUNCH)
    per_launch = 2 * runs * size + examples * (steps * 2 + 1)
    return 8 * (launches * per_launch + 2 * epochs * runs)


def on_cuda(inputs: torch.Tensor) -> bool:
    """Whether the fused kernels train these runs: float64 inputs on a cuda device
    where numba can compile for it."""
    cuda_float64 = inputs.device.type == "cuda" and inputs.dtype == torch.float64
    return cuda_float64 and kernels_compile()


@cache
def kernels_compile() -> bool:
    """Whether numba.cuda compiles and runs a kernel here, once a process. It needs
    the CUDA toolkit's libNVVM (CUDA_HOME, or the system's /usr/local/cuda), which
    torch's wheels do not carry: without it, training takes torch's ops on cuda, as
    before the kernels, and says so once."""
    try:
        import numpy as np
        from numba import cuda

        @cuda.jit
        def probe(out):
            out[0] = 1.0

        out = cuda.to_device(np.zeros(1))
        probe[1, 1](out)
        return bool(out.copy_to_host()[0] == 1.0)
    except Exception as error:  # noqa: BLE001 - any failure means: not here
        print(
            f"warning: the fused CUDA kernels cannot run here ({type(error).__name__}: "
            f"{error}); training takes torch's ops on cuda (docs/speed.md, 'On a GPU')",
            file=sys.stderr,
        )
        return False


def as_array(tensor: torch.Tensor):
    """A tensor as the kernels take it, no copy: a numba device array of a cuda tensor,
    a numpy view of a CPU one (the simulator's)."""
    tensor = tensor.detach()
    if not tensor.is_contiguous():
        raise ValueError("the CUDA kernels read contiguous tensors")
    if tensor.device.type == "cuda":
        from numba import cuda

        return cuda.as_cuda_array(tensor)
    return tensor.numpy()


def _launcher(kernel, runs: int, device: torch.device):
    """kernel[blocks, threads] on torch's current stream (cuda), or as the simulator
    takes it: one thread per run, a block no larger than the runs need."""
    threads = min(THREADS_PER_BLOCK, max(runs, 1))
    blocks = math.ceil(runs / threads)
    if device.type != "cuda":
        return kernel[blocks, threads]
    from numba import cuda

    stream = cuda.external_stream(torch.cuda.current_stream(device).cuda_stream)
    return kernel[blocks, threads, stream]


def train_flat(
    kernel: Callable,
    params: Params,
    epochs: int,
    lr: float,
    data: tuple[torch.Tensor, ...],
) -> Trained:
    """`epochs` steps of every run by `kernel(flat, *data, first, count, lr, loss,
    accuracy)`, which updates the (S, P) rows `flat` (the parameters in layout
    order) in place; the runs' parameters, loss and accuracy (epochs, S)."""
    flat = to_flat(params).contiguous()  # a copy: the caller's params stay as they were
    runs = flat.shape[0]
    loss = flat.new_empty(epochs, runs)
    accuracy = flat.new_empty(epochs, runs)
    arrays = [as_array(t.contiguous()) for t in (flat, *data)]
    out = [as_array(loss), as_array(accuracy)]
    launch = _launcher(kernel, runs, flat.device)
    for first in range(0, epochs, EPOCHS_PER_LAUNCH):
        check_stopped()
        count = min(EPOCHS_PER_LAUNCH, epochs - first)
        launch(*arrays, first, count, float(lr), *out)
    layout = [(name, tuple(t.shape[1:])) for name, t in params.named.items()]
    return from_flat(flat, params.cfg, layout), loss, accuracy
