"""The erasure stage's peak: the battery's explainers over the lesson's and the study's runs."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.memory.battery import battery_terms
from pipeline.memory.study import study_terms


def terms(cfg: Config) -> list[MemoryTerm]:
    """The study's parameters read, and the battery's explainers over the lesson's runs
    and the study's first erasure.seeds runs (at most the study's)."""
    runs = len(cfg.train.seeds) + min(cfg.erasure.seeds, cfg.study.seeds)
    parameters = study_terms(cfg, cfg.study.seeds, "study.seeds")[0]
    return [sequences_term(cfg), parameters, *battery_terms(cfg, runs, "erasure.seeds")]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The erasure stage's terms, by its name in dvc.yaml."""
    return {"erasure": terms(cfg)}
