"""The fused CUDA training kernels (pipeline/models/cuda_pooling.py, cuda_window.py)
against the definition, autograd through each kind's `attend`, to 1e-10; and that
training takes them on cuda and only there.

No GPU here: numba's CUDA simulator runs the kernels (each CUDA thread a Python
thread) in a process of its own (tests/cuda_simulated.py, which says why), once for
every case of this file: few runs, few examples, few epochs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from pipeline.config import PROJECT_ROOT, ModelConfig
from pipeline.models import cuda_launch, interface, train
from pipeline.models.parameters import to_flat
from tests.models.helpers import F64, STEPS, random_inputs, random_params, small_set

KINDS = [
    ModelConfig(),
    ModelConfig(kind="sink"),
    ModelConfig(kind="multihead", heads=3),
    ModelConfig(kind="posenc"),
    ModelConfig(kind="posenc", positional="sinusoidal"),
    ModelConfig(kind="window"),
    ModelConfig(kind="window", window=1),
    ModelConfig(kind="window", window=STEPS),
]
IDS = [f"{cfg.kind}-{cfg.positional}-{cfg.window}-{cfg.heads}" for cfg in KINDS]
TRAINED = [ModelConfig(), ModelConfig(kind="window")]  # on the lesson's data, from init
EPOCHS, LR = 6, 0.3


def random_case(cfg: ModelConfig) -> dict:
    """4 runs drawn from N(0, 1) on 7 random examples: every path of the math moves."""
    labels = (torch.arange(7) % 2).to(F64)
    params = random_params(cfg, 4, seed=23)
    return dict(params=params, inputs=random_inputs(7, STEPS, seed=24), labels=labels)


def lesson_case(cfg: ModelConfig, epochs: int = 10, lr: float = 0.6) -> dict:
    """3 runs from the init stream on the small config's 60 training sequences."""
    (inputs, labels), _ = small_set()
    params = interface.init_params(4242, [1, 2, 3], cfg, STEPS)
    return dict(params=params, inputs=inputs, labels=labels, epochs=epochs, lr=lr)


def cases() -> dict[str, dict]:
    out = {
        f"random-{i}": {**random_case(cfg), "epochs": EPOCHS, "lr": LR}
        for i, cfg in zip(IDS, KINDS, strict=True)
    }
    out |= {f"trained-{cfg.kind}": lesson_case(cfg) for cfg in TRAINED}
    out["launches-of-2"] = {**lesson_case(ModelConfig(), epochs=7), "epochs_per_launch": 2}
    out["through-train"] = {
        **lesson_case(ModelConfig(kind="window"), epochs=4),
        "through_train": True,
    }
    # Two launches (25 and 5 epochs) of 12 of the sequences, far past where the
    # runs blow up (the simulator's cost grows with epochs times examples).
    diverging = lesson_case(ModelConfig(init_scale=50.0), epochs=30, lr=1e6)
    diverging |= {"inputs": diverging["inputs"][:12], "labels": diverging["labels"][:12]}
    out["diverging"] = {**diverging, "through_train": True}
    return out


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> tuple[dict, dict]:
    """(the cases, what the simulator's kernels made of them)."""
    folder = tmp_path_factory.mktemp("cuda_simulated")
    made = cases()
    torch.save(made, folder / "cases.pt")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    command = [sys.executable, "-m", "tests.cuda_simulated", folder / "cases.pt", folder / "out.pt"]
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return made, torch.load(folder / "out.pt", weights_only=False)


def reference(case: dict) -> tuple[torch.Tensor, train.History]:
    """Autograd through the kind's `attend`: the definition, unsettled."""
    args = case["params"], case["inputs"], case["labels"], case["epochs"], case["lr"]
    params, history = train.stepped(*args, autograd=True)
    return to_flat(params), history


def assert_trains_as_autograd(case: dict, got: dict) -> None:
    want, history = reference(case)
    assert got["launches"], "the kernel never ran"
    moved = (to_flat(got["params"]) - to_flat(case["params"])).abs().max()
    assert moved > 1e-3  # training moved the runs: the comparison below can fail
    torch.testing.assert_close(to_flat(got["params"]), want, rtol=0, atol=1e-10)
    torch.testing.assert_close(got["loss"], history.loss, rtol=0, atol=1e-10)
    assert torch.equal(got["accuracy"], history.accuracy)


