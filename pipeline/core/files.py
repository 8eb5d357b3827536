"""Atomic output files: write a temporary sibling, then rename over the target.

An interrupted or failing stage therefore leaves either the old file or the
new one, never half of one; inside `all_or_none` a stage's files are renamed
only once every one of them is written, so a full disk leaves all the old ones.
A stage whose launcher (DVC) is gone publishes nothing: an orphan of a killed
`dvc repro` must not overwrite what a later run made (`watch_launcher`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core import processes
from pipeline.core.errors import ConfigError, DiskFullError, OrphanedError, OutputError
from pipeline.core.paths import PROJECT_ROOT
from pipeline.core.precision import rounded, rounded_frame

if TYPE_CHECKING:  # pandas loads on use: the track stage's no-op check needs none
    import pandas as pd

# DVC runs a stage as `$SHELL -c CMD`: bash execs CMD, dash stays in between.
SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ksh", "mksh", "fish", "busybox"})
_launcher: tuple[int, ...] | None = None  # (parent pid[, the parent shell's parent pid])
# Inside all_or_none: (temporary file, or None to delete; target), published at its end.
_staged: list[tuple[str | None, Path]] | None = None


def byte_size(count: float) -> str:
    """1536 -> '1.5 KiB'."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB")
    power = 0
    while count >= 1024 and power < len(units) - 1:
        count, power = count / 1024, power + 1
    return f"{count:.1f}".removesuffix(".0") + f" {units[power]}"


def watch_launcher() -> None:
    """Remember which process started this one; from now on a file is published only
    while it is alive. Where the parent is a shell, the shell's parent (DVC) counts
    too. On Linux the parent's death also sends this process SIGTERM."""
    global _launcher
    if _launcher is not None:
        return
    parent = os.getppid()
    shell = processes.name_and_parent(parent)
    _launcher = (parent, shell[1]) if shell and shell[0] in SHELLS else (parent,)
    processes.die_with_parent(signal.SIGTERM)


def launcher_alive() -> bool:
    """False once the watched launcher has exited (this process was re-parented)."""
    if _launcher is None:
        return True
    if os.getppid() != _launcher[0]:
        return False
    if len(_launcher) == 1:
        return True
    shell = processes.name_and_parent(_launcher[0])
    return shell is not None and shell[1] == _launcher[1]


def _require_launcher(path: Path) -> None:
    if not launcher_alive():
        raise OrphanedError(
            f"the process that started this stage (pid {_launcher[-1]}) is gone: "
            f"not replacing {path}"
        )


def _publish(tmp: str | None, path: Path) -> None:
    _require_launcher(path)
    if tmp is None:
        path.unlink(missing_ok=True)
    else:
        os.replace(tmp, path)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then act as they would have: a
    Ctrl-C between two renames would publish half of a stage. (SIGKILL cannot wait;
    a record written last, which the readers check, covers that.) Python runs
    handlers in the main thread only: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, lambda n, _: received.append(n)) for signum in stops}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            signal.raise_signal(received[0])


@contextlib.contextmanager
def all_or_none(then: Callable[[], None] | None = None) -> Iterator[None]:
    """A stage's writes inside go to temporary files; the targets are replaced (and
    removals done) only after the last write succeeded, else none is. `then` (the
    stage's record) is written right after them, before a stopping signal acts."""
    global _staged
    _staged = staged = []
    try:
        yield
        if staged:
            _require_launcher(staged[0][1])  # before the first rename, not midway
        with signals_deferred():
            for tmp, path in staged:
                _publish(tmp, path)
            staged.clear()
            _staged = None
            if then is not None:
                then()
    finally:
        _staged = None
        for tmp, _ in staged:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


def remove(path: Path) -> None:
    """Delete an output (at the end of `all_or_none`, when inside it)."""
    if _staged is not None:
        _staged.append((None, Path(path)))
    else:
        Path(path).unlink(missing_ok=True)


def disk_full(path: Path, size: int) -> DiskFullError:
    free = shutil.disk_usage(path.parent).free
    return DiskFullError(
        f"no space left on the disk of {path.parent.resolve()} for {path} (needs "
        f"{byte_size(size)}, {byte_size(free)} free): free some space, then rerun"
    )


