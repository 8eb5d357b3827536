"""Named model variants: a kind with the one setting that matters on a task (its heads,
its encoding, its window width). The grid's cells and the capacity table name
these; torch-free, so the config can check a cell's variant."""

from __future__ import annotations

VARIANTS: dict[str, dict] = {
    "lesson": {"kind": "lesson"},
    "sink": {"kind": "sink"},
    "multihead2": {"kind": "multihead", "heads": 2},
    "multihead4": {"kind": "multihead", "heads": 4},
    "posenc_learned": {"kind": "posenc", "positional": "learned"},
    "posenc_sinusoidal": {"kind": "posenc", "positional": "sinusoidal"},
    "window2": {"kind": "window", "window": 2},
    "window3": {"kind": "window", "window": 3},
    "window12": {"kind": "window", "window": 12},
}
