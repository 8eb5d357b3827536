"""Issue 34, case 14: one line instead of a traceback, for each of its cases."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from pipeline import files, provenance
from pipeline.config import compose, validate
from pipeline.errors import ConfigError, OutputError


def test_a_read_only_folder_is_one_line_and_nothing_is_lost(tmp_path, monkeypatch):
    target = tmp_path / "reports/metrics.json"
    target.parent.mkdir()
    target.write_text("earlier")

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)  # root ignores chmod: as a mount
    with pytest.raises(OutputError) as err:
        files.write_json(target, {"x": 1})
    assert str(err.value) == (
        f"cannot write {target}: its folder is on a read-only file system; earlier "
        "outputs are left as they were"
    )
    assert target.read_text() == "earlier"


def test_a_folder_where_an_output_file_goes_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports/adir").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"paths.metrics='reports/adir': is a folder"):
        validate(compose(["paths.metrics=reports/adir"]))
    with pytest.raises(OutputError, match="it is a folder; name a file instead"):
        files.write_json(tmp_path / "reports/adir", {})
    assert list((tmp_path / "reports").iterdir()) == [tmp_path / "reports/adir"]  # no temp left


def test_a_path_of_300_characters_is_one_line():
    long = "reports/" + "a" * 300 + ".json"
    with pytest.raises(ConfigError) as err:
        validate(compose([f"paths.metrics={long}"]))
    assert "each part of the path must be at most 255 bytes" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_garbage_provenance_record_is_one_line(tmp_path, monkeypatch, small_cfg):
    monkeypatch.chdir(tmp_path)
    record = provenance.record_path(small_cfg, "generate")
    record.parent.mkdir(parents=True)
    for garbage in ("\x00\x01 not json", "[1, 2]", json.dumps({"stage": "generate"})):
        record.write_text(garbage)
        with pytest.raises(ConfigError) as err:
            provenance.verify_inputs(small_cfg, "train")
        assert str(err.value) == (
            f"{record} is not a provenance record (not the JSON the generate stage "
            "writes): rerun `dvc repro --force -s generate`, then `dvc repro`"
        )


def test_pipeline_ui_on_a_corrupt_store_is_one_line(tmp_path, monkeypatch):
    from pipeline.browse import ui

    (tmp_path / "mlflow.db").write_bytes(b"garbage, not a database" * 100)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        ui.main([])
    message = str(exit_.value.code)
    assert message.startswith("error: cannot read MLflow store sqlite:///")
    assert "\n" not in message


def test_ctrl_c_while_a_stage_imports_is_one_line(tmp_path):
    """30 lines of traceback through torch's imports before; now one line, exit 130,
    whether the signal comes during the imports or after the stage took over."""
    stage = subprocess.Popen(
        [sys.executable, "-m", "pipeline.stages.train"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)  # inside the imports (torch takes longer than this)
    stage.send_signal(signal.SIGINT)
    _, stderr = stage.communicate(timeout=60)
    assert stage.returncode == 130, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: stopped by SIGINT"), stderr


def test_pipeline_ui_on_another_user_s_login_folder_is_one_line(tmp_path, monkeypatch, store):
    """Issue 49, item 8: a second local user's `python -m pipeline ui` on the project
    ended in a 15-line traceback (PermissionError on .mlflow-auth, the owner's 0700
    folder). Root passes any mode check, so the refusal is simulated in process."""
    import errno
    from pathlib import Path

    from mlflow.tracking import MlflowClient

    from pipeline.browse import ui

    MlflowClient(tracking_uri=store).create_experiment("test")
    folder = tmp_path / ui.LOGIN_FOLDER
    folder.mkdir(mode=0o700)
    chmod = Path.chmod

    def not_the_owner(path, mode, **kwargs):
        if Path(path) == folder:  # chmod of another user's folder: EPERM
            raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
        return chmod(path, mode, **kwargs)

    monkeypatch.setattr(Path, "chmod", not_the_owner)
    monkeypatch.setattr(ui, "stop_on_signals", lambda: None)  # pytest's handlers stay
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        ui.main(["--experiment", "test"])
    assert exit_.value.code == (
        f"error: cannot open the login in {folder}: Operation not permitted ({folder} belongs "
        "to root): start it as that user, whose login it is; other users reach the runs "
        "through a tracking server (python -m pipeline server)"
    )
