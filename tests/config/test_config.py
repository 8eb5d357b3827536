"""Config schema, validation messages, params.yaml sync and the Hydra app."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

import pipeline.run
from pipeline.config import (
    CONF_DIR,
    PARAMS_FILE,
    PROJECT_ROOT,
    Config,
    ModelConfig,
    compose,
    load_params,
    validate,
)
from pipeline.config.load import composed_yaml
from pipeline.core import precision
from pipeline.core.errors import ConfigError
from pipeline.stages import evaluate, generate, train
from tests.conftest import assert_golden

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


def test_conf_composes_to_the_schemas_defaults(default_cfg):
    """conf/ composes to the schema's defaults: the files are written from it, and
    conf/config.yaml's defaults list, written by hand, picks for model and task the
    option of the dataclass's own kind. The golden tests pin that these are the
    lesson's."""
    assert default_cfg == Config()


def refusal(overrides: list[str]) -> str:
    """The one-line ConfigError that validating conf/ with `overrides` raises."""
    with pytest.raises(ConfigError) as err:
        validate(compose(overrides))
    text = str(err.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize(("override", "key"), INVALID)
def test_invalid_values_name_the_key(override, key):
    assert key in refusal([override])


def test_unknown_key_is_rejected():
    with pytest.raises(ConfigError, match="train.momentum"):
        validate(compose(["+train.momentum=0.9"]))


def test_overrides_reach_the_typed_config():
    cfg = validate(compose(["data.seed=7", "train.epochs=120", "train.lr=0.9"]))
    assert (cfg.data.seed, cfg.train.epochs, cfg.train.lr) == (7, 120, 0.9)


def test_committed_params_yaml_matches_conf():
    assert (PROJECT_ROOT / PARAMS_FILE).read_text() == composed_yaml(), (
        "params.yaml is out of sync with conf/: run `python -m pipeline.params`"
    )


def test_params_yaml_is_what_dvc_composes(tmp_path):
    from dvc.utils.hydra import compose_and_dump

    out = tmp_path / "params.yaml"
    compose_and_dump(out, str(PROJECT_ROOT / "conf"), None, "config", "", ["train.lr=0.3"])
    assert out.read_text() == composed_yaml(["train.lr=0.3"])


def run_app(*args: str, cwd=PROJECT_ROOT) -> subprocess.CompletedProcess:
    """pipeline.run, logging nowhere (tests/scaleout/test_sweep.py checks what it logs)."""
    command = [sys.executable, "-m", "pipeline.run", *args, "tracking.enabled=false"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_hydra_app_prints_tables_and_writes_metrics(tmp_path):
    result = run_app(f"hydra.run.dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert "run-to-run gap 0.1056" in result.stdout
    assert "run 2 weights 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.97" in (
        result.stdout
    )
    assert_golden(json.loads((tmp_path / "metrics.json").read_text()))
    # Issue 21: it says where it wrote (run_app disables tracking).
    assert (
        result.stdout.splitlines()[-1] == f"wrote {tmp_path / 'metrics.json'} (tracking disabled)"
    )


@pytest.mark.slow
def test_hydra_app_overrides(tmp_path):
    result = run_app(f"hydra.run.dir={tmp_path}", "data.seed=7", "train.epochs=120", "train.lr=0.9")
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "metrics.json").read_text())
    cfg = validate(compose(["data.seed=7", "train.epochs=120", "train.lr=0.9"]))
    frame, summary = generate.run(cfg)
    params, _ = train.run(cfg, frame)
    expected, _ = evaluate.run(cfg, frame, summary, params)
    assert document == json.loads(json.dumps(precision.rounded(expected)))


@pytest.mark.slow
def test_hydra_multirun_over_seeds(tmp_path):
    result = run_app("-m", f"hydra.sweep.dir={tmp_path}", "train.seeds=[1],[2]")
    assert result.returncode == 0, result.stderr
    runs = [json.loads((tmp_path / str(i) / "metrics.json").read_text()) for i in (0, 1)]
    assert [list(r["runs"]) for r in runs] == [["1"], ["2"]]
    # Seeds are independent: each alone gives the batched lesson's numbers.
    assert round(runs[0]["runs"]["1"]["heldout_accuracy"], 4) == 0.8889
    assert round(runs[1]["runs"]["2"]["heldout_accuracy"], 4) == 0.9944
    assert runs[0]["seed_gap"] == 0.0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.lr=-1"], "train.lr=-1.0: must be a finite number > 0"),
        (["model=multihead", "model.heads=0"], "model.heads=0: must be an integer >= 1"),
    ],
)
def test_hydra_app_rejects_bad_value_in_one_line(app_in_process, tmp_path, overrides, message):
    code, _, stderr = app_in_process(
        pipeline.run, f"hydra.run.dir={tmp_path}", *overrides, "tracking.enabled=false"
    )
    assert code == 1
    assert stderr == f"error: invalid config value {message}\n"
    assert not (tmp_path / "metrics.json").exists()


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


