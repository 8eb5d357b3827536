"""conf/, written from the defaults in the code (pipeline/config/conf_files.py): the
committed files are what `python -m pipeline.params --defaults` writes, and compose to
the schema's defaults."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline.config import CONF_DIR, Config, ModelConfig, validate
from tests.conftest import composed


def test_conf_composes_to_the_schemas_defaults(default_cfg):
    """conf/ composes to the schema's defaults: the files are written from it, and
    conf/config.yaml's defaults list, written by hand, picks for model and task the
    option of the dataclass's own kind. The golden tests pin that these are the
    lesson's."""
    assert default_cfg == Config()


@pytest.mark.parametrize("kind", ["sink", "multihead", "posenc", "window"])
def test_model_group_selects_a_variant_on_the_lesson_defaults(kind):
    """model=<kind> is the lesson's model with its own YAML's keys on top, and
    changes no other group."""
    import yaml

    variant = yaml.safe_load((CONF_DIR / "model" / f"{kind}.yaml").read_text())
    del variant["defaults"]
    expected = replace(Config(), model=replace(ModelConfig(), **variant))
    assert validate(composed([f"model={kind}"])) == expected


def test_conf_holds_the_experiments_parts_as_their_settings_write_them():
    """Each default is written once, in code: every file of conf/ the command writes
    (the base groups' options from schema.py, each model kind's and task's from its
    module, each experiment's conf/<name>/lesson.yaml from its Settings, and conf/config.yaml's
    paths and experiments' lines) is what `python -m pipeline.params --defaults` writes."""
    from pipeline.config.conf_files import written

    for path, text in written(CONF_DIR).items():
        assert path.read_text() == text, f"{path}: run `python -m pipeline.params --defaults`"


def test_the_written_experiment_file_keeps_each_field_s_comments(tmp_path):
    from dataclasses import dataclass, field

    from pipeline.config.conf_files import settings_yaml

    @dataclass
    class Settings:
        """A toy experiment.
        Two lines of docstring."""

        seeds: int = 3  # runs
        # the steps, one list
        steps: list[int] = field(default_factory=lambda: [1, 2])
        name: str = "auto"
        cells: dict = field(default_factory=lambda: {"a-b": {"task": "a", "variant": "b"}})

    assert settings_yaml(Settings) == (
        "# A toy experiment.\n# Two lines of docstring.\nseeds: 3  # runs\n"
        "# the steps, one list\nsteps: [1, 2]\nname: auto\n"
        "cells:\n  a-b: {task: a, variant: b}\n"
    )
