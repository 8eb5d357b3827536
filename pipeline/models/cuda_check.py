"""Compiles every kind's fused CUDA kernel for compute capabilities 8.0 and 9.0, no GPU needed.

`python -m pipeline cuda-check` takes each of the grid's model variants
(`pipeline.core.kinds.VARIANTS`: every kind, each setting that changes its kernel's
shape) at the shapes of params.yaml (data.steps, model.d_k and d_v), asks the kind
for the kernel training would launch on cuda (its `fused_training`), compiles it to
PTX with numba (libNVVM) for each capability and assembles that with ptxas, and
prints one line per variant and capability:

    lesson             cc 9.0  124 registers     0 spill bytes     0 local bytes  ok

registers a thread; spill bytes the registers ptxas stores to local memory; local
bytes the thread's stack frame (local arrays that stay in memory, and the spills).
A kernel that does not compile prints its error instead, and the command exits 1.

Why: the kernels run in numba's CUDA simulator in the CPU tests
(tests/models/test_cuda_kernels.py), which runs them as Python and so accepts code that
numba cannot compile for a GPU. CUDA's libNVVM and ptxas need no GPU: this gate
catches that class of error on any machine that has them
(tests/models/test_cuda_check.py; docs/testing.md says where they run).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import torch

from pipeline.core.errors import PipelineError
from pipeline.models import cuda_launch, cuda_tools, interface, ptx_count
from pipeline.models.parameters import CHANNELS, to_flat

CAPABILITIES = ((8, 0), (9, 0))  # A100; H100 and H200


@dataclass(frozen=True)
class Compiled:
    """What ptxas reports of one kernel for one capability."""

    registers: int  # a thread's
    spill: int  # bytes of spill stores
    local: int  # bytes of the thread's stack frame


@dataclass(frozen=True)
class Shape:
    """A variant's kernel at the pipeline's shapes: its model, the examples' steps and
    count (the count is a launch argument, not part of the kernel)."""

    variant: str
    model: object  # ModelConfig
    steps: int
    examples: int


def ptxas() -> str | None:
    """CUDA's assembler: the machine's, else the dev lock's wheel's
    (`cuda_tools.ptxas`)."""
    return cuda_tools.ptxas()


def missing_toolchain() -> str | None:
    """Why the kernels cannot be compiled here (no libNVVM or no ptxas, neither the
    machine's nor a wheel's: `cuda_tools`), or None. Points numba at a wheel's
    libNVVM where the machine has none."""
    try:
        from numba.cuda.cudadrv import nvvm

        source = cuda_tools.use_wheel_nvvm()
        if source == "none" or not nvvm.is_available():
            return (
                "numba finds no libNVVM and libdevice (no CUDA toolkit: CUDA_HOME, "
                "/usr/local/cuda, the system loader; no nvidia-nvvm wheel)"
            )
    except Exception as error:  # noqa: BLE001 - any failure means: not here
        return f"numba.cuda does not load ({type(error).__name__}: {error})"
    if ptxas() is None:
        return (
            "no ptxas (not on PATH, under CUDA_HOME or /usr/local/cuda; no nvidia-cuda-nvcc wheel)"
        )
    return None


def pipeline_shapes() -> list[Shape]:
    """Every variant at params.yaml's shapes, as the grid and the stages train them."""
    from pipeline.config import PROJECT_ROOT
    from pipeline.config.cells import variant_config
    from pipeline.config.load import PARAMS_FILE, load_params
    from pipeline.core.kinds import VARIANTS

    cfg = load_params(PROJECT_ROOT / PARAMS_FILE)
    examples = cfg.data.split[0]
    return [
        Shape(name, variant_config(name, cfg.model), cfg.data.steps, examples) for name in VARIANTS
    ]


@contextmanager
def planning() -> Iterator[None]:
    """The kinds hand out their cuda kernel for float64 CPU tensors, which stand in for
    the cuda ones: the kernel and its arguments' types are the same."""
    on_cuda = cuda_launch.on_cuda
    cuda_launch.on_cuda = lambda inputs: inputs.dtype == torch.float64
    try:
        yield
    finally:
        cuda_launch.on_cuda = on_cuda


def kernel_and_arguments(shape: Shape, epochs: int = 200, lr: float = 0.6):
    """The kernel training launches for this shape on cuda (the kind's own choice,
    cached a shape: `cuda_pooling.pooling_kernel`), and arguments of its launch's types."""
    params = interface.init_params(0, [1, 2], shape.model, shape.steps)
    inputs = torch.zeros(shape.examples, shape.steps, CHANNELS, dtype=torch.float64)
    labels = torch.zeros(shape.examples, dtype=torch.float64)
    with planning():
        training = interface.fused_training(params, inputs, labels)
    if training is None:
        raise ValueError(f"model.kind={shape.model.kind} has no fused CUDA kernel")
    kernel, data = training.kernel(params)
    flat = to_flat(params).contiguous()
    history = flat.new_empty(epochs, flat.shape[0])
    return kernel, cuda_launch.launch_arguments(flat, data, lr, history, history.clone())


