"""Thin DVC stage entry points: read params.yaml, call the package, write files."""

from __future__ import annotations

import sys
from collections.abc import Callable

from pipeline.errors import PipelineError


def entry(main: Callable[[], None]) -> None:
    """Run a stage; expected failures become one line on stderr and exit code 1."""
    try:
        main()
    except (PipelineError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
