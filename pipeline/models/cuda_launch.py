"""What the fused CUDA training kernels share: when they apply, how torch's tensors
reach them, and the launch loop (pipeline/models/cuda_pooling.py, cuda_window.py).

Why fused kernels: on a GPU, torch's ops stream (examples x steps x runs) float64
tensors through memory every epoch, so large chunks are memory-bound (docs/speed.md,
"On a GPU"). A kernel with one CUDA thread per run
keeps that run's parameters and per-example sums in registers (local arrays), reads
the examples (the same address in every thread of a warp: one broadcast load, from
L1/L2 after the first epoch) and writes only each epoch's loss and accuracy.

The kernels take float64 runs on a cuda device. torch's tensors pass to numba
zero-copy (`numba.cuda.as_cuda_array`, the __cuda_array_interface__), on torch's
current stream. Under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, the tests
on a CPU: tests/models/test_cuda_kernels.py) the same kernels run on numpy views of CPU
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
from threading import Lock

import torch

from pipeline.core import ties
from pipeline.models.parameters import Params, from_flat, to_flat
from pipeline.models.threads import check_stopped

# 4 warps a block: the kernels take 122-255 registers a thread (python -m pipeline
# cuda-check), 32640 a block at most, within every GPU's 64 K a block
THREADS_PER_BLOCK = 128
EPOCHS_PER_LAUNCH = 25
# accuracy's `ties.above(logit, 0)`: a logit within float noise of 0 predicts 0
LOGIT_TIE = ties.tolerance(1.0)
LOGIT_CLAMP = 30.0  # the lesson's clamp of the logit in the probability

Trained = tuple[Params, torch.Tensor, torch.Tensor]  # params, loss and accuracy (epochs, S)


@dataclass(frozen=True)
class FusedTraining:
    """A kind's `fused_training`: `kernel(params)` is the compiled kernel of these runs'
    shape (one a shape a process: `cuda_pooling.pooling_kernel`) and the data it reads
    beside them; called, (params, epochs, lr) -> trained params, loss and accuracy.
    `flops`: its float operations per (run, epoch, example), counted by hand in the
    kernel's module (benchmarks/bench_gpu.py prints them beside the count on the
    compiled code, `cuda_check.fp64_counts`)."""

    kernel: Callable[[Params], tuple[Callable, tuple[torch.Tensor, ...]]]
    flops: Callable[[Params], int]

    def __call__(self, params: Params, epochs: int, lr: float) -> Trained:
        kernel, data = self.kernel(params)
        return train_flat(kernel, params, epochs, lr, data)


class KernelFailure(RuntimeError):
    """A fused kernel did not compile or launch here (its warning is printed once):
    `train.train` trains these runs on torch's ops instead."""


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
    that numba.cuda sees (`numba_sees_gpu`). Whether the kind's kernel compiles and
    launches is known only when it trains (`kernels_compile`, `train_flat`)."""
    cuda_float64 = inputs.device.type == "cuda" and inputs.dtype == torch.float64
    return cuda_float64 and numba_sees_gpu()


@cache
def numba_sees_gpu() -> bool:
    """Whether numba.cuda finds a GPU and its driver here, once a process; where not,
    training takes torch's ops on cuda, the path without the kernels, and says so once."""
    try:
        from numba import cuda

        if cuda.is_available():
            return True
        reason = "numba.cuda finds no CUDA driver or GPU"
    except Exception as error:  # noqa: BLE001 - any failure means: not here
        reason = f"{type(error).__name__}: {error}"
    warn(f"the fused CUDA kernels cannot run here ({one_line(reason)})")
    return False


_FAILED: dict = {}  # kernel -> why it failed: never tried again
_FAILED_LOCK = Lock()