@contextmanager
def device_functions_for(capability: tuple[int, int]) -> Iterator[None]:
    """numba 0.68 types a kernel's device functions (`cuda.jit(device=True)`) for the
    current GPU's capability (numba/cuda/dispatcher.py, `compile_device`), so with no
    GPU compiling a kernel that calls one fails at driver init. With no GPU, they are
    typed for `capability` here; their code depends on it only below 6.0 (atomics)."""
    from numba import cuda
    from numba.cuda import dispatcher

    if cuda.is_available():
        yield
        return
    current = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=capability)
    try:
        yield
    finally:
        dispatcher.get_current_device = current


REPORT = re.compile(
    r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores.*?"
    r"Used (?P<registers>\d+) registers",
    re.S,
)


@cache
def ptx_of(kernel, signature: tuple, capability: tuple[int, int]) -> str:
    """`kernel`'s PTX for `signature` and `capability` (numba's libNVVM), once a process."""
    from numba import cuda

    cuda_tools.use_wheel_nvvm()
    with device_functions_for(capability):
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=capability)
    return ptx


@cache
def compiled(kernel, signature: tuple, capability: tuple[int, int]) -> Compiled:
    """`kernel` compiled for `signature` and `capability` (PTX by numba's libNVVM, SASS
    by ptxas), once a process."""
    ptx = ptx_of(kernel, signature, capability)
    arch = "sm_{}{}".format(*capability)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        command = [ptxas() or "ptxas", f"-arch={arch}", "-v", str(source), "-o", os.devnull]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ptxas {arch}: {done.stderr.strip()}")
    found = REPORT.search(done.stderr)
    if found is None:
        raise RuntimeError(f"ptxas {arch} reported no registers: {done.stderr.strip()}")
    return Compiled(int(found["registers"]), int(found["stores"]), int(found["stack"]))


def check(shape: Shape, capability: tuple[int, int]) -> Compiled:
    """The shape's real kernel, compiled for `capability` (raises where it does not)."""
    kernel, arguments = kernel_and_arguments(shape)
    return compiled(kernel, cuda_launch.signature(arguments), capability)


@dataclass(frozen=True)
class Fp64:
    """The float64 instructions one run's thread executes in the compiled kernel
    (`ptx_count`): per example and epoch, and per epoch outside the examples loop."""

    per_example: ptx_count.Counts
    per_epoch: ptx_count.Counts

    def flops(self, examples: int) -> int:
        """Float64 flops of one run's epoch over `examples` examples."""
        return examples * self.per_example.flops + self.per_epoch.flops


def fp64_counts(
    shape: Shape, capability: tuple[int, int] = (9, 0), examples: int = 8, seed: int = 0
) -> Fp64:
    """The shape's real kernel, compiled to PTX for `capability`, run for one thread on
    the CPU (`ptx_count.execute`) over `examples` examples drawn from a standard normal
    (labels 0 or 1) for one epoch, against none and against no epoch: the executed
    float64 instructions per example and epoch (their mean over the examples: libdevice's
    exp and log1p branch on their argument) and per epoch outside the examples loop."""

    def executed(n: int, epochs: int) -> ptx_count.Counts:
        kernel, arguments = kernel_and_arguments(replace(shape, examples=n), epochs=1)
        generator = torch.Generator().manual_seed(seed)
        inputs, labels = arguments[1], arguments[2]
        inputs[...] = torch.randn(inputs.shape, generator=generator, dtype=torch.float64).numpy()
        labels[...] = torch.randint(0, 2, labels.shape, generator=generator).numpy()
        arguments = (*arguments[:-5], 0, epochs, *arguments[-3:])
        ptx = ptx_of(kernel, cuda_launch.signature(arguments), capability)
        return ptx_count.execute(ptx, arguments)

    none = executed(0, 1)
    every = executed(examples, 1).minus(none)
    mean = ptx_count.Counts({op: round(n / examples) for op, n in every.ops.items()})
    return Fp64(mean, none.minus(executed(0, 0)))


def line(variant: str, capability: tuple[int, int], result: Compiled | BaseException) -> str:
    head = f"{variant:<18} cc {capability[0]}.{capability[1]}"
    if isinstance(result, BaseException):
        return f"{head}  error: {type(result).__name__}: {cuda_launch.one_line(result, 2000)}"
    return (
        f"{head} {result.registers:>4} registers {result.spill:>5} spill bytes "
        f"{result.local:>5} local bytes  ok"
    )


def run(shapes: list[Shape] | None = None, out=None) -> bool:
    """Prints a line per shape and capability (to `out`, else stdout); whether every
    kernel compiled."""
    out = sys.stdout if out is None else out
    ok = True
    for shape in pipeline_shapes() if shapes is None else shapes:
        for capability in CAPABILITIES:
            try:
                result: Compiled | BaseException = check(shape, capability)
            except Exception as error:  # noqa: BLE001 - the line names it
                result, ok = error, False
            print(line(shape.variant, capability, result), file=out, flush=True)
    return ok


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.parse_args(argv)
    missing = missing_toolchain()
    if missing:
        sys.exit(f"error: cannot compile the CUDA kernels here: {missing}")
    try:
        shapes = pipeline_shapes()
    except PipelineError as error:  # a params.yaml that does not load: its one line
        sys.exit(f"error: {error}")
    if not run(shapes):
        sys.exit(1)


if __name__ == "__main__":
    main()
