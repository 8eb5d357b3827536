"""dvc.yaml's code deps: generated (pipeline/stages/dvc_yaml.py), and each stage lists
every project module it loads and none it does not.

A module a stage imports but does not list would not rerun the stage when it
changes, so a stale output could pass as current. The imports are read from the
source (function-level ones too), from each stage's entry point outwards.
"""

from __future__ import annotations

import pytest

from pipeline.config import PROJECT_ROOT
from pipeline.config.provenance import PIPELINE_FILE, stages
from pipeline.core.kinds import EXPERIMENTS, experiment_part
from pipeline.stages.dvc_yaml import generated, import_closure, stage_module, with_code_deps


def listed(deps: list[str], path: str) -> bool:
    return any(path == dep or path.startswith(dep.rstrip("/") + "/") for dep in deps)


@pytest.mark.parametrize("stage", list(stages()))
def test_each_stage_lists_every_module_it_imports(stage):
    spec = stages()[stage]
    spec = spec.get("do", spec)  # a foreach stage: every item runs the same command
    module = spec["cmd"].removeprefix("python -m ").split()[0]
    deps = [dep if isinstance(dep, str) else next(iter(dep)) for dep in spec["deps"]]
    missing = sorted(p for p in import_closure(module) if not listed(deps, p))
    assert not missing, f"dvc.yaml stage {stage} misses code deps: {missing}"


@pytest.mark.parametrize("stage", list(stages()))
def test_each_stage_lists_no_code_it_does_not_import(stage):
    """A listed module or folder that the stage never loads would rerun it for
    nothing: a change in pipeline/models/ must not regenerate the data."""
    spec = stages()[stage]
    spec = spec.get("do", spec)
    module = spec["cmd"].removeprefix("python -m ").split()[0]
    code = [dep for dep in spec["deps"] if isinstance(dep, str) and dep.startswith("pipeline/")]
    closure = import_closure(module)
    unused = [dep for dep in code if not any(listed([dep], path) for path in closure)]
    assert not unused, f"dvc.yaml stage {stage} lists code it does not import: {unused}"


def test_the_closure_follows_function_level_imports_and_registered_kinds():
    """The memory bound reaches every model kind through the registry: all are deps
    of a stage that computes; the generate stage reaches no model."""
    closure = import_closure("pipeline.stages.train")
    assert "pipeline/memory/stages.py" in closure
    assert {"pipeline/models/lesson.py", "pipeline/models/window.py"} <= closure
    generate = import_closure("pipeline.stages.generate")
    assert not any(path.startswith("pipeline/models/") for path in generate)
    assert not any(path.startswith("pipeline/memory/") for path in generate)
    assert "pipeline/tracking/runs.py" in import_closure("pipeline.stages.track")


def test_the_closure_follows_the_experiments_each_framework_reads():
    """The frameworks find the experiments by name: the report reads each one's
    section, tracking its numbers; a stage that loads them lists what they read of
    every experiment, and an experiment's stage its whole folder. Another
    experiment's settings and memory terms decide only whether a stage runs: the
    lesson's stages do not list them, so adding an experiment reruns none of them."""
    generate = import_closure("pipeline.stages.generate")
    report = import_closure("pipeline.stages.report")
    track = import_closure("pipeline.stages.track")
    for name, package in EXPERIMENTS.items():
        folder = package.replace(".", "/")
        assert not any(path.startswith(f"{folder}/") for path in generate)
        assert f"{folder}/section.py" in report
        if (PROJECT_ROOT / folder / "tracked.py").exists():  # its numbers on the lesson's runs
            assert f"{folder}/tracked.py" in track
        stage = stages()[name]  # its stage, or its foreach stage of cells
        own = [dep for dep in stage.get("do", stage)["deps"] if isinstance(dep, str)]
        assert f"{folder}/" in own


def test_dvc_yaml_holds_the_generated_parts():
    """The experiments' stages from their folders, every stage's code deps from its
    imports: `python -m pipeline.params` writes them; a hand edit, a new import or an
    edited stage.yaml without it fails here, naming the command."""
    text = (PROJECT_ROOT / PIPELINE_FILE).read_text()
    assert generated(text) == text, "run `python -m pipeline.params`"


def test_the_generated_deps_replace_only_the_code_lines():
    text = (
        "stages:\n  a:\n    cmd: python -m pipeline.stages.generate\n    deps:\n"
        "      - ${paths.x}\n      - pipeline/models/\n      - conf/\n"
        "    params:\n      - data\n  b:\n    cmd: python -m pipeline.stages.generate\n"
    )
    spec = {"a": {"cmd": "python -m pipeline.stages.generate"}, "b": {"cmd": "x"}}
    written = with_code_deps(text, spec)
    assert "pipeline/models/" not in written  # the generate stage loads no model
    assert "      - ${paths.x}\n      - conf/\n      - pipeline/__init__.py\n" in written
    assert written.endswith(
        "      - pipeline/tasks/\n    params:\n      - data\n  b:\n"
        "    cmd: python -m pipeline.stages.generate\n"
    )
    assert stage_module({"do": {"cmd": "python -m pipeline.stages.grid --cell X"}}) == (
        "pipeline.stages.grid"
    )


def test_an_experiment_s_stages_come_from_its_folder(tmp_path):
    from pipeline.stages.dvc_yaml import with_experiment_stages

    folder = tmp_path / "pipeline/experiments"
    for name in EXPERIMENTS:
        (folder / name).mkdir(parents=True)
        (folder / name / "stage.yaml").write_text(f"{name}:\n  cmd: run {name}\n\n")
    text = "stages:\n  # experiments: begin\n  old: x\n  # experiments: end\n  report: y\n"
    written = with_experiment_stages(text, tmp_path)
    first, *_ = EXPERIMENTS
    assert "old: x" not in written and written.endswith("  # experiments: end\n  report: y\n")
    assert f"  {first}:\n    cmd: run {first}\n\n" in written


def test_dvc_lock_holds_the_committed_code_and_params():
    """dvc.lock records each stage's code, conf and params as committed: a code
    change committed without `dvc commit -f` makes a fresh clone's `dvc repro` rerun
    stages (and rewrite dvc.lock), so the committed outputs no longer count as
    current. Outputs of other stages (data/, models/, reports/) may be absent here."""
    import json
    import subprocess

    status = subprocess.run(
        ["dvc", "status", "--json"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    generated_folders = ("data/", "models/", "reports/")
    stale = {}
    for stage, changes in json.loads(status.stdout or "{}").items():
        for change in changes:
            if not isinstance(change, dict):
                continue
            for path, state in change.get("changed deps", {}).items():
                if not path.startswith(generated_folders):
                    stale.setdefault(stage, []).append(f"{path}: {state}")
    assert not stale, f"dvc.lock is stale (run `dvc commit -f`): {stale}"


def test_the_report_and_track_stages_read_every_experiment_s_outputs():
    """The report shows each experiment's section and the track stage logs each one's
    numbers: each lists one of the experiment's outputs as a data dep, so that a
    changed result reruns them (dynamics.json once changed and left the report stale)."""
    for reader in ("report", "track"):
        deps = [dep for dep in stages()[reader]["deps"] if isinstance(dep, str)]
        for name, package in EXPERIMENTS.items():
            paths = experiment_part(name, "config").PATHS
            folder = PROJECT_ROOT / package.replace(".", "/")
            if reader == "track" and not (folder / "tracked.py").exists():
                continue  # its stages log their own runs
            assert any(f"${{paths.{key}}}" in deps for key in paths), (reader, name)
