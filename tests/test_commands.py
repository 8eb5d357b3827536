"""Every command of the project answers `--help` without side effects, and a bad
config group option is one line naming the allowed ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.__main__ import COMMANDS
from pipeline.config import PROJECT_ROOT

STAGES = ["generate", "train", "evaluate", "study", "faithfulness", "report", "track"]
STAGES += ["grid", "next_lesson"]


def run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [["-m", f"pipeline.stages.{stage}", "--help"] for stage in STAGES]
    + [["-m", "pipeline", command, "--help"] for command in COMMANDS]
    + [["-m", "pipeline.run", "--help"], ["-m", "pipeline.study", "--help"]],
    ids=lambda args: " ".join(args[1:-1]),
)
def test_every_command_answers_help_and_touches_nothing(args, tmp_path):
    """Run from an empty folder: a command that did its work would fail there (no
    params.yaml) or leave files behind."""
    result = run(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_params_command_answers_help_without_rewriting_params_yaml():
    params = PROJECT_ROOT / "params.yaml"
    before = (params.read_bytes(), params.stat().st_mtime_ns)
    result = run(["-m", "pipeline.params", "--help"], PROJECT_ROOT)
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m pipeline.params")
    assert (params.read_bytes(), params.stat().st_mtime_ns) == before


@pytest.mark.parametrize(("override", "group"), [("model=nope", "model"), ("task=nope", "task")])
def test_an_unknown_group_option_is_one_line_naming_the_allowed(override, group, tmp_path):
    result = run(["-m", "pipeline.run", override, f"hydra.run.dir={tmp_path}"], PROJECT_ROOT)
    options = sorted(path.stem for path in (PROJECT_ROOT / "conf" / group).glob("*.yaml"))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: invalid config value {override}: no conf/{group}/nope.yaml; "
        f"allowed: {', '.join(options)}\n"
    )
