"""What the config tests share: a refusal's one line, from `validate` in this process
and from a command under `python -X importtime` (what it imported before refusing)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from pipeline.config import PROJECT_ROOT, compose, validate
from pipeline.config.load import CONF_DIR
from pipeline.core.errors import ConfigError

GROUPS = frozenset(path.name for path in CONF_DIR.iterdir() if path.is_dir())


@cache
def _composed_groups(groups: tuple[str, ...]) -> DictConfig:
    return compose(list(groups))


def composed(overrides: list[str] | tuple = ()) -> DictConfig:
    """`compose(overrides)`, in a tenth of its time or less: the composition of the
    group choices alone (model=..., cached), then Hydra's own value-override step (the
    one its compose runs after the defaults) on a copy of it.
    test_a_value_override_composes_as_hydra_does checks it against `compose`."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    if any(o.key_or_group.startswith("hydra") for o in parsed):
        return compose(overrides)
    groups = tuple(o.input_line for o in parsed if o.key_or_group in GROUPS)
    cfg = copy.deepcopy(_composed_groups(groups))
    OmegaConf.set_struct(cfg, True)
    values = [o for o in parsed if o.key_or_group not in GROUPS]
    ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    return cfg


def refusal(overrides: list[str]) -> str:
    """The one-line ConfigError that validating conf/ with `overrides` raises."""
    with pytest.raises(ConfigError) as err:
        validate(composed(overrides))
    text = str(err.value)
    assert "\n" not in text, text
    return text


def with_importtime(command: list[str], cwd: Path) -> tuple[int, list[str], list[str]]:
    """`command` under `python -X importtime`: its exit code, the modules it imported,
    and the other lines of its stderr."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}  # this checkout's, from any folder
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,  # keeps a hang (the old anchor bomb) from stalling the suite
    )
    lines = result.stderr.splitlines()
    imported = [line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time")]
    return result.returncode, imported, [line for line in lines if not line.startswith("import")]