@pytest.mark.parametrize("name", IDS)
def test_gpu_kernel_trains_random_runs_as_autograd(simulated, name):
    made, out = simulated
    assert_trains_as_autograd(made[f"random-{name}"], out[f"random-{name}"])


@pytest.mark.parametrize("kind", [cfg.kind for cfg in TRAINED])
def test_gpu_kernel_trains_the_lesson_s_seeds_as_autograd(simulated, kind):
    made, out = simulated
    assert_trains_as_autograd(made[f"trained-{kind}"], out[f"trained-{kind}"])


def test_gpu_kernel_launches_of_a_few_epochs_change_no_bit(simulated):
    """7 epochs in launches of 2 (2, 2, 2, 1), as autograd's 7: the runs' state between
    launches is their parameters alone."""
    made, out = simulated
    split = out["launches-of-2"]
    assert split["launches"] == [3, 3, 3, 3]
    assert_trains_as_autograd(made["launches-of-2"], split)


def test_gpu_kernel_is_what_train_runs_on_cuda(simulated):
    """`train.train` on the (simulated) cuda device trains through the fused kernel,
    one launch for all runs, and settles its runs as on the CPU."""
    made, out = simulated
    case, got = made["through-train"], out["through-train"]
    assert got["launches"] == [3]  # 4 epochs, one launch of the 3 runs
    want, history = reference(case)
    torch.testing.assert_close(to_flat(got["params"]), want, rtol=0, atol=1e-8)
    assert torch.equal(to_flat(got["params"]), to_flat(got["params"]).round(decimals=8))
    torch.testing.assert_close(got["loss"], history.loss, rtol=0, atol=1e-10)


def test_gpu_kernel_diverging_runs_are_refused_as_on_the_cpu(simulated):
    """inf and NaN pass through the kernel's arithmetic: `train.train` names them."""
    _, out = simulated
    assert out["diverging"]["launches"] == [3, 3]
    assert out["diverging"]["error"].startswith("DivergenceError: training diverged: 3 of 3")
    assert "train.lr" in out["diverging"]["error"]


class OnCuda(torch.Tensor):
    """A tensor that reports a cuda device (CPU data, no op allowed): what the kinds'
    choice of the fused path reads, on a machine without CUDA."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> OnCuda:
        return torch.Tensor._make_wrapper_subclass(
            cls, elem.shape, dtype=elem.dtype, device=torch.device("cuda", 0)
        )

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"no op on the stand-in cuda tensor: {func}")


@pytest.mark.parametrize("cfg", KINDS, ids=IDS)
def test_gpu_kernel_is_chosen_for_float64_cuda_runs_only(cfg, monkeypatch):
    monkeypatch.setattr(cuda_launch, "numba_sees_gpu", lambda: True)  # as on a GPU
    case = random_case(cfg)
    params, inputs, labels = case["params"], case["inputs"], case["labels"]
    assert interface.fused_training(params, OnCuda(inputs), labels) is not None
    assert interface.fused_training(params, inputs, labels) is None  # the CPU's paths
    single = OnCuda(inputs.to(torch.float32))
    assert interface.fused_training(params, single, labels) is None


def test_gpu_kernel_is_not_chosen_where_numba_cannot_compile_for_cuda(capfd):
    """No GPU here: numba sees none, and cuda runs would take torch's ops."""
    cuda_launch.numba_sees_gpu.cache_clear()
    try:
        assert not cuda_launch.numba_sees_gpu()
    finally:
        cuda_launch.numba_sees_gpu.cache_clear()
    assert "cannot run here" in capfd.readouterr().err
    params = random_params(ModelConfig(), 2, seed=1)
    inputs = random_inputs(3, STEPS, seed=2)
    assert interface.fused_training(params, OnCuda(inputs), inputs[:, 0, 0]) is None


def cpu_stands_in_for_cuda(monkeypatch) -> None:
    """float64 CPU tensors take the fused path, as cuda ones would (the simulator's
    choice, tests/cuda_simulated.py); no kernel failed before in this process."""
    monkeypatch.setattr(cuda_launch, "on_cuda", lambda inputs: inputs.dtype == torch.float64)
    monkeypatch.setattr(cuda_launch, "_FAILED", {}, raising=False)


