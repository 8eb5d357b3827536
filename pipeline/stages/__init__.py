"""Thin DVC stage entry points: read params.yaml, call the package, write files."""

from __future__ import annotations

import sys
from collections.abc import Callable

from pipeline.config import Config
from pipeline.errors import ConfigError, PipelineError


def entry(main: Callable[[], None]) -> None:
    """Run a stage; expected failures become one line on stderr and exit code 1."""
    try:
        main()
    except (PipelineError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)


def check_seeds(cfg: Config, seeds: list[int], path: str, stage: str) -> None:
    """An upstream output made for other seeds than params.yaml names is stale."""
    if seeds != list(cfg.train.seeds):
        raise ConfigError(
            f"train.seeds={list(cfg.train.seeds)} but {path} holds seeds {seeds}: "
            f"rerun the {stage} stage"
        )