def test_paths_inside_the_project_pass():
    cfg = validate(
        compose(["paths.metrics=./reports/other.json", "paths.figures=reports/out/figs"])
    )
    assert (cfg.paths.metrics, cfg.paths.figures) == ("./reports/other.json", "reports/out/figs")


def test_largest_allowed_epochs_pass():
    assert validate(compose(["train.epochs=100000", "train.seeds=[1]"])).train.epochs == 100000


def broken_conf(tmp_path, name: str = "train/lesson.yaml"):
    """A copy of conf/ whose `name` has a YAML syntax error at its end, found on the
    line `broken_line` gives."""
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    with (conf / name).open("a") as handle:
        handle.write("lr: [0.6\nepochs: 200\n")
    return conf


def broken_line(name: str = "train/lesson.yaml") -> int:
    """The line where the parser finds broken_conf's error: the second one appended."""
    return (PROJECT_ROOT / "conf" / name).read_text().count("\n") + 2


def test_invalid_yaml_in_conf_names_file_line_and_column(tmp_path):
    from pipeline.config import check_conf_yaml

    check_conf_yaml()  # the real conf/ parses
    with pytest.raises(ConfigError) as err:
        check_conf_yaml(broken_conf(tmp_path))
    text = str(err.value)
    assert f"train/lesson.yaml line {broken_line()} column 7: expected ',' or ']'" in text
    assert "\n" not in text


@pytest.mark.parametrize("module", ["pipeline.params", "pipeline.run", "pipeline.study"])
def test_invalid_yaml_in_conf_is_one_line_from_the_commands(tmp_path, module):
    project = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "pipeline", project / "pipeline")
    broken_conf(project)
    hydra_dir = [] if module == "pipeline.params" else [f"hydra.run.dir={tmp_path / 'run'}"]
    result = subprocess.run(
        [sys.executable, "-m", module, *hydra_dir], cwd=project, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"error: invalid YAML in conf/train/lesson.yaml line {broken_line()} column 7"
    )
    assert result.stderr.count("\n") == 1, result.stderr
    assert not (project / "params.yaml").exists()
    assert not (tmp_path / "run").exists()


def test_rejected_params_value_says_how_to_restore(tmp_path, monkeypatch):
    """A failed `dvc exp run -S` leaves its value in params.yaml: the error says so."""
    from pipeline.config import load as config

    monkeypatch.setattr(config, "PROJECT_ROOT", tmp_path)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    params = tmp_path / PARAMS_FILE
    params.write_text(composed_yaml().replace("lr: 0.6", "lr: -1"))
    with pytest.raises(ConfigError) as err:
        config.load_params()
    text = str(err.value)
    assert text.startswith("invalid config value train.lr=-1.0: must be a finite number > 0")
    assert "params.yaml still holds this value" in text
    assert "`python -m pipeline.params` restores" in text and "\n" not in text

    # A queued experiment runs in a temporary copy: the workspace is untouched.
    monkeypatch.setenv("DVC_ROOT", str(tmp_path / "elsewhere"))
    with pytest.raises(ConfigError) as err:
        config.load_params()
    assert "still holds" not in str(err.value)


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