def torch_path(case: dict) -> tuple:
    """`train.train` where no fused kernel applies (CPU inputs): torch's ops."""
    args = case["params"], case["inputs"], case["labels"], case["epochs"], case["lr"]
    params, history = train.train(*args)
    return to_flat(params), history.loss, history.accuracy


def assert_torch_s_bytes(case: dict, trained: tuple, want: tuple) -> None:
    params, history = trained
    got = to_flat(params), history.loss, history.accuracy
    for mine, theirs in zip(got, want, strict=True):
        assert torch.equal(mine, theirs)
    assert not torch.equal(got[0], to_flat(case["params"]))  # it trained


@pytest.mark.parametrize(
    "cfg", [ModelConfig(), ModelConfig(kind="window")], ids=["lesson", "window"]
)
def test_gpu_kernel_fallback_a_compile_failure_trains_on_torch_s_ops(cfg, monkeypatch, capfd):
    """The kernel of the kind and shape about to train fails to compile (the error of
    issue 57's kernels on a GPU): training takes torch's ops, writes their bytes, and
    says so in one line naming the error, once for that kernel."""
    case = lesson_case(cfg, epochs=30)
    want = torch_path(case)
    cpu_stands_in_for_cuda(monkeypatch)
    compiled = []

    def fails(kernel, arguments, device):
        compiled.append(kernel)
        raise TypeError(
            "Signature mismatch: 2 argument types given, but function takes 1 arguments"
        )

    monkeypatch.setattr(cuda_launch, "compile_kernel", fails, raising=False)
    args = case["params"], case["inputs"], case["labels"], case["epochs"], case["lr"]
    assert_torch_s_bytes(case, train.train(*args), want)
    assert_torch_s_bytes(case, train.train(*args), want)  # the same kernel again
    assert len(compiled) == 1  # the real kernel was tried, once
    assert compiled[0] is interface.fused_training(*args[:3]).kernel(case["params"])[0]
    warnings = capfd.readouterr().err.strip().splitlines()
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("warning: the fused CUDA kernel")
    assert "failed to compile: TypeError: Signature mismatch" in warnings[0]
    assert "training takes torch's ops on cuda" in warnings[0]


def test_gpu_kernel_fallback_a_launch_failure_trains_on_torch_s_ops(monkeypatch, capfd):
    """The second launch fails after the first moved the runs: the torch path trains
    from the caller's params, not the kernel's half-trained copy."""
    case = lesson_case(ModelConfig(kind="sink"), epochs=30)  # two launches of 25 and 5
    want = torch_path(case)
    cpu_stands_in_for_cuda(monkeypatch)
    compiles = lambda kernel, arguments, device: None  # noqa: E731
    monkeypatch.setattr(cuda_launch, "compile_kernel", compiles, raising=False)
    launches = []

    def launcher(kernel, runs, device):
        def launch(flat, *rest):
            launches.append(runs)
            if len(launches) > 1:
                raise RuntimeError("[701] CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
            flat += 1.0  # the first launch trained the copy

        return launch

    monkeypatch.setattr(cuda_launch, "_launcher", launcher)
    args = case["params"], case["inputs"], case["labels"], case["epochs"], case["lr"]
    assert_torch_s_bytes(case, train.train(*args), want)
    assert launches == [3, 3]
    assert_torch_s_bytes(case, train.train(*args), want)
    assert launches == [3, 3]  # a kernel that failed is not launched again
    warnings = capfd.readouterr().err.strip().splitlines()
    assert len(warnings) == 1, warnings
    assert "failed to launch: RuntimeError: [701] CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in warnings[0]


def test_gpu_kernel_fallback_leaves_a_stop_request_alone(monkeypatch):
    """A SIGTERM between launches ends the training; it is no kernel failure."""
    from pipeline.models import threads

    case = lesson_case(ModelConfig(), epochs=30)
    cpu_stands_in_for_cuda(monkeypatch)
    monkeypatch.setattr(cuda_launch, "compile_kernel", lambda kernel, arguments, device: None)

    def stopped():
        raise threads.JobsStopped("stopped by a signal")

    monkeypatch.setattr(cuda_launch, "check_stopped", stopped)
    args = case["params"], case["inputs"], case["labels"], case["epochs"], case["lr"]
    with pytest.raises(threads.JobsStopped):
        train.train(*args)
    assert cuda_launch._FAILED == {}
