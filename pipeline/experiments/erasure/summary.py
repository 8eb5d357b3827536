"""The field's line in `dvc repro`'s closing summary: erasure opens the field's tests
(docs/field.md), and the line points at them all."""

from __future__ import annotations


def lines(cfg, results: object) -> list[str]:
    return [
        "== the field's newer tests (erasure, remove and retrain, disagreement, causal "
        f"abstraction, suppressors): {cfg.paths.report}, docs/field.md"
    ]
