"""Linux process helpers, in one place: a process's /proc/PID/stat, the processes
below one, the signal the kernel sends a child when its parent dies (prctl), the
servers we start as such children, and glibc's malloc settings. Each degrades to
"unknown" (None, nothing) off Linux."""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

PR_SET_PDEATHSIG = 1  # prctl's option (linux/prctl.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, ...); None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def name_and_parent(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) of a live process; None where unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    return name, int(text[text.rindex(")") + 2 :].split()[1])


def process_start(pid: int) -> str | None:
    """When a live process started (clock ticks after boot): with its pid, this names
    one process, also once the pid is reused. None if it is gone or a zombie."""
    fields = stat_fields(pid)
    return None if fields is None or fields[0] == "Z" else fields[19]


def descendants(pid: int) -> list[int]:
    """The processes below `pid`, children first (none without /proc)."""
    children: dict[int, list[int]] = {}
    entries = Path("/proc").iterdir() if Path("/proc/self/stat").exists() else []
    for entry in entries:
        fields = stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        below = children.get(queue.pop(0), [])
        found += below
        queue += below
    return found


def die_with_parent(signum: int) -> None:
    """Have the kernel send this process `signum` when its parent dies (Linux)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def dies_with_this_process(signum: int) -> Callable[[], None] | None:
    """A preexec_fn: Linux sends the child `signum` when this process dies, even by
    SIGKILL. It runs after a switch of user (which would clear an earlier setting)."""
    if sys.platform != "linux":
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # it died before prctl
            os.kill(os.getpid(), signum)

    return preexec


def start_server_child(
    command: list[str], output: IO[bytes], death_signal: int, **kwargs
) -> subprocess.Popen:
    """A server (`mlflow ui`, `mlflow server`, PostgreSQL) writing to `output`, in a
    session of its own (Ctrl-C reaches this process only, which stops it in order),
    sent `death_signal` when this process dies, even by SIGKILL: a killed
    `pipeline ui` or `pipeline server` leaves nothing serving."""
    return subprocess.Popen(
        command,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=dies_with_this_process(death_signal),
        **kwargs,
    )


def glibc() -> ctypes.CDLL | None:
    """The C library where it is glibc on Linux; None elsewhere (musl, macOS)."""
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def keep_freed_memory() -> None:
    """Let glibc keep freed memory for reuse instead of returning it to the kernel.

    Every epoch allocates and frees the same few-megabyte temporaries; by default
    glibc serves them with fresh mmaps or trims them off the heap, so each epoch
    faults its pages in again. With these settings the pages stay mapped, and
    training takes a tenth of the page faults and less time (the window variant's
    numbers in docs/speed.md). Peak memory does not grow (freed memory is reused, not
    added). Linux/glibc only.
    """
    libc = glibc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's upper bound for this setting
        libc.mallopt(M_TRIM_THRESHOLD, 256 << 20)


def map_large_blocks() -> None:
    """Serve every block of 1 MiB or more from a mapping of its own, unmapped when
    freed (the setting is process-wide, until `keep_freed_memory`).

    A grid cell's faithfulness battery makes large short-lived temporaries of many
    sizes. Kept in the heap (as training wants them), they fragment it, and by how
    much depends on where ASLR puts the addresses: a cell's peak varies widely from
    one run to the next. Mapped, its peak is what the battery holds at once, for a
    little more time in page faults. The faithfulness stage (63 chunks in turn) stays
    in the heap: mapped, its page faults would cost it far more time. The numbers are
    in docs/speed.md. Linux/glibc only.
    """
    libc = glibc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)


def release_freed_memory() -> None:
    """Return the heap's freed pages to the kernel (glibc's malloc_trim), between two
    phases of a process: what the first freed then does not add to the second's peak.
    Linux/glibc only."""
    libc = glibc()
    if libc is not None:
        libc.malloc_trim(0)