def one_line(text: str, width: int = 300) -> str:
    """An error's message on one line (numba's span many), cut to `width`."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def warn(what: str) -> None:
    print(
        f"warning: {what}; training takes torch's ops on cuda (docs/speed.md, 'On a GPU')",
        file=sys.stderr,
    )


def failed(kernel, stage: str, error: BaseException) -> KernelFailure:
    """Records that `kernel` failed (`stage`: compile or launch), warns once for it,
    and returns the KernelFailure for the caller to raise."""
    why = f"{stage}: {type(error).__name__}: {one_line(error)}"
    with _FAILED_LOCK:
        first = kernel not in _FAILED
        _FAILED.setdefault(kernel, why)
    if first:
        name = getattr(getattr(kernel, "py_func", None), "__qualname__", "kernel")
        warn(f"the fused CUDA kernel {name} failed to {why}")
    return KernelFailure(why)


def signature(arguments: tuple) -> tuple:
    """The numba types a launch with these arguments compiles for: numba's typeof of
    each (a C-contiguous float64 array of its rank, int64, float64)."""
    import numba

    return tuple(numba.typeof(argument) for argument in arguments)


def compile_kernel(kernel, arguments: tuple, device: torch.device) -> None:
    """numba compiles `kernel` for the arguments' types on the current GPU (its launches
    then find that code); nothing to do under the simulator (a CPU device)."""
    if device.type == "cuda":
        from pipeline.models import cuda_tools

        cuda_tools.use_wheel_nvvm()  # a wheel's libNVVM where the machine has none
        kernel.compile(signature(arguments))


def kernels_compile(kernel, arguments: tuple, device: torch.device) -> bool:
    """Whether `kernel`, the real one of the kind and shape about to train, compiles for
    these arguments on `device` (once a kernel and signature; numba keeps the code for
    the launches). On cuda numba compiles it for the current GPU; under the simulator
    (a CPU device) there is nothing to compile. False, with one warning line naming
    the error, where it does not (or failed before): the caller trains on torch's ops."""
    if kernel in _FAILED:
        return False
    try:
        compile_kernel(kernel, arguments, device)
    except Exception as error:  # noqa: BLE001 - any failure: torch's ops train instead
        failed(kernel, "compile", error)
        return False
    return True


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


def launch_arguments(
    flat: torch.Tensor,
    data: tuple[torch.Tensor, ...],
    lr: float,
    loss: torch.Tensor,
    accuracy: torch.Tensor,
) -> tuple:
    """A launch's arguments as the kernels take them, (flat, *data, first, count, lr,
    loss, accuracy), with 0 for the launch's epochs `first` and `count`."""
    arrays = [as_array(t.contiguous()) for t in (flat, *data)]
    return (*arrays, 0, 0, float(lr), as_array(loss), as_array(accuracy))


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
    order) in place; the runs' parameters, loss and accuracy (epochs, S). Raises
    KernelFailure where the kernel does not compile or a launch fails: `flat` is a
    copy, so the caller's params are as they were, for torch's ops to train."""
    flat = to_flat(params).contiguous()  # a copy: the caller's params stay as they were
    runs = flat.shape[0]
    loss = flat.new_empty(epochs, runs)
    accuracy = flat.new_empty(epochs, runs)
    arguments = launch_arguments(flat, data, lr, loss, accuracy)
    if not kernels_compile(kernel, arguments, flat.device):
        raise KernelFailure(_FAILED[kernel])
    arrays, out = arguments[: 1 + len(data)], arguments[-2:]
    launch = _launcher(kernel, runs, flat.device)
    for first in range(0, epochs, EPOCHS_PER_LAUNCH):
        check_stopped()
        count = min(EPOCHS_PER_LAUNCH, epochs - first)
        try:
            launch(*arrays, first, count, float(lr), *out)
        except Exception as error:  # noqa: BLE001 - any failure: torch's ops train instead
            raise failed(kernel, "launch", error) from error
    layout = [(name, tuple(t.shape[1:])) for name, t in params.named.items()]
    return from_flat(flat, params.cfg, layout), loss, accuracy
