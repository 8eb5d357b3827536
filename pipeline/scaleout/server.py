"""One MLflow tracking server for every worker of a sweep, on PostgreSQL.

    python -m pipeline server .mlflow-server [--port 5000]

Starts PostgreSQL (initdb into DIR/postgres, loopback TCP only, no unix socket)
and `mlflow server` with that backend store and its artifacts under
DIR/artifacts, served through the server (--artifacts-destination): workers need
only the URL, no shared disk. Prints the URI to give jobs (tracking.uri=... or
MLFLOW_TRACKING_URI) and runs until Ctrl-C, then stops both. DIR keeps the
store between starts. For workers on other machines, start it with
--host 0.0.0.0 and make DIR/artifacts durable (or point --artifacts-destination
at an object store by editing the command this module runs). MLflow speaks plain
HTTP: beyond loopback the admin password crosses the network base64-encoded on
every request, so it warns, and a TLS-terminating proxy belongs in front.

The MLflow server asks every request but /health for a login (MLflow's
basic-auth app, pipeline/tracking/auth.py): user admin, the password in
DIR/auth/password; jobs give it as MLFLOW_TRACKING_USERNAME and
MLFLOW_TRACKING_PASSWORD. PostgreSQL asks every connection for a password
(scram-sha-256): a secret made on first start, kept in DIR/postgres/password
(mode 0600). The MLflow server gets it
through its environment, never on a command line or in a log. A port in use is
an error before anything starts. PostgreSQL and MLflow run as children that
Linux stops when this process dies, even by SIGKILL.

DIR must be the invoking user's alone (pipeline/scaleout/folder.py): no planted
link, nothing in it that another user owns or may write; put it in your home or
the project, never in a folder another user could have prepared.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import pwd
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.core.errors import PipelineError
from pipeline.core.files import Writes
from pipeline.core.processes import start_server_child
from pipeline.scaleout.folder import check_server_folder
from pipeline.tracking.auth import APP_NAME, Login, login, write_secret
from pipeline.tracking.loopback import (
    START_TIMEOUT_S,
    check_port_free,
    free_port,
    stop_on_signals,
    wait_serving,
)

DATABASE = "mlflow"  # the database and its owner, PostgreSQL's superuser
PG_HBA = """\
# Written by pipeline server on every start: every connection gives the password.
local all all scram-sha-256
host  all all 127.0.0.1/32 scram-sha-256
host  all all ::1/128 scram-sha-256
"""


def postgres_bin(name: str) -> str:
    """A PostgreSQL program: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None
    )
    if found is None:
        raise PipelineError(f"{name} not found: install PostgreSQL (Debian: postgresql)")
    return found


def _as_postgres_user() -> dict:
    """PostgreSQL refuses to run as root: run it as the `postgres` user then, without
    root's supplementary groups."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PipelineError("running as root and no `postgres` user to run PostgreSQL") from None
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def check_reachable_by_others(root: Path) -> None:
    """As root, PostgreSQL runs as `postgres`, which must enter every folder above
    its cluster: a folder only root can enter made initdb fail without saying why."""
    for folder in reversed(Path(root).resolve().parents):
        mode = folder.stat().st_mode
        if not mode & 0o001:  # no search bit for other users
            raise PipelineError(
                f"PostgreSQL runs as the user postgres here, which cannot enter {folder} "
                f"(mode {mode & 0o777:o}): put the store under a folder "
                f"it can reach (e.g. /srv/mlflow), or `chmod o+x {folder}`"
            )


def _run(args: list[str], what: str, **kwargs) -> str:
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise PipelineError(f"{what} failed: {detail[-1] if detail else result.returncode}")
    return result.stderr


def _start(command: list[str], log: Path, death_signal: int, **kwargs) -> subprocess.Popen:
    """`command` writing to `log` (made private: 0600), stopped in order by this
    process, and by `death_signal` when it dies."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "ab") as sink:
        return start_server_child(command, sink, death_signal, **kwargs)


def _stop(process: subprocess.Popen, signum: int, group: bool = False, timeout: int = 20) -> None:
    def kill(signum: int) -> None:
        if group:  # mlflow's children too
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)

    with contextlib.suppress(ProcessLookupError):
        kill(signum)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            kill(signal.SIGKILL)
        process.wait()


