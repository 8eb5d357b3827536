"""Servers on loopback ports: a free port, a port in use refused, and waiting
until the mlflow server started here (not another one) answers.

pipeline.scaleout.server (PostgreSQL and `mlflow server`) and pipeline.browse.ui
(`mlflow ui`) start their servers through these.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from pipeline.core.errors import PipelineError

START_TIMEOUT_S = 60


def _interrupt(signum: int, _frame) -> None:
    raise KeyboardInterrupt  # SIGTERM too: the caller's finally stops what it started


def stop_on_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt, whatever this process inherited: a
    shell starts a background job (`cmd &`, nohup) with SIGINT ignored, and Python
    then installs no handler of its own, so Ctrl-C or `kill -INT` did nothing."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)


def free_port() -> int:
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another server listens on: the health check would find that
    server, and the runs sent to this URI would land in its store."""
    try:
        family, *_, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as probe:
            # As uvicorn binds: a connection of a stopped server in TIME_WAIT is no conflict.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as err:
        raise PipelineError(f"port {port} on {host} is in use: {err.strerror}") from None


def _sockets_listening(port: int) -> set[str]:
    """`socket:[inode]` of each socket listening on `port`, from /proc/net (Linux)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                    found.add(f"socket:[{fields[9]}]")
    return found


def _sockets_held(group: int) -> set[str]:
    """What the file descriptors of process group `group` point to."""
    held = set()
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if os.getpgid(int(proc.name)) == group:
                held.update(os.readlink(fd) for fd in (proc / "fd").iterdir())
    return held


def serves_port(process: subprocess.Popen, port: int) -> bool:
    """Whether `process` (a session leader) or one of its children listens on `port`;
    True where /proc cannot tell."""
    listening = _sockets_listening(port)
    return not listening or bool(listening & _sockets_held(process.pid))


def wait_serving(
    uri: str, process: subprocess.Popen, log: Path, timeout: float = START_TIMEOUT_S
) -> None:
    """Wait until `process`, the mlflow server started in its own session, answers
    /health at `uri`. Another server answering there is an error: the runs sent to
    `uri` would land in its store."""
    port = urllib.parse.urlsplit(uri).port
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
            raise PipelineError(f"mlflow server exited: {' '.join(tail)} (log: {log})")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{uri}/health", timeout=2):
            if process.poll() is None and serves_port(process, port):
                return
            raise PipelineError(
                f"another server answers at {uri}, not the mlflow server started here (log: {log})"
            )
        time.sleep(0.5)
    raise PipelineError(f"mlflow server at {uri} did not answer within {timeout} s")
