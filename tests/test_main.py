"""`python -m pipeline COMMAND`: the commands beside the DVC stages."""

from __future__ import annotations

import subprocess
import sys

from pipeline.__main__ import COMMANDS
from pipeline.config import PROJECT_ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=PROJECT_ROOT, capture_output=True, text=True
    )


def test_alone_it_lists_every_command_with_its_first_line():
    result = run()
    assert result.returncode == 2
    for command in COMMANDS:
        assert f"\n  {command} " in result.stdout
    assert "How the run-to-run gap moved across versions" in result.stdout


def test_an_unknown_command_is_one_line_naming_the_allowed():
    result = run("nope")
    assert result.returncode == 1
    assert result.stderr == f"error: unknown command 'nope'; allowed: {', '.join(COMMANDS)}\n"


def test_a_command_s_help_names_it_as_typed():
    result = run("diff", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: python -m pipeline diff ")