@pytest.mark.parametrize("kind", ["sink", "multihead", "posenc", "window"])
def test_model_group_selects_a_variant_on_the_lesson_defaults(kind):
    """model=<kind> is the lesson's model with its own YAML's keys on top, and
    changes no other group."""
    import yaml

    variant = yaml.safe_load((CONF_DIR / "model" / f"{kind}.yaml").read_text())
    del variant["defaults"]
    expected = replace(Config(), model=replace(ModelConfig(), **variant))
    assert validate(compose([f"model={kind}"])) == expected


@pytest.mark.slow
def test_hydra_multirun_over_the_variants(tmp_path):
    kinds = ["lesson", "sink", "multihead", "posenc", "window"]
    result = run_app(
        "-m", f"hydra.sweep.dir={tmp_path}", f"model={','.join(kinds)}", "train.epochs=20"
    )
    assert result.returncode == 0, result.stderr
    documents = [json.loads((tmp_path / str(i) / "metrics.json").read_text()) for i in range(5)]
    assert [d["parameters"] for d in documents] == [19, 20, 37, 43, 35]
    assert "sink_mass" in documents[1]["runs"]["1"]
    assert "head_2_argmax_hit" in documents[2]["runs"]["2"]
    for document in documents:
        assert set(document) == {
            "data",
            "runs",
            "seed_gap",
            "heldout_accuracy_mean",
            "heldout_accuracy_std",
            "parameters",
        }


@pytest.mark.parametrize("kind", ["sink", "multihead", "posenc", "window"])
def test_dvc_exp_run_selects_a_variant(tmp_path, kind):
    """`dvc exp run -S model=<kind>` writes the variant's group into params.yaml."""
    from dvc.utils.hydra import compose_and_dump

    out = tmp_path / "params.yaml"
    compose_and_dump(out, str(PROJECT_ROOT / "conf"), None, "config", "", [f"model={kind}"])
    assert out.read_text() == composed_yaml([f"model={kind}"])
    assert load_params(out).model.kind == kind


# Issue 22: outputs that could overwrite project files, unsafe path characters,
# seeds out of range, sizes that run the machine out of memory, and pipeline.study's
# traceback for invalid YAML.
NOT_AN_OUTPUT = [
    "paths.step_weights=mlflow.db",
    "paths.report=README.md",
    "paths.metrics=conf/config.yaml",
    "paths.sequences=tests/conftest.py",
    "paths.parameters=pipeline/x.py",
    "paths.metrics=params.yaml",
    "paths.faithfulness=dvc.lock",
    "paths.figures=reports",
    "paths.metrics=reports/.gitignore",
    "paths.metrics=reports/dvc.yaml",
    "paths.parameters=models/x.dvc",
    "paths.tracked_state=mlflow.db",
    "paths.tracked_state=.mlflow-state.txt",
    "paths.tracked_state=conf/.mlflow-state.json",
]


@pytest.mark.parametrize("override", NOT_AN_OUTPUT)
def test_paths_outside_the_output_folders_are_refused(override):
    key, value = override.split("=")
    with pytest.raises(ConfigError) as err:
        validate(compose([override]))
    text = str(err.value)
    assert text.startswith(
        f"invalid config value {key}={value!r}: must be under data/, models/ or reports/"
    )
    assert "\n" not in text


def test_outputs_and_the_tracked_state_file_pass():
    cfg = validate(
        compose(
            [
                "paths.metrics=./reports/other.json",
                "paths.figures=reports/other/figs",
                "paths.sequences=data/other/sequences.parquet",
                "paths.parameters=models/p-2.parquet",
                "paths.tracked_state=.mlflow-state_2.json",
            ]
        )
    )
    assert cfg.paths.tracked_state == ".mlflow-state_2.json"
    assert validate(compose(["paths.tracked_state=reports/state.json"]))


