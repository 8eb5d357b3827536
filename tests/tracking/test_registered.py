"""Each seed's model in MLflow (pipeline/tracking/registered.py and pyfunc.py): logged
once per state, registered under the experiment's name with aliases
run-<seed>-<models> (the models' md5 in dvc.lock), and
loaded by URI in a fresh process, where it reproduces the lesson's held-out accuracy."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline import tracking
from pipeline.config import PROJECT_ROOT, Config
from pipeline.models import frames, interface
from pipeline.stages import generate
from pipeline.tracking import record, registered
from pipeline.tracking import store as store_module
from tests.conftest import GOLDEN_RUNS
from tests.heldout_lesson import heldout_lesson
from tests.tracking.helpers import committed_state

NAME = "test"  # committed_state's experiment: the registered model's name too
# The committed models' md5 in dvc.lock, as the track stage reads it.
LESSON_MODELS = tracking.lock_hashes(PROJECT_ROOT / "dvc.lock", Config())["dvc.models_md5"]
OTHER_MODELS = "0123456789abcdef0123456789abcdef"  # an experiment's retrained models
RUN_1, RUN_2 = (f"run-{seed}-{LESSON_MODELS[:8]}" for seed in (1, 2))  # the lesson's aliases


def lesson_state(cfg, uri: str, models: str = LESSON_MODELS) -> tracking.PipelineState:
    """The committed state with the lesson's sequences and trained parameters."""
    lesson = heldout_lesson(cfg)
    state = committed_state(cfg, uri, **{"dvc.models_md5": models})
    state.sequences, _ = generate.run(cfg)
    state.parameters = frames.params_to_frame(lesson.params, lesson.seeds, cfg.model, 12)
    return state


def aliases(uri: str) -> dict[str, str]:
    """{alias: version} of the registered model."""
    from mlflow.tracking import MlflowClient

    return {
        name: version
        for name, version in MlflowClient(uri).get_registered_model(NAME).aliases.items()
    }


def versions(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri).search_model_versions(f"name = '{NAME}'")


@pytest.mark.slow
def test_run_2_loads_by_alias_in_a_fresh_process_and_scores_the_lesson_s_accuracy(
    default_cfg, store, tmp_path
):
    tracking.log_state(lesson_state(default_cfg, store), registered.log_models)
    lesson = heldout_lesson(default_cfg)
    np.save(tmp_path / "heldout.npy", lesson.inputs.numpy())  # (180, 12, 2)
    script = f"""
import json, sys
import numpy as np
import mlflow.pyfunc
model = mlflow.pyfunc.load_model("models:/{NAME}@run-2-{LESSON_MODELS[:8]}")
out = model.predict(np.load(sys.argv[1]))
json.dump({{k: v.tolist() for k, v in out.items()}}, sys.stdout)
"""
    # A fresh interpreter outside the repository: the model's code comes from the
    # installed package and the model's own files, not from the working directory.
    env = {**os.environ, "MLFLOW_TRACKING_URI": store, "PYTHONPATH": str(PROJECT_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "heldout.npy")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = {k: torch.tensor(v, dtype=torch.float64) for k, v in json.loads(result.stdout).items()}
    predicted = out["probability"] > 0.5
    accuracy = (predicted == (lesson.labels > 0.5)).double().mean().item()
    assert round(accuracy, 4) == GOLDEN_RUNS["2"]["heldout_accuracy"] == 0.9944  # 179 of 180
    # The same numbers as the pipeline's own forward pass of run 2.
    logits, weights = interface.forward(lesson.params, lesson.inputs)  # (2, N), (2, N, T)
    torch.testing.assert_close(out["probability"], torch.sigmoid(logits[1]), rtol=0, atol=1e-15)
    torch.testing.assert_close(out["weights"], weights[1], rtol=0, atol=1e-15)


def test_each_seed_has_a_version_with_its_alias_signature_and_example(
    default_cfg, store, monkeypatch
):
    from mlflow.models import get_model_info

    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)  # where get_model_info looks
    parent, _ = tracking.log_state(lesson_state(default_cfg, store), registered.log_models)
    found = {v.tags["seed"]: v for v in versions(store)}
    assert set(found) == {"1", "2"}
    lesson = {f"run-{seed}-{LESSON_MODELS[:8]}": found[seed].version for seed in ("1", "2")}
    assert aliases(store) == lesson
    for seed, version in found.items():
        assert version.tags["parent_run"] == parent and version.tags["version"] == "abc1234"
        assert version.tags["dvc.models_md5"] == LESSON_MODELS
        info = get_model_info(f"models:/{NAME}@run-{seed}-{LESSON_MODELS[:8]}")
        inputs, outputs = info.signature.inputs, info.signature.outputs
        assert [spec.shape for spec in inputs.inputs] == [(-1, 12, 2)]
        assert {spec.name: spec.shape for spec in outputs.inputs} == {
            "probability": (-1,),
            "weights": (-1, 12),
        }
        assert info.saved_input_example_info["type"] == "ndarray"


