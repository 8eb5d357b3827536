"""What the scale-out tests share: a small study config, running a command as a
user types it, the login of a tracking server's jobs, and starting `python -m
pipeline server` on PostgreSQL (skipped where PostgreSQL is absent, failed in CI)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from pipeline.config import PROJECT_ROOT, validate
from tests.conftest import composed

SMALL = ["study.seeds=40", "study.chunk=10", "study.bootstrap=50", "train.epochs=20"]


def small_cfg(*overrides: str):
    return validate(composed([*SMALL, *overrides]))


def run_module(module: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def logged_in(store: Path):
    """The environment of a job given the login of the server whose store is `store`
    (what `pipeline server` prints)."""
    from pipeline.scaleout.server import server_login

    with mock.patch.dict(os.environ, server_login(store).client_env()):
        yield


def require_postgres() -> None:
    """Skip without PostgreSQL; in CI fail (.ci/run installs it)."""
    if shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        return
    if os.environ.get("CI"):
        pytest.fail("PostgreSQL is not installed: .ci/run installs Debian's postgresql")
    pytest.skip("PostgreSQL is not installed (apt install postgresql)")


def server_root() -> Path:
    # Not under pytest's tmp_path: as root, PostgreSQL runs as `postgres`, which
    # cannot enter pytest's private (0700) directories.
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    return root


def start_server_command(store: Path, port: int) -> subprocess.Popen:
    """`python -m pipeline server store --port port`, once it has printed its URI."""
    command = [sys.executable, "-m", "pipeline", "server", str(store), "--port", str(port)]
    server = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert server.stdout.readline().startswith(f"tracking server: http://127.0.0.1:{port}")
    return server
