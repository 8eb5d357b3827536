"""Shared fixtures: the composed default config and one in-process lesson run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.config import PROJECT_ROOT, Config, compose, validate

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


def write_records(cfg: Config, stages: list[str]) -> None:
    """Provenance records (pipeline.provenance) for outputs a test wrote by hand, in
    the current directory: each stage's params and the hash of its files that exist."""
    from pipeline import provenance
    from pipeline.files import write_json

    for stage in stages:
        outputs = [p for p in provenance.output_files(cfg, stage) if Path(p).is_file()]
        record = {
            "stage": stage,
            "params": provenance.stage_params(cfg, stage),
            "outputs": {path: provenance.sha256(path) for path in outputs},
        }
        write_json(provenance.record_path(cfg, stage), record)


def run_stage(stage: str, cwd: Path) -> subprocess.CompletedProcess:
    """A DVC stage entry point as DVC runs it: a fresh process in the project root."""
    return subprocess.run(
        [sys.executable, "-m", f"pipeline.stages.{stage}"], cwd=cwd, capture_output=True, text=True
    )


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


@pytest.fixture(scope="session")
def default_cfg() -> Config:
    return validate(compose())


def small_overrides() -> list[str]:
    """A config small enough for the stage and DVC tests to run in seconds."""
    return [
        "data.sequences=120",
        "data.split=[60,30,30]",
        "train.epochs=30",
        "study.seeds=4",
        "study.bootstrap=20",
    ]


@pytest.fixture(scope="session")
def small_cfg() -> Config:
    return validate(compose(small_overrides()))


def clone_project(dest: Path) -> Path:
    """A fresh git clone of this repository with the working tree's changes on top:
    what CI sees, but testing uncommitted work too. No DVC cache, no outputs
    that git does not track."""
    subprocess.run(["git", "clone", "-q", str(PROJECT_ROOT), str(dest)], check=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, (item.decode() for item in listed)):
        source = PROJECT_ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "working tree",
        ],
        cwd=dest,
        check=True,
    )
    return dest
