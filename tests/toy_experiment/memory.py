"""The toy stage's peak: the sequences it reads."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term


def stage_terms(cfg) -> dict[str, list[MemoryTerm]]:
    return {"top_weight": [sequences_term(cfg)]}
