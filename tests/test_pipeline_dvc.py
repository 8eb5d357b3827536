"""End to end: a fresh clone, `dvc repro`, no-op reruns, partial reruns, experiments.

Slow (a minute or two); CI runs it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import assert_golden, clone_project

pytestmark = pytest.mark.slow

OUTPUTS = [
    "data/sequences.parquet",
    "data/summary.json",
    "models/parameters.parquet",
    "reports/metrics.json",
    "reports/steps.csv",
    "reports/training/seed_1.csv",
    "reports/training/seed_2.csv",
]


def dvc(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["dvc", *args], cwd=repo, capture_output=True, text=True)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def digests(repo: Path) -> dict[str, str]:
    return {name: hashlib.sha256((repo / name).read_bytes()).hexdigest() for name in OUTPUTS}


def set_param(repo: Path, old: str, new: str) -> None:
    params = repo / "params.yaml"
    text = params.read_text()
    assert old in text
    params.write_text(text.replace(old, new))


def ran_stages(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    repo = clone_project(tmp_path_factory.mktemp("clone") / "project")
    result = dvc(repo, "repro")
    # Data and models are not in git: they are rebuilt. evaluate's inputs then
    # hash as in dvc.lock, so DVC may rightly skip it.
    assert {"generate", "train"} <= ran_stages(result.stdout)
    return repo


def test_fresh_clone_reproduces_the_committed_outputs(repo):
    dvc(repo, "repro", "--force")
    assert_golden(json.loads((repo / "reports/metrics.json").read_text()))
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status == "", f"committed outputs differ from what the pipeline produced:\n{status}"


def test_second_repro_is_a_noop(repo):
    start = time.perf_counter()
    result = dvc(repo, "repro")
    print(f"no-op dvc repro: {time.perf_counter() - start:.2f} s")
    assert "Data and pipelines are up to date" in result.stdout
    assert ran_stages(result.stdout) == set()


def test_force_repro_gives_the_same_bytes(repo):
    before = digests(repo)
    dvc(repo, "repro", "--force")
    assert digests(repo) == before


def test_eval_change_reruns_only_evaluate(repo):
    set_param(repo, "high_weight: 0.5", "high_weight: 0.6")
    assert ran_stages(dvc(repo, "repro").stdout) == {"evaluate"}


def test_train_change_reruns_train_and_evaluate(repo):
    set_param(repo, "lr: 0.6", "lr: 0.5")
    assert ran_stages(dvc(repo, "repro").stdout) == {"train", "evaluate"}
    subprocess.run(["git", "checkout", "params.yaml"], cwd=repo, check=True)
    dvc(repo, "repro")
    assert_golden(json.loads((repo / "reports/metrics.json").read_text()))


def test_invalid_value_via_exp_run_names_the_key_and_keeps_outputs(repo):
    before = digests(repo)
    result = dvc(repo, "exp", "run", "-S", "train.lr=-1", check=False)
    assert result.returncode != 0
    assert "invalid config value train.lr=-1" in result.stdout + result.stderr
    subprocess.run(["git", "checkout", "params.yaml"], cwd=repo, check=True)
    assert digests(repo) == before


def test_exp_run_set_param_composes_conf(repo):
    dvc(repo, "exp", "run", "-S", "train.epochs=400", "-S", "train.lr=0.3")
    params = (repo / "params.yaml").read_text()
    assert "epochs: 400" in params and "lr: 0.3" in params
    shown = json.loads(dvc(repo, "exp", "show", "--json").stdout)
    experiments = [exp for rev in shown for exp in (rev.get("experiments") or [])]
    assert experiments, shown
    metrics = json.loads((repo / "reports/metrics.json").read_text())
    assert metrics["runs"]["1"]["train_accuracy"] != pytest.approx(0.9028, abs=5e-5)


def test_queued_experiments_all_run(repo):
    subprocess.run(["git", "checkout", "params.yaml"], cwd=repo, check=True)
    dvc(repo, "exp", "run", "--queue", "-S", "data.seed=20261129")
    dvc(repo, "exp", "run", "--queue", "-S", "train.lr=0.3")
    subprocess.run(
        ["dvc", "queue", "start", "-j", "2"],
        cwd=repo,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status = dvc(repo, "queue", "status").stdout
        if status.count("Success") + status.count("Failed") >= 2:
            break
        time.sleep(2)
    assert status.count("Success") == 2, status
