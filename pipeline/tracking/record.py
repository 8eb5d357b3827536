"""The store's record of the state logged last: the track stage's no-op check.

The track stage runs whenever what it logs changes, so it must know without
importing mlflow whether the store holds the current state. After logging a state, or
finding it through MLflow's client, `remember` writes a record of our own beside
the SQLite database, `mlflow.db.state.json`: the experiment, the state's digest,
the parent run, and the database file at that moment (device, inode, size,
modification time, SQLite's file change counter).

`logged_run` trusts the record only while the file is that very file, unwritten
since: a deleted, replaced or copied store is another file (inode, mtime), and
any write to it (a run deleted in the UI, another state logged) moves SQLite's
change counter and the mtime. Then it answers None and `log_state` asks the
store through MLflow's public client, logging the state if the store lacks it.
No SQL touches MLflow's tables; only the database header's first 100 bytes are
read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

from pipeline.tracking.store import sqlite_file

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100


def record_file(database: Path) -> Path:
    return database.with_name(f"{database.name}.state.json")


def fingerprint(database: Path) -> dict[str, int] | None:
    """The database file as it is now; None when it is missing, no SQLite database,
    in WAL mode (whose writes leave the main file alone) or being written (a journal)."""
    if any(database.with_name(f"{database.name}{s}").exists() for s in ("-journal", "-wal")):
        return None
    try:
        with open(database, "rb") as handle:
            header = handle.read(HEADER_BYTES)
            stat = os.fstat(handle.fileno())
    except OSError:
        return None
    if len(header) < HEADER_BYTES or not header.startswith(SQLITE_MAGIC) or header[18] == 2:
        return None
    return {
        "device": stat.st_dev,
        "inode": stat.st_ino,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "changes": int.from_bytes(header[24:28], "big"),  # SQLite's file change counter
    }


def tree_digest(root: Path) -> str:
    """sha256 over every file under `root`: each one's relative path and the sha256 of
    its bytes, in path order. A registered model's files (its code `pyfunc.py`, its
    `model.json`, MLmodel...) get one at registration; loading and the no-op check
    compare, so a changed, added or removed file is seen."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def logged_run(uri: str, experiment: str, digest: str) -> str | None:
    """The parent run that holds `digest`, as the store's record names it, without
    importing mlflow. None when the store is no SQLite file, has no record of this
    experiment and state, or changed since the record was written: then `log_state`
    decides."""
    database = sqlite_file(uri)
    if database is None:
        return None
    try:
        record = json.loads(record_file(database).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or (record.get("experiment"), record.get("state")) != (
        experiment,
        digest,
    ):
        return None
    current = fingerprint(database)
    if current is None or record.get("store") != current:
        return None
    models = record.get("models")
    if not isinstance(models, dict):  # a record without the models' digests
        return None
    for root, digest in models.items():
        try:
            if tree_digest(Path(root)) != digest:
                return None  # a model's files changed: registered.py checks and logs again
        except OSError:
            return None
    if not all(Path(path).is_file() for path in record.get("artifacts", [])):
        return None  # deleted artifacts: log_state logs them again
    return record.get("run")


def remember(
    uri: str,
    experiment: str,
    digest: str,
    run_id: str,
    artifacts: list[str] | None = None,
    models: dict[str, str] | None = None,
) -> None:
    """Record that the store at `uri` holds `digest` in run `run_id`, for the file as
    it stands, with the local files of its artifacts (`artifacts`: the no-op check
    finds them gone, after `rm -rf mlartifacts`, and lets `log_state` log them again)
    and the digest of each registered model's folder (`models`, {folder: tree_digest}:
    the no-op check finds a tampered model and lets `log_state` restore it).
    Called under the store's lock, after the last write; a record that cannot be
    written only costs the next check its speed."""
    database = sqlite_file(uri)
    if database is None:
        return
    target = record_file(database)
    current = fingerprint(database)
    with contextlib.suppress(OSError):
        if current is None:
            target.unlink(missing_ok=True)
            return
        record = {
            "experiment": experiment,
            "state": digest,
            "run": run_id,
            "store": current,
            "artifacts": artifacts or [],
            "models": models or {},  # the registered models' folders (registered.py)
        }
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle, indent=2, sort_keys=True)
                handle.write("\n")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
