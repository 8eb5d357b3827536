"""The MLflow store: its URI, SQLite file, artifacts folder and lock; creating it
whole; checking a server; its errors as one line.

An inter-process file lock serialises store creation, experiment creation and
logging, so parallel `dvc exp` runs on a fresh SQLite store neither race on the
schema nor lose a run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import sqlite3
import stat
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

from pipeline.config import PROJECT_ROOT, TrackingConfig
from pipeline.core.errors import TrackingError

LOCK_TIMEOUT_S = 120
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700  # a store's files and folders: the owner's
SIDECARS = ("-wal", "-shm", "-journal", ".lock")  # SQLite's journals, our lock file
SERVER_TIMEOUT_S = 10  # a tracking server whose API does not answer by then is unreachable


def store_root() -> Path:
    """The project root, also when DVC runs an experiment in a temporary copy."""
    return Path(os.environ.get("DVC_ROOT") or PROJECT_ROOT)


def store_uri(cfg: TrackingConfig) -> str:
    """tracking.uri, else $MLFLOW_TRACKING_URI (MLflow's convention), else the
    project's SQLite store: a config value wins over the environment."""
    return (
        cfg.uri
        or os.environ.get("MLFLOW_TRACKING_URI")
        or f"sqlite:///{store_root() / 'mlflow.db'}"
    )


def sqlite_file(uri: str) -> Path | None:
    """The database file of a SQLite store URI; None for any other store."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def artifact_folder(uri: str | None = None) -> Path:
    """`mlartifacts/` beside a SQLite store's database, else in the project root.

    Beside the store, not the project: a copied project, or clones sharing one store
    through MLFLOW_TRACKING_URI, then keep artifacts with the store that lists them.
    """
    database = sqlite_file(uri) if uri else None
    return (database.absolute().parent if database else store_root()) / "mlartifacts"


def artifact_location(uri: str | None = None) -> str:
    return artifact_folder(uri).as_uri()


def local_path(location: str) -> Path | None:
    """The folder of a file: URI or a plain path; None for a remote location (s3:, ...)."""
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    return Path(location) if not parsed.scheme else None


def check_artifact_location(uri: str, recorded: str) -> None:
    """Refuse a SQLite store whose experiment keeps its artifacts in a local folder not
    beside it: the store was copied or moved, and its runs would write into the
    folder of the project it came from."""
    database, folder = sqlite_file(uri), local_path(recorded)
    expected = artifact_folder(uri)
    if database is None or folder is None or folder.resolve() == expected.resolve():
        return
    raise TrackingError(
        f"cannot write MLflow store {uri}: it records artifacts in {folder}, not beside it "
        f"in {expected}: the store was copied or moved from another project; move it back, "
        f"or delete {database} (and {expected}/) to start a fresh store here"
    )


def lock_path(uri: str) -> Path:
    """A lock file beside a SQLite store, else in the project root."""
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///") + ".lock")
    return store_root() / f".mlflow-{hashlib.sha256(uri.encode()).hexdigest()[:12]}.lock"


def locked(uri: str, log):
    """`log()` under the store's inter-process lock, store errors as one line."""
    check_server(uri)
    lock = lock_path(uri)
    check_lock_file(lock, uri)
    store_lock = FileLock(str(lock), timeout=LOCK_TIMEOUT_S, mode=PRIVATE_FILE)
    try:
        with _waiting_for(store_lock, uri):
            ensure_store(uri)
            keep_private(uri)  # a store from before: private from now on
            try:
                return log()
            finally:
                keep_private(uri)  # what MLflow wrote meanwhile (copies keep their mode)
    except Timeout:
        raise TrackingError(
            f"MLflow store {uri} is locked by another process (waited {LOCK_TIMEOUT_S} s "
            f"for {lock})"
        ) from None
    except store_errors() as err:
        raise TrackingError(store_error(uri, err)) from err


@contextmanager
def _waiting_for(lock: FileLock, uri: str) -> Iterator[None]:
    """Hold `lock`; when another process holds it, say so before waiting (a repro
    that seems to hang is waiting for a sweep or another experiment to log)."""
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"waiting for {lock.lock_file}: another process is logging to {uri}", flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def ensure_store(uri: str) -> None:
    """Create a missing SQLite store whole or not at all.

    MLflow migrates a new database in many steps; Ctrl-C between two of them left a
    store that every later call refused (`table _alembic_tmp_... already exists`).
    The schema is built under a temporary name and linked into place, so the store
    path holds either nothing or a complete store. Callers hold the store's lock.
    """
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri.removeprefix("sqlite:///"))
    if path.exists():
        return
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    # A new name each time: MLflow caches what it knows of a database URI per process.
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    # Made empty and private first (SQLite takes an empty file as a new database, and
    # gives its journals the database's mode): never readable by others, whatever
    # the umask.
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    try:
        SqlAlchemyStore(f"sqlite:///{partial}", artifact_location(uri)).engine.dispose()
        os.link(partial, path)  # never replaces a store another process made meanwhile
    except FileExistsError:
        pass
    finally:
        partial.unlink(missing_ok=True)


