"""Thin DVC stage entry points: read params.yaml, call the package, write files."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable

from pipeline.core import files
from pipeline.core.errors import PipelineError


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: unwinds, and no file is left half-written."""


# The signals this stage received. A library may turn the exception a signal raises
# into one of its own (omegaconf, interrupted while building a config, raises a
# ConfigKeyError), so the record, not the exception's type, says a stage was stopped.
_received: list[int] = []


def _stop(signum: int, _frame) -> None:
    _received.append(signum)
    threads = sys.modules.get("pipeline.models.threads")  # loaded where jobs can run
    if threads is not None:
        threads.stop()
    raise Stopped(signum)


def _started_as_stage() -> bool:
    """`python -m pipeline.stages.NAME`: the launcher is watched from the first import
    on, not only after the stage's own (slow) imports."""
    argv = getattr(sys, "orig_argv", [])
    return "-m" in argv[:-1] and argv[argv.index("-m") + 1].startswith("pipeline.stages.")


def _stopped_while_importing(signum: int, _frame) -> None:
    """Ctrl-C or SIGTERM before the stage's own code runs: nothing is written yet, so
    one line and out, not a traceback of some 30 lines through torch's imports."""
    name = signal.Signals(signum).name
    os.write(2, f"error: stopped by {name}; no output is half-written\n".encode())
    os._exit(128 + signum)


def _fail(message: str, code: int) -> None:
    with contextlib.suppress(OSError):  # an orphan's stderr may be a closed pipe
        print(message, file=sys.stderr)
    sys.exit(code)


def _check_params_first() -> None:
    """Check params.yaml before the stage's own imports (torch, seconds): a bad value, a
    huge integer, an alias bomb or a bad byte is one line at once. The stage reads it
    again; a missing file is its to report."""
    from pipeline.config import PARAMS_FILE, load_params

    if sys.argv[1:] in (["-h"], ["--help"]) or not os.path.exists(PARAMS_FILE):
        return
    try:
        load_params()
    except PipelineError as err:
        _fail(f"error: {err}", 1)


if _started_as_stage():
    files.watch_launcher()
    signal.signal(signal.SIGINT, _stopped_while_importing)  # until `entry` takes over
    signal.signal(signal.SIGTERM, _stopped_while_importing)
    _check_params_first()


def cell_arguments(argv: list[str] | None, doc: str) -> tuple[str, str]:
    """TASK VARIANT of a cell's stage (grid@<cell>, debate@<cell>), each a known name."""
    import argparse

    from pipeline.core.errors import ConfigError
    from pipeline.core.kinds import TASKS, VARIANTS

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("variant")
    args = parser.parse_args(argv)
    if args.task not in TASKS:
        raise ConfigError(f"unknown task {args.task!r}; allowed: {', '.join(TASKS)}")
    if args.variant not in VARIANTS:
        allowed = ", ".join(VARIANTS)
        raise ConfigError(f"unknown model variant {args.variant!r}; allowed: {allowed}")
    return args.task, args.variant


def check_no_arguments(main: Callable[..., None], name: str) -> None:
    """Refuse a command line to a stage that reads params.yaml only: otherwise
    `roar.seeds=1` is ignored, and the stage runs on params.yaml's values and exits 0
    (the roar stage's full run: docs/speed.md). A stage whose `main` takes `argv` (a
    grid or debate cell: TASK VARIANT) parses its own."""
    import inspect

    if sys.argv[1:] and "argv" not in inspect.signature(main).parameters:
        given = " ".join(sys.argv[1:])
        _fail(
            f"error: python -m {name} takes no arguments (got {given!r}): a stage reads "
            "params.yaml only; set the value in conf/ and run `python -m pipeline.params`, "
            "or use `dvc exp run -S KEY=VALUE`",
            1,
        )


def entry(main: Callable[[], None]) -> None:
    """Run a stage; expected failures become one line on stderr and exit code 1.

    Ctrl-C (130) and SIGTERM (143) also end it with one line. Once the process that
    started the stage is gone, the stage replaces no file (pipeline.core.files).
    """
    module = sys.modules.get(main.__module__)
    name = (getattr(module, "__spec__", None) and module.__spec__.name) or main.__module__
    if sys.argv[1:] in (["-h"], ["--help"]):  # answered without reading or writing
        doc = (getattr(module, "__doc__", None) or "").strip()
        print(f"usage: python -m {name}  (a DVC stage: `dvc repro` runs it)")
        print(f"\n{doc}" if doc else "")
        sys.exit(0)
    check_no_arguments(main, name)
    files.watch_launcher()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        main()
    except BaseException as err:
        if _received:
            signum = signal.Signals(_received[0])
            _fail(f"error: stopped by {signum.name}; no output is half-written", 128 + signum)
        if isinstance(err, (PipelineError, FileNotFoundError)):
            _fail(f"error: {err}", 1)
        raise
