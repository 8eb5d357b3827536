"""The attention debate's settings (params.yaml's `debate:` group), their ranges and
checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.config.cells import GridCell, check_cells, variant_cells
from pipeline.config.intervals import Range, at_least, check
from pipeline.core.kinds import DEBATE_MAX_HEADS, POOLING_KINDS, TASKS, VARIANTS

PATHS = {
    "debate": "reports/debate",  # one <task>-<variant>.json per cell of the debate
    "debate_figures": "reports/debate_figures",  # of report.md's "The attention debate"
}
FOLDERS = ("debate", "debate_figures")  # the paths that are folders
REPLACED = ("cells",)  # the configured cells replace the default ones
TRACKING_SUFFIX = "-debate"  # the cells' MLflow experiment: <tracking.experiment><this>
PROBE_STEPS = 16  # sequence lengths on which a task's rationale is probed


def debate_cells() -> dict[str, GridCell]:
    """The debate's default cells: each task module's DEBATE_VARIANTS (pipeline/tasks/),
    which conf/debate/lesson.yaml lists as well."""
    return variant_cells("DEBATE_VARIANTS")


@dataclass
class Settings:
    """The attention debate (docs/debate.md): each paper's test, one DVC stage
    debate@<name> per cell (a task and a variant of pipeline/core/kinds.py whose logit is
    linear in its pooling weights, at most four heads), trained as the grid's cells are
    (grid.epochs, grid.lr). Every grid task whose rationale singles out steps: the
    lesson (the marked step), first_half (the marked step), rise (m - 1 and m), each
    with a variant that can solve it; two_patterns' rationale is every step.
    The docs' numbers: dvc exp run -S debate.seeds=1000 -S debate.trained_seeds=100"""

    cells: dict[str, GridCell] = field(default_factory=debate_cells)
    seeds: int = 100  # the tests that do not train: the adversary, permutations, seed pairs
    trained_seeds: int = 10  # per setting, the tests that train: uniform, frozen, deceptive
    # the adversary's band on the output
    epsilons: list[float] = field(default_factory=lambda: [0.01, 0.05])
    permutations: int = 100  # seeded random orders of each example's weights
    permutation_seed: int = 0
    # deceptive attention's lam
    penalties: list[float] = field(default_factory=lambda: [0.0, 0.1, 1.0, 10.0])
    # the model-consistent adversary's lam: the weight of the JSD it gains on its TVD
    consistent_penalties: list[float] = field(default_factory=lambda: [0.1, 1.0, 10.0])
    # it starts this far from its base run toward that run's init (1: the init, as
    # Wiegreffe & Pinter train theirs)
    consistent_start: float = 0.05


RANGES = {
    "seeds": at_least(2),
    "trained_seeds": at_least(1),
    "epsilons": Range(0, 1, open_low=True, open_high=True, each="eps"),
    "permutations": at_least(1),
    "penalties": Range(0, each="lam"),
    "consistent_penalties": Range(0, each="lam"),
    "consistent_start": Range(0, 1, open_low=True),
}
RELATIVE: dict[str, str] = {}


def check_settings(cfg) -> None:
    """The cells (`check_debate_cells`) and the lists the tests run over."""
    check_debate_cells(cfg)
    debate = cfg.debate
    check(debate.epsilons != [], "debate.epsilons", "must list at least one eps", [])
    for key in ("penalties", "consistent_penalties"):
        check(getattr(debate, key) != [], f"debate.{key}", "must list at least one lam", [])


def check_debate_cells(cfg) -> None:
    """The debate's cells: models whose pooling is linear in each head's weights (the
    tests read such a logit; the exact adversary enumerates steps^heads vertex
    combinations: adversary.py), on tasks whose rationale singles out steps."""
    applies = [
        name
        for name, model in VARIANTS.items()
        if model["kind"] in POOLING_KINDS and model.get("heads", 1) <= DEBATE_MAX_HEADS
    ]
    note = f" (pooling linear in its weights, at most {DEBATE_MAX_HEADS} heads)"
    tasks = (_singling_out_tasks(cfg.data.steps), " (a rationale that singles out steps)")
    check_cells("debate", cfg.debate.cells, applies, note, tasks)


def _singling_out_tasks(steps: int) -> list[str]:
    """The tasks whose rationale singles out steps: not every step whatever the marked
    one. Where it is every step, deceptive attention's penalty -log(1 - weight on it)
    is infinite and the rationale's hit@1 is 1 whatever the explainer. Probed on at
    most PROBE_STEPS steps, so that the check stays cheap before the size checks run."""
    from pipeline.tasks import rationale_rows

    probe = min(steps, PROBE_STEPS)
    return [
        task
        for task in TASKS
        if not all(all(row) for row in rationale_rows(task, list(range(probe)), probe))
    ]
