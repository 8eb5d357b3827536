"""The DVC stage entry points, run in process on a small config in a temp dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import reference_lesson as lesson

from pipeline import files
from pipeline.params import composed_yaml
from pipeline.stages import evaluate, generate, train
from tests.conftest import STAGE_OUTPUTS, run_stage, small_overrides


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "params.yaml").write_text(composed_yaml(small_overrides()))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_all_stages() -> None:
    generate.main()
    train.main()
    evaluate.main()


def output_bytes(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in STAGE_OUTPUTS}


def test_stages_write_every_output_deterministically(workdir, small_cfg):
    run_all_stages()
    first = output_bytes(workdir)
    run_all_stages()
    assert output_bytes(workdir) == first

    document = json.loads(first["reports/metrics.json"])
    assert document["data"]["sequences"] == 120
    assert set(document["runs"]) == {"1", "2"}
    # The stage files hold the lesson's own numbers for this config.
    reference = lesson.Lesson(small_cfg.data.seed, 120, 12, (60, 30, 30), 30, 0.6)
    for seed in (1, 2):
        trained = reference.train_run(seed)
        run = document["runs"][str(seed)]
        assert run["heldout_accuracy"] == lesson.accuracy(trained, reference.heldout_set)
        agreement, _, high, high_low = lesson.causality(trained, reference.heldout_set)
        assert (run["weight_effect_agreement"], run["high_weight"]) == (agreement, high)
        assert run["high_weight_low_effect"] == high_low


def test_training_curves_have_one_row_per_epoch(workdir):
    generate.main()
    train.main()
    curves = (workdir / "reports/training.csv").read_text().splitlines()
    assert curves[0] == "epoch,seed,loss,accuracy" and len(curves) == 1 + 30 * 2
    assert [line.split(",")[:2] for line in curves[1:3]] == [["0", "1"], ["0", "2"]]


def test_bad_params_value_stops_the_stage_and_keeps_outputs(workdir):
    run_all_stages()
    before = output_bytes(workdir)
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("lr: 0.6", "lr: -0.6"))
    for stage in ("train", "evaluate"):
        result = run_stage(stage, workdir)
        assert result.returncode == 1
        assert result.stderr.startswith("error: invalid config value train.lr=-0.6")
        assert result.stderr.count("\n") == 1
    assert output_bytes(workdir) == before


def test_missing_input_is_a_clear_error(workdir):
    result = run_stage("train", workdir)
    assert result.returncode == 1
    assert "missing data/sequences.parquet" in result.stderr


def test_divergence_stops_training_without_writing(workdir):
    generate.main()
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("lr: 0.6", "lr: 1.0e+300"))
    result = run_stage("train", workdir)
    assert result.returncode == 1 and "diverged" in result.stderr
    assert not (workdir / "models/parameters.parquet").exists()


def test_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    files.write_json(target, {"old": 1})

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_json(target, {"new": 2})
    assert json.loads(target.read_text()) == {"old": 1}
    assert list(tmp_path.iterdir()) == [target]


def test_generate_stage_imports_neither_torch_nor_mlflow():
    probe = (
        "import sys, pipeline.stages.generate; "
        "print('torch' in sys.modules, 'mlflow' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False"]
