"""Between pandas tables and tensors: model inputs from the sequences table,
trained parameters to and from their table (one row per seed).

Kept out of the model kinds, which know tensors only.
"""

from __future__ import annotations

import pandas as pd
import torch

from pipeline.config import Config, ModelConfig
from pipeline.data import reading_columns, split_frame
from pipeline.models.interface import flat_names, from_flat
from pipeline.models.parameters import Params, to_flat


def features(
    frame: pd.DataFrame, steps: int, dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs (N, T, C) = [reading, marked-step indicator], labels (N,), marked steps (N,)."""
    readings = torch.tensor(frame[reading_columns(steps)].to_numpy(), dtype=dtype)
    marked = torch.tensor(frame["marked_step"].to_numpy(), dtype=torch.long)
    indicator = torch.nn.functional.one_hot(marked, steps).to(dtype)
    labels = torch.tensor(frame["label"].to_numpy(), dtype=dtype)
    return torch.stack([readings, indicator], dim=-1), labels, marked


def split_tensors(
    cfg: Config, frame: pd.DataFrame, split: str, device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`features` of one split ("train" or "heldout") of the sequences, on `device`."""
    tensors = features(split_frame(frame, split), cfg.data.steps, dtype)
    return tuple(t.to(device) for t in tensors)  # type: ignore[return-value]


def params_to_frame(params: Params, seeds: list[int], cfg: ModelConfig, steps: int) -> pd.DataFrame:
    """One row per run: the seed and the named parameters in init order (the
    kind's layout; `steps` sizes a learned positional encoding)."""
    frame = pd.DataFrame(to_flat(params).cpu().numpy(), columns=flat_names(cfg, steps))
    frame.insert(0, "seed", seeds)
    return frame


def params_from_frame(
    frame: pd.DataFrame, cfg: ModelConfig, steps: int, dtype: torch.dtype = torch.float64
) -> tuple[list[int], Params]:
    flat = torch.tensor(frame[flat_names(cfg, steps)].to_numpy(), dtype=dtype)
    return frame["seed"].tolist(), from_flat(flat, cfg, steps)
