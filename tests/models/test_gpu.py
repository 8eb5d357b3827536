"""The CUDA path (`train.device: cuda`, float64) against the CPU.

Marked `gpu` and skipped only where CUDA is absent: CI has no GPU, so these run
through scripts/gpu_check.sh on a machine that has one (docs/testing.md has its
last output). Every computing stage's run() on a small config writes the CPU's
bytes (tests/stage_runs.py, the stages the CPU-only device guard also runs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline import data
from pipeline.analysis import seed_study
from pipeline.config import validate
from pipeline.models import frames, interface, train
from pipeline.stages import evaluate, generate
from pipeline.stages import train as train_stage
from tests import stage_runs
from tests.conftest import assert_golden, composed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]
VARIANTS = ["sink", "multihead", "posenc", "window"]


def test_the_golden_numbers_on_the_gpu():
    cfg = validate(composed(["train.device=cuda"]))
    frame, summary = generate.run(cfg)
    params, _ = train_stage.run(cfg, frame)
    document, _ = evaluate.run(cfg, frame, summary, params)
    assert_golden(document)


def test_a_1000_seed_study_on_the_gpu_is_the_cpus_seed_for_seed():
    cpu = validate(composed(["train.device=cpu", "study.seeds=1000"]))
    frame = data.generate(cpu.data)
    on_cpu, _ = seed_study.run(cpu, frame)
    on_gpu, _ = seed_study.run(validate(composed(["train.device=cuda", "study.seeds=1000"])), frame)
    same = (on_cpu["heldout_accuracy"] == on_gpu["heldout_accuracy"]).mean()
    print(f"held-out accuracy identical on {same:.1%} of 1000 seeds")
    assert same == 1.0
    for column in on_cpu.select_dtypes("float").columns:
        np.testing.assert_allclose(on_gpu[column], on_cpu[column], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["lesson", *VARIANTS])
def test_every_model_forward_and_one_epoch_on_the_gpu_match_the_cpu(kind):
    cfg = validate(composed([f"model={kind}"]))
    frame = data.generate(cfg.data)
    inputs, labels, _ = frames.features(frame, cfg.data.steps)
    results = {}
    for device in ("cpu", "cuda"):
        params = interface.init_params(cfg.data.seed, list(range(1, 9)), cfg.model, cfg.data.steps)
        params = params.with_tensors([t.to(device) for t in params.tensors()])
        x, y = inputs.to(device), labels.to(device)
        logits, weights = interface.forward(params, x)
        trained, history = train.train(params, x, y, 1, cfg.train.lr)
        results[device] = [logits, weights, history.loss, *trained.tensors()]
    for on_cpu, on_gpu in zip(results["cpu"], results["cuda"], strict=True):
        torch.testing.assert_close(on_gpu.cpu(), on_cpu, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def outputs() -> dict[str, tuple[dict[str, bytes], dict[str, bytes]]]:
    """Per group of stages: (the CPU's outputs, cuda's), computed once."""
    return {}


@pytest.mark.parametrize("group, name", stage_runs.CASES, ids=stage_runs.IDS)
def test_each_stage_on_the_gpu_writes_the_cpu_s_bytes(group, name, outputs):
    if group not in outputs:
        outputs[group] = tuple(
            stage_runs.GROUPS[group](stage_runs.small_config(device)) for device in ("cpu", "cuda")
        )
    on_cpu, on_gpu = outputs[group]
    assert on_gpu[name] == on_cpu[name], f"{name}: other bytes on the GPU"
