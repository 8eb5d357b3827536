"""What the config tests share: a refusal's one line, from `validate` in this process
and from a command under `python -X importtime` (what it imported before refusing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.config import PROJECT_ROOT, validate
from pipeline.core.errors import ConfigError
from tests.conftest import composed


def refusal(overrides: list[str]) -> str:
    """The one-line ConfigError that validating conf/ with `overrides` raises."""
    with pytest.raises(ConfigError) as err:
        validate(composed(overrides))
    text = str(err.value)
    assert "\n" not in text, text
    return text


def with_importtime(command: list[str], cwd: Path) -> tuple[int, list[str], list[str]]:
    """`command` under `python -X importtime`: its exit code, the modules it imported,
    and the other lines of its stderr."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}  # this checkout's, from any folder
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,  # keeps a hang (the old anchor bomb) from stalling the suite
    )
    lines = result.stderr.splitlines()
    imported = [line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time")]
    return result.returncode, imported, [line for line in lines if not line.startswith("import")]