@pytest.mark.parametrize(
    "value",
    ["reports/<img src=x onerror=alert(1)>", "reports/a b.md", "reports/r\u00e9sum\u00e9.md"]
    + ["reports/x;rm.md", 'reports/"q".md', "reports/a\nb.md"],
)
def test_path_characters_outside_the_safe_set_are_refused(value):
    with pytest.raises(ConfigError) as err:
        validate({"paths": {"report": value}})
    text = str(err.value)
    assert text.startswith(f"invalid config value paths.report={value!r}: may use only")
    assert "\n" not in text


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
    cfg = validate(compose(["data.seed=4294966295", "train.seeds=[1000]", "study.seeds=1000"]))
    assert cfg.data.seed + max(cfg.train.seeds) == 2**32 - 1
    offset = 2**32 - 1 - cfg.faithfulness.sanity_seeds  # the re-draws wrap, past the study's
    assert validate(compose([f"faithfulness.randomisation_offset={offset}"]))


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


# --- issue 34: links, and outputs that would overwrite each other ---------------------------


def test_an_output_path_through_a_symbolic_link_is_refused(tmp_path, monkeypatch):
    """Case 2: `ln -s .. reports/up` and `paths.metrics: reports/up/README.md` wrote
    metrics JSON over README.md; a link to /tmp wrote there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/up").symlink_to("..")
    (tmp_path / "reports/tmp").symlink_to("/tmp")
    (tmp_path / "reports/metrics.json").symlink_to("../README.md")
    for value, link in [
        ("reports/up/README.md", "reports/up"),
        ("reports/tmp/metrics.json", "reports/tmp"),
        ("reports/metrics.json", "reports/metrics.json"),
    ]:
        with pytest.raises(ConfigError) as err:
            validate(compose([f"paths.metrics={value}"]))
        assert str(err.value) == (
            f"invalid config value paths.metrics={value!r}: must not pass through a "
            f"symbolic link ({link} is one): outputs are written only to real folders "
            "inside the project"
        )
    assert validate(compose(["paths.metrics=reports/real/metrics.json"]))


@pytest.mark.parametrize(
    ("override", "other", "relation"),
    [
        ("paths.metrics=reports/training.csv", "paths.training_curves", "is also"),
        ("paths.figures=reports/grid", "paths.grid", "is also"),
        ("paths.metrics=reports/grid/metrics.json", "paths.grid", "holds"),
        ("paths.figures=reports/study", "paths.study_seeds", "is inside"),
    ],
)
def test_two_outputs_on_one_path_or_one_inside_another_s_folder_are_refused(
    override, other, relation
):
    """Case 6: `paths.metrics: reports/training.csv` with `dvc repro -s evaluate`
    replaced train's output, exit 0. The message names both keys (the later one in
    the schema's order first)."""
    key, value = override.split("=")
    with pytest.raises(ConfigError) as err:
        validate(compose([override]))
    text = str(err.value)
    assert text.startswith("invalid config value paths.")
    assert key in text and other in text and f" {relation} " in text
    assert "every output needs a path of its own" in text and "\n" not in text


@pytest.mark.parametrize(
    "override",
    [
        "hydra.run.dir=reports",
        "hydra.sweep.dir=reports/sweep",
        "hydra.run.dir=.",
        "++hydra.run.dir=conf/x",
        "hydra.sweep.dir=data/${now:%H}",
    ],
)
def test_a_hydra_folder_inside_the_outputs_or_sources_is_refused_before_hydra_runs(
    override, monkeypatch, capsys
):
    """Issue 34, case 9: `python -m pipeline.run hydra.run.dir=reports train.lr=0.9`
    replaced reports/metrics.json with lr-0.9 numbers, exit 0."""
    from pipeline.config.load import run_hydra_app

    started = []
    monkeypatch.setattr(sys, "argv", ["pipeline.run", override, "train.lr=0.9"])
    with pytest.raises(SystemExit) as exit_:
        run_hydra_app(lambda: started.append(True))
    assert exit_.value.code == 1 and not started  # Hydra never started
    error = capsys.readouterr().err
    assert error.startswith(f"error: invalid config value {override.lstrip('+').split('=')[0]}=")
    assert "use outputs/ or multirun/" in error and error.count("\n") == 1


