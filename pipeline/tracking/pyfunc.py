"""One trained run as an MLflow pyfunc model: sequences in, P(y=1) and the pooling
weights out.

The model's one artifact is a JSON file (`model.json`): the model config (kind and
sizes), the number of steps, the seed and its named parameters at full float64
precision (Python's float repr round-trips). Loading rebuilds the parameters
through the kind's layout (`pipeline.models.frames`), so every model kind loads
the same way.

The model is logged from code (MLflow's "models from code"): this file is the
model's code, run by `mlflow.pyfunc.load_model`; its last line names the model.
Nothing is pickled. It imports the installed package (`pip install -e .` of the
repository, or its wheel), not a copy of it.

mlflow is imported here at module level (PythonModel): only `registered.py` imports
this module, inside a function, and MLflow's loader runs it.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import mlflow.models
import mlflow.pyfunc
import numpy as np
import pandas as pd
import torch

from pipeline.config import ModelConfig
from pipeline.models import frames, interface
from pipeline.models.pooling import probability

ARTIFACT = "model"  # the artifacts key of model.json


def model_document(row: pd.Series, cfg: ModelConfig, steps: int) -> dict:
    """What model.json holds for one row of models/parameters.parquet (seed, names...)."""
    names = interface.flat_names(cfg, steps)
    return {
        "model": asdict(cfg),
        "steps": steps,
        "seed": int(row["seed"]),
        "parameters": {name: float(row[name]) for name in names},
    }


def write_document(document: dict, path: Path) -> Path:
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def predict_sequences(params, sequences: np.ndarray) -> dict[str, np.ndarray]:
    """P(y=1) (N,) and the pooling weights (N, T) of one run on sequences (N, T, 2):
    channel 0 the reading, channel 1 the marked-step indicator (frames.features)."""
    inputs = torch.as_tensor(np.asarray(sequences, dtype=np.float64))
    with torch.no_grad():
        logits, weights = interface.forward(params, inputs)  # (1, N), (1, N, T)
    return {
        "probability": probability(logits)[0].numpy(),
        "weights": weights[0].numpy(),
    }


class SequenceModel(mlflow.pyfunc.PythonModel):
    """The pyfunc: `predict(sequences)` -> {"probability": (N,), "weights": (N, T)}."""

    def load_context(self, context) -> None:
        document = json.loads(Path(context.artifacts[ARTIFACT]).read_text())
        cfg, steps = ModelConfig(**document["model"]), document["steps"]
        row = pd.DataFrame([{"seed": document["seed"], **document["parameters"]}])
        _, self.params = frames.params_from_frame(row, cfg, steps)

    # np.ndarray: a type hint MLflow takes without inferring a schema from it; the
    # signature, inferred from the input example (registered.py), says (N, T, 2).
    def predict(self, context, model_input: np.ndarray, params=None) -> dict[str, np.ndarray]:
        return predict_sequences(self.params, model_input)


mlflow.models.set_model(SequenceModel())
