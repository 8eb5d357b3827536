"""Loading a config (pipeline/config/load.py): params.yaml as Hydra and DVC compose
conf/, the Hydra apps, conf/'s and params.yaml's YAML read in one line whatever is
wrong with them (a syntax error, an alias, a byte that is not UTF-8, the wrong shape),
and a refused params.yaml value put back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

import pipeline.run
from pipeline.config import PARAMS_FILE, PROJECT_ROOT, compose, load_params, validate
from pipeline.config.load import composed_yaml
from pipeline.core import precision
from pipeline.core.errors import ConfigError
from pipeline.stages import evaluate, generate, train
from tests.config.refused import with_importtime
from tests.conftest import assert_golden, composed


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
    cfg = validate(composed(["data.seed=7", "train.epochs=120", "train.lr=0.9"]))
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
    (tmp_path / PARAMS_FILE).write_text(content)
    code, _, other = with_importtime(["-m", "pipeline.stages.train"], tmp_path)
    assert code == 1 and len(other) == 1, other
    assert other[0].startswith(f"error: {tmp_path / PARAMS_FILE} {what}")
    assert other[0].endswith(
        "it is not the config `python -m pipeline.params` writes; run "
        "`python -m pipeline.params` to regenerate it from conf/"
    )


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
