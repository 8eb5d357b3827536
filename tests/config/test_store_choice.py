"""Which store a config value may name (pipeline/config/store_choice.py): one
inside the project; one outside it or on a server only by MLFLOW_TRACKING_URI or
the command line, never from a pulled params.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest


def pulled_params(folder: Path, uri: str) -> Path:
    """A params.yaml whose tracking.uri arrived with a pull."""
    from pipeline.config.load import composed_yaml

    folder.mkdir(parents=True, exist_ok=True)
    params = folder / "params.yaml"
    params.write_text(composed_yaml().replace("  uri: null\n", f"  uri: {uri}\n", 1))
    return params


@pytest.mark.parametrize(
    ("uri", "where"),
    [
        ("sqlite:///{outside}/victim", "outside the project"),
        ("file://{outside}/mlruns", "outside the project"),
        ("http://203.0.113.7:5000", "a server"),
        ("https://tracking.example.com", "a server"),
        ("postgresql://user@db.example.com/mlflow", "a server"),
    ],
)
def test_a_store_outside_the_project_is_not_taken_from_params_yaml(
    tmp_path, monkeypatch, run_entry, uri, where
):
    """Issue 60, case 10: a pulled params.yaml sent the runs, params and artifacts
    anywhere (an existing file there became 0600, with a `.lock` and `mlartifacts/`
    beside it) or to any server. Outside the project it is MLFLOW_TRACKING_URI's."""
    from pipeline.config import ConfigError, load_params
    from pipeline.stages import track

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("someone's file\n")
    victim.chmod(0o644)
    uri = uri.format(outside=outside)
    project = tmp_path / "project"
    params = pulled_params(project, uri)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(project))
    monkeypatch.chdir(project)
    code, err = run_entry(track.main)
    assert code == 1 and err.count("\n") == 1, err
    assert err == (
        f"error: invalid config value tracking.uri={uri!r}: a store {where} is not taken "
        f"from params.yaml (it arrives with a pull); choose it with MLFLOW_TRACKING_URI={uri}, "
        "or set tracking.uri to null (the project's mlflow.db) or a store inside the project\n"
    )
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert victim.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in project.iterdir()) == ["params.yaml"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # the explicit choice
    assert load_params(params).tracking.uri == uri
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")  # another one
    with pytest.raises(ConfigError, match="is not taken from params.yaml"):
        load_params(params)


def test_a_store_inside_the_project_is_a_config_value(tmp_path, monkeypatch):
    from pipeline.config import load_params
    from pipeline.config.store_choice import check_store_choice, inside

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    project = tmp_path / "project"
    for uri in ("sqlite:///mlflow.db", f"sqlite:///{project}/stores/a.db", "file:mlruns"):
        monkeypatch.chdir(tmp_path)
        params = pulled_params(project, uri)
        monkeypatch.chdir(project)
        assert load_params(params).tracking.uri == uri
    link = project / "link"
    link.symlink_to(tmp_path)  # a link out of the project is outside
    assert not inside(f"sqlite:///{link}/x.db", [project])
    # the Hydra apps: `tracking.uri=...` typed on the command line is a choice
    check_store_choice("http://127.0.0.1:5000", [project], "conf/", flag=True)
