"""Parameters as a frame (pipeline/models/frames.py), the rows of
models/parameters.parquet: every kind's round trip is exact."""

from __future__ import annotations

import pytest
import torch

from pipeline.config import ModelConfig
from pipeline.models import frames, interface
from pipeline.models.parameters import to_flat
from tests.models.helpers import STEPS, VARIANTS, random_params


@pytest.mark.parametrize("kind", VARIANTS)
def test_frame_round_trip_is_exact(kind):
    cfg = ModelConfig(kind=kind)
    params = random_params(cfg, 3, seed=21)
    frame = frames.params_to_frame(params, [4, 5, 6], cfg, STEPS)
    seeds, back = frames.params_from_frame(frame, cfg, STEPS)
    assert seeds == [4, 5, 6] and list(frame.columns[1:]) == interface.flat_names(cfg, STEPS)
    assert torch.equal(to_flat(back), to_flat(params))