def _log_since(log: Path, offset: int) -> list[str]:
    """The lines `log` got after `offset`."""
    with contextlib.suppress(OSError), open(log, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode(errors="replace").strip().splitlines()
    return []


def _write_secret(path: Path, secret: str, user: dict) -> None:
    """Only its owner may read it: whoever runs PostgreSQL (initdb reads it)."""
    write_secret(path, secret)
    if user:
        shutil.chown(path, "postgres", "postgres")


def _set_password(data: Path, secret: str, user: dict) -> None:
    """Give a store made before passwords one, in single-user mode: no connection
    is open meanwhile. The statement never reaches a log (log_min_error_statement)."""
    single = [postgres_bin("postgres"), "--single", "-D", str(data)]
    quiet = ["-c", "log_min_error_statement=panic", "-c", "unix_socket_directories="]
    sql = f"ALTER USER {DATABASE} PASSWORD '{secret}';\n"  # token_urlsafe: no quotes
    output = _run([*single, *quiet, "postgres"], "setting PostgreSQL's password", input=sql, **user)
    errors = [line for line in output.splitlines() if "ERROR:" in line]
    if errors:
        raise PipelineError(f"setting PostgreSQL's password failed: {errors[-1]}")


def _prepare_cluster(root: Path, user: dict) -> str:
    """The cluster in root/data (created on first use) with password authentication
    only; returns the superuser's password."""
    data, secret_file = root / "data", root / "password"
    if secret_file.exists():
        secret = secret_file.read_text().strip()
    else:
        secret = secrets.token_urlsafe(32)  # URL-safe: it goes into the store URI as is
        if (data / "PG_VERSION").exists():  # a store from before passwords
            _set_password(data, secret, user)
        _write_secret(secret_file, secret, user)
    if not (data / "PG_VERSION").exists():
        initdb = [postgres_bin("initdb"), "-D", str(data), "-U", DATABASE, "--no-sync"]
        auth = ["--auth=scram-sha-256", f"--pwfile={secret_file}", "-E", "UTF8"]
        _run([*initdb, *auth], "initdb", **user)
    (data / "pg_hba.conf").write_text(PG_HBA)  # also replaces an older store's `trust`
    return secret


def _wait_postgres(process: subprocess.Popen, port: int, secret: str, log: Path, offset: int):
    """A connection to the `postgres` database once PostgreSQL accepts one."""
    import psycopg2

    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            said = _log_since(log, offset)
            reasons = [line for line in said if "FATAL:" in line or "HINT:" in line] or said[-1:]
            reason = "; ".join(line.split(":  ", 1)[-1] for line in reasons)
            raise PipelineError(f"PostgreSQL exited: {reason} (log: {log})")
        try:
            return psycopg2.connect(
                host="127.0.0.1", port=port, user=DATABASE, password=secret, dbname="postgres"
            )
        except psycopg2.OperationalError as err:
            if time.monotonic() > deadline:
                reason = str(err).strip().splitlines()[0]
                raise PipelineError(
                    f"PostgreSQL did not accept a connection within {START_TIMEOUT_S} s: "
                    f"{reason} (log: {log})"
                ) from None
        time.sleep(0.2)


@contextlib.contextmanager
def postgres(root: Path, port: int) -> Iterator[str]:
    """PostgreSQL in root (created on first use) on 127.0.0.1:port while the block
    runs; yields the SQLAlchemy URI of its `mlflow` database, password included."""
    user = _as_postgres_user()
    root.mkdir(mode=0o700, exist_ok=True)
    if user:
        check_reachable_by_others(root)
        shutil.chown(root, "postgres", "postgres")
    secret = _prepare_cluster(root, user)
    log = root / "postgres.log"
    offset = log.stat().st_size if log.exists() else 0
    # In the foreground, not through pg_ctl (whose daemon outlives a killed parent).
    # SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to leave.
    command = [postgres_bin("postgres"), "-D", str(root / "data"), "-p", str(port)]
    options = ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="]
    process = _start([*command, *options], log, signal.SIGINT, **user)
    try:
        with contextlib.closing(_wait_postgres(process, port, secret, log, offset)) as db:
            db.autocommit = True
            with db.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
                if cursor.fetchone() is None:
                    cursor.execute(f"CREATE DATABASE {DATABASE}")
        yield f"postgresql+psycopg2://{DATABASE}:{secret}@127.0.0.1:{port}/{DATABASE}"
    finally:
        _stop(process, signal.SIGINT, timeout=START_TIMEOUT_S)


@contextlib.contextmanager
def mlflow_server(root: Path, backend: str, host: str, port: int, owner: Login) -> Iterator[str]:
    """`mlflow server` on `backend`, behind `owner`'s login, while the block runs;
    yields the tracking URI."""
    log = root / "mlflow-server.log"
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--artifacts-destination", str(root / "artifacts"),
        "--host", host, "--port", str(port), "--workers", "1", "--app-name", APP_NAME,
    ]  # fmt: skip
    # The store URI holds PostgreSQL's password: not on the command line, which any
    # local user reads in /proc, but in the variable `mlflow server
    # --backend-store-uri` reads, which only this user and root can.
    env = {**os.environ, "MLFLOW_BACKEND_STORE_URI": backend, **owner.server_env()}
    # No server-side jobs (GenAI scorers, which the pipeline does not use): their
    # consumer processes outlive a killed server and keep polling the store.
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
    process = _start(command, log, signal.SIGTERM, env=env)  # it passes SIGTERM on to uvicorn
    try:
        uri = f"http://127.0.0.1:{port}"
        wait_serving(uri, process, log)
        yield uri
    finally:
        _stop(process, signal.SIGTERM, group=True)


