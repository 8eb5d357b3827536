"""pipeline/config/readings.py: one value for one key, as DVC and the stages read it."""

from __future__ import annotations

import math
import shutil

import pytest

from pipeline.config import CONF_DIR, PARAMS_FILE, PROJECT_ROOT, load_params
from pipeline.config.load import composed_yaml
from pipeline.config.readings import first_difference, yaml_1_1, yaml_1_2
from pipeline.core.errors import ConfigError

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


@pytest.mark.parametrize(
    ("line", "written", "key", "stages", "dvc"),
    [
        ("abstraction:\n  seeds: 20\n", "020", "abstraction.seeds", "16", "20"),
        ("data:\n  seed: 20260218\n", "040", "data.seed", "32", "40"),
        ("tracking:\n  enabled: true\n", "on", "tracking.enabled", "True", "'on'"),
        ("abstraction:\n  seeds: 20\n", "1:30", "abstraction.seeds", "90", "'1:30'"),
    ],
)
def test_a_value_yaml_1_1_and_dvc_s_yaml_1_2_read_apart_is_refused(
    tmp_path, line, written, key, stages, dvc
):
    """Issue 60, case 1: `abstraction.seeds: 020` was 20 for DVC (dvc.lock, `dvc params
    diff`) and 16 for the stages, which computed and logged 16."""
    params = tmp_path / PARAMS_FILE
    text = composed_yaml()
    assert text.count(line) == 1
    value = line.rsplit(": ", 1)[0] + f": {written}\n"
    params.write_text(text.replace(line, value))
    number = text[: text.index(line) + len(line)].count("\n")
    with pytest.raises(ConfigError) as err:
        load_params(params)
    assert str(err.value).startswith(
        f"invalid config value {key}: {written!r} in {params} line {number} reads as "
        f"{stages} in YAML 1.1 (the stages, Hydra, MLflow's params) but {dvc} in YAML 1.2 "
        "(DVC: dvc.lock, `dvc params diff`); write it so both read one value"
    ), err.value
    assert "\n" not in str(err.value)


def test_a_value_read_apart_in_conf_is_refused_naming_its_group_s_key(tmp_path):
    from pipeline.config import check_conf_yaml

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    group = conf / "abstraction/lesson.yaml"
    group.write_text(group.read_text().replace("seeds: 20  #", "seeds: 040  #", 1))
    with pytest.raises(ConfigError, match=r"^invalid config value abstraction\.seeds: '040' in "):
        check_conf_yaml(conf)
