"""Stage evaluate: weight mass and step ablation -> metrics.json and the step table."""

from __future__ import annotations

import pandas as pd
import torch

from pipeline import data
from pipeline.analysis import metrics
from pipeline.config import Config, provenance
from pipeline.core import ties
from pipeline.core.files import read_json, read_parquet, write_csv, write_json
from pipeline.models import frames, interface
from pipeline.models.parameters import Params
from pipeline.models.train import device_and_dtype
from pipeline.reporting.lesson_tables import text_tables
from pipeline.stages import entry
from pipeline.stages.start import checked_params


def step_table(
    seeds: list[int], heldout: pd.DataFrame, weights: torch.Tensor, effects: torch.Tensor
) -> pd.DataFrame:
    """One row per (seed, held-out example, step): weight, ablation effect, flags."""
    runs, count, steps = weights.shape
    top = torch.nn.functional.one_hot(ties.first_max(weights), steps).bool()
    marked = torch.tensor(heldout["marked_step"].to_numpy())[:, None] == torch.arange(steps)
    return pd.DataFrame(
        {
            "seed": torch.tensor(seeds).repeat_interleave(count * steps).numpy(),
            "id": torch.tensor(heldout["id"].to_numpy()).repeat_interleave(steps).repeat(runs),
            "step": torch.arange(steps).repeat(runs * count).numpy(),
            "weight": weights.reshape(-1).cpu().numpy(),
            "effect": effects.reshape(-1).cpu().numpy(),
            "is_marked": marked.repeat(runs, 1).reshape(-1).numpy(),
            "is_top_weight": top.reshape(-1).cpu().numpy(),
        }
    )


def run(
    cfg: Config, frame: pd.DataFrame, summary: dict, params: Params
) -> tuple[dict, pd.DataFrame]:
    seeds = list(cfg.train.seeds)
    device, dtype = device_and_dtype(cfg.train)
    params = params.map(lambda t: t.to(device, dtype))

    train_inputs, train_labels, _ = frames.split_tensors(cfg, frame, "train", device, dtype)
    heldout = frames.split_tensors(cfg, frame, "heldout", device, dtype)
    numbers, weights, effects = metrics.run_metrics(
        params, (train_inputs, train_labels), heldout, cfg.eval
    )
    document = metrics.metrics_document(summary, seeds, numbers)
    document["parameters"] = interface.parameter_count(cfg.model, cfg.data.steps)
    table = step_table(seeds, data.split_frame(frame, "heldout"), weights, effects)
    return document, table


def main() -> None:
    cfg = checked_params("evaluate")
    frame = read_parquet(cfg.paths.sequences)
    _, params = frames.params_from_frame(
        read_parquet(cfg.paths.parameters), cfg.model, cfg.data.steps
    )
    summary = read_json(cfg.paths.data_summary)
    document, table = run(cfg, frame, summary, params)
    with provenance.publishing(cfg, "evaluate"):
        write_csv(cfg.paths.step_table, table)
        write_json(cfg.paths.metrics, document)
    print(text_tables(document, table, cfg.eval.high_weight, cfg.eval.low_effect))


if __name__ == "__main__":
    entry(main)
