"""The next lesson's line in `dvc repro`'s closing summary."""

from __future__ import annotations


def lines(cfg, results: object) -> list[str]:
    return [
        f"== the next lesson (a second head, the order of steps): {cfg.paths.report}, "
        "section 'The next lesson'"
    ]
