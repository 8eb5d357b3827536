"""pipeline/config/readings.py: one value for one key, as DVC and the stages read it."""

from __future__ import annotations

import math

import pytest

from pipeline.config import PROJECT_ROOT
from pipeline.config.readings import first_difference, yaml_1_1, yaml_1_2

SCALARS = [
    "040", "020", "0o17", "yes", "No", "on", "OFF", "y", "1_000", "1:30", "190:20:30.15",
    "1e3", ".5", "0x1F", "0b11", "2001-12-14", "~", "null", "True", ".inf", ".NaN", "+1",
    "0.1", "-0", "abc",
]  # fmt: skip


@pytest.mark.parametrize("scalar", SCALARS)
def test_the_yaml_1_2_reading_is_dvc_s(scalar):
    """The reading the check compares with is DVC's own parser's (dvc.utils.serialize,
    which reads params.yaml for dvc.lock and `dvc params diff`)."""
    from dvc.utils.serialize import parse_yaml

    text = f"key: {scalar}\n"
    ours, dvc = yaml_1_2(text)["key"], parse_yaml(text, "params.yaml")["key"]
    assert type(ours) is type(dvc) and (ours == dvc or math.isnan(ours) and math.isnan(dvc))


@pytest.mark.parametrize("scalar", SCALARS)
def test_the_yaml_1_1_reading_is_omegaconf_s(scalar):
    from omegaconf import OmegaConf

    text = f"key: {scalar}\n"
    ours, stages = yaml_1_1(text)["key"], OmegaConf.load(__import__("io").StringIO(text)).key
    assert type(ours) is type(stages) and (ours == stages or math.isnan(ours))


def test_the_readings_that_differ():
    differ = {
        s for s in SCALARS if first_difference(*(f(f"k: {s}\n") for f in (yaml_1_1, yaml_1_2)))
    }
    assert differ == {"040", "020", "0o17", "yes", "No", "on", "OFF", "1:30", "190:20:30.15",
                      "2001-12-14"}  # fmt: skip


def test_the_committed_params_and_conf_read_alike():
    for path in [PROJECT_ROOT / "params.yaml", *sorted((PROJECT_ROOT / "conf").rglob("*.yaml"))]:
        text = path.read_text()
        assert first_difference(yaml_1_1(text), yaml_1_2(text)) is None, path


def test_a_key_read_apart_is_found_with_its_path():
    text = "a:\n  b: [1, 2]\n  on: 3\n"
    assert first_difference(yaml_1_1(text), yaml_1_2(text)) == (("a", True), True, "on", True)