def test_a_state_s_models_are_logged_once_and_each_alias_names_its_models(default_cfg, store):
    """Issue 59, item 2: `run-2` named the state tracked last, so after the way back
    (no stage reruns) it was the experiment's model. Each alias now names its models:
    another state's models get aliases of their own, and the lesson's stay."""
    lesson = lesson_state(default_cfg, store)
    tracking.log_state(lesson, registered.log_models)
    first = aliases(store)
    assert set(first) == {f"run-{seed}-{LESSON_MODELS[:8]}" for seed in (1, 2)}
    # The same state again: no new version.
    assert not tracking.log_state(lesson_state(default_cfg, store), registered.log_models)[1]
    assert len(versions(store)) == 2 and aliases(store) == first
    # An experiment that retrained: its own versions under its own aliases.
    other = lesson_state(default_cfg, store, models=OTHER_MODELS)
    other.cfg = replace(other.cfg, train=replace(other.cfg.train, lr=0.3))
    assert tracking.log_state(other, registered.log_models)[1]
    both = aliases(store)
    assert len(versions(store)) == 4 and len(both) == 4
    assert {k: v for k, v in both.items() if k in first} == first  # the lesson's, still
    # Back to the lesson (the way back, with or without `dvc repro`): nothing moves.
    assert not tracking.log_state(lesson_state(default_cfg, store), registered.log_models)[1]
    assert len(versions(store)) == 4 and aliases(store) == both


def test_a_stale_plain_alias_of_an_older_store_is_removed(default_cfg, store):
    from mlflow.tracking import MlflowClient

    tracking.log_state(lesson_state(default_cfg, store, models=OTHER_MODELS), registered.log_models)
    client = MlflowClient(store)
    client.set_registered_model_alias(NAME, "run-2", "2")  # as the old code left it
    tracking.log_state(lesson_state(default_cfg, store), registered.log_models)
    assert "run-2" not in aliases(store)


def test_the_workspace_uri_is_the_one_its_dvc_lock_names(tmp_path):
    """After `dvc exp apply` or the way back, the workspace's dvc.lock names its
    models: the URI follows with no stage run and no store read."""
    for name in ("params.yaml", "dvc.lock"):
        (tmp_path / name).write_text((PROJECT_ROOT / name).read_text())
    uri = registered.workspace_uri(2, tmp_path)
    assert uri == f"models:/attention-faithfulness@run-2-{LESSON_MODELS[:8]}"
    assert LESSON_MODELS.startswith("c7111ea2")  # the README's and docs' alias
    lock = (tmp_path / "dvc.lock").read_text().replace(LESSON_MODELS, OTHER_MODELS)
    (tmp_path / "dvc.lock").write_text(lock)
    assert registered.workspace_uri(2, tmp_path).endswith(f"@run-2-{OTHER_MODELS[:8]}")


def test_a_store_logged_before_models_gets_them_once(default_cfg, store):
    state = lesson_state(default_cfg, store)
    parent, _ = tracking.log_state(state)  # no model logger: a store from before models
    assert versions(store) == []
    # Its record, as written before models were logged, has no "models" key: the
    # track stage's no-op check does not trust it, and asks the store.
    record_file = record.record_file(store_module.sqlite_file(store))
    written = json.loads(record_file.read_text())
    assert tracking.logged_run(store, "test", state.digest) == parent
    record_file.write_text(json.dumps({k: v for k, v in written.items() if k != "models"}))
    assert tracking.logged_run(store, "test", state.digest) is None
    again, logged = tracking.log_state(lesson_state(default_cfg, store), registered.log_models)
    assert again == parent and not logged
    assert {v.tags["seed"] for v in versions(store)} == {"1", "2"}


def test_deleted_model_files_are_logged_again(default_cfg, store):
    from mlflow.tracking import MlflowClient

    state = lesson_state(default_cfg, store)
    parent, _ = tracking.log_state(state, registered.log_models)
    assert tracking.logged_run(store, "test", state.digest) == parent
    client = MlflowClient(store)
    version = client.get_model_version_by_alias(NAME, f"run-2-{LESSON_MODELS[:8]}")
    (mlmodel,) = registered.model_files(client, version)
    mlmodel.unlink()
    # The record lists the model's files: the no-op check sees one gone.
    assert tracking.logged_run(store, "test", state.digest) is None
    tracking.log_state(state, registered.log_models)
    assert mlmodel.is_file() and len(versions(store)) == 2