def write_bytes(path: Path, payload: bytes) -> None:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:  # a read-only or foreign folder, a name too long: one line
        raise not_writable(path, err) from None
    if path.is_dir():
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: it is a folder; name a file instead")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are ordinary files
        if _staged is not None:
            _staged.append((tmp, path))
            return
        _publish(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        if err.errno == errno.ENOSPC:
            raise disk_full(path, len(payload)) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def not_writable(path: Path, err: OSError) -> OutputError:
    reason = {
        errno.EACCES: "its folder is not writable",
        errno.EPERM: "its folder is not writable",
        errno.EROFS: "its folder is on a read-only file system",
        errno.ENAMETOOLONG: "its name is too long",
        errno.ENOSPC: "the disk is full",
    }.get(err.errno) or (f"{err.strerror}: {err.filename}" if err.filename else str(err))
    return OutputError(f"cannot write {path}: {reason}; earlier outputs are left as they were")


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_json(path: Path, document: dict, exact: bool = False) -> None:
    """Every float at the written precision (pipeline/core/precision.py); `exact` for a
    record of settings as they were given (provenance), which holds no result."""
    write_text(path, json.dumps(document if exact else rounded(document), indent=2) + "\n")


# What no command's output option may name, inside the project: the pipeline's
# outputs and sources (their folders), the store and the project's own files.
PROTECTED_DIRS = (
    "data",
    "models",
    "reports",
    "conf",
    "pipeline",
    "tests",
    "benchmarks",
    "scripts",
    "docs",
    "mlartifacts",
    ".mlflow-auth",
    ".git",
    ".dvc",
    ".venv",
)
STORE_FILE = "mlflow.db"


def first_link(path: str | Path, start: Path = Path()) -> Path | None:
    """The first symbolic link on relative `path`, walked from `start` (the file itself
    included); None where there is none."""
    parts = Path(path).parts
    for depth in range(1, len(parts) + 1):
        step = start.joinpath(*parts[:depth])
        if step.is_symlink():
            return step
    return None


def project_parts(path: Path) -> tuple[str, ...] | None:
    """`path`'s parts relative to the project root, resolved; None outside it."""
    root, resolved = PROJECT_ROOT.resolve(), Path(path).resolve()
    if resolved != root and root not in resolved.parents:
        return None
    return resolved.relative_to(root).parts


def protected(path: Path) -> bool:
    """Whether `path` resolves to the project root or into one of PROTECTED_DIRS."""
    parts = project_parts(path)
    return parts is not None and (not parts or parts[0] in PROTECTED_DIRS)


def command_output(path: Path, option: str, is_own: Callable[[bytes], bool] | None = None) -> Path:
    """`path` once it is safe for a command's output option (`diff --out`, `compare
    --csv`, `history --plot`, `merge_study --out`) to write: inside the project never a
    store, source, config or stage output, and anywhere an existing file only when
    `is_own` says it is this command's earlier output. Without `is_own` the option names
    a folder the command keeps its files in (`server DIR`): an existing folder is its
    own. Else one line naming the option and the path."""
    path = Path(path)
    wanted = "folder" if is_own is None else "file"
    refuse = None
    if protected(path):
        refuse = "the project's sources, configs, store and the pipeline's outputs"
    elif project_parts(path) is not None and path.resolve().name.startswith(STORE_FILE):
        refuse = "the store"
    elif is_own is None:
        if path.exists() and not path.is_dir():
            refuse = "a file, not a folder"
    elif path.is_dir():
        refuse = "a folder"
    elif path.exists() and not is_own(path.read_bytes()[:65536]):
        refuse = "a file this command did not write (it replaces only its own earlier output)"
    if refuse:
        raise ConfigError(
            f"{option} {path}: not written there ({refuse}); name a new {wanted}, e.g. in "
            "outputs/ or outside the project"
        )
    return path


class Writes(argparse.Action):
    """A command-line option (or argument) that names what the command writes: checked
    by `command_output` as argparse reads it, so before any work, in one line. Every
    writing option of `python -m pipeline`'s commands is one (tests/properties/test_main.py walks
    them); `is_own` as for command_output (None: a folder)."""

    def __init__(
        self, option_strings, dest, is_own: Callable[[bytes], bool] | None = None, **kwargs
    ):
        super().__init__(option_strings, dest, type=kwargs.pop("type", Path), **kwargs)
        self.is_own = is_own

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        option = option_string or self.metavar or self.dest.upper()
        try:
            path = command_output(values, option, self.is_own)
        except ConfigError as err:
            sys.exit(f"error: {err}")
        setattr(namespace, self.dest, path)


def require(path: Path) -> Path:
    """`path` if it exists, else a one-line error that says how to make it."""
    if not Path(path).exists():
        raise FileNotFoundError(f"missing {path}: run `dvc repro` first")
    return Path(path)


def read_json(path: Path, remake: str | None = None) -> Any:
    """The JSON document in `path`. One that is not JSON (half a file, an edit) is one
    line naming the file, what is wrong, and the way out: `remake`, the command that
    writes it again, where the caller knows it."""
    try:
        return json.loads(require(path).read_bytes())
    except json.JSONDecodeError as err:
        wrong = f"{err.msg} at line {err.lineno} column {err.colno}"
    except UnicodeDecodeError as err:
        wrong = f"not UTF-8 text at byte {err.start}"
    way_out = f"`{remake}`" if remake else "the stage or command that writes it"
    raise ConfigError(f"{path} is not JSON ({wrong}): rerun {way_out}")


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The bytes write_parquet writes, floats at the written precision: the same for
    the same frame (DVC's md5)."""
    buffer = io.BytesIO()
    rounded_frame(frame).to_parquet(buffer, index=False, engine="pyarrow", compression="zstd")
    return buffer.getvalue()


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    write_bytes(path, parquet_bytes(frame))


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_text(path, rounded_frame(frame).to_csv(index=False, lineterminator="\n"))


def read_csv(path: Path) -> pd.DataFrame:
    import pandas as pd

    return pd.read_csv(require(path))


def read_parquet(path: Path) -> pd.DataFrame:
    """The table in `path`; one that is not a Parquet file (half a file whose record
    was rewritten with it, a checkout of a damaged cache) is one line naming the file,
    where pyarrow raised 29 lines."""
    import pandas as pd
    import pyarrow as pa

    try:
        return pd.read_parquet(require(path))
    except (pa.ArrowException, OSError, ValueError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        wrong = " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(
            f"{path} is not a readable Parquet file ({wrong}): rerun the stage that writes "
            f"it (`dvc repro --force` of its stage), or `dvc checkout {path}`"
        ) from None
