"""Each numeric setting's range (pipeline/config/ranges.py): a value outside it and a
value of the wrong type are both refused in one line naming the key and the range
(issue 50, item 8: `train.lr=abc` gave OmegaConf's conversion error alone)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import fields, is_dataclass
from typing import get_args, get_type_hints

import pytest
import yaml

from pipeline.config import PARAMS_FILE, PROJECT_ROOT, Config, ConfigError, validate
from pipeline.config.ranges import Range
from pipeline.params import composed_yaml
from tests.conftest import composed

SEEDS = "an integer in 0..4294967295 (2**32-1)"

# key: (a value outside its range, what its refusal says, what a wrong type is told).
# Worked out by hand from the schema's defaults (data.steps 12, study.seeds 1000,
# faithfulness.sanity_seeds 100), not read from the module under test.
CASES = {
    "data.seed": ("-1", f"data.seed=-1: must be {SEEDS}", SEEDS),
    "data.sequences": ("0", "data.sequences=0: must be an integer >= 1", "an integer >= 1"),
    "data.steps": ("1", "data.steps=1: must be an integer >= 2", "an integer >= 2"),
    "data.split": (
        "[0,360,360]",
        "data.split=[0, 360, 360]: must be three positive sizes [train, validation, held-out]",
        "three integers >= 1 [train, validation, held-out] adding up to data.sequences",
    ),
    "data.threshold": ("nan", "data.threshold=nan: must be a finite number", "a finite number"),
    "data.first_marked_step": (
        "12",
        "data.first_marked_step=12: must be in 0..data.steps-1 = 0..11",
        "an integer in 0..data.steps-1",
    ),
    "model.d_k": ("0", "model.d_k=0: must be an integer >= 1", "an integer >= 1"),
    "model.d_v": ("-3", "model.d_v=-3: must be an integer >= 1", "an integer >= 1"),
    "model.init_scale": (
        "0",
        "model.init_scale=0.0: must be a finite number > 0",
        "a finite number > 0",
    ),
    "model.heads": (
        "0 model=multihead",
        "model.heads=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "model.window": (
        "13 model=window",
        "model.window=13: must be in 1..data.steps = 1..12",
        "an integer in 1..data.steps",
    ),
    "train.seeds": (
        "[1,-2]",
        "train.seeds=[1, -2]: each seed must be an integer in 0..4274707077",
        "distinct integers, each in 0..4294967295 - data.seed",
    ),
    "train.epochs": (
        "-5",
        "train.epochs=-5: must be an integer in 1..100000",
        "an integer in 1..100000",
    ),
    "train.lr": ("0", "train.lr=0.0: must be a finite number > 0", "a finite number > 0"),
    "eval.high_weight": ("1", "eval.high_weight=1.0: must be in (0, 1)", "in (0, 1)"),
    "eval.low_effect": ("0", "eval.low_effect=0.0: must be in (0, 1)", "in (0, 1)"),
    "study.seeds": ("1", "study.seeds=1: must be an integer >= 2", "an integer >= 2"),
    "study.bootstrap": ("0", "study.bootstrap=0: must be an integer >= 1", "an integer >= 1"),
    "study.bootstrap_seed": ("-1", f"study.bootstrap_seed=-1: must be {SEEDS}", SEEDS),
    "study.chunk": ("0", "study.chunk=0: must be an integer >= 1", "an integer >= 1"),
    "study.agreement_every": (
        "0",
        "study.agreement_every=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "faithfulness.ig_steps": (
        "0",
        "faithfulness.ig_steps=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "faithfulness.order_seed": ("-1", f"faithfulness.order_seed=-1: must be {SEEDS}", SEEDS),
    "faithfulness.sanity_seeds": (
        "1",
        "faithfulness.sanity_seeds=1: must be an integer >= 2",
        "an integer >= 2",
    ),
    "faithfulness.randomisation_offset": (
        "999",
        "faithfulness.randomisation_offset=999: must be an integer in 1000..4294967195",
        "an integer in study.seeds..2**32-1 - faithfulness.sanity_seeds",
    ),
    "faithfulness.label_seed": ("-1", f"faithfulness.label_seed=-1: must be {SEEDS}", SEEDS),
    "faithfulness.robustness_seed": (
        "-1",
        f"faithfulness.robustness_seed=-1: must be {SEEDS}",
        SEEDS,
    ),
    "faithfulness.robustness_samples": (
        "0",
        "faithfulness.robustness_samples=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "faithfulness.robustness_radius": (
        "-0.1",
        "faithfulness.robustness_radius=-0.1: must be a finite number > 0",
        "a finite number > 0",
    ),
    "grid.seeds": ("1", "grid.seeds=1: must be an integer >= 2", "an integer >= 2"),
    "grid.solved": ("1.5", "grid.solved=1.5: must be in (0, 1]", "in (0, 1]"),
    "grid.shuffle_seed": ("-1", f"grid.shuffle_seed=-1: must be {SEEDS}", SEEDS),
    "grid.faithfulness_seeds": (
        "0",
        "grid.faithfulness_seeds=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "grid.epochs": (
        "100001",
        "grid.epochs=100001: must be an integer in 1..100000 (every epoch",
        "an integer in 1..100000",
    ),
    "grid.lr": ("-1", "grid.lr=-1.0: must be a finite number > 0", "a finite number > 0"),
    "debate.seeds": ("1", "debate.seeds=1: must be an integer >= 2", "an integer >= 2"),
    "debate.trained_seeds": (
        "0",
        "debate.trained_seeds=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "debate.epsilons": (
        "[0.5,1.5]",
        "debate.epsilons=1.5: each eps must be in (0, 1)",
        "each eps in (0, 1)",
    ),
    "debate.permutations": (
        "0",
        "debate.permutations=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "debate.permutation_seed": ("-1", f"debate.permutation_seed=-1: must be {SEEDS}", SEEDS),
    "debate.penalties": (
        "[0,-1]",
        "debate.penalties=-1.0: each lam must be a finite number >= 0",
        "each lam a finite number >= 0",
    ),
    "debate.consistent_penalties": (
        "[inf]",
        "debate.consistent_penalties=inf: each lam must be a finite number >= 0",
        "each lam a finite number >= 0",
    ),
    "debate.consistent_start": ("0", "debate.consistent_start=0.0: must be in (0, 1]", "in (0, 1]"),
    "erasure.seeds": ("1", "erasure.seeds=1: must be an integer >= 2", "an integer >= 2"),
    "erasure.order_seed": ("-1", f"erasure.order_seed=-1: must be {SEEDS}", SEEDS),
    "erasure.top_k": (
        "[1,0]",
        "erasure.top_k=0: each k must be an integer >= 1",
        "each k an integer >= 1",
    ),
    "abstraction.seeds": ("0", "abstraction.seeds=0: must be an integer >= 1", "an integer >= 1"),
    "abstraction.dims": (
        "3",
        "abstraction.dims=3: must be in 1..2",
        "an integer in 1..model.d_v-1",
    ),
    "abstraction.hidden": ("0", "abstraction.hidden=0: must be an integer >= 1", "an integer >= 1"),
    "abstraction.blocks": ("0", "abstraction.blocks=0: must be an integer >= 1", "an integer >= 1"),
    "abstraction.pairs": ("0", "abstraction.pairs=0: must be an integer >= 1", "an integer >= 1"),
    "abstraction.pair_seed": ("-1", f"abstraction.pair_seed=-1: must be {SEEDS}", SEEDS),
    "abstraction.map_seed": ("-1", f"abstraction.map_seed=-1: must be {SEEDS}", SEEDS),
    "abstraction.epochs": (
        "8589934592",  # accepted before, and ran without end
        "abstraction.epochs=8589934592: must be an integer in 1..100000",
        "an integer in 1..100000",
    ),
    "abstraction.lr": (
        "0",
        "abstraction.lr=0.0: must be a finite number > 0",
        "a finite number > 0",
    ),
    "abstraction.implements": (
        "1.5",
        "abstraction.implements=1.5: must be in (0, 1]",
        "in (0, 1]",
    ),
    "roar.seeds": ("1", "roar.seeds=1: must be an integer >= 2", "an integer >= 2"),
    "roar.random_seed": ("-1", f"roar.random_seed=-1: must be {SEEDS}", SEEDS),
    "roar.fractions": (
        "[0.1,1.0]",
        "roar.fractions=1.0: each fraction must be in (0, 1)",
        "each fraction in (0, 1)",
    ),
    "roar.window": (
        "4",
        "roar.window=4: must be an odd integer in 3..23",
        "an odd integer in 3..2*data.steps-1",
    ),
    "dynamics.found": ("1.0", "dynamics.found=1.0: must be in (0, 1)", "in (0, 1)"),
    "dynamics.predict_epochs": (
        "[0,-1]",
        "dynamics.predict_epochs=-1: each epoch must be an integer >= 0",
        "each epoch an integer >= 0",
    ),
    "dynamics.claim_resamples": (
        "0",
        "dynamics.claim_resamples=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "dynamics.claim_seed": ("-1", f"dynamics.claim_seed=-1: must be {SEEDS}", SEEDS),
    "dynamics.flip_parameter": (
        "-1",
        "dynamics.flip_parameter=-1: must be an integer >= 0",
        "an integer >= 0",
    ),
    "dynamics.flip_seeds": (
        "0",
        "dynamics.flip_seeds=0: must be an integer >= 1",
        "an integer >= 1",
    ),
    "dynamics.phase_lrs": (
        "[0.1,0.0]",
        "dynamics.phase_lrs=0.0: each lr must be in (0, 100]",
        "each lr in (0, 100]",
    ),
    "dynamics.phase_init_scales": (
        "[0.1,200]",
        "dynamics.phase_init_scales=200.0: each scale must be in (0, 100]",
        "each scale in (0, 100]",
    ),
    "dynamics.phase_seeds": (
        "1",
        "dynamics.phase_seeds=1: must be an integer >= 2",
        "an integer >= 2",
    ),
}


def numeric_keys(node: type = Config, prefix: str = "") -> set[str]:
    """Every key of the schema that holds a number or a list of numbers."""
    keys: set[str] = set()
    hints = get_type_hints(node)
    for item in fields(node):
        kind, key = hints[item.name], f"{prefix}{item.name}"
        if is_dataclass(kind):
            keys |= numeric_keys(kind, f"{key}.")
        elif kind in (int, float) or set(get_args(kind)) & {int, float}:
            keys.add(key)
    return keys


def refusal(override: str, groups: list[str]) -> str:
    """validate's refusal of conf/ with `groups` chosen and `override` (key=value) set,
    the value parsed as Hydra parses it (`nan`, `[0,-1]`)."""
    with pytest.raises(ConfigError) as caught:
        validate(composed([*groups, override]))
    return str(caught.value)


def test_every_numeric_key_has_a_case():
    assert set(CASES) == numeric_keys()


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_value_outside_the_range_names_the_key_and_the_range(key):
    value, *groups = CASES[key][0].split()
    text = refusal(f"{key}={value}", groups)
    assert text.startswith(f"invalid config value {CASES[key][1]}"), text


@pytest.mark.parametrize("key", sorted(CASES))
def test_a_value_of_the_wrong_type_names_the_key_and_the_range(key):
    value, *groups = CASES[key][0].split()
    text = refusal(f"{key}={'[abc]' if value.startswith('[') else 'abc'}", groups)
    assert text.startswith(f"invalid config value {key}"), text
    assert text.endswith(f"; allowed: {CASES[key][2]}"), text
    assert "\n" not in text


def test_a_range_s_ends():
    unit = Range(0, 1, open_low=True)  # (0, 1]
    assert (unit.allows(0.0), unit.allows(1e-12), unit.allows(1.0), unit.allows(1.5)) == (
        False,
        True,
        True,
        False,
    )
    assert str(unit) == "in (0, 1]"
    assert not Range().allows(float("nan")) and not Range(0).allows(float("inf"))
    assert str(Range(0)) == "a finite number >= 0" and str(Range(0, open_low=True)) == (
        "a finite number > 0"
    )
    epochs = Range(1, 100_000, integer=True, why="every epoch is kept")
    assert str(epochs) == "an integer in 1..100000"
    assert epochs.refusal(0) == "must be an integer in 1..100000"  # `why` is the ceiling's
    assert epochs.refusal(100_001) == "must be an integer in 1..100000 (every epoch is kept)"


def test_the_ends_of_a_range_pass():
    cfg = validate(composed(["train.epochs=1", "train.lr=1e-9", "eval.high_weight=0.999"]))
    assert (cfg.train.epochs, cfg.train.lr, cfg.eval.high_weight) == (1, 1e-9, 0.999)
    assert validate(composed(["grid.solved=1", "debate.penalties=[0]"])).grid.solved == 1.0


def stage_on(tmp_path, key: str, value: object) -> tuple[int, str, float]:
    """The train stage on a params.yaml whose `key` holds `value`: exit code, stderr,
    seconds."""
    params = yaml.safe_load(composed_yaml())
    group, name = key.split(".")
    params[group][name] = value
    (tmp_path / PARAMS_FILE).write_text(yaml.safe_dump(params))
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.stages.train"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    return result.returncode, result.stderr, time.monotonic() - start


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("train.epochs", -5, "train.epochs=-5: must be an integer in 1..100000"),
        ("train.lr", "abc", "train.lr: Value 'abc' of type 'str' could not be converted"),
    ],
)
def test_a_stage_refuses_a_bad_value_at_once_with_its_range(tmp_path, key, value, message):
    """Issue 50, item 8: `dvc exp run -S train.epochs=-5` or `-S train.lr=abc` failed
    21-25 s in with no range. The stage checks params.yaml before its own imports: it
    exits in about 0.5 s (bound: 10 s on a loaded 2-core machine), in one line."""
    code, stderr, seconds = stage_on(tmp_path, key, value)
    assert code == 1 and seconds < 10, (code, seconds, stderr)
    assert stderr.count("\n") == 1 and stderr.startswith(f"error: invalid config value {message}")
    if key == "train.lr":
        assert stderr.rstrip().endswith("; allowed: a finite number > 0")
