"""The bounds checked with the config (pipeline/config/bounds.py): every seed key in the
one seed range, every integer setting under a ceiling, the generate stage's memory,
all before torch loads (issues 49, 52 and 53 of the fourth battery)."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import pytest
import yaml

from pipeline.config import PROJECT_ROOT, Config, compose, validate
from pipeline.config.bounds import SEED_KEYS, value_at
from pipeline.config.load import composed_yaml
from tests.config.refused import refusal, with_importtime
from tests.conftest import composed

HUGE = 10**30


def schema_keys(node: object = Config(), prefix: str = ""):
    """(key, default) of every setting of the schema, walked."""
    for item in fields(node):
        key, value = f"{prefix}{item.name}", getattr(node, item.name)
        if is_dataclass(value):
            yield from schema_keys(value, f"{key}.")
        else:
            yield key, value


INTEGER_KEYS = [
    key
    for key, value in schema_keys()
    if (isinstance(value, int) and not isinstance(value, bool))
    or (isinstance(value, list) and value and isinstance(value[0], int))
]


@pytest.mark.parametrize(
    "overrides",
    [
        ["study.seeds=7", "++grid.seeds=1000000000000000000000000000000"],
        ["train.seeds=[0,4294967295]", "data.split=[300,30,30]", "+data.foo=1"],
        ["model=posenc", "train.epochs=3"],
        ["grid.cells={}"],
    ],
)
def test_a_value_override_composes_as_hydra_does(overrides):
    """The tests' shortcut (`composed`) gives Hydra's composition, group or not."""
    assert composed(overrides) == compose(overrides)


def test_the_walk_sees_the_integer_settings_of_every_group():
    assert {"data.sequences", "data.split", "model.window", "debate.permutation_seed"} <= set(
        INTEGER_KEYS
    )
    assert {key.split(".")[0] for key in INTEGER_KEYS} >= {
        "data", "model", "train", "study", "faithfulness", "grid", "debate"
    }  # fmt: skip


@pytest.mark.parametrize("key", INTEGER_KEYS)
def test_every_integer_setting_has_a_bound_checked_with_the_others(key):
    """Issue 52, case 2: grid.seeds, debate.seeds and the other counts at 10**30 passed
    the config check (the memory estimate refused some, after torch loaded)."""
    default = value_at(Config(), key)
    value = [HUGE, *default[1:]] if isinstance(default, list) else HUGE
    split = [f"data.split=[{HUGE - 360},180,180]"] if key == "data.sequences" else []
    text = refusal([f"++{key}={value}".replace(" ", ""), *split])
    assert text.startswith(f"invalid config value {key}"), text


def test_a_seed_key_of_the_schema_cannot_escape_the_seed_check():
    """Issue 53, case 2: the seed keys are derived from the schema, so that every field
    named *seed (and train.seeds) is one; the counts of seeds are not."""
    seedish = {key for key in INTEGER_KEYS if "seed" in key.rsplit(".", 1)[-1]}
    counts = {
        "study.seeds",
        "faithfulness.sanity_seeds",
        "grid.seeds",
        "grid.faithfulness_seeds",
        "debate.seeds",
        "debate.trained_seeds",
        "erasure.seeds",
        "abstraction.seeds",
        "roar.seeds",
        "dynamics.flip_seeds",
        "dynamics.phase_seeds",
    }
    assert set(SEED_KEYS) == seedish - counts
    assert "debate.permutation_seed" in SEED_KEYS


@pytest.mark.parametrize("key", [key for key in SEED_KEYS if key != "train.seeds"])
@pytest.mark.parametrize("value", [-1, 2**32, 2**64, 10**40])
def test_every_seed_key_takes_the_one_seed_range(key, value):
    """Issue 53, case 2: debate.permutation_seed=-1 and 4294967296 passed, where
    grid.shuffle_seed refused both; 2**64 ended in an OverflowError after training,
    10**40 (issue 52, case 2) in a 20-line traceback."""
    text = refusal([f"{key}={value}"])
    assert text.startswith(f"invalid config value {key}={value}: must be an integer in "), text
    assert "0..4294967295" in text


def test_the_ends_of_the_seed_range_pass_for_the_permutations():
    assert validate(composed(["debate.permutation_seed=4294967295"])).debate.permutation_seed


def test_the_generate_stage_s_size_is_refused_with_the_config():
    """Issue 49, case 6: data.sequences=10**8 passed the config check, and generate (which
    runs no memory estimate: it loads no torch) ran until killed."""
    text = refusal(["data.sequences=100000000", "data.split=[99999940,30,30]"])
    assert text == (
        "invalid config value data.sequences=100000000: stage generate needs about "
        "107.5 GiB (the sequences: sequences 100000000 x steps 12 x bytes 96), more than "
        "the 8 GiB limit"
    )


def test_the_generate_stage_refuses_it_before_writing(tmp_path, monkeypatch, run_entry):
    from pipeline.stages import generate

    def never(*args):  # what ran until killed: fail at once instead (the old code)
        raise AssertionError("generate started on 10**8 sequences")

    monkeypatch.setattr(generate.data, "generate", never)
    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load(composed_yaml())
    params["data"] |= {"sequences": 100_000_000, "split": [99_999_940, 30, 30]}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    code, stderr = run_entry(generate.main)
    assert code == 1
    assert stderr.startswith("error: invalid config value data.sequences=100000000: stage ")
    assert stderr.count("\n") == 1 and not (tmp_path / "data").exists()


def test_a_huge_integer_is_refused_by_a_stage_before_torch_loads(tmp_path):
    """Issue 52, case 2: refused in one line, but only after the stage's start-up."""
    params = yaml.safe_load(composed_yaml())
    params["grid"]["seeds"] = 10**26
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    code, imported, other = with_importtime(["-m", "pipeline.stages.train"], tmp_path)
    assert code == 1
    assert other == [
        "error: invalid config value grid.seeds=100000000000000000000000000: must be at most "
        "8589934592 (2**33): each unit of a size or count takes at least a byte, and a "
        "configuration may need at most 8 GiB"
    ]
    assert "torch" not in imported and "pipeline.stages.train" not in imported


