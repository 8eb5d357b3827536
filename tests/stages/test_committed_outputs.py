"""The one full-size run of the default config, and what it checks: on a fresh clone,
`dvc repro --force` (.ci/check-outputs) gives every committed file byte for byte, the
golden numbers among them, and the check names a file that was edited by one byte;
each stage's peak memory in that run is within its estimate's bounds.

It runs under the kernel path furthest from the pin (AVX-512, MKL's own path, numba
for this host: tests/core/test_kernels.py; one thread, as .ci/check-outputs sets), as
another CPU would bring it: the pin must hold the bytes there too."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.bench_memory import ESTIMATES, measuring_path, peaks_by_stage
from tests.conftest import assert_golden, changed_files, clone_project, git_commit
from tests.core.test_kernels import FURTHEST, kernel_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The clone, the check's result and the folder of each stage's peak."""
    folder = tmp_path_factory.mktemp("committed")
    repo = clone_project(folder / "project")
    metrics = repo / "reports/metrics.json"
    metrics.write_text(metrics.read_text().replace('"high_weight": 81', '"high_weight": 82'))
    git_commit(repo, "one byte edited")
    peaks = folder / "peaks"
    env = kernel_env(FURTHEST)
    result = subprocess.run(
        ["bash", ".ci/check-outputs"],
        cwd=repo,
        env={**env, "PATH": measuring_path(peaks)},
        capture_output=True,
        text=True,
    )
    return repo, result, peaks, env


def test_a_fresh_clone_reproduces_every_committed_output(checked):
    repo, result, _, _ = checked
    assert result.returncode == 1, result.stdout + result.stderr
    assert "committed outputs are out of date" in result.stdout
    changed = changed_files(repo)
    assert changed == [" M reports/metrics.json"], "\n".join(changed)
    assert_golden(json.loads((repo / "reports/metrics.json").read_text()))


# The defaults' every stage and grid cell as DVC ran it, its peak resident memory
# against its estimate (pipeline/memory/): at or above it, at most twice it.
# tests/memory/test_memory.py measures a larger configuration the same way.
def test_every_stage_s_estimate_is_at_least_its_peak_and_at_most_twice_it(checked):
    from omegaconf import OmegaConf

    repo, _, peaks, env = checked
    said = subprocess.run(
        [sys.executable, "-c", ESTIMATES],
        cwd=repo,
        env={**env, "OMP_NUM_THREADS": "1"},  # as .ci/check-outputs runs the stages
        capture_output=True,
        text=True,
        check=True,
    )
    estimates = json.loads(said.stdout)
    measured = peaks_by_stage(peaks, OmegaConf.load(repo / "params.yaml"))
    assert sorted(measured) == sorted(estimates)
    wrong = [
        f"{stage}: peak {peak / 2**20:.0f} MiB, estimate {estimates[stage] / 2**20:.0f} MiB"
        for stage, peak in measured.items()
        if not peak <= estimates[stage] <= 2 * peak
    ]
    assert wrong == []
