"""The dynamics stage's peak: the study's per-epoch numbers read back, and its own
trainings (the study's runs again with one bit flipped; the phase diagram)."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.experiments.study.memory import dynamics_terms
from pipeline.memory.study import study_terms


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The dynamics stage's terms, by its name in dvc.yaml."""
    phase_runs = cfg.dynamics.phase_seeds * len(cfg.dynamics.phase_init_scales)
    runs = max(cfg.study.seeds, phase_runs)
    key = "study.seeds" if cfg.study.seeds >= phase_runs else "dynamics.phase_seeds"
    return {"dynamics": [sequences_term(cfg), *study_terms(cfg, runs, key), *dynamics_terms(cfg)]}
