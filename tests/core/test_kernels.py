"""Bytes on any machine: the pinned kernel paths, and the same bytes whatever path a
caller or a CPU would bring (docs/pipeline.md, "Bytes on any machine").

Another machine cannot be had here; what a machine changes is which kernels run.
So the lesson stages run full-size under torch's scalar and AVX2 paths, on one
thread and two, and must give the committed bytes (the AVX-512 path with MKL's
automatic path and numba compiling for this host is the committed-output run's);
the study, the battery and grid cells run small under all three paths and must agree
with each other. The full tier's one full-size check
(tests/stages/test_committed_outputs.py) runs the whole pipeline under the path
furthest from the pin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipeline.core import numerics
from tests.conftest import changed_files, clone_project, small_overrides

# What a caller's environment or another CPU could select; the pin overrides each.
KERNEL_PATHS = {
    "scalar-1thread": {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},
    "avx2-2threads": {"ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "2"},
    "avx512-host-2threads": {
        "ATEN_CPU_CAPABILITY": "avx512",
        "MKL_CBWR": "AUTO",
        "NUMBA_CPU_NAME": "host",
        "OMP_NUM_THREADS": "2",
    },
}
LESSON_STAGES = ("generate", "train", "evaluate")
# The path tests/stages/test_committed_outputs.py runs the whole pipeline under, full
# size: the lesson stages' bytes there are checked by that run, not again here.
FURTHEST = "avx512-host-2threads"


def kernel_env(path: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != numerics.PIN_OFF}
    return {**env, **KERNEL_PATHS[path], "CUDA_VISIBLE_DEVICES": ""}


def test_the_pin_overrides_what_the_caller_selects():
    probe = (
        "import json, os, pipeline, torch, numba\n"
        "print(json.dumps({'aten': torch.backends.cpu.get_cpu_capability(),"
        " 'numba': numba.config.CPU_NAME, 'mkl': os.environ['MKL_CBWR']}))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe],
        env=kernel_env("avx512-host-2threads"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(shown) == {"aten": "AVX2", "numba": "generic", "mkl": "COMPATIBLE"}


def test_the_provenance_record_names_the_kernel_paths():
    import torch  # noqa: F401  (the record names torch's level only once torch is loaded)

    record = numerics.environment()
    assert record["aten_cpu_capability"] == "avx2"
    assert record["mkl_cbwr"] == "COMPATIBLE" and record["numba_cpu_name"] == "generic"
    assert record["torch"].startswith("2.")
    committed = json.loads((kernels_root() / "reports/provenance/evaluate.json").read_text())
    assert committed["numeric"] == record


def kernels_root():
    from pipeline.config import PROJECT_ROOT

    return PROJECT_ROOT


@pytest.fixture(scope="module")
def lesson_clone(tmp_path_factory):
    return clone_project(tmp_path_factory.mktemp("kernels") / "project")


@pytest.mark.slow  # every stage end to end: the full tier
@pytest.mark.parametrize("path", [path for path in KERNEL_PATHS if path != FURTHEST])
def test_the_lesson_stages_give_the_committed_bytes_under_every_kernel_path(lesson_clone, path):
    """Full size: the data, the two trained runs, metrics.json, steps.csv, training.csv
    and their provenance records (which hold the DVC-cached files' hashes)."""
    for stage in LESSON_STAGES:
        result = subprocess.run(
            [sys.executable, "-m", f"pipeline.stages.{stage}"],
            cwd=lesson_clone,
            env=kernel_env(path),
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
    assert changed_files(lesson_clone) == []


SMALL_PROBE = """
import hashlib, json, sys
from pipeline import data
from pipeline.analysis import seed_study
from pipeline.experiments.grid import cell as grid
from pipeline.config import compose, validate
from pipeline.core.files import parquet_bytes
from pipeline.core.precision import rounded
from pipeline.experiments.faithfulness.stage import battery_table

cfg = validate(compose(json.loads(sys.argv[1])))
frame = data.generate(cfg.data)
table, summary = seed_study.run(cfg, frame)
battery = {row: {m: v.tolist() for m, v in metrics.items()}
           for row, metrics in battery_table(cfg, frame, table).items()}
cells = [grid.run_cell(cfg, task, variant) for task, variant in
         [("rise", "window2"), ("two_patterns", "multihead2"), ("first_half", "posenc_learned")]]
document = json.dumps(rounded([summary, battery, cells])).encode()
print(hashlib.sha256(parquet_bytes(table) + document).hexdigest())
"""


@pytest.mark.slow  # every stage end to end: the full tier
def test_the_study_battery_and_grid_cells_agree_under_every_kernel_path():
    """Small settings: one digest of the study's seeds table and summary, the battery
    on its runs and three grid cells (window's compiled kernel, multihead, posenc)."""
    overrides = json.dumps([*small_overrides(), "study.seeds=12", "grid.seeds=3"])
    digests = {
        path: subprocess.run(
            [sys.executable, "-c", SMALL_PROBE, overrides],
            env=kernel_env(path),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for path in KERNEL_PATHS
    }
    assert len(set(digests.values())) == 1, digests