def test_the_pyfunc_predicts_probability_and_weights_by_hand():
    """Three steps, a lesson model whose one key reads the marker and whose one value
    reads the reading: score_t = ln 4 on the marked step, 0 elsewhere."""
    from pipeline.config import ModelConfig
    from pipeline.tracking import pyfunc

    cfg = ModelConfig()  # d_k = d_v = 3
    row = pd.Series(dict.fromkeys(["seed", *interface.flat_names(cfg, 3)], 0.0))
    # q . K_t / sqrt(d_k) = Wk_01 * marker_t / sqrt(3); V_t[0] = reading_t.
    row.update({"seed": 7, "q_0": 1.0, "Wk_01": math.sqrt(3) * math.log(4), "Wv_00": 1.0})
    row.update({"w_0": 2.0, "b": -0.5})
    document = pyfunc.model_document(row, cfg, 3)
    assert document["seed"] == 7 and document["model"]["kind"] == "lesson"
    table = pd.DataFrame([{"seed": 7, **document["parameters"]}])
    _, params = frames.params_from_frame(table, cfg, 3)
    sequences = np.array([[[0.1, 0.0], [0.5, 1.0], [0.2, 0.0]]])  # (1, 3, 2): step 1 marked
    out = pyfunc.predict_sequences(params, sequences)
    # Weights 1:4:1; logit 2 * (0.1 + 4 * 0.5 + 0.2) / 6 - 0.5 = 4/15.
    np.testing.assert_allclose(out["weights"], [[1 / 6, 4 / 6, 1 / 6]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["probability"], [1 / (1 + math.exp(-4 / 15))], rtol=1e-15)


def tampered(uri: str, alias: str = RUN_2) -> tuple:
    """The version at `alias` and its model's folder, with model.json's first
    parameter moved by 1 (what the fifth battery did to `@run-2`)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    version = client.get_model_version_by_alias(NAME, alias)
    root = registered.model_root(client, version)
    (document_file,) = root.rglob("model.json")
    document = json.loads(document_file.read_text())
    first = next(iter(document["parameters"]))
    document["parameters"][first] += 1.0
    document_file.write_text(json.dumps(document))
    return version, root


def test_a_registered_model_whose_files_changed_is_refused_on_load(default_cfg, store, tmp_path):
    """Each version carries the digest of its files; load_model checks a copy against
    it before MLflow runs the model's code, and refuses in one line."""
    tracking.log_state(lesson_state(default_cfg, store), registered.log_models)
    lesson = heldout_lesson(default_cfg)
    model = registered.load_model(f"models:/{NAME}@{RUN_2}", store)  # as registered: loads
    out = model.predict(lesson.inputs.numpy())
    logits, _ = interface.forward(lesson.params, lesson.inputs)
    np.testing.assert_allclose(out["probability"], torch.sigmoid(logits[1]).numpy(), atol=1e-15)
    tampered(store)
    with pytest.raises(registered.ModelChangedError) as refused:
        registered.load_model(f"models:/{NAME}@{RUN_2}", store)
    message = str(refused.value)
    assert "\n" not in message and f"models:/{NAME}@{RUN_2}" in message and "not loaded" in message
    # Its code: a line added to pyfunc.py never runs.
    from mlflow.tracking import MlflowClient

    version = MlflowClient(store).get_model_version_by_alias(NAME, RUN_1)
    (code,) = registered.model_root(MlflowClient(store), version).rglob("pyfunc.py")
    marker = tmp_path / "ran"
    code.write_text(code.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    with pytest.raises(registered.ModelChangedError):
        registered.load_model(f"models:/{NAME}/{version.version}", store)
    assert not marker.exists()


def test_the_no_op_check_sees_a_tampered_model_and_the_track_stage_restores_it(default_cfg, store):
    state = lesson_state(default_cfg, store)
    parent, _ = tracking.log_state(state, registered.log_models)
    assert tracking.logged_run(store, "test", state.digest) == parent
    version, root = tampered(store)
    # Not "already logged": the record holds each model folder's digest.
    assert tracking.logged_run(store, "test", state.digest) is None
    again, logged = tracking.log_state(lesson_state(default_cfg, store), registered.log_models)
    assert again == parent and not logged
    from mlflow.tracking import MlflowClient

    restored = MlflowClient(store).get_model_version(NAME, version.version)
    assert restored.tags[registered.DIGEST_TAG] == record.tree_digest(root)
    assert tracking.logged_run(store, "test", state.digest) == parent
    registered.load_model(f"models:/{NAME}@{RUN_2}", store)  # loads again
    assert len(versions(store)) == 2