@contextlib.contextmanager
def tracking_server(root: Path, port: int | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """PostgreSQL and `mlflow server` while the block runs; yields the tracking URI.
    Its login is `server_login(root)`."""
    check_server_folder(root, _cluster_owners())  # as given: before links resolve
    root = Path(root).resolve()
    port = port or free_port()
    check_port_free(host, port)  # before anything starts
    _make_folder(root)
    (root / "artifacts").mkdir(mode=0o700, exist_ok=True)  # before mlflow makes it
    with (
        postgres(root / "postgres", free_port()) as backend,
        mlflow_server(root, backend, host, port, server_login(root)) as uri,
    ):
        yield uri


def _cluster_owners() -> frozenset[int]:
    """Who may own the cluster's files besides this user: `postgres`, as root."""
    if os.geteuid() != 0:
        return frozenset()
    try:
        return frozenset({pwd.getpwnam("postgres").pw_uid})
    except KeyError:
        return frozenset()


def _make_folder(folder: Path) -> None:
    """`folder` and the missing folders above it, writable by this user alone whatever
    the umask (the next start refuses a folder others may write)."""
    for missing in reversed([f for f in (folder, *folder.parents) if not f.exists()]):
        missing.mkdir(mode=0o755, exist_ok=True)


def server_login(root: Path) -> Login:
    """The login of the tracking server whose store is in `root` (made on first use)."""
    return login(Path(root) / "auth")


def beyond_loopback(host: str) -> bool:
    """Whether a server bound to `host` answers other machines: any address but a
    loopback one (0.0.0.0 and :: are every interface), any name but localhost."""
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        return host.lower() not in ("localhost", "localhost.")


def plain_http_warning(host: str) -> str:
    return (
        f"warning: serving on {host}, beyond loopback, in plain HTTP: the admin password "
        "crosses the network base64-encoded on every request; put a TLS-terminating "
        "proxy (nginx, Caddy) in front, or keep the server on 127.0.0.1"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", action=Writes, help="where the store lives (kept between starts)")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="0.0.0.0 for workers elsewhere (plain HTTP: put a TLS-terminating proxy in front)",
    )
    args = parser.parse_args(argv)
    if beyond_loopback(args.host):
        print(plain_http_warning(args.host), file=sys.stderr, flush=True)
    try:
        with tracking_server(args.dir, args.port, args.host) as uri:
            owner = server_login(args.dir)
            print(f"tracking server: {uri} (PostgreSQL store and artifacts in {args.dir})")
            print(f"point jobs at it: tracking.uri={uri}  or  MLFLOW_TRACKING_URI={uri}")
            secret = shlex.quote(str(owner.password_file))
            print(
                f"with its login: MLFLOW_TRACKING_USERNAME={owner.username} "
                f'MLFLOW_TRACKING_PASSWORD="$(cat {secret})"'
            )
            print("Ctrl-C stops it", flush=True)
            stop = {signal.SIGINT, signal.SIGTERM}
            stop_on_signals()  # neither ignored, even in a background job
            signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # after the servers started
            signal.sigwait(stop)
    except PipelineError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
