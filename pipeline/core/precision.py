"""Written precision: every float that reaches an output file, or a hash of one, is
rounded to `DECIMALS` decimals, so the last bits of a float never do.

Why eight: with the kernel paths of two CPUs, or one CPU's AVX-512, AVX2 and scalar
paths, the same computation differs only in the last bits of a written value, all
of them of size one or less (accuracies, shares, weights, effects, losses, taus,
AOPC, parameters). Eight decimals leave a margin of about 10^6 over that difference
(docs/pipeline.md, "Bytes on any machine"; docs/speed.md): a value flips only when
it sits within that difference of a rounding boundary, and the perturbation check
(benchmarks/bench_bytes.py) counts how often that happens.

Trained parameters are rounded the same way the moment training ends (`settle`), so
every later computation, in the same stage or the next, starts from the values
the parameters file holds. The lesson publishes 4 decimals; its golden check
reads these values.

The rounding is numpy's and torch's (x * 10^8, round half to even, / 10^8): the
same IEEE operations on every machine. A value within 5e-9 of zero rounds to a
zero whose sign is its last bits' (-1e-17 to -0.0), so every rounded zero is made
+0.0 (adding 0.0 does that and changes no other value).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on use: the track stage's no-op check writes no numbers
    import pandas as pd
    import torch

DECIMALS = 8


def settle(tensor: torch.Tensor) -> torch.Tensor:
    """A float tensor at the written precision (integer tensors as they are)."""
    return tensor.round(decimals=DECIMALS) + 0.0 if tensor.is_floating_point() else tensor


def rounded(value: Any) -> Any:
    """A JSON-like document with every float at the written precision."""
    if isinstance(value, float):
        import numpy as np

        return float(np.round(value, DECIMALS)) + 0.0
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    return value


def rounded_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every float column at the written precision."""
    floats = frame.select_dtypes("floating").columns
    if len(floats) == 0:
        return frame
    return frame.assign(**{name: frame[name].round(DECIMALS) + 0.0 for name in floats})