@pytest.mark.parametrize("module", ["pipeline.run", "pipeline.study"])
def test_a_huge_integer_is_refused_by_the_hydra_apps_before_torch_loads(tmp_path, module):
    code, imported, other = with_importtime(
        [
            "-m",
            module,
            f"hydra.run.dir={tmp_path / 'run'}",
            "tracking.enabled=false",
            "debate.permutation_seed=10000000000000000000000000000000000000000",
        ],
        PROJECT_ROOT,
    )
    assert code == 1
    assert other == [
        "error: invalid config value debate.permutation_seed="
        "10000000000000000000000000000000000000000: must be an integer in 0..4294967295 "
        "(2**32-1)"
    ]
    assert "torch" not in imported


SEED_RANGE = "must be an integer in 0..4294967295"


BAD_SEEDS = [
    ("train.seeds=[-1,2]", "train.seeds=[-1, 2]: each seed must be an integer in 0..4274707077"),
    (
        "train.seeds=[1,99999999999999999999]",
        "train.seeds=[1, 99999999999999999999]: each seed must be an integer in 0..",
    ),
    ("train.seeds=[4274707078]", "train.seeds=[4274707078]: each seed must be"),
    (
        "study.bootstrap_seed=18446744073709551616",
        f"study.bootstrap_seed=18446744073709551616: {SEED_RANGE}",
    ),
    ("study.bootstrap_seed=-1", f"study.bootstrap_seed=-1: {SEED_RANGE}"),
    ("faithfulness.order_seed=4294967296", f"faithfulness.order_seed=4294967296: {SEED_RANGE}"),
    ("data.seed=-1", f"data.seed=-1: {SEED_RANGE}"),
    ("data.seed=4294967296", f"data.seed=4294967296: {SEED_RANGE}"),
    ("data.seed=4294967295", "train.seeds=[1, 2]: each seed must be an integer in 0..0 "),
    ("data.seed=4294967000", "study.seeds=1000: must be at most 295 "),
    ("data.seed=1e20", "data.seed: Value '1e+20' of type 'float' could not be converted"),
    ("train.seeds=[1,1e20]", "train.seeds[1]: Value '1e+20'"),
    ("study.bootstrap_seed=abc", "study.bootstrap_seed: Value 'abc'"),
    ("faithfulness.label_seed=-1", f"faithfulness.label_seed=-1: {SEED_RANGE}"),
]


@pytest.mark.parametrize(("override", "message"), BAD_SEEDS)
def test_seeds_out_of_range_are_refused_up_front(override, message):
    text = refusal([override])
    assert text.startswith(f"invalid config value {message}"), text
    assert "0..4294967295" in text and "\n" not in text


def test_seeds_at_the_ends_of_the_range_pass():
    cfg = validate(
        compose(
            [
                "data.seed=0",
                "train.seeds=[0,4294967295]",
                "study.bootstrap_seed=4294967295",
                "faithfulness.order_seed=4294967295",
            ]
        )
    )
    assert cfg.train.seeds == [0, 2**32 - 1]
    cfg = validate(composed(["data.seed=4294966295", "train.seeds=[1000]", "study.seeds=1000"]))
    assert cfg.data.seed + max(cfg.train.seeds) == 2**32 - 1
    offset = 2**32 - 1 - cfg.faithfulness.sanity_seeds  # the re-draws wrap, past the study's
    assert validate(composed([f"faithfulness.randomisation_offset={offset}"]))


def test_re_draws_that_would_repeat_a_study_run_s_init_are_refused():
    text = refusal(["faithfulness.randomisation_offset=999"])
    assert text.startswith(
        "invalid config value faithfulness.randomisation_offset=999: must be an integer in "
        "1000..4294967195 (study.seeds to 2**32-1 - faithfulness.sanity_seeds): a re-drawn "
        "run k draws from stream((data.seed + offset + k) mod 2**32), never a study run's"
    ), text
    assert "sanity_seeds=1: must be an integer >= 2" in refusal(["faithfulness.sanity_seeds=1"])
    assert "robustness_samples=0: must be an integer >= 1" in refusal(
        ["faithfulness.robustness_samples=0"]
    )
    for radius in ("0.0", "-0.1", "inf"):
        text = refusal([f"faithfulness.robustness_radius={radius}"])
        assert text.startswith(f"invalid config value faithfulness.robustness_radius={radius}")
        assert "must be a finite number" in text
