"""Shared fixtures: the composed default config, stores, clones, small configs."""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

# Under pytest-xdist each worker computes on one thread (torch, and the processes it
# starts): two workers on two cores then do not fight over them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["NUMBA_NUM_THREADS"] = "1"

import pytest
from omegaconf import DictConfig, OmegaConf

from pipeline.config import PROJECT_ROOT, Config, compose, validate
from pipeline.config.load import CONF_DIR

GOLDEN_DATA = {
    "train_positive_rate": 0.3806,
    "heldout_positive_rate": 0.3667,
    "baseline": 0.6333,
    "any_step_above_threshold": 0.9903,
    "max_reading_at_marker": 0.0611,
    "uniform_weight": 0.0833,
}
GOLDEN_RUNS = {
    "1": {
        "train_accuracy": 0.9028,
        "heldout_accuracy": 0.8889,
        "marker_mass": 0.2721,
        "argmax_hit": 0.3444,
        "weight_effect_agreement": 0.5889,
        "top_weight_effect": 0.3318,
        "high_weight": 81,
        "high_weight_low_effect": 27,
    },
    "2": {
        "train_accuracy": 0.9889,
        "heldout_accuracy": 0.9944,
        "marker_mass": 0.9691,
        "argmax_hit": 1.0000,
        "weight_effect_agreement": 1.0000,
        "top_weight_effect": 0.4081,
        "high_weight": 180,
        "high_weight_low_effect": 43,
    },
}
GOLDEN_GAP = 0.1056
GOLDEN_FIRST_WEIGHTS = {
    1: "0.00 0.00 0.10 0.00 0.01 0.01 0.00 0.29 0.31 0.00 0.10 0.18",
    2: "0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.97",
}


# What generate, train and evaluate write (the default and the small config alike).
STAGE_OUTPUTS = [
    "data/sequences.parquet",
    "data/summary.json",
    "models/parameters.parquet",
    "reports/metrics.json",
    "reports/steps.csv",
    "reports/training.csv",
]


GROUPS = frozenset(path.name for path in CONF_DIR.iterdir() if path.is_dir())


@cache
def _composed_groups(groups: tuple[str, ...]) -> DictConfig:
    return compose(list(groups))


