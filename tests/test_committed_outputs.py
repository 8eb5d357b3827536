"""The one full-size check of the committed outputs: on a fresh clone, `dvc repro
--force` (.ci/check-outputs) gives every committed file byte for byte, the golden
numbers among them, and the check names a file that was edited by one byte.

It runs under the kernel path furthest from the pin (AVX-512, MKL's own path, numba
for this host: tests/test_kernels.py; one thread, as .ci/check-outputs sets), as
another CPU would bring it: the pin must hold the bytes there too."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import assert_golden, changed_files, clone_project, git_commit
from tests.test_kernels import kernel_env

pytestmark = pytest.mark.slow


def test_a_fresh_clone_reproduces_every_committed_output(tmp_path):
    repo = clone_project(tmp_path / "project")
    metrics = repo / "reports/metrics.json"
    metrics.write_text(metrics.read_text().replace('"high_weight": 81', '"high_weight": 82'))
    git_commit(repo, "one byte edited")
    result = subprocess.run(
        ["bash", ".ci/check-outputs"],
        cwd=repo,
        env=kernel_env("avx512-host-2threads"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "committed outputs are out of date" in result.stdout
    changed = changed_files(repo)
    assert changed == [" M reports/metrics.json"], "\n".join(changed)
    assert_golden(json.loads(metrics.read_text()))
