"""`python -m pipeline server` (pipeline/scaleout/server.py): PostgreSQL and
`mlflow server` behind the owner's login, stopped with the command, and its holes
(issue 22): a busy port, PostgreSQL's authentication, a second server on one
folder, children that outlive a killed server, a folder PostgreSQL cannot enter,
plain HTTP beyond loopback. The slow tests each start a server of their own: what
they check is the start and the stop."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest

from pipeline import tracking
from pipeline.config import PROJECT_ROOT
from pipeline.core.errors import PipelineError
from tests.conftest import assert_login_required, kill_group
from tests.scaleout.helpers import (
    logged_in,
    require_postgres,
    run_module,
    server_root,
    start_server_command,
)


@pytest.mark.slow
def test_the_server_command_serves_until_sigterm_and_stops_what_it_started():
    """Issue 34, case 3, too: any local user could create and delete experiments and
    upload artifacts through its API; it now asks for the login it prints."""
    from pipeline.scaleout.server import server_login
    from pipeline.tracking.loopback import free_port

    require_postgres()
    root = Path(tempfile.mkdtemp(prefix="tracking-server-"))
    root.chmod(0o755)
    port = free_port()
    command = [sys.executable, "-m", "pipeline", "server", str(root / "store"), "--port", str(port)]
    server = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert server.stdout.readline().startswith(f"tracking server: http://127.0.0.1:{port}")
        server.stdout.readline()  # point jobs at it
        password = shlex.quote(str(root / "store" / "auth" / "password"))
        assert server.stdout.readline() == (
            f'with its login: MLFLOW_TRACKING_USERNAME=admin MLFLOW_TRACKING_PASSWORD="$(cat '
            f'{password})"\n'
        )
        with logged_in(root / "store"):
            tracking.check_server(f"http://127.0.0.1:{port}")  # its API answers
        no_login = {"MLFLOW_TRACKING_USERNAME": "", "MLFLOW_TRACKING_PASSWORD": ""}
        with (
            mock.patch.dict(os.environ, no_login),  # not the module's server's login
            pytest.raises(PipelineError, match="refused the login: set MLFLOW_TRACKING_USERNAME"),
        ):
            tracking.check_server(f"http://127.0.0.1:{port}")  # a job without the login
        owner = server_login(root / "store")
        assert_login_required(f"http://127.0.0.1:{port}", owner)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        with pytest.raises(PipelineError, match="cannot reach MLflow tracking server"):
            tracking.check_server(f"http://127.0.0.1:{port}")
        postgres = subprocess.run(["pgrep", "-f", str(root)], capture_output=True, text=True)
        assert postgres.stdout == ""  # PostgreSQL stopped too
    finally:
        kill_group(server)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_the_server_s_postgres_wants_the_secret_which_no_command_line_or_log_shows(monkeypatch):
    import psycopg2

    from pipeline.tracking.loopback import free_port

    require_postgres()
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")  # no password from ~/.pgpass either
    root, port = server_root(), free_port()
    server = start_server_command(root / "store", port)
    try:
        with logged_in(root / "store"):
            tracking.check_server(f"http://127.0.0.1:{port}")  # its API reads the store
        secret_file = root / "store" / "postgres" / "password"
        assert secret_file.stat().st_mode & 0o777 == 0o600
        secret = secret_file.read_text().strip()
        assert len(secret) >= 32
        pid_file = root / "store" / "postgres" / "data" / "postmaster.pid"
        pg_port = int(pid_file.read_text().splitlines()[3])
        login = {"host": "127.0.0.1", "port": pg_port, "user": "mlflow", "dbname": "postgres"}
        for wrong in ({}, {"password": "wrong"}, {"user": "postgres"}):
            with pytest.raises(psycopg2.OperationalError, match="password"):
                psycopg2.connect(**{**login, **wrong})
        psycopg2.connect(**login, password=secret).close()
        sockets = [Path(d) / f".s.PGSQL.{pg_port}" for d in ("/tmp", "/var/run/postgresql")]
        assert [s for s in sockets if s.exists()] == []  # no unix socket at all
        assert list((root / "store").rglob(".s.PGSQL.*")) == []
        shown = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                if secret.encode() in cmdline.read_bytes():
                    shown.append(cmdline)
        assert shown == []
        for log in ("mlflow-server.log", "postgres/postgres.log"):
            assert secret not in (root / "store" / log).read_text()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        kill_group(server)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_a_second_server_on_the_folder_names_the_log_and_a_killed_one_leaves_nothing_serving():
    from pipeline.tracking.loopback import free_port

    require_postgres()
    root, port = server_root(), free_port()
    server = start_server_command(root / "store", port)
    uri = f"http://127.0.0.1:{port}"
    try:
        second = run_module("pipeline", "server", str(root / "store"), "--port", str(free_port()))
        assert second.returncode == 1
        log = root / "store" / "postgres" / "postgres.log"
        [error] = second.stderr.strip().splitlines()
        assert error.startswith('error: PostgreSQL exited: lock file "postmaster.pid" already')
        assert error.endswith(f"(log: {log})")
        with logged_in(root / "store"):
            tracking.check_server(uri)  # the first one still serves
        server.kill()  # SIGKILL: nothing of it can stop its children
        server.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = subprocess.run(
                ["pgrep", "-f", "--", f"{root}|--port {port} --workers"],
                capture_output=True,
                text=True,
            ).stdout
            if not left:
                break
            time.sleep(0.5)
        assert left == ""  # PostgreSQL, mlflow server and uvicorn stopped
        with pytest.raises(PipelineError, match=f"cannot reach MLflow tracking server {uri}"):
            tracking.check_server(uri)
    finally:
        kill_group(server)
        shutil.rmtree(root, ignore_errors=True)


def test_a_busy_port_is_one_error_naming_it_before_the_server_starts_anything(
    tmp_path, monkeypatch
):
    """Before anything starts, as structure rather than a time (issue 59: the bound of
    30 s failed under load): no process started, no folder made."""
    import socket

    from pipeline.scaleout import server

    message = "error: port {} on 127.0.0.1 is in use: Address already in use"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = ["pipeline", "server", str(tmp_path / "store"), "--port", str(port)]
        result = run_module(*command, timeout=60)
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [message.format(port)]
        # In process: every process (PostgreSQL's, mlflow's) starts through Popen.
        started = []
        monkeypatch.setattr(subprocess, "Popen", lambda *args, **kw: started.append(args))
        with pytest.raises(SystemExit) as exit_:
            server.main([str(tmp_path / "store"), "--port", str(port)])
    assert exit_.value.code == message.format(port) and started == []
    assert not (tmp_path / "store").exists()  # nothing started


def test_a_folder_postgres_cannot_enter_is_one_line_with_the_way_out():
    """Issue 34, case 17: `pipeline server` as root in a folder that only root can enter
    failed at initdb (the postgres user cannot read the secret)."""
    from pipeline.scaleout.server import check_reachable_by_others

    base = Path(tempfile.mkdtemp(prefix="tracking-server-"))  # not pytest's 0700 folders
    try:
        base.chmod(0o755)
        check_reachable_by_others(base / "postgres")
        private = base / "private"
        private.mkdir()
        private.chmod(0o700)
        with pytest.raises(PipelineError) as err:
            check_reachable_by_others(private / "store" / "postgres")
        message = str(err.value)
        assert f"cannot enter {private} (mode 700)" in message
        assert f"`chmod o+x {private}`" in message and "\n" not in message
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.5", True),
        ("head-node", True),
        ("127.0.0.1", False),
        ("127.0.0.2", False),
        ("::1", False),
        ("localhost", False),
    ],
)
def test_a_server_beyond_loopback_warns_that_the_password_crosses_in_plain_http(
    host, warned, monkeypatch, capsys
):
    """Issue 53, item 3: `--host 0.0.0.0` keeps the login, but MLflow speaks plain HTTP.
    One warning line before anything starts, with the remedy; none on loopback."""
    from pipeline.scaleout import server

    @contextlib.contextmanager
    def refused(*_args, **_kwargs):
        raise PipelineError("not started in this test")
        yield

    monkeypatch.setattr(server, "tracking_server", refused)
    with pytest.raises(SystemExit) as exit_:
        server.main(["store", "--host", host])
    assert exit_.value.code == "error: not started in this test"
    lines = capsys.readouterr().err.splitlines()
    warning = (
        f"warning: serving on {host}, beyond loopback, in plain HTTP: the admin password "
        "crosses the network base64-encoded on every request; put a TLS-terminating proxy "
        "(nginx, Caddy) in front, or keep the server on 127.0.0.1"
    )
    assert lines == ([warning] if warned else [])