def composed(overrides: list[str] | tuple = ()) -> DictConfig:
    """`compose(overrides)`, in a tenth of its time or less: the composition of the
    group choices alone (model=..., cached), then Hydra's own value-override step (the
    one its compose runs after the defaults) on a copy of it.
    test_a_value_override_composes_as_hydra_does checks it against `compose`."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    if any(o.key_or_group.startswith("hydra") for o in parsed):
        return compose(overrides)
    groups = tuple(o.input_line for o in parsed if o.key_or_group in GROUPS)
    cfg = copy.deepcopy(_composed_groups(groups))
    OmegaConf.set_struct(cfg, True)
    values = [o for o in parsed if o.key_or_group not in GROUPS]
    ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    return cfg


def kill_group(process: subprocess.Popen) -> None:
    """Teardown of a server a test started with start_new_session=True: SIGKILL to its
    whole process group (the mlflow and uvicorn children too), pass or fail."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def assert_login_required(base: str, owner) -> None:
    """Issue 34, case 3: a server we start refuses every request without `owner`'s
    login (pipeline/tracking/auth.py): the API's reads and writes, the artifact
    proxy and the UI's page; /health answers anyone (the start-up probe)."""
    import base64
    import json
    import urllib.error
    import urllib.request

    def status(path: str, method: str = "GET", body: bytes | None = None, login=None) -> int:
        request = urllib.request.Request(f"{base}{path}", data=body, method=method)
        request.add_header("Content-Type", "application/json")
        if login:
            token = base64.b64encode(":".join(login).encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code

    search = ("/api/2.0/mlflow/experiments/search", "POST", json.dumps({"max_results": 1}).encode())
    create = (
        "/api/2.0/mlflow/experiments/create",
        "POST",
        json.dumps({"name": "intruder"}).encode(),
    )
    upload = ("/api/2.0/mlflow-artifacts/artifacts/intruder.txt", "PUT", b"written by anyone")
    for request in (search, create, upload, ("/",), ("/signup",)):
        assert status(*request) == 401, request
        assert status(*request, login=(owner.username, "wrong password")) == 401, request
    assert status("/health") == 200
    assert status(*search, login=(owner.username, owner.password)) == 200
    assert owner.folder.stat().st_mode & 0o777 == 0o700
    for secret in ("password", "secret_key"):
        assert (owner.folder / secret).stat().st_mode & 0o777 == 0o600


def write_cells(root: Path, cfg: Config) -> None:
    """The committed grid and debate cells under root/reports/, recorded as made from
    `cfg`: the report and next_lesson stages read exactly the configured cells, each
    checked against its params, and a small test config runs neither."""
    import json

    from pipeline.config import provenance

    for stage in ("grid", "debate"):
        (root / "reports" / stage).mkdir(parents=True, exist_ok=True)
        params = provenance.cell_params(cfg, stage)
        for committed in sorted((PROJECT_ROOT / "reports" / stage).glob("*.json")):
            document = {**json.loads(committed.read_text()), "params": params}
            (root / "reports" / stage / committed.name).write_text(json.dumps(document))


def write_records(cfg: Config, stages: list[str]) -> None:
    """Provenance records (pipeline.config.provenance) for outputs a test wrote by hand, in
    the current directory: each stage's params and the hash of its files that exist."""
    from pipeline.config import provenance
    from pipeline.core.files import write_json

    for stage in stages:
        outputs = [p for p in provenance.output_files(cfg, stage) if Path(p).is_file()]
        record = {
            "stage": stage,
            "params": provenance.stage_params(cfg, stage),
            "outputs": {path: provenance.sha256(path) for path in outputs},
        }
        write_json(provenance.record_path(cfg, stage), record)


def run_stage(stage: str, cwd: Path) -> subprocess.CompletedProcess:
    """A DVC stage entry point as DVC runs it: a fresh process in the project root
    (the smoke test of the stages' command line; `run_entry` runs one in process)."""
    return subprocess.run(
        [sys.executable, "-m", f"pipeline.stages.{stage}"], cwd=cwd, capture_output=True, text=True
    )


@pytest.fixture
def run_entry(capsys, monkeypatch):
    """A stage's `main` through `pipeline.stages.entry`, in this process, as its
    command runs it: returns (exit code, stderr). The launcher watch and the signal
    handlers stay this process's own."""
    import signal

    from pipeline.core import files
    from pipeline.stages import entry

    monkeypatch.setattr(files, "watch_launcher", lambda: None)
    monkeypatch.setattr(sys, "argv", ["stage"])  # as DVC runs it: no arguments

    def run(main) -> tuple[int | str | None, str]:
        handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            with pytest.raises(SystemExit) as exit_:
                entry(main)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
        return exit_.value.code, capsys.readouterr().err

    return run


@pytest.fixture
def app_in_process(capsys, monkeypatch):
    """A Hydra app (`pipeline.run`, `pipeline.study`) in this process, as
    `python -m <module> ARGS` runs it: returns (exit code, stdout, stderr)."""
    from pipeline.config import CONF_DIR, run_hydra_app

    def run(module, *args: str) -> tuple[int | str | None, str, str]:
        argv = [module.__name__, "--config-path", str(CONF_DIR), *args]
        monkeypatch.setattr(sys, "argv", argv)
        code = 0
        try:
            run_hydra_app(module.main)
        except SystemExit as exit_:
            code = exit_.code
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def assert_golden(document: dict) -> None:
    """Every golden number of SPEC section 5: floats at 4 decimals, counts exactly."""
    assert document["data"]["sequences"] == 720
    for key, value in GOLDEN_DATA.items():
        assert round(document["data"][key], 4) == value, key
    assert set(document["runs"]) == set(GOLDEN_RUNS)
    for seed, golden in GOLDEN_RUNS.items():
        for key, value in golden.items():
            got = document["runs"][seed][key]
            if isinstance(value, int):
                assert got == value and isinstance(got, int), (seed, key, got)
            else:
                assert round(got, 4) == value, (seed, key, got)
    assert round(document["seed_gap"], 4) == GOLDEN_GAP
    assert document["parameters"] == 19


# The longest test files first, longest to shortest (measured on 2 cores: the slow
# tier's, then the fast tier's): pytest-xdist hands out whole files (--dist loadfile)
# in collection order, so these start at once, on different workers, and no long
# file starts last.
LONGEST_FIRST = [
    "test_committed_outputs.py",  # one worker's first 4 minutes: never the last file
    "test_pipeline_dvc.py",
    "test_sweep.py",
    "test_memory.py",
    "test_last_bit.py",  # every computing stage twice, once nudged
    "test_device_guard.py",  # every computing stage on the emulated device
    "test_ui.py",
    "test_cuda_check.py",
    "test_kernels.py",
    "test_server.py",  # three slow tests, each starting PostgreSQL and mlflow server
    "test_store.py",  # the longest fast-tier file of tests/tracking/
    "test_load.py",
    "test_report.py",
    "test_commands.py",
    "test_stages.py",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file keeps its own order


@pytest.fixture(scope="session")
def store_template(tmp_path_factory) -> Path:
    """An empty MLflow SQLite store, made once: MLflow's schema migrations take
    seconds, a copy milliseconds."""
    from pipeline import tracking

    path = tmp_path_factory.mktemp("store-template") / "mlflow.db"
    tracking.ensure_store(f"sqlite:///{path}")
    return path


@pytest.fixture
def store(tmp_path, store_template) -> str:
    """The URI of a fresh, empty MLflow store (a copy of the template)."""
    path = tmp_path / "mlflow.db"
    shutil.copyfile(store_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def torch_threads():
    """set(n): torch's thread count for the test (workers compute on one), restored after."""
    import torch

    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def default_cfg() -> Config:
    return validate(composed())


def small_overrides() -> list[str]:
    """A config small enough for the stage and DVC tests to run in seconds."""
    return [
        "data.sequences=120",
        "data.split=[60,30,30]",
        "train.epochs=30",
        "study.seeds=4",
        "study.bootstrap=20",
        "dynamics.phase_seeds=2",
        "grid.seeds=2",
        "grid.epochs=30",
        "debate.seeds=4",
        "debate.trained_seeds=2",
        "debate.permutations=5",
        "abstraction.epochs=20",
        "roar.seeds=2",
    ]


@pytest.fixture(scope="session")
def small_cfg() -> Config:
    return validate(composed(small_overrides()))


def shrink_conf(repo: Path, overrides: list[str]) -> None:
    """Write `group.key=value` overrides into a project's conf/ (the lesson's files),
    so that DVC, `dvc exp run -S` included, composes the small config."""
    import re

    for override in overrides:
        dotted, value = override.split("=", 1)
        group, key = dotted.split(".")
        path = repo / "conf" / group / "lesson.yaml"
        text, count = re.subn(
            rf"^{key}: [^#\n]*?(\s*#.*)?$", rf"{key}: {value}\1", path.read_text(), flags=re.M
        )
        assert count == 1, (path, key)
        path.write_text(text)


def git_commit(repo: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]
        + ["commit", "-q", "--allow-empty", "-m", message],
        cwd=repo,
        check=True,
    )


def changed_files(repo: Path) -> list[str]:
    """`git status --porcelain` of tracked files: what a repro rewrote."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()


def clone_project(dest: Path) -> Path:
    """A fresh git clone of this repository with the working tree's changes on top:
    what CI sees, but testing uncommitted work too. No DVC cache, no outputs
    that git does not track."""
    from benchmarks.bench_memory import project_copy

    subprocess.run(["git", "clone", "-q", str(PROJECT_ROOT), str(dest)], check=True)
    project_copy(dest, untracked=True)
    git_commit(dest, "working tree")
    return dest
