"""Stage top_weight: each lesson run's mean largest pooling weight on held-out data."""

from __future__ import annotations

from pathlib import Path

import torch

from pipeline.config import Config, load_params, provenance
from pipeline.core.files import read_parquet, write_json
from pipeline.models import frames, interface
from pipeline.stages import entry


def run(cfg: Config, frame, lesson) -> dict:
    seeds, params = frames.params_from_frame(lesson, cfg.model, cfg.data.steps)
    inputs, _, _ = frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)
    _, weights = interface.forward(params, inputs)
    largest = weights.amax(-1).mean(-1)
    return {"runs": {str(seed): float(value) for seed, value in zip(seeds, largest, strict=True)}}


def main() -> None:
    cfg = load_params()
    provenance.verify_inputs(cfg, "top_weight")
    document = run(cfg, read_parquet(cfg.paths.sequences), read_parquet(cfg.paths.parameters))
    with provenance.publishing(cfg, "top_weight"):
        write_json(Path(cfg.paths.top_weight) / "top_weight.json", document)


if __name__ == "__main__":
    entry(main)
