"""Stage train: every seed of train.seeds in one batch."""

from __future__ import annotations

import pandas as pd
import torch

from pipeline.config import Config, provenance
from pipeline.core.files import read_parquet, write_csv, write_parquet
from pipeline.models import frames, interface
from pipeline.models.parameters import Params
from pipeline.models.train import History, device_and_dtype, train
from pipeline.stages import entry
from pipeline.stages.start import checked_params


def run(cfg: Config, frame: pd.DataFrame) -> tuple[Params, History]:
    device, dtype = device_and_dtype(cfg.train)
    inputs, labels, _ = frames.split_tensors(cfg, frame, "train", device, dtype)
    params = interface.init_params(
        cfg.data.seed, cfg.train.seeds, cfg.model, cfg.data.steps, dtype, device
    )
    trained, history = train(params, inputs, labels, cfg.train.epochs, cfg.train.lr)
    return trained.map(lambda t: t.cpu()), History(history.loss.cpu(), history.accuracy.cpu())


def curves_frame(history: History, seeds: list[int]) -> pd.DataFrame:
    """One row per (epoch, seed): loss and accuracy before that epoch's update."""
    epochs, runs = history.loss.shape
    return pd.DataFrame(
        {
            "epoch": torch.arange(epochs).repeat_interleave(runs).numpy(),
            "seed": torch.tensor(seeds).repeat(epochs).numpy(),
            "loss": history.loss.reshape(-1).numpy(),
            "accuracy": history.accuracy.reshape(-1).numpy(),
        }
    )


def main() -> None:
    cfg = checked_params("train")
    params, history = run(cfg, read_parquet(cfg.paths.sequences))
    table = frames.params_to_frame(params, cfg.train.seeds, cfg.model, cfg.data.steps)
    with provenance.publishing(cfg, "train"):
        write_parquet(cfg.paths.parameters, table)
        write_csv(cfg.paths.training_curves, curves_frame(history, cfg.train.seeds))


if __name__ == "__main__":
    entry(main)
