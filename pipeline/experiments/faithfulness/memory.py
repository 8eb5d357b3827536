"""The faithfulness stage's peak: the study's parameters read, the battery over every
study run (per held-out example), the sanity checks' re-drawn and re-trained runs,
captum's robustness."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.memory.battery import (
    battery_terms,
    per_example_scores_term,
    robustness_term,
    sanity_terms,
)
from pipeline.memory.sizes import MANY_CHUNKS_HEAP
from pipeline.memory.study import study_terms


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The faithfulness stage's terms, by its name in dvc.yaml."""
    study = study_terms(cfg, cfg.study.seeds, "study.seeds")
    terms = [
        sequences_term(cfg),
        study[0],  # the study's parameters, read
        per_example_scores_term(cfg, cfg.study.seeds, "study.seeds"),
        *battery_terms(cfg, cfg.study.seeds, "study.seeds", MANY_CHUNKS_HEAP),
        *sanity_terms(
            cfg,
            min(cfg.faithfulness.sanity_seeds, cfg.study.seeds),
            "faithfulness.sanity_seeds",
        ),
        robustness_term(cfg),
    ]
    return {"faithfulness": terms}