def test_hydra_folders_elsewhere_pass():
    """Outside the outputs and sources, Hydra's folders are the caller's choice
    (case 12: docs/reliability.md says why a folder outside the project is allowed)."""
    from pipeline.config.load import check_hydra_dirs

    check_hydra_dirs(["hydra.run.dir=outputs/x", "hydra.sweep.dir=multirun/${now:%H}"])
    check_hydra_dirs(["hydra.sweep.dir=/tmp/elsewhere", "train.lr=0.3,0.6"])


def test_the_configured_grid_cells_replace_the_default_ones():
    """Issue 34, case 1: cells removed from conf/grid/lesson.yaml must be gone from the
    config (a merge into the schema kept every default cell)."""
    import yaml

    raw = yaml.safe_load(composed_yaml())
    raw["grid"]["cells"] = {"rise-window2": {"task": "rise", "variant": "window2"}}
    assert list(validate(raw).grid.cells) == ["rise-window2"]
    assert len(validate(compose()).grid.cells) == 15  # conf/'s own list


def test_a_kind_s_own_key_is_checked_only_for_that_kind():
    """Issue 34, case 16: `data.steps=2` with the lesson kind was refused because of
    window's model.window=3, a key the lesson never reads."""
    steps = ["data.steps=2", "data.first_marked_step=1"]
    assert validate(compose(steps)).model.kind == "lesson"
    with pytest.raises(ConfigError, match=r"model.window=3: must be in 1..data.steps = 1..2"):
        validate(compose(["model=window", *steps]))


def test_an_unknown_key_lists_the_allowed_ones():
    with pytest.raises(ConfigError) as err:
        validate(compose(["+data.foo=1"]))
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
    assert validate(compose([f"tracking.experiment={'x' * longest}"]))
    with pytest.raises(ConfigError, match=f"must be at most {longest} characters"):
        validate(compose([f"tracking.experiment={'x' * (longest + 1)}"]))
    with pytest.raises(ConfigError, match=r"tracking.uri='garbage://x': allowed: a URI of"):
        validate(compose(["tracking.uri=garbage://x"]))
    for uri in ("sqlite:///a.db", "http://127.0.0.1:5000", "postgresql+psycopg2://u@h/db"):
        assert validate(compose([f"tracking.uri={uri}"]))


# --- the fourth battery (issues 49, 51, 52, 53): the config's files and its cells -----------


def test_a_cell_whose_key_is_not_its_task_and_variant_is_refused():
    """Issue 49, case 7: `alias: {task: rise, variant: window2}` in conf/grid/lesson.yaml
    passed, trained, and failed in DVC (`reports/grid/alias.json` does not exist)."""
    for group in ("grid", "debate"):
        with pytest.raises(ConfigError) as err:
            validate(compose([f"+{group}.cells.alias={{task:rise,variant:window2}}"]))
        assert str(err.value) == (
            f"invalid config value {group}.cells.alias: a cell's key must be its "
            "<task>-<variant> (DVC names its stage and output after it), here rise-window2"
        )


def test_an_unknown_key_inside_a_cell_lists_the_allowed_ones():
    """Issue 51, case 2: OmegaConf's "Key 'foo' not in 'GridCell'" alone."""
    with pytest.raises(ConfigError) as err:
        validate(compose(["+grid.cells.rise-window2.foo=1"]))
    assert str(err.value) == (
        "invalid config value grid.cells.rise-window2.foo: Key 'foo' not in 'GridCell'; "
        "allowed: task, variant"
    )


def anchor_bomb(levels: int = 9) -> str:
    """The "billion laughs" bomb: 9 items, then `levels - 1` lists of 9 aliases of the one above
    (9**9 strings from 2.5 kB at 9 levels)."""
    names = "abcdefghijklmnopqrstuvwxyz"[:levels]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * 9)}]"]
    lines += [
        f"{name}: &{name} [{', '.join([f'*{up}'] * 9)}]"
        for up, name in zip(names, names[1:], strict=False)
    ]
    return "\n".join(lines) + "\n"