def store_files(database: Path) -> list[Path]:
    """A SQLite store's database and the files SQLite and the lock keep beside it."""
    return [database, *(database.with_name(database.name + end) for end in SIDECARS)]


def keep_private(uri: str) -> None:
    """A SQLite store the owner's alone: its files 0600, its artifacts' folders 0700
    and files 0600, whatever the umask (MLflow makes folders and copies artifacts
    with their source's mode). Another local user would otherwise read every run
    with sqlite3, and the artifacts directly, whatever the UI's login. Files of
    another owner (a store shared on purpose) are left as they are; a store is
    shared through a tracking server (`python -m pipeline server`), not its files."""
    database = sqlite_file(uri)
    if database is None:
        return
    artifacts = artifact_folder(uri)
    with suppress(OSError):  # no store yet, or no folder to be made: MLflow's write says why
        if database.exists():
            artifacts.mkdir(mode=PRIVATE_FOLDER)  # before MLflow makes it with the umask's
    for path in store_files(database):
        _make_private(path)
    if artifacts.is_symlink():
        return
    for folder, _, names in os.walk(artifacts):  # through no link
        _make_private(Path(folder))
        for name in names:
            _make_private(Path(folder) / name)


def _make_private(path: Path) -> None:
    """Take group's and others' bits off `path`, if this user owns it and it is no link
    (the owner's own bits stay: a read-only store stays read-only)."""
    try:
        found = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(found.st_mode) or found.st_uid != os.geteuid():
        return
    if stat.S_IMODE(found.st_mode) & 0o077:
        with suppress(OSError):  # a read-only disk or file: its write fails, and says so
            path.chmod(stat.S_IMODE(found.st_mode) & ~0o077)


