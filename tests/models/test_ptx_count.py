"""The float64 instruction counter (pipeline/models/ptx_count.py) and the kernels'
counts (`cuda_check.fp64_counts`, benchmarks/bench_gpu.py's share of the FP64 peak).

A small kernel with known float64 work compiles and its executed instructions are
counted exactly, loops and a branch included; the interpreter trains a real kernel's
epoch as torch does; the lesson's count sits near the hand count. They need libNVVM
(no GPU) and skip, naming what is missing, where it is not found (docs/testing.md).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from pipeline.models import cuda_check, cuda_launch, interface, ptx_count, train
from pipeline.models.parameters import to_flat
from tests.models.helpers import random_inputs


@pytest.fixture(scope="module")
def shapes() -> dict[str, cuda_check.Shape]:
    missing = cuda_check.missing_toolchain()
    if missing is not None:
        pytest.skip(f"no CUDA compiler: {missing}")
    return {shape.variant: shape for shape in cuda_check.pipeline_shapes()}


def small_kernel():
    """Per element of `x`: n times acc = acc * x + 1 (one fma, or a mul and an add),
    then a division and, for a positive x, a square root; n is a launch argument, so
    the loop is not unrolled away."""
    import math

    from numba import cuda

    @cuda.jit
    def kernel(x, out, n):
        i = cuda.grid(1)
        if i >= x.shape[0]:
            return
        acc = 0.0
        for _ in range(n):
            acc = acc * x[i] + 1.0
        acc = acc / (x[i] + 3.0)
        if x[i] > 0.0:
            acc = math.sqrt(acc)
        out[i] = acc

    return kernel


def test_gpu_compile_counter_counts_a_small_kernel_exactly(shapes):
    from numba import cuda

    kernel = small_kernel()
    x, out = np.array([2.0, -1.0]), np.zeros(2)
    ptx, _ = cuda.compile_ptx(kernel.py_func, cuda_launch.signature((x, out, 5)), cc=(9, 0))
    counts = [ptx_count.execute(ptx, (x, out, n)) for n in (0, 5, 7)]
    per_iteration = counts[2].minus(counts[1])
    assert per_iteration.flops == 2 * 2  # two iterations: an fma each
    assert per_iteration.instructions in (2, 4)  # an fma each, or a mul and an add
    assert counts[0].ops.get("sqrt", 0) == 1  # x[0] = 2 > 0
    assert counts[0].divisions >= 2  # the division (or its reciprocal) and the root
    acc = 0.0  # thread 0's result of the last run, n = 7
    for _ in range(7):
        acc = acc * 2.0 + 1.0
    assert out[0] == pytest.approx((acc / 5.0) ** 0.5, rel=1e-15)


@pytest.mark.parametrize(
    "variant", ["lesson", "sink", "multihead2", "posenc_sinusoidal", "window2"]
)
def test_gpu_compile_counter_trains_an_epoch_as_torch_does(shapes, variant):
    """The interpreter runs the compiled kernel's PTX: one epoch of run 0 gives the
    parameters torch's ops give (to the written precision). The inputs are of the
    data's domain, random readings and a one-hot marker (`frames.features`): the
    lesson's, sink's and multihead's fast path on the CPU holds only there
    (`lesson.TrainingSet`), the kernel on any inputs."""
    shape = replace(shapes[variant], examples=5)
    kernel, arguments = cuda_check.kernel_and_arguments(shape, epochs=1)
    arguments[1][...] = random_inputs(shape.examples, shape.steps, seed=3).numpy()
    arguments[2][...] = (torch.arange(shape.examples) % 2).numpy()
    inputs, labels = torch.from_numpy(arguments[1].copy()), torch.from_numpy(arguments[2].copy())
    arguments = (*arguments[:-5], 0, 1, *arguments[-3:])
    ptx = cuda_check.ptx_of(kernel, cuda_launch.signature(arguments), (9, 0))
    ptx_count.execute(ptx, arguments)
    params = interface.init_params(0, [1, 2], shape.model, shape.steps)
    trained, history = train.train(params, inputs, labels, 1, 0.6, False)
    assert arguments[-2][0, 0] == pytest.approx(float(history.loss[0, 0]), rel=1e-12)
    expected = to_flat(trained)[0].numpy()
    np.testing.assert_allclose(arguments[0][0], expected, rtol=0, atol=1e-7)


def test_gpu_compile_lesson_fp64_count_is_near_the_hand_count(shapes):
    """The lesson's compiled kernel executes a few hundred float64 instructions per
    example and epoch (the issue's estimate from the code: about 540), within a band
    of the hand count of its flops (`FusedTraining.flops`)."""
    shape = shapes["lesson"]
    counted = cuda_check.fp64_counts(shape)
    params = interface.init_params(0, [1], shape.model, shape.steps)
    inputs = torch.zeros(1, shape.steps, 2, dtype=torch.float64)
    with cuda_check.planning():
        fused = interface.fused_training(params, inputs, torch.zeros(1, dtype=torch.float64))
    hand = fused.flops(params)
    assert 300 <= counted.per_example.instructions <= 700
    assert 0.7 * hand <= counted.per_example.flops <= 1.5 * hand
    assert counted.per_example.ops["fma"] > counted.per_example.instructions / 2
    assert 0 < counted.per_epoch.flops < counted.per_example.flops
    assert counted.flops(360) == 360 * counted.per_example.flops + counted.per_epoch.flops
