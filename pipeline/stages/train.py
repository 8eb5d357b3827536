"""Stage train: every seed of train.seeds in one batch."""

from __future__ import annotations

import pandas as pd
import torch

from pipeline import data, model
from pipeline.config import Config, load_params
from pipeline.files import read_parquet, write_directory, write_parquet
from pipeline.stages import entry
from pipeline.train import History, resolve_device, train


def run(cfg: Config, frame: pd.DataFrame) -> tuple[model.Params, History]:
    device, dtype = resolve_device(cfg.train.device), getattr(torch, cfg.train.dtype)
    inputs, labels, _ = model.features(data.split_frame(frame, "train"), cfg.data.steps, dtype)
    params = model.init_params(cfg.data.seed, cfg.train.seeds, cfg.model, dtype, device)
    trained, history = train(
        params, inputs.to(device), labels.to(device), cfg.train.epochs, cfg.train.lr
    )
    return trained.map(lambda t: t.cpu()), History(history.loss.cpu(), history.accuracy.cpu())


def curve_frames(history: History, seeds: list[int]) -> dict[int, pd.DataFrame]:
    """Per seed: epoch, loss and accuracy (before that epoch's update)."""
    epochs = range(history.loss.shape[0])
    return {
        seed: pd.DataFrame(
            {"epoch": epochs, "loss": history.loss[:, i], "accuracy": history.accuracy[:, i]}
        )
        for i, seed in enumerate(seeds)
    }


def main() -> None:
    cfg = load_params()
    params, history = run(cfg, read_parquet(cfg.paths.sequences))
    write_parquet(cfg.paths.parameters, model.to_frame(params, cfg.train.seeds, cfg.model))
    curves = curve_frames(history, cfg.train.seeds)
    write_directory(
        cfg.paths.training_curves,
        {f"seed_{seed}.csv": frame.to_csv(index=False) for seed, frame in curves.items()},
    )


if __name__ == "__main__":
    entry(main)
