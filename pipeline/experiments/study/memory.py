"""The study stage's peak: the training of study.seeds runs, a chunk at a time
(pipeline/memory/study.py's `study_terms`, which other stages train with too)."""

from __future__ import annotations

from pipeline.analysis.epochs import EPOCH_VALUES
from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.schema import Config
from pipeline.memory.sizes import DTYPE_BYTES
from pipeline.memory.study import study_terms
from pipeline.models import interface


def dynamics_terms(cfg: Config) -> list[MemoryTerm]:
    """The dynamics: every run's parameters at every epoch while its chunk trains, and
    the per-epoch numbers of every seed (the table written, with its copies)."""
    seeds, epochs = (
        ("seeds", "study.seeds", cfg.study.seeds),
        ("epochs", "train.epochs", cfg.train.epochs + 1),
    )
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    sizes = {"model.d_k": cfg.model.d_k, "model.d_v": cfg.model.d_v, "data.steps": cfg.data.steps}
    grows_with = max(sizes, key=sizes.__getitem__)  # what a run's parameter count grows with
    count = interface.parameter_count(cfg.model, cfg.data.steps)
    per_run = ("parameters per run", grows_with, count)
    return [
        MemoryTerm("the trajectories", (seeds, epochs, per_run, size)),
        MemoryTerm(
            "the per-epoch numbers",
            (seeds, epochs, ("values", "", len(EPOCH_VALUES) + 2), size, ("copies", "", 3)),
        ),
    ]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The study stage's terms, by its name in dvc.yaml, and the report stage's read of
    the study's per-example table."""
    study = study_terms(cfg, cfg.study.seeds, "study.seeds")
    return {
        "study": [sequences_term(cfg), *study, *dynamics_terms(cfg)],
        "report": [study[4]],
    }
