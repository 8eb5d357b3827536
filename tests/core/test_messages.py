"""Issue 34, case 14: one line instead of a traceback, for each of its cases."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.config import PROJECT_ROOT, provenance, validate
from pipeline.config.results import experiment_results
from pipeline.core import files
from pipeline.core.errors import ConfigError, OutputError
from pipeline.core.kinds import experiment
from tests.conftest import composed


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
        validate(composed(["paths.metrics=reports/adir"]))
    with pytest.raises(OutputError, match="it is a folder; name a file instead"):
        files.write_json(tmp_path / "reports/adir", {})
    assert list((tmp_path / "reports").iterdir()) == [tmp_path / "reports/adir"]  # no temp left


def test_a_path_of_300_characters_is_one_line():
    long = "reports/" + "a" * 300 + ".json"
    with pytest.raises(ConfigError) as err:
        validate(composed([f"paths.metrics={long}"]))
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


def test_a_truncated_parquet_is_one_line(tmp_path):
    """Issue 60, case 12: half a parquet file whose provenance record was rewritten with
    it (or a checkout of a damaged cache) was a 29-line pyarrow traceback."""
    import pandas as pd

    path = tmp_path / "sequences.parquet"
    files.write_parquet(path, pd.DataFrame({"a": range(100), "b": [0.5] * 100}))
    whole = path.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:-3], b""):
        path.write_bytes(damaged)
        with pytest.raises(ConfigError) as err:
            files.read_parquet(path)
        assert str(err.value).startswith(f"{path} is not a readable Parquet file (")
        assert "\n" not in str(err.value)
    with pytest.raises(FileNotFoundError, match="missing"):  # a missing one says so
        files.read_parquet(tmp_path / "none.parquet")


def test_a_provenance_record_of_the_wrong_shape_is_one_line(tmp_path, monkeypatch, small_cfg):
    """Issue 60, case 12: valid JSON with the right params and no `outputs` (or a list)
    was a KeyError (a TypeError) in every later stage."""
    monkeypatch.chdir(tmp_path)
    record = provenance.record_path(small_cfg, "generate")
    record.parent.mkdir(parents=True)
    params = provenance.stage_params(small_cfg, "generate")
    for outputs in ({}, {"outputs": ["data/sequences.parquet"]}, {"outputs": None}):
        record.write_text(json.dumps({"stage": "generate", "params": params, **outputs}))
        with pytest.raises(ConfigError) as err:
            provenance.verify_inputs(small_cfg, "train")
        assert str(err.value) == (
            f"{record} is not a provenance record (not the JSON the generate stage "
            "writes): rerun `dvc repro --force -s generate`, then `dvc repro`"
        )


@pytest.mark.parametrize("stage", ["erasure", "abstraction", "roar", "dynamics"])
def test_an_experiment_s_document_of_another_shape_is_one_line(
    tmp_path, monkeypatch, small_cfg, stage
):
    """Issue 60, case 12: an experiment's document that is valid JSON of another shape
    was a KeyError or TypeError in the report and track stages."""
    monkeypatch.chdir(tmp_path)
    path = Path(getattr(small_cfg.paths, stage)) / experiment(stage).DOCUMENT
    path.parent.mkdir(parents=True)
    committed = json.loads((PROJECT_ROOT / path).read_text())
    key = next(iter(committed))
    for document in ([], {}, {**committed, key: "text"}, "text"):
        path.write_text(json.dumps(document))
        with pytest.raises(ConfigError) as err:
            experiment_results(small_cfg)
        text = str(err.value)
        assert text.startswith(f"{path} is not the document the {stage} stage writes (")
        assert text.endswith(f"rerun `dvc repro --force -s {stage}`") and "\n" not in text
    path.write_text(json.dumps(committed))
    assert experiment_results(small_cfg)[stage] == committed


def test_lock_subset_needs_only_the_standard_library():
    """Issue 60, case 12: `KEEP_INSTALLED=1 bash scripts/gpu_check.sh` without CUDA torch
    runs lock_subset.py in a venv with torch alone: ModuleNotFoundError: packaging."""
    result = subprocess.run(
        [sys.executable, "-S", "scripts/lock_subset.py", "requirements.lock", "--missing"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    lock = (PROJECT_ROOT / "requirements.lock").read_text()
    pins = [line for line in lock.splitlines() if line[:1].isalnum()]
    assert [line for line in result.stdout.splitlines() if line[:1].isalnum()] == pins
    only = subprocess.run(
        [sys.executable, "-S", "scripts/lock_subset.py", "requirements-dev.lock", "--only",
         "pytest", "Pluggy", "iniconfig"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = [line.split("==")[0] for line in only.stdout.splitlines() if line[:1].isalnum()]
    assert names == ["iniconfig", "pluggy", "pytest"]


def test_lock_subset_names_are_packaging_s():
    """Its own name parser reads every entry of the locks as `packaging` does."""
    import importlib.util

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    spec = importlib.util.spec_from_file_location(
        "lock_subset", PROJECT_ROOT / "scripts/lock_subset.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for lock in ("requirements.lock", "requirements-dev.lock"):
        text = (PROJECT_ROOT / lock).read_text()
        expected = [
            canonicalize_name(Requirement(line.split()[0].rstrip("\\")).name)
            for line in text.splitlines()
            if line[:1].isalnum()
        ]
        assert [name for name, _ in module.entries(text)] == expected


def test_a_cpu_window_cell_with_numba_shadowed_is_one_line(monkeypatch):
    """Issue 60, case 12: a `numba.py` in the working folder made the CPU window cell a
    32-line traceback (the CUDA path already fell back in one)."""
    import types

    import torch

    import pipeline.models
    from pipeline.core.errors import PipelineError
    from pipeline.models import window

    monkeypatch.setitem(sys.modules, "numba", types.ModuleType("numba"))  # no njit
    monkeypatch.delitem(sys.modules, "pipeline.models.window_kernel", raising=False)
    # The package's attribute too: a test before this one in the same worker imported it.
    monkeypatch.delattr(pipeline.models, "window_kernel", raising=False)
    inputs = torch.zeros(2, 12, 2, dtype=torch.float64)
    with pytest.raises(PipelineError) as err:
        window.gradient_step(inputs, torch.zeros(2, dtype=torch.float64))
    assert str(err.value).startswith(
        "the window model's CPU kernel needs numba, which does not import here (ImportError: "
        "cannot import name 'njit' from 'numba'"
    )
    assert "\n" not in str(err.value)
