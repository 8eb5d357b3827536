"""The study stage's peak: the training of study.seeds runs, a chunk at a time
(pipeline/memory/study.py's `study_terms`, which other stages train with too)."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.memory.study import study_terms


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The study stage's terms, by its name in dvc.yaml, and the report stage's read of
    the study's per-example table."""
    study = study_terms(cfg, cfg.study.seeds, "study.seeds")
    return {"study": [sequences_term(cfg), *study], "report": [study[4]]}
