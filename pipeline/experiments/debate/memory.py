"""The memory terms of the debate's cells: each a stage of its own (debate@<cell>),
the study's machinery then its tests."""

from __future__ import annotations

from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.cells import cell_config
from pipeline.config.schema import Config
from pipeline.memory.battery import battery_terms
from pipeline.memory.sizes import (
    DEBATE_RUNS,
    DTYPE_BYTES,
    MAPPED_BATTERY,
    adversary_pass,
    candidate_count,
    pooling_slots,
)
from pipeline.memory.study import study_terms
from pipeline.models import interface


def debate_cell_terms(cfg: Config, task: str, variant: str) -> list[MemoryTerm]:
    """A debate cell (pipeline/experiments/debate/cell.py): the study's machinery on debate.seeds
    seeds, then the tests one after the other, their large blocks mapped: the
    adversary's candidate distributions and the permutations' shuffled weights (a
    chunk of runs at a time), and the battery behind deception's hit@1."""
    cell = cell_config(cfg, task, variant, cfg.grid)  # trained as the grid's cells
    steps = cell.data.steps
    runs = min(DEBATE_RUNS, cfg.debate.seeds)
    heads, slots = interface.pooling_heads(cell.model), pooling_slots(cell.model, steps)
    adversary_runs, adversary_examples = adversary_pass(
        cell.model, steps, cfg.debate.seeds, cell.data.split[2]
    )
    size = ("bytes", "", DTYPE_BYTES[cell.train.dtype])
    return [
        sequences_term(cell),
        *study_terms(cell, cfg.debate.seeds, "debate.seeds"),
        MemoryTerm(
            "the adversary",
            (
                ("runs", "debate.seeds", adversary_runs),
                ("held-out", "data.split", adversary_examples),
                ("candidates", "data.steps", candidate_count(slots, heads)),
                ("slots", "data.steps", slots),
                size,
            ),
            phase="adversary",
        ),
        MemoryTerm(
            "the permutations",
            (
                ("runs", "debate.seeds", runs),
                ("held-out", "data.split", cell.data.split[2]),
                ("orders", "debate.permutations", cfg.debate.permutations),
                ("heads", "model.heads", heads),
                ("steps", "data.steps", steps),
                size,
            ),
            phase="permutations",
        ),
        # Deception's hit@1: the battery's explainers on every lam's runs in one pass,
        # its blocks mapped.
        *battery_terms(
            cell,
            len(cfg.debate.penalties) * min(cfg.debate.trained_seeds, cfg.debate.seeds),
            "debate.trained_seeds",
            MAPPED_BATTERY,
        ),
    ]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """Each cell's stage's terms, by its name in dvc.yaml (debate@<cell>); the
    debate_figures stage only reads the cells' files."""
    return {
        f"debate@{name}": debate_cell_terms(cfg, cell.task, cell.variant)
        for name, cell in cfg.debate.cells.items()
    }
