"""End to end: a fresh clone, `dvc repro`, no-op reruns, partial reruns,
experiments, and what the track stage leaves in the clone's MLflow store.

Slow (a few minutes); CI runs it. The tests share one clone and run in order.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import STAGE_OUTPUTS, assert_golden, clone_project

pytestmark = pytest.mark.slow

OUTPUTS = [
    *STAGE_OUTPUTS,
    "reports/report.md",
    "reports/step_weights.csv",
    "reports/figures/attention_seed_1.png",
    "reports/figures/weight_vs_effect.png",
    "reports/study/summary.json",
    "reports/study/seeds.parquet",
    "reports/figures/study_pair_gaps.png",
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
    assert {"generate", "train", "study", "track"} <= ran_stages(result.stdout)
    return repo


def test_fresh_clone_reproduces_the_committed_outputs(repo):
    dvc(repo, "repro", "--force")
    assert_golden(json.loads((repo / "reports/metrics.json").read_text()))
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status == "", f"committed outputs differ from what the pipeline produced:\n{status}"


def parent_runs(repo: Path):
    from pipeline import tracking

    return tracking.search_parent_runs(f"sqlite:///{repo / 'mlflow.db'}", "attention-faithfulness")


def test_repro_logs_one_parent_and_a_child_per_seed(repo):
    from mlflow.tracking import MlflowClient

    parents, children = parent_runs(repo)
    assert len(parents) == 1 and len(children) == 2
    tags = parents.iloc[0]
    for tag in ("git.commit", "git.dirty", "dvc.data_md5", "dvc.models_md5", "torch_version"):
        assert tags[f"tags.{tag}"], tag
    assert tags["tags.device"] == "cpu" or tags["tags.device"] == "cuda"
    metrics = json.loads((repo / "reports/metrics.json").read_text())
    assert parents.iloc[0]["metrics.gap/seed_gap"] == metrics["seed_gap"]
    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
    for run_id in children["run_id"]:
        assert len(client.get_metric_history(run_id, "train/loss")) == 200
    # The seed study: summary on the parent, per-seed table as an artifact, no child per seed.
    summary = json.loads((repo / "reports/study/summary.json").read_text())
    assert (
        parents.iloc[0]["metrics.study/pair_gap/p_at_least_observed"]
        == (summary["pair_gap"]["p_at_least_observed"])
    )
    artifacts = {a.path for a in client.list_artifacts(parents.iloc[0]["run_id"], "study")}
    assert {"study/summary.json", "study/seeds.parquet", "study/faithfulness.json"} <= artifacts


def test_second_repro_is_a_noop(repo):
    start = time.perf_counter()
    result = dvc(repo, "repro")
    # Timed in benchmarks/bench_repro.sh, not asserted here (a busy machine is slow).
    print(f"no-op dvc repro: {time.perf_counter() - start:.2f} s")
    # track always runs (the store may have lost the state); here it finds it.
    assert ran_stages(result.stdout) == {"track"}
    assert "already logged: run " in result.stdout
    probe = (
        "import sys\nfrom pipeline.stages import track\ntrack.main()\n"
        "print(sorted(m for m in ('mlflow', 'pandas', 'torch') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True)
    assert result.stdout.splitlines()[-1] == "[]", result.stdout + result.stderr


def test_deleted_store_gets_the_state_again(repo):
    """Issue 10: after `rm mlflow.db` the next `dvc repro` logs the state again."""
    store, kept = repo / "mlflow.db", repo / "mlflow.db.kept"
    # As `rm mlflow.db`, but put back afterwards: this test process's MLflow client
    # keeps the old file open, and the tests below read the store through it.
    store.rename(kept)
    try:
        result = dvc(repo, "repro")
        assert ran_stages(result.stdout) == {"track"}
        assert "\nlogged: run " in result.stdout
        probe = (
            "import sys\nfrom pipeline import tracking\n"
            "parents, children = tracking.search_parent_runs(sys.argv[1], sys.argv[2])\n"
            "print(len(parents), len(children))"
        )
        uri = f"sqlite:///{store}"
        counted = subprocess.run(
            [sys.executable, "-c", probe, uri, "attention-faithfulness"],
            cwd=repo,
            capture_output=True,
            text=True,
        )
        assert counted.stdout.split() == ["1", "2"], counted.stdout + counted.stderr
    finally:
        kept.replace(store)


def test_force_repro_gives_the_same_bytes(repo):
    before = digests(repo)
    dvc(repo, "repro", "--force")
    assert digests(repo) == before
    assert len(parent_runs(repo)[0]) == 1, "the same state was logged twice"


def test_eval_change_reruns_only_evaluate(repo):
    set_param(repo, "high_weight: 0.5", "high_weight: 0.6")
    ran = ran_stages(dvc(repo, "repro").stdout)
    assert "evaluate" in ran and not ran & {"generate", "train"}


def test_train_change_reruns_train_and_evaluate(repo):
    set_param(repo, "lr: 0.6", "lr: 0.5")
    ran = ran_stages(dvc(repo, "repro").stdout)
    assert {"train", "evaluate"} <= ran and "generate" not in ran
    subprocess.run(["git", "checkout", "params.yaml"], cwd=repo, check=True)
    dvc(repo, "repro")
    assert_golden(json.loads((repo / "reports/metrics.json").read_text()))


def test_invalid_value_via_exp_run_names_the_key_and_keeps_outputs(repo):
    before = digests(repo)
    result = dvc(repo, "exp", "run", "-S", "train.lr=-1", check=False)
    assert result.returncode == 255  # DVC's own exit code; the stage itself exits 1
    output = result.stdout + result.stderr
    assert "invalid config value train.lr=-1" in output
    # The rejected value stays in params.yaml; the error says how to restore it.
    assert "lr: -1" in (repo / "params.yaml").read_text()
    assert "`python -m pipeline.params` restores params.yaml from conf/" in output
    restore = subprocess.run([sys.executable, "-m", "pipeline.params"], cwd=repo)
    assert restore.returncode == 0
    assert subprocess.run(["git", "diff", "--quiet", "params.yaml"], cwd=repo).returncode == 0
    assert digests(repo) == before


def test_paths_outside_the_project_are_refused(repo, tmp_path):
    """Issue 10: `-S paths.*` could overwrite, then delete, a file outside the project."""
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    lock = (repo / "dvc.lock").read_text()
    for override, key in (
        (f"paths.tracked_state={victim}", "paths.tracked_state"),
        ("paths.metrics=../outside.json", "paths.metrics"),
    ):
        result = dvc(repo, "exp", "run", "-S", override, check=False)
        assert result.returncode != 0
        assert f"invalid config value {key}=" in result.stdout + result.stderr
        subprocess.run([sys.executable, "-m", "pipeline.params"], cwd=repo, check=True)
    assert victim.read_text() == "not yours\n"
    assert not (repo.parent / "outside.json").exists()
    assert (repo / "dvc.lock").read_text() == lock


def test_a_concurrent_exp_run_cannot_mislabel_a_running_repro(repo):
    """Issue 10: `dvc exp run -S train.lr=0.45` during `dvc repro --force` rewrote
    params.yaml; the repro then recorded lr 0.45 beside lr 0.6 numbers, in dvc.lock,
    report.md and MLflow. Provenance makes the repro fail instead."""
    subprocess.run([sys.executable, "-m", "pipeline.params"], cwd=repo, check=True)
    dvc(repo, "repro")
    lesson_outputs = ["reports/metrics.json", "reports/report.md", "models/parameters.parquet"]
    before = {name: (repo / name).read_bytes() for name in lesson_outputs}
    repro = subprocess.Popen(
        ["dvc", "repro", "--force"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output = []
    for line in repro.stdout:
        output.append(line)
        if line.startswith("Running stage 'study'"):
            break
    busy = dvc(repo, "exp", "run", "-S", "train.lr=0.45", check=False)
    assert busy.returncode != 0
    if "lr: 0.45" not in (repo / "params.yaml").read_text():
        set_param(repo, "lr: 0.6", "lr: 0.45")  # what DVC did in the report; keep the race
    output += repro.stdout.readlines()
    repro.wait(timeout=600)
    text = "".join(output)
    assert repro.returncode != 0, text
    assert "train.lr 0.6→0.45" in text, text
    assert {name: (repo / name).read_bytes() for name in lesson_outputs} == before
    parents, _ = parent_runs(repo)
    assert "0.45" not in set(parents["params.train.lr"]), "a mislabelled state was logged"
    subprocess.run([sys.executable, "-m", "pipeline.params"], cwd=repo, check=True)
    dvc(repo, "repro")
    assert_golden(json.loads((repo / "reports/metrics.json").read_text()))


def test_exp_run_set_param_composes_conf(repo):
    dvc(repo, "exp", "run", "-S", "train.epochs=400", "-S", "train.lr=0.3")
    params = (repo / "params.yaml").read_text()
    assert "epochs: 400" in params and "lr: 0.3" in params
    shown = json.loads(dvc(repo, "exp", "show", "--json").stdout)
    experiments = [exp for rev in shown for exp in (rev.get("experiments") or [])]
    assert experiments, shown
    metrics = json.loads((repo / "reports/metrics.json").read_text())
    assert metrics["runs"]["1"]["train_accuracy"] != pytest.approx(0.9028, abs=5e-5)
    parents, _ = parent_runs(repo)
    logged = parents[parents["tags.dvc.exp_name"].notna()]
    assert len(logged) == 1 and logged.iloc[0]["params.train.lr"] == "0.3"


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
    deadline = time.monotonic() + 1200  # each runs the 1000-seed study and battery
    while time.monotonic() < deadline:
        status = dvc(repo, "queue", "status").stdout
        if status.count("Success") + status.count("Failed") >= 2:
            break
        time.sleep(2)
    assert status.count("Success") == 2, status
    parents, children = parent_runs(repo)
    names = set(parents["tags.dvc.exp_name"].dropna())
    assert len(names) == 3, names  # the -S experiment and both queued ones
    assert len(children) == 2 * len(parents)


def test_history_prints_a_row_per_version(repo):
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.history", "--plot", "gap.png"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["version", "gap", "heldout_1", "heldout_2"]
    assert lines[1].split()[1:4] == ["0.1056", "0.8889", "0.9944"]
    assert (repo / "gap.png").exists()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_mlflow_server_serves_the_runs(repo):
    port = free_port()
    server = subprocess.Popen(
        [
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{repo / 'mlflow.db'}",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api/2.0/mlflow"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "mlflow server did not start"
                assert server.poll() is None, "mlflow server exited"
                time.sleep(1)
        query = json.dumps({"experiment_names": ["attention-faithfulness"]}).encode()
        request = urllib.request.Request(
            f"{base}/experiments/get-by-name?experiment_name=attention-faithfulness"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            experiment_id = json.load(response)["experiment"]["experiment_id"]
        query = json.dumps({"experiment_ids": [experiment_id], "max_results": 100}).encode()
        request = urllib.request.Request(
            f"{base}/runs/search", data=query, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            runs = json.load(response)["runs"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    gaps = [
        metric["value"]
        for run in runs
        for metric in run["data"].get("metrics", [])
        if metric["key"] == "gap/seed_gap"
    ]
    assert round(min(gaps, key=lambda g: abs(g - 0.1056)), 4) == 0.1056
    seeds = {t["value"] for r in runs for t in r["data"].get("tags", []) if t["key"] == "seed"}
    assert seeds == {"1", "2"}


def test_ci_output_check_fails_on_tampered_metrics(tmp_path):
    repo = clone_project(tmp_path / "tampered")
    metrics = repo / "reports/metrics.json"
    metrics.write_text(metrics.read_text().replace('"high_weight": 81', '"high_weight": 82'))
    subprocess.run(
        ["git", "commit", "-qam", "tamper"],
        cwd=repo,
        check=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )
    result = subprocess.run(["bash", ".ci/check-outputs"], cwd=repo, capture_output=True, text=True)
    assert result.returncode == 1
    assert "reports/metrics.json" in result.stdout
