"""The abstraction stage's peak: the interchange interventions and the maps' fit."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.memory.sizes import DTYPE_BYTES, at_once
from pipeline.memory.study import study_terms

RUNS_AT_ONCE = 10  # runs per job of the stage: one thread fits their maps


def terms(cfg: Config) -> list[MemoryTerm]:
    """The runs' parameters, and each job's maps applied to every ordered (base,
    source) pair of held-out sequences at once (interchange.py's
    interchange_accuracy: its widest values are the coupling MLPs' hidden layer), or
    to the training pairs while the maps are fitted, with their gradients."""
    runs = min(cfg.abstraction.seeds, cfg.study.seeds)
    parameters = study_terms(cfg, runs, "abstraction.seeds")[0]
    held = ("runs at once", "abstraction.seeds", at_once(RUNS_AT_ONCE, runs))
    hidden, d_v = cfg.abstraction.hidden, cfg.model.d_v  # the wider names the key
    width = ("width", "abstraction.hidden" if hidden >= d_v else "model.d_v", max(hidden, d_v) * 3)
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    heldout = cfg.data.split[2]
    return [
        sequences_term(cfg),
        parameters,
        MemoryTerm(
            "the interchange interventions",
            (held, ("pairs", "data.split", heldout * heldout), width, size),
            phase="score",
        ),
        MemoryTerm(
            "the maps' fit",
            (held, ("pairs", "abstraction.pairs", cfg.abstraction.pairs), width, size),
            phase="fit",
        ),
    ]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The abstraction stage's terms, by its name in dvc.yaml."""
    return {"abstraction": terms(cfg)}
