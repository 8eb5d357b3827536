"""Where training runs: `train.device` (auto, cpu, cuda) resolved on this machine.

Its own module, so that the track stage can tag a run with the device without
loading the models; torch loads on the first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.core.errors import ConfigError

if TYPE_CHECKING:
    import torch


def resolve_device(name: str) -> torch.device:
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "invalid config value train.device='cuda': CUDA is not available here; "
            "allowed: auto, cpu"
        )
    return torch.device(name)