def check_server(uri: str) -> None:
    """Fail within SERVER_TIMEOUT_S when a tracking server does not serve its API
    (MLflow's client would retry for minutes, after training), naming the URI.

    The call is the client's own, a one-experiment search with the client's login
    (MLFLOW_TRACKING_USERNAME and _PASSWORD): a server answers /health while its
    database is down, its API does not. An error status from 500 up, a refused
    login (401), a timeout or a refused connection fails; another 4xx passes: the
    server is there, and a proxy or an older server without the route answers it."""
    if not uri.startswith(("http://", "https://")):
        return
    search = urllib.request.Request(
        f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search",
        data=json.dumps({"max_results": 1}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    user = os.environ.get("MLFLOW_TRACKING_USERNAME")
    if user:
        token = f"{user}:{os.environ.get('MLFLOW_TRACKING_PASSWORD', '')}".encode()
        search.add_header("Authorization", "Basic " + base64.b64encode(token).decode())
    try:
        with urllib.request.urlopen(search, timeout=SERVER_TIMEOUT_S):
            return
    except urllib.error.HTTPError as err:
        if err.code == 401:
            raise TrackingError(
                f"MLflow tracking server {uri} refused the login"
                + (f" of user {user!r}" if user else "")
                + ": set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD to its login "
                "(python -m pipeline server prints them)"
            ) from None
        if err.code < 500:
            return
        reason = f"HTTP {err.code} {err.reason}"
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
    raise TrackingError(f"cannot reach MLflow tracking server {uri}: {reason}") from None


def check_lock_file(lock: Path, uri: str) -> None:
    """FileLock waits its whole timeout on a lock file it cannot create, then blames
    another process; say what is wrong at once."""
    try:
        os.close(os.open(lock, os.O_RDWR | os.O_CREAT, PRIVATE_FILE))
    except OSError as err:
        raise TrackingError(
            f"cannot create the lock file {lock} for MLflow store {uri}: {err.strerror}"
        ) from None


def experiment_id(uri: str, name: str) -> str | None:
    """The id of experiment `name` in the store at `uri`, None when it has none."""
    from mlflow.tracking import MlflowClient

    try:
        found = MlflowClient(tracking_uri=uri).get_experiment_by_name(name)
    except store_errors() as err:
        raise TrackingError(f"cannot read MLflow store {uri}: {first_line(err)}") from err
    return None if found is None else found.experiment_id


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store that cannot be reached, created or written raises."""
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    return (MlflowException, SQLAlchemyError, sqlite3.Error, OSError)


# SQLAlchemy puts this note before the database's own error when a query flushes
# pending writes: as the first line it hid the reason (a read-only store).
AUTOFLUSH_NOTE = "(raised as a result of Query-invoked autoflush"
READ_ONLY = "attempt to write a readonly database"  # SQLite's words


def first_line(err: BaseException) -> str:
    """The error's first line that says what went wrong, not SQLAlchemy's autoflush note."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(AUTOFLUSH_NOTE)] or lines
    return lines[0].strip() if lines else type(err).__name__


def read_only_reason(uri: str, err: BaseException, writing: bool = True) -> str | None:
    """Why a SQLite store failed when it is read-only, else None.

    SQLite says "attempt to write a readonly database" for a database it opened
    read-only, but "disk I/O error" when the file turns read-only under an open
    connection (chattr +i); so a failed write also checks the file's own mode
    (os.access sees an immutable file as read-only even for root).
    """
    database = sqlite_file(uri)
    if database is None:
        return None
    if writing and database.exists() and not os.access(database, os.W_OK):
        return f"the database file {database} is read-only"
    if not any(READ_ONLY in str(cause) for cause in causes(err)):
        return None
    if database.parent.is_dir() and not os.access(database.parent, os.W_OK):
        return f"the folder {database.parent} of the database file is read-only"  # no journal
    return f"the database file {database} is read-only"


def causes(err: BaseException) -> list[BaseException]:
    """`err` and the errors it was raised from (MLflow wraps SQLAlchemy's, which wraps
    sqlite3's)."""
    chain: list[BaseException] = []
    while err is not None and all(err is not seen for seen in chain):
        chain.append(err)
        err = err.__cause__ or err.__context__
    return chain


def store_error(uri: str, err: BaseException, action: str = "write") -> str:
    """One line for an error of the store at `uri`: a read-only store said as such."""
    reason = read_only_reason(uri, err, writing=action == "write") or first_line(err)
    return f"cannot {action} MLflow store {uri}: {reason}"


class _RaisedStoreErrors(logging.Filter):
    """MLflow logs the whole traceback of a database error (~140 lines) and then raises
    it; the raised error is reported as one line (store_error), so the log is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is None


# Only this package uses MLflow's store, and every error it raises ends in store_error.
logging.getLogger("mlflow.store.db.utils").addFilter(_RaisedStoreErrors())
