"""The attention debate's line in `dvc repro`'s closing summary."""

from __future__ import annotations


def lines(cfg, results: object) -> list[str]:
    return [
        f"== the attention debate, replayed where the answer is known: {cfg.paths.report}, "
        "section 'The attention debate'"
    ]
