"""The track stage (pipeline/stages/track.py): with tracking disabled it logs
nothing and writes its private markers; the UI command it prints is quoted."""

from __future__ import annotations

from dataclasses import replace

from pipeline import tracking


def test_track_stage_with_tracking_disabled_logs_nothing(tmp_path, monkeypatch):
    import yaml

    from pipeline.params import composed_yaml
    from pipeline.stages import track

    (tmp_path / "params.yaml").write_text(composed_yaml(["tracking.enabled=false"]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    track.main()
    state = yaml.safe_load((tmp_path / ".mlflow-state.json").read_text())
    assert state == {"experiment": None}
    assert not (tmp_path / "mlflow.db").exists()
    # Its second output, inside the artifacts' folder (issue 59, item 3), private.
    marker = tmp_path / track.ARTIFACTS_MARKER
    assert yaml.safe_load(marker.read_text()) == state
    assert (marker.stat().st_mode & 0o777, marker.parent.stat().st_mode & 0o777) == (0o600, 0o700)


def test_the_printed_ui_command_quotes_every_value(default_cfg, monkeypatch, tmp_path):
    """Issue 34, case 5: the hint printed the experiment name unquoted, so a name such
    as `x; touch f` became a second command when the line was pasted."""
    import shlex

    from pipeline.stages.track import ui_hint

    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    hostile = "x; touch /tmp/pwned $(id)"
    cfg = replace(default_cfg, tracking=replace(default_cfg.tracking, experiment=hostile))
    local = f"sqlite:///{tracking.store_root() / 'mlflow.db'}"
    hint = ui_hint(cfg, local)
    assert shlex.split(hint) == ["python", "-m", "pipeline", "ui", "--experiment", hostile]
    assert ui_hint(default_cfg, local) == "python -m pipeline ui"
    other = ui_hint(cfg, "http://127.0.0.1:5000/x;id")
    assert shlex.split(other.split(",")[0]) == [
        "mlflow",
        "ui",
        "--backend-store-uri",
        "http://127.0.0.1:5000/x;id",
    ]
