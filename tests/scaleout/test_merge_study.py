"""A seed study cut into shards (pipeline/analysis/study_shards.py) and
merged back by `python -m pipeline merge_study` (pipeline/scaleout/merge_study.py):
the bytes of one unsharded run, and one line for every shard or output it refuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline import data
from pipeline.analysis import seed_study, study_shards
from pipeline.config import ConfigError
from pipeline.core import precision
from pipeline.core.errors import PipelineError
from pipeline.scaleout import merge_study
from tests.scaleout.helpers import run_module, small_cfg


def test_shards_cut_the_seeds_at_chunk_boundaries_and_cover_them_once():
    cfg = small_cfg("study.seeds=45")  # 5 chunks of 10 (the last has 5)
    shards = [
        seed_study.study_seeds(small_cfg("study.seeds=45", f"study.shard={i}/3").study)
        for i in range(3)
    ]
    assert sum(shards, []) == list(range(1, 46)) == seed_study.study_seeds(cfg.study)
    assert [s[0] for s in shards] == [1, 11, 31]  # every shard starts a chunk


@pytest.mark.parametrize("shard", ["4/4", "-1/4", "1/5", "a/4", "1"])
def test_a_bad_shard_names_the_key_and_what_is_allowed(shard):
    with pytest.raises(
        ConfigError, match=r"invalid config value study.shard=.*i/n with 0 <= i < n <= 4"
    ):
        small_cfg(f"study.shard={shard}")


def test_the_dvc_stage_refuses_a_shard():
    cfg = small_cfg("study.shard=0/4")
    with pytest.raises(ConfigError, match="a shard has no summary of its own"):
        seed_study.run(cfg, data.generate(cfg.data))


def write_shards(root: Path, count: int, *overrides: str) -> None:
    for index in range(count):
        cfg = small_cfg(*overrides, f"study.shard={index}/{count}")
        frame = data.generate(cfg.data)
        runs = seed_study.train_seeds(cfg, frame, seed_study.study_seeds(cfg.study))
        payload = study_shards.shard_bytes(cfg, runs, seed_study.outside_accuracy(cfg, frame))
        (root / str(index)).mkdir(parents=True)
        (root / str(index) / study_shards.SHARD_FILE).write_bytes(payload)


def test_four_shards_merge_to_the_bytes_of_one_run(tmp_path):
    # train.seeds 2 and 45: one lesson seed inside the study, one outside it
    write_shards(tmp_path, 4, "train.seeds=[2,45]")
    cfg = small_cfg("train.seeds=[2,45]")
    _, whole = seed_study.run(cfg, data.generate(cfg.data))
    out = tmp_path / "merged.json"
    merge_study.main([str(tmp_path), "--out", str(out)])
    assert out.read_bytes() == (json.dumps(precision.rounded(whole), indent=2) + "\n").encode()
    assert set(whole["lesson_seeds"]) == {"2", "45"}


def test_a_shard_file_has_the_same_bytes_every_time():
    cfg = small_cfg("study.shard=1/4")
    frame = data.generate(cfg.data)
    payloads = {
        study_shards.shard_bytes(
            cfg, seed_study.train_seeds(cfg, frame, seed_study.study_seeds(cfg.study)), {}
        )
        for _ in range(2)
    }
    assert len(payloads) == 1


def test_merge_refuses_missing_doubled_and_foreign_shards(tmp_path):
    write_shards(tmp_path / "a", 2)
    (tmp_path / "a" / "1" / study_shards.SHARD_FILE).unlink()
    with pytest.raises(PipelineError, match=r"missing shards 1/2: the study needs all 2"):
        study_shards.merged_summary(tmp_path / "a")
    write_shards(tmp_path / "b", 2, "train.lr=0.3")
    shutil.copytree(tmp_path / "b" / "1", tmp_path / "a" / "1", dirs_exist_ok=True)
    with pytest.raises(PipelineError, match=r"is not a shard of .*: train.lr differ"):
        study_shards.merged_summary(tmp_path / "a")
    shutil.copytree(tmp_path / "b", tmp_path / "c" / "again")
    shutil.copytree(tmp_path / "b", tmp_path / "c" / "b")
    with pytest.raises(PipelineError, match=r"shard 0/2 twice"):
        study_shards.merged_summary(tmp_path / "c")
    (tmp_path / "bad" / "0").mkdir(parents=True)
    (tmp_path / "bad" / "0" / study_shards.SHARD_FILE).write_bytes(b"not a shard")
    with pytest.raises(PipelineError, match=r"cannot read shard .*bad/0/shard.pt: "):
        study_shards.merged_summary(tmp_path / "bad")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PipelineError, match="no shard.pt found"):
        study_shards.merged_summary(tmp_path / "empty")
    result = run_module("pipeline", "merge_study", str(tmp_path / "missing"), "--out", "x.json")
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: no such sweep directory: {tmp_path / 'missing'}"


@pytest.mark.parametrize(
    "payload",
    [
        b"not a shard",
        "unsafe",  # a torch file whose pickle names a class weights_only refuses
        "foreign",  # a safe torch file that is not a shard
    ],
)
def test_a_file_that_is_not_a_shard_is_named_without_unsafe_advice(tmp_path, payload):
    """Issue 22: the error relayed torch's advice to load the file with
    weights_only=False, unsafe for a file of unknown origin."""
    import io

    import torch

    path = tmp_path / "0" / study_shards.SHARD_FILE
    path.parent.mkdir()
    if payload == "unsafe":
        buffer = io.BytesIO()
        torch.save({"shard": "0/1", "config": Path("x")}, buffer)
        payload = buffer.getvalue()
    elif payload == "foreign":
        buffer = io.BytesIO()
        torch.save({"weights": torch.zeros(3)}, buffer)
        payload = buffer.getvalue()
    path.write_bytes(payload)
    with pytest.raises(PipelineError) as err:
        study_shards.merged_summary(tmp_path)
    message = str(err.value)
    assert message == f"cannot read shard {path}: not a study shard, or a damaged one"
    assert "weights_only" not in message


def test_merge_into_an_existing_folder_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    def no_merge(sweep_dir):
        raise AssertionError("merged before checking --out")

    monkeypatch.setattr(merge_study.study_shards, "merged_summary", no_merge)
    (tmp_path / "sweep").mkdir()
    with pytest.raises(SystemExit) as exit_:
        merge_study.main([str(tmp_path / "sweep"), "--out", str(tmp_path)])
    assert exit_.value.code == (
        f"error: --out {tmp_path}: not written there (a folder); name a new file, e.g. in "
        "outputs/ or outside the project"
    )


@pytest.mark.parametrize("name", ["mlflow.db", "params.yaml"])
def test_merge_study_replaces_neither_the_store_nor_the_params(name, tmp_path, monkeypatch):
    """Issue 49, item 4: `merge_study SWEEP --out mlflow.db` (or params.yaml) replaced
    the store (`file is not a database`) or the params, exit 0."""
    from pipeline.core import files

    monkeypatch.setattr(files, "PROJECT_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(merge_study.study_shards, "merged_summary", lambda sweep_dir: {"seeds": 1})
    monkeypatch.setattr(merge_study, "study_line", lambda summary: "1 seed")
    (tmp_path / name).write_bytes(b"SQLite format 3\x00 and its pages")
    with pytest.raises(SystemExit) as exit_:
        merge_study.main([str(tmp_path), "--out", name])
    assert str(exit_.value.code).startswith(f"error: --out {name}: not written there (")
    assert (tmp_path / name).read_bytes() == b"SQLite format 3\x00 and its pages"


def test_merge_study_replaces_its_own_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(merge_study.study_shards, "merged_summary", lambda sweep_dir: {"seeds": 2})
    monkeypatch.setattr(merge_study, "study_line", lambda summary: "2 seeds")
    out = tmp_path / "summary.json"
    out.write_text('{\n  "seeds": 1\n}\n')
    merge_study.main([str(tmp_path), "--out", str(out)])
    assert json.loads(out.read_text()) == {"seeds": 2}


def test_a_summary_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(merge_study.study_shards, "merged_summary", lambda sweep_dir: {"seeds": 1})
    monkeypatch.setattr(merge_study, "study_line", lambda summary: "1 seed")
    out = tmp_path / "file" / "summary.json"
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(SystemExit) as exit_:
        merge_study.main([str(tmp_path), "--out", str(out)])
    assert exit_.value.code == (
        f"error: cannot write {out}: File exists: {tmp_path / 'file'}; earlier outputs are "
        "left as they were"
    )
