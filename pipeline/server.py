"""One MLflow tracking server for every worker of a sweep, on PostgreSQL.

    python -m pipeline.server .mlflow-server [--port 5000]

Starts PostgreSQL (initdb and pg_ctl into DIR/postgres, loopback only) and
`mlflow server` with that backend store and its artifacts under DIR/artifacts,
served through the server (--artifacts-destination): workers need only the URL,
no shared disk. Prints the URI to give jobs (tracking.uri=... or
MLFLOW_TRACKING_URI) and runs until Ctrl-C, then stops both. DIR keeps the
store between starts. For workers on other machines, start it with
--host 0.0.0.0 and make DIR/artifacts durable (or point --artifacts-destination
at an object store by editing the command this module runs).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import PipelineError

START_TIMEOUT_S = 60
DATABASE = "mlflow"


def free_port() -> int:
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def postgres_bin(name: str) -> str:
    """A PostgreSQL program: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None
    )
    if found is None:
        raise PipelineError(f"{name} not found: install PostgreSQL (Debian: postgresql)")
    return found


def _as_postgres_user() -> dict:
    """PostgreSQL refuses to run as root: run it as the `postgres` user then."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PipelineError("running as root and no `postgres` user to run PostgreSQL") from None
    return {"user": "postgres", "group": "postgres"}


def _run(args: list[str], what: str, **kwargs) -> None:
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise PipelineError(f"{what} failed: {detail[-1] if detail else result.returncode}")


def start_postgres(root: Path, port: int) -> str:
    """PostgreSQL in root (created on first use) on 127.0.0.1:port; returns the
    SQLAlchemy URI of its `mlflow` database."""
    user = _as_postgres_user()
    root.mkdir(parents=True, exist_ok=True)
    if user:
        shutil.chown(root, "postgres", "postgres")
    data = root / "data"
    if not (data / "PG_VERSION").exists():
        initdb = [postgres_bin("initdb"), "-D", str(data), "-A", "trust", "-U", DATABASE]
        _run([*initdb, "--no-sync", "-E", "UTF8"], "initdb", **user)
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
    pg_ctl = [postgres_bin("pg_ctl"), "-D", str(data), "-l", str(root / "postgres.log")]
    _run(
        [*pg_ctl, "-o", options, "-w", "-t", str(START_TIMEOUT_S), "start"], "pg_ctl start", **user
    )
    import psycopg2

    with contextlib.closing(
        psycopg2.connect(host="127.0.0.1", port=port, user=DATABASE, dbname="postgres")
    ) as db:
        db.autocommit = True
        with db.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if cursor.fetchone() is None:
                cursor.execute(f"CREATE DATABASE {DATABASE}")
    return f"postgresql+psycopg2://{DATABASE}@127.0.0.1:{port}/{DATABASE}"


def stop_postgres(root: Path) -> None:
    pg_ctl = [postgres_bin("pg_ctl"), "-D", str(root / "data"), "-m", "fast", "-w", "stop"]
    subprocess.run(pg_ctl, capture_output=True, **_as_postgres_user())


def wait_healthy(uri: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
            raise PipelineError(f"mlflow server exited: {' '.join(tail)} (log: {log})")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{uri}/health", timeout=2):
            return
        time.sleep(0.5)
    raise PipelineError(f"mlflow server at {uri} did not answer within {START_TIMEOUT_S} s")


@contextlib.contextmanager
def tracking_server(root: Path, port: int | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """PostgreSQL and `mlflow server` while the block runs; yields the tracking URI."""
    root = Path(root).resolve()
    pg_port = free_port()
    backend = start_postgres(root / "postgres", pg_port)
    port = port or free_port()
    log = root / "mlflow-server.log"
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", backend,
        "--artifacts-destination", str(root / "artifacts"),
        "--host", host, "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    try:
        with open(log, "ab") as sink:
            process = subprocess.Popen(
                command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        uri = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(uri, process, log)
            yield uri
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    finally:
        stop_postgres(root / "postgres")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="where the store lives (kept between starts)")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--host", default="127.0.0.1", help="0.0.0.0 for workers elsewhere")
    args = parser.parse_args(argv)
    try:
        with tracking_server(args.dir, args.port, args.host) as uri:
            print(f"tracking server: {uri} (PostgreSQL store and artifacts in {args.dir})")
            print(f"point jobs at it: tracking.uri={uri}  or  MLFLOW_TRACKING_URI={uri}")
            print("Ctrl-C stops it", flush=True)
            stop = {signal.SIGINT, signal.SIGTERM}
            signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # after the servers started
            signal.sigwait(stop)
    except PipelineError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