def test_an_alias_in_params_yaml_is_refused_naming_the_file_and_the_place(tmp_path):
    """Issue 52, case 1: OmegaConf copies every alias's value; DVC writes none."""
    from pipeline.config import load_params

    params = tmp_path / PARAMS_FILE
    params.write_text(composed_yaml() + anchor_bomb(levels=2))
    with pytest.raises(ConfigError) as err:
        load_params(params)
    line = composed_yaml().count("\n") + 2
    assert str(err.value) == (
        f"invalid YAML in {params} line {line} column 8: an alias (*a); params.yaml and "
        "conf/ take none (DVC writes none): write the value out"
    )


def test_a_byte_that_is_not_utf_8_in_conf_names_the_file_line_and_byte(tmp_path):
    """Issue 52, case 3: an 80-line UnicodeDecodeError traceback."""
    from pipeline.config import check_conf_yaml

    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    local = conf / "tracking/local.yaml"
    text = local.read_bytes()
    local.write_bytes(text + b'experiment: "caf\xe9"\n')
    line = text.count(b"\n") + 1
    with pytest.raises(ConfigError) as err:
        check_conf_yaml(conf)
    assert str(err.value) == (
        f"invalid YAML in {local} line {line} column 17: byte 0xe9 is not "
        "UTF-8; save the file as UTF-8"
    )


def spoiled_project(tmp_path, problem: str):
    """A copy of the project's code and conf/ with `problem` in conf/tracking/local.yaml:
    the anchor bomb, or a byte that is not UTF-8."""
    project = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "pipeline", project / "pipeline")
    shutil.copytree(PROJECT_ROOT / "conf", project / "conf")
    spoiled = anchor_bomb().encode() if problem == "bomb" else b'experiment: "caf\xe9"\n'
    with (project / "conf/tracking/local.yaml").open("ab") as handle:
        handle.write(spoiled)
    return project


@pytest.mark.parametrize("problem", ["bomb", "byte"])
@pytest.mark.parametrize("module", ["pipeline.params", "pipeline.run"])
def test_a_bomb_or_a_bad_byte_in_conf_is_one_line_from_the_commands(tmp_path, module, problem):
    """Issue 52, cases 1 and 3: `python -m pipeline.params` ran for minutes on the bomb,
    and gave 80 lines of traceback on the byte (`pipeline.run`, 15). The timeout only
    keeps the old behaviour from hanging the suite."""
    project = spoiled_project(tmp_path, problem)
    hydra_dir = [] if module == "pipeline.params" else [f"hydra.run.dir={tmp_path / 'run'}"]
    result = subprocess.run(
        [sys.executable, "-m", module, *hydra_dir],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    what = "an alias (*a)" if problem == "bomb" else "byte 0xe9 is not UTF-8"
    assert result.stderr.startswith("error: invalid YAML in conf/tracking/local.yaml line ")
    assert what in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (project / "params.yaml").exists() and not (tmp_path / "run").exists()


def test_a_bomb_in_params_yaml_is_one_line_from_a_stage_before_torch_loads(tmp_path):
    """Issue 52, case 1: `python -m pipeline.stages.train` ran 121 s until killed."""
    from tests.config.test_bounds import with_importtime

    (tmp_path / PARAMS_FILE).write_text(composed_yaml() + anchor_bomb())
    code, imported, other = with_importtime(["-m", "pipeline.stages.train"], tmp_path)
    assert code == 1 and "torch" not in imported
    assert len(other) == 1 and other[0].startswith("error: invalid YAML in ")
    assert f"{PARAMS_FILE} line " in other[0] and "an alias (*a)" in other[0]


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ("", "is empty"),
        ("- 1\n- 2\n", "is a YAML list, not a mapping of the config's groups"),
        ("train:\n  lr: 0.3\n", "lacks the groups data, task, model, eval, study,"),
    ],
)
def test_an_empty_or_list_shaped_params_yaml_says_so_and_how_to_regenerate_it(
    tmp_path, content, what
):
    """Issue 53, case 4: an empty file was read as the full-size defaults (the data's
    provenance blamed); a list gave `Index 'grid' (str) is not an int`."""
    from tests.config.test_bounds import with_importtime

    (tmp_path / PARAMS_FILE).write_text(content)
    code, _, other = with_importtime(["-m", "pipeline.stages.train"], tmp_path)
    assert code == 1 and len(other) == 1, other
    assert other[0].startswith(f"error: {tmp_path / PARAMS_FILE} {what}")
    assert other[0].endswith(
        "it is not the config `python -m pipeline.params` writes; run "
        "`python -m pipeline.params` to regenerate it from conf/"
    )


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


