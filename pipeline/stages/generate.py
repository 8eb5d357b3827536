"""Stage generate: the dataset and its summary numbers."""

from __future__ import annotations

import pandas as pd

from pipeline import data
from pipeline.config import Config, load_params, provenance
from pipeline.core.files import write_json, write_parquet
from pipeline.stages import entry


def run(cfg: Config) -> tuple[pd.DataFrame, dict]:
    frame = data.generate(cfg.data, cfg.task.kind)
    return frame, data.summarize(frame, cfg.data)


def main() -> None:
    cfg = load_params()
    frame, summary = run(cfg)
    with provenance.publishing(cfg, "generate"):
        write_parquet(cfg.paths.sequences, frame)
        write_json(cfg.paths.data_summary, summary)


if __name__ == "__main__":
    entry(main)
