"""Thin DVC stage entry points: read params.yaml, call the package, write files."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable

from pipeline import files
from pipeline.errors import PipelineError


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: unwinds, and no file is left half-written."""


def _stop(signum: int, _frame) -> None:
    raise Stopped(signum)


def _started_as_stage() -> bool:
    """`python -m pipeline.stages.NAME`: the launcher is watched from the first import
    on, not only after the stage's own (slow) imports."""
    argv = getattr(sys, "orig_argv", [])
    return "-m" in argv[:-1] and argv[argv.index("-m") + 1].startswith("pipeline.stages.")


if _started_as_stage():
    files.watch_launcher()


def _fail(message: str, code: int) -> None:
    with contextlib.suppress(OSError):  # an orphan's stderr may be a closed pipe
        print(message, file=sys.stderr)
    sys.exit(code)


def entry(main: Callable[[], None]) -> None:
    """Run a stage; expected failures become one line on stderr and exit code 1.

    Ctrl-C (130) and SIGTERM (143) also end it with one line. Once the process that
    started the stage is gone, the stage replaces no file (pipeline.files).
    """
    files.watch_launcher()
    signal.signal(signal.SIGTERM, _stop)
    try:
        main()
    except (PipelineError, FileNotFoundError) as err:
        _fail(f"error: {err}", 1)
    except KeyboardInterrupt as err:
        name = "SIGTERM" if isinstance(err, Stopped) else "SIGINT"
        _fail(f"error: stopped by {name}; no output is half-written", 128 + signal.Signals[name])
