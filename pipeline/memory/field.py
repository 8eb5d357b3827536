"""The field's stages' peaks (pipeline/field/, docs/field.md): erasure's battery,
remove and retrain's training sets and their runs, the interchange interventions of
causal abstraction."""

from __future__ import annotations

from pipeline.analysis import registry
from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.memory.battery import battery_terms
from pipeline.memory.sizes import ABSTRACTION_RUNS, DTYPE_BYTES, at_once
from pipeline.memory.study import study_terms
from pipeline.models import interface


def erasure_terms(cfg: Config) -> list[MemoryTerm]:
    """The study's parameters read, and the battery's explainers over the lesson's runs
    and the study's first erasure.seeds runs (at most the study's)."""
    runs = len(cfg.train.seeds) + min(cfg.erasure.seeds, cfg.study.seeds)
    parameters = study_terms(cfg, cfg.study.seeds, "study.seeds")[0]
    return [sequences_term(cfg), parameters, *battery_terms(cfg, runs, "erasure.seeds")]


def abstraction_terms(cfg: Config) -> list[MemoryTerm]:
    """The runs' parameters, and each job's maps applied to every ordered (base,
    source) pair of held-out sequences at once (field/abstraction.py's
    interchange_accuracy: its widest values are the coupling MLPs' hidden layer), or
    to the training pairs while the maps are fitted, with their gradients."""
    runs = min(cfg.abstraction.seeds, cfg.study.seeds)
    parameters = study_terms(cfg, runs, "abstraction.seeds")[0]
    held = ("runs at once", "abstraction.seeds", at_once(ABSTRACTION_RUNS, runs))
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


def roar_sets(cfg: Config) -> int:
    """The training sets remove and retrain trains at most: the unmodified one and one
    per ranking and fraction, every declared explainer's rows (a per-head one's per
    head) and the smoothed ones per lesson run, and two that read no model. Rankings
    that remove the same steps share a set, so it is often fewer."""
    heads = interface.pooling_heads(cfg.model)
    rows = sum(heads if e.per_head else 1 for e in registry.EXPLAINERS.values())
    per_run = rows + len(cfg.roar.smoothed)
    return 1 + len(cfg.roar.fractions) * (len(cfg.train.seeds) * per_run + 2)


def roar_terms(cfg: Config) -> list[MemoryTerm]:
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
