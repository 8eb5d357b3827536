"""The roar stage's peak: the training sets and their runs."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.core import measures
from pipeline.memory.battery import battery_terms
from pipeline.memory.sizes import DTYPE_BYTES
from pipeline.memory.study import study_terms
from pipeline.models import interface


def roar_sets(cfg: Config) -> int:
    """The training sets remove and retrain trains at most: the unmodified one and one
    per ranking and fraction, every declared explainer's rows (a per-head one's per
    head) and the smoothed ones per lesson run, and two that read no model. Rankings
    that remove the same steps share a set, so it is often fewer."""
    heads = interface.pooling_heads(cfg.model)
    rows = sum(heads if e.per_head else 1 for e in measures.EXPLAINERS.values())
    per_run = rows + len(cfg.roar.smoothed)
    return 1 + len(cfg.roar.fractions) * (len(cfg.train.seeds) * per_run + 2)


def terms(cfg: Config) -> list[MemoryTerm]:
    """The rankings of the train.seeds runs (the battery's explainers), the modified
    sequences, the study's training of roar.seeds runs per set, and each set's held-out
    correct (its training keeps held-out accuracy alone)."""
    sets = ("sets", "roar.fractions", roar_sets(cfg))
    train_n, _, heldout_n = cfg.data.split
    parameters, training = study_terms(cfg, cfg.roar.seeds, "roar.seeds", sets[2])[:2]
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    seeds, heldout = ("seeds", "roar.seeds", cfg.roar.seeds), ("held-out", "data.split", heldout_n)
    modified = (
        sets,
        ("sequences", "data.split", train_n + heldout_n),
        ("columns", "data.steps", cfg.data.steps + 5),
        ("bytes", "", 8),
    )
    return [
        sequences_term(cfg),
        parameters,
        training,
        MemoryTerm("the modified sequences", modified),
        MemoryTerm("the per-example values", (sets, seeds, heldout, size)),
        *battery_terms(cfg, len(cfg.train.seeds), "train.seeds"),
    ]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The roar stage's terms, by its name in dvc.yaml."""
    return {"roar": terms(cfg)}
