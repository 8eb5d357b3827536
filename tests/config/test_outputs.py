"""The outputs' paths (pipeline/config/outputs.py): relative, inside data/, models/ or
reports/ (the tracked state's file in the project root), in safe characters, through
no symbolic link, and each output a path of its own."""

from __future__ import annotations

import pytest

from pipeline.config import compose, validate
from pipeline.core.errors import ConfigError
from tests.conftest import composed


def test_paths_inside_the_project_pass():
    cfg = validate(
        compose(["paths.metrics=./reports/other.json", "paths.figures=reports/out/figs"])
    )
    assert (cfg.paths.metrics, cfg.paths.figures) == ("./reports/other.json", "reports/out/figs")


# Issue 22: outputs that could overwrite project files, and unsafe path characters.
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
        validate(composed([override]))
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
    assert validate(composed(["paths.tracked_state=reports/state.json"]))


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
            validate(composed([f"paths.metrics={value}"]))
        assert str(err.value) == (
            f"invalid config value paths.metrics={value!r}: must not pass through a "
            f"symbolic link ({link} is one): outputs are written only to real folders "
            "inside the project"
        )
    assert validate(composed(["paths.metrics=reports/real/metrics.json"]))


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
        validate(composed([override]))
    text = str(err.value)
    assert text.startswith("invalid config value paths.")
    assert key in text and other in text and f" {relation} " in text
    assert "every output needs a path of its own" in text and "\n" not in text
