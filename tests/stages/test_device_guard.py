"""The device guard: every stage with `train.device=cuda` on a CPU-only machine.

CI has no GPU. tests/device_guard.py simulates one: tensors on the runs' device
that hold CPU data, and an error wherever an op mixes them with CPU tensors, as
CUDA raises. Each computing stage's run() goes through it on a small config and
must write the CPU's bytes (tests/stage_runs.py). The GPU tier (tests/models/test_gpu.py)
runs the same stages on real CUDA.
"""

from __future__ import annotations

import pytest
import torch

from pipeline.config import validate
from pipeline.experiments.debate import cell as debate_cell
from pipeline.experiments.debate.permutation import permutation_orders, permuted_output_change
from tests import stage_runs
from tests.conftest import composed, small_overrides
from tests.device_guard import DeviceMixed, simulated_cuda


@pytest.fixture
def on_device(monkeypatch):
    with simulated_cuda(monkeypatch) as device:
        yield device


def test_device_guard_refuses_what_cuda_refuses_and_allows_what_it_allows(on_device):
    runs = torch.arange(6, dtype=torch.float64, device=on_device).reshape(2, 3)
    assert runs.device == on_device and (runs * 2).device == on_device
    with pytest.raises(DeviceMixed, match="mixes"):
        torch.ones(4, 2, dtype=torch.float64) @ runs  # a CPU matrix meets the runs
    with pytest.raises(DeviceMixed):
        runs + torch.ones(3, dtype=torch.float64)
    with pytest.raises(TypeError, match="numpy"):
        runs.numpy()
    # What CUDA accepts: a CPU scalar, CPU or list indices, .item(), .tolist(), .cpu().
    assert (runs + torch.tensor(1.0)).device == on_device
    assert runs[:, torch.tensor([0, 2])].tolist() == [[0.0, 2.0], [3.0, 5.0]]
    assert runs[:, [1]].tolist() == [[1.0], [4.0]]
    assert runs.sum().item() == 15.0
    assert runs.cpu().numpy().sum() == 15.0
    made_beside = torch.zeros(2, device=runs.device)
    assert made_beside.device == on_device
    weights = runs.clone().requires_grad_()
    (gradient,) = torch.autograd.grad((weights**2).sum(), weights)
    assert gradient.device == on_device and gradient.cpu().equal(2 * runs.cpu())


def test_device_guard_the_debate_s_seed_summary_takes_per_seed_values_on_the_device(on_device):
    cfg = validate(composed(small_overrides()))
    per_seed = torch.tensor([0.25, 0.5, 1.0], dtype=torch.float64)
    on_cpu = debate_cell.seed_summary(per_seed, cfg)
    assert debate_cell.seed_summary(per_seed.to(on_device), cfg) == on_cpu


def test_device_guard_permuted_weights_use_orders_on_the_runs_device(on_device):
    weights = torch.softmax(torch.randn(2, 5, 1, 4, dtype=torch.float64), -1)
    readouts, bias = torch.randn(2, 5, 1, 4, dtype=torch.float64), torch.zeros(2, 5)
    orders = permutation_orders(5, 3, 4, seed=0)
    on_cpu = permuted_output_change(weights, readouts, bias, orders)
    moved = [t.to(on_device) for t in (weights, readouts, bias, orders)]
    assert permuted_output_change(*moved).cpu().equal(on_cpu)


@pytest.fixture(scope="module")
def outputs() -> dict[str, tuple[dict[str, bytes], dict[str, bytes]]]:
    """Per group of stages: (the CPU's outputs, the simulated cuda's), computed once."""
    return {}


@pytest.mark.slow  # every stage end to end: the full tier
@pytest.mark.parametrize("group, name", stage_runs.CASES, ids=stage_runs.IDS)
def test_device_guard_stage_on_cuda_writes_the_cpu_s_bytes(group, name, outputs):
    if group not in outputs:
        on_cpu = stage_runs.GROUPS[group](stage_runs.small_config("cpu"))
        with pytest.MonkeyPatch.context() as patch, simulated_cuda(patch):
            on_device = stage_runs.GROUPS[group](stage_runs.small_config("cuda"))
        outputs[group] = on_cpu, on_device
    on_cpu, on_device = outputs[group]
    assert on_device[name] == on_cpu[name], f"{name}: other bytes on the device"
