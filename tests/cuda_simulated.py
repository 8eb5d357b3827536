"""Runs the fused CUDA training kernels in numba's CUDA simulator, for
tests/models/test_cuda_kernels.py, in a process of its own:

    NUMBA_ENABLE_CUDASIM=1 python -m tests.cuda_simulated CASES.pt RESULTS.pt

Why a process of its own: numba reads NUMBA_ENABLE_CUDASIM when numba.cuda is first
imported, and a pytest-xdist worker may have imported numba (the window kind's CPU
kernel) before. Here the CPU stands in for the cuda device: `cuda_launch.on_cuda`
takes float64 CPU tensors, whose numpy views the simulator's kernels read and write.
Every case is trained the way `train.train` would on cuda: through the kind contract's
`fused_training`; `through_train` cases through `train.train` itself.
"""

from __future__ import annotations

import sys
import time

import torch

from pipeline.models import cuda_launch, interface, train

EPOCHS_PER_LAUNCH = cuda_launch.EPOCHS_PER_LAUNCH


def simulated_device(inputs: torch.Tensor) -> bool:
    return inputs.dtype == torch.float64


def run(case: dict) -> dict:
    launches = []
    launcher = cuda_launch._launcher

    def counted(kernel, runs, device):
        launch = launcher(kernel, runs, device)

        def one(*args):
            launches.append(runs)  # the runs of each kernel launch
            return launch(*args)

        return one

    cuda_launch._launcher = counted
    params, inputs, labels = case["params"], case["inputs"], case["labels"]
    epochs, lr = case["epochs"], case["lr"]
    cuda_launch.EPOCHS_PER_LAUNCH = case.get("epochs_per_launch", EPOCHS_PER_LAUNCH)
    start = time.perf_counter()
    if case.get("through_train"):
        try:
            trained, history = train.train(params, inputs, labels, epochs, lr)
        except Exception as error:  # noqa: BLE001 - the test reads what was raised
            cuda_launch._launcher = launcher
            return {"error": f"{type(error).__name__}: {error}", "launches": launches}
        loss, accuracy = history.loss, history.accuracy
    else:
        trained, loss, accuracy = interface.fused_training(params, inputs, labels)(
            params, epochs, lr
        )
    seconds = time.perf_counter() - start
    cuda_launch._launcher = launcher
    return {
        "params": trained,
        "loss": loss,
        "accuracy": accuracy,
        "seconds": seconds,
        "launches": launches,
    }


def settle_globals() -> None:
    """numba's simulator swaps `cuda` in a device function's module globals at every
    call, iterating them, in each simulated thread; a thread's first floating-point
    warning (a diverging run's overflow) adds __warningregistry__ to the same dict:
    'dictionary changed size during iteration'. Made beforehand, it keeps its size."""
    from pipeline.models import cuda_pooling, cuda_window

    for module in (cuda_pooling, cuda_window):
        vars(module).setdefault("__warningregistry__", {})


def main(cases_path: str, results_path: str) -> None:
    cuda_launch.on_cuda = simulated_device
    settle_globals()
    cases = torch.load(cases_path, weights_only=False)
    torch.save({name: run(case) for name, case in cases.items()}, results_path)


if __name__ == "__main__":
    main(*sys.argv[1:])
