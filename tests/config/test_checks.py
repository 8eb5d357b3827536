"""The config check (pipeline/config/checks.py, `validate`): a refused value in one
line naming its key, an unknown key with the allowed ones, a kind's own keys checked
for that kind alone, the MLflow settings before any training."""

from __future__ import annotations

import pytest

from pipeline.config import validate
from pipeline.config.load import composed_yaml
from pipeline.core.errors import ConfigError
from tests.config.refused import refusal
from tests.conftest import composed

INVALID = [
    ("train.lr=0", "train.lr"),
    ("train.lr=-0.1", "train.lr"),
    ("train.epochs=0", "train.epochs"),
    ("train.epochs=-5", "train.epochs"),
    ("data.split=[360,180,100]", "data.split"),
    ("data.steps=1", "data.steps"),
    ("data.first_marked_step=12", "data.first_marked_step"),
    ("train.device=tpu", "train.device"),
    ("train.dtype=float16", "train.dtype"),
    ("train.seeds=[]", "train.seeds"),
    ("train.seeds=[1,1]", "train.seeds"),
    ("train.lr=fast", "train.lr"),
    ("eval.high_weight=1.5", "eval.high_weight"),
    ("train.lr=inf", "train.lr"),
    ("tracking.experiment=' '", "tracking.experiment"),
]


@pytest.mark.parametrize(("override", "key"), INVALID)
def test_invalid_values_name_the_key(override, key):
    assert key in refusal([override])


def test_unknown_key_is_rejected():
    with pytest.raises(ConfigError, match="train.momentum"):
        validate(composed(["+train.momentum=0.9"]))


def test_overrides_reach_the_typed_config():
    cfg = validate(composed(["data.seed=7", "train.epochs=120", "train.lr=0.9"]))
    assert (cfg.data.seed, cfg.train.epochs, cfg.train.lr) == (7, 120, 0.9)


# Issue 10: values that used to pass and gave silent wrong results, wrote outside
# the project, or reached the allocator.
REJECTED = [
    ("data.threshold=nan", "data.threshold=nan: must be a finite number"),
    ("data.threshold=inf", "data.threshold=inf: must be a finite number"),
    ("data.threshold=-inf", "data.threshold=-inf: must be a finite number"),
    ("model.init_scale=inf", "model.init_scale=inf: must be a finite number > 0"),
    ("eval.high_weight=nan", "eval.high_weight=nan: must be in (0, 1)"),
    ("eval.low_effect=inf", "eval.low_effect=inf: must be in (0, 1)"),
    ("train.lr=nan", "train.lr=nan: must be a finite number > 0"),
    (
        "train.epochs=100000000000",
        "train.epochs=100000000000: must be an integer in 1..100000 (every epoch of every",
    ),
    ("train.seeds=[1,2,3,4,5,6,7,8,9,10,11] train.epochs=100000", "curve rows, at most"),
    ("paths.tracked_state=/tmp/x.txt", "paths.tracked_state='/tmp/x.txt': must be a relative"),
    ("paths.metrics=../outside.json", "paths.metrics='../outside.json': must be a relative"),
    ("paths.report=reports/../../r.md", "paths.report='reports/../../r.md'"),
    ("paths.figures=.", "paths.figures='.'"),
    ("paths.sequences=''", "paths.sequences=''"),
]


@pytest.mark.parametrize(("overrides", "message"), REJECTED)
def test_non_finite_absurd_and_outside_values_are_rejected(overrides, message):
    text = refusal(overrides.split())
    assert text.startswith("invalid config value ") and message in text


def test_largest_allowed_epochs_pass():
    assert validate(composed(["train.epochs=100000", "train.seeds=[1]"])).train.epochs == 100000


# Issue 12: the model variants' keys.
BAD_MODEL = [
    ("model=multihead model.heads=0", "model.heads=0: must be an integer >= 1"),
    ("model=multihead model.heads=-2", "model.heads=-2: must be an integer >= 1"),
    ("model=window model.window=0", "model.window=0: must be in 1..data.steps = 1..12"),
    ("model=window model.window=13", "model.window=13: must be in 1..data.steps = 1..12"),
    ("data.steps=6 model=window model.window=7", "model.window=7: must be in 1..data.steps = 1..6"),
    (
        "model=posenc model.positional=rotary",
        "model.positional='rotary': allowed: learned, sinusoidal",
    ),
    ("model.kind=mamba", "model.kind='mamba': allowed: lesson, sink, multihead, posenc, window"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_MODEL)
def test_bad_model_values_name_the_key_in_one_line(overrides, message):
    text = refusal(overrides.split())
    assert text.startswith("invalid config value ") and message in text


def test_the_configured_grid_cells_replace_the_default_ones():
    """Issue 34, case 1: cells removed from conf/grid/lesson.yaml must be gone from the
    config (a merge into the schema kept every default cell)."""
    import yaml

    raw = yaml.safe_load(composed_yaml())
    raw["grid"]["cells"] = {"rise-window2": {"task": "rise", "variant": "window2"}}
    assert list(validate(raw).grid.cells) == ["rise-window2"]
    assert len(validate(composed()).grid.cells) == 15  # conf/'s own list


def test_a_kind_s_own_key_is_checked_only_for_that_kind():
    """Issue 34, case 16: `data.steps=2` with the lesson kind was refused because of
    window's model.window=3, a key the lesson never reads."""
    steps = ["data.steps=2", "data.first_marked_step=1"]
    assert validate(composed(steps)).model.kind == "lesson"
    with pytest.raises(ConfigError, match=r"model.window=3: must be in 1..data.steps = 1..2"):
        validate(composed(["model=window", *steps]))


def test_an_unknown_key_lists_the_allowed_ones():
    with pytest.raises(ConfigError) as err:
        validate(composed(["+data.foo=1"]))
    assert str(err.value) == (
        "invalid config value data.foo: Key 'foo' not in 'DataConfig'; allowed: seed, "
        "sequences, steps, split, threshold, first_marked_step"
    )


def test_a_name_or_uri_mlflow_would_refuse_is_refused_before_any_training():
    """Issue 34, case 15: an experiment name over MLflow's limit and
    `tracking.uri=garbage://` failed in the track stage, after training."""
    from mlflow.utils.validation import MAX_EXPERIMENT_NAME_LENGTH

    from pipeline.config import checks

    assert checks.MAX_EXPERIMENT_NAME == MAX_EXPERIMENT_NAME_LENGTH  # the locked MLflow's
    longest = MAX_EXPERIMENT_NAME_LENGTH - len(checks.LONGEST_SUFFIX)
    assert validate(composed([f"tracking.experiment={'x' * longest}"]))
    with pytest.raises(ConfigError, match=f"must be at most {longest} characters"):
        validate(composed([f"tracking.experiment={'x' * (longest + 1)}"]))
    with pytest.raises(ConfigError, match=r"tracking.uri='garbage://x': allowed: a URI of"):
        validate(composed(["tracking.uri=garbage://x"]))
    for uri in ("sqlite:///a.db", "http://127.0.0.1:5000", "postgresql+psycopg2://u@h/db"):
        assert validate(composed([f"tracking.uri={uri}"]))


def test_an_unknown_key_inside_a_cell_lists_the_allowed_ones():
    """Issue 51, case 2: OmegaConf's "Key 'foo' not in 'GridCell'" alone."""
    with pytest.raises(ConfigError) as err:
        validate(composed(["+grid.cells.rise-window2.foo=1"]))
    assert str(err.value) == (
        "invalid config value grid.cells.rise-window2.foo: Key 'foo' not in 'GridCell'; "
        "allowed: task, variant"
    )
