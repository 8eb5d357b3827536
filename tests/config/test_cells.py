"""The experiments' cells (pipeline/config/cells.py): a cell's key is its task and
variant, since DVC names its stage and output after it."""

from __future__ import annotations

import pytest

from pipeline.config import validate
from pipeline.core.errors import ConfigError
from tests.conftest import composed


def test_a_cell_whose_key_is_not_its_task_and_variant_is_refused():
    """Issue 49, case 7: `alias: {task: rise, variant: window2}` in conf/grid/lesson.yaml
    passed, trained, and failed in DVC (`reports/grid/alias.json` does not exist)."""
    for group in ("grid", "debate"):
        with pytest.raises(ConfigError) as err:
            validate(composed([f"+{group}.cells.alias={{task:rise,variant:window2}}"]))
        assert str(err.value) == (
            f"invalid config value {group}.cells.alias: a cell's key must be its "
            "<task>-<variant> (DVC names its stage and output after it), here rise-window2"
        )