def _repo_with_params(tmp_path, text: str, ref: str):
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (repo / "params.yaml").write_text(text)
    run("add", "params.yaml")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "exp")
    run("update-ref", ref, "HEAD")
    return repo


def test_check_params_refuses_a_pulled_experiment_s_alias_bomb_without_expanding_it(
    tmp_path, monkeypatch, capsys
):
    """Issue 60, case 8: DVC expands a pulled params.yaml's aliases before any stage runs
    (`dvc status` hung past 90 s); `check-params` reads it from git, unexpanded."""
    from pipeline.config import pulled

    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    ref = "refs/exps/ab/cdef0123/bomb-exp"
    repo = _repo_with_params(tmp_path, "\n".join(levels) + "\n", ref)
    monkeypatch.chdir(repo)
    with pytest.raises(SystemExit) as exit_:
        pulled.main(["bomb-exp"])  # the experiment's name, resolved to its ref
    message = str(exit_.value.code)
    assert message.startswith(f"error: invalid YAML in {ref}:params.yaml line 2")
    assert "an alias (*a0)" in message and "\n" not in message


def test_check_params_passes_the_project_s_own_params_and_names_a_missing_revision(
    tmp_path, monkeypatch, capsys
):
    from pipeline.config import pulled

    repo = _repo_with_params(
        tmp_path, (PROJECT_ROOT / "params.yaml").read_text(), "refs/exps/ab/cd/good"
    )
    monkeypatch.chdir(repo)
    pulled.main(["good"])
    assert "no alias, one reading for every key" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no params.yaml at 'nope'"):
        pulled.main(["nope"])


@pytest.mark.parametrize("override", ["train.lr=-1", "+train.lrr=0.3"])
def test_a_refused_exp_run_value_puts_params_yaml_back_as_it_was(override, tmp_path, monkeypatch):
    """Issue 59, item 5: `dvc exp run -S train.lr=-1` was refused in one line but left
    ` M params.yaml`. Here the stage's side of it: params.yaml as DVC writes it for the
    override, refused, and the baseline commit's bytes back in place."""
    from pipeline.config import load

    committed = (PROJECT_ROOT / PARAMS_FILE).read_text()
    (tmp_path / PARAMS_FILE).write_text(committed)
    for command in (["init", "-q"], ["add", PARAMS_FILE], ["commit", "-qm", "lesson"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command], cwd=tmp_path, check=True
        )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True
    ).stdout.strip()
    from omegaconf import OmegaConf

    written = compose([override])  # DVC's compose of conf/ with the override
    (tmp_path / PARAMS_FILE).write_text(OmegaConf.to_yaml(written, resolve=True))
    monkeypatch.setattr(load, "PROJECT_ROOT", tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", head)
    with pytest.raises(ConfigError) as refused:
        load.load_params(tmp_path / PARAMS_FILE)
    message = str(refused.value)
    assert "\n" not in message and override.lstrip("+").split("=")[0] in message
    assert f"params.yaml put back as it was, commit {head[:7]}'s" in message
    assert (tmp_path / PARAMS_FILE).read_text() == committed


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
