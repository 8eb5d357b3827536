"""The default lesson trained in process and its held-out split, shared by the
explainer and faithfulness tests (computed once per config per test session)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pipeline import data
from pipeline.config import Config
from pipeline.models import frames
from pipeline.models.parameters import Params
from pipeline.stages import generate, train


@dataclass(frozen=True)
class HeldoutLesson:
    seeds: list[int]
    params: Params  # (S runs), trained as the train stage does
    inputs: torch.Tensor  # (N, T, C)
    labels: torch.Tensor  # (N,)
    marked: torch.Tensor  # (N,)


_CACHE: dict[str, HeldoutLesson] = {}


def heldout_lesson(cfg: Config) -> HeldoutLesson:
    """generate.run and train.run on `cfg`, then the held-out features."""
    key = repr(cfg)
    if key not in _CACHE:
        frame, _ = generate.run(cfg)
        params, _ = train.run(cfg, frame)
        inputs, labels, marked = frames.features(data.split_frame(frame, "heldout"), cfg.data.steps)
        _CACHE[key] = HeldoutLesson(list(cfg.train.seeds), params, inputs, labels, marked)
    return _CACHE[key]
