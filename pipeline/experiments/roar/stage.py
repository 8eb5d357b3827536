"""Stage roar: remove and retrain (pipeline/experiments/roar/retrain.py, docs/field.md).

Each explainer of the lesson's runs (train.seeds), the task's rationale and a random
ranking remove the top roar.fractions of every sequence's steps; runs 1..roar.seeds
retrain on what is left. Writes reports/roar/metrics.json.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import load_params, provenance
from pipeline.core.files import read_parquet, write_json
from pipeline.experiments.roar import retrain
from pipeline.experiments.roar.config import check_fractions
from pipeline.memory import check_memory
from pipeline.stages import entry


def main() -> None:
    cfg = load_params()
    check_fractions(cfg)  # each removes its own number of steps: before any work
    check_memory(cfg)  # before any work: the largest stage of this config fits
    provenance.verify_inputs(cfg, "roar")
    frame = read_parquet(cfg.paths.sequences)
    document = retrain.run(cfg, frame, read_parquet(cfg.paths.parameters))
    with provenance.publishing(cfg, "roar"):
        write_json(Path(cfg.paths.roar) / "metrics.json", document)
    drops = ", ".join(
        f"run {run} {drop:.4f}" for run, drop in document["headline"]["attention_drop"].items()
    )
    fraction = document["headline"]["fraction"]
    print(f"remove and retrain, attention's top {fraction:g} of the steps removed: drop {drops}")


if __name__ == "__main__":
    entry(main)
