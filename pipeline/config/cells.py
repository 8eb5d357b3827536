"""The cells of the next lesson's grid and of the attention debate: a task and a named
model variant (pipeline/core/kinds.py) on the lesson's settings, trained as grid.epochs and
grid.lr say; their configs, and the checks of the cells conf/ lists."""

from __future__ import annotations

from dataclasses import replace

from pipeline.config.bounds import check
from pipeline.config.schema import Config, GridCell, ModelConfig, TaskConfig
from pipeline.core.errors import ConfigError
from pipeline.core.kinds import DEBATE_MAX_HEADS, POOLING_KINDS, TASKS, VARIANTS

PROBE_STEPS = 16  # sequence lengths on which a task's rationale is probed


def cell_label(task: str, variant: str) -> str:
    """How a cell is named in printouts, tables, figures and MLflow: "<task> x <variant>"."""
    return f"{task} x {variant}"


def variant_config(variant: str, base: ModelConfig) -> ModelConfig:
    """`base` (the lesson's sizes and init) as the named variant."""
    return replace(base, **VARIANTS[variant])


def cell_config(cfg: Config, task: str, variant: str) -> Config:
    """A grid cell's config: the task and the model variant on the lesson's settings,
    with the grid's own epochs and learning rate."""
    train = replace(cfg.train, epochs=cfg.grid.epochs, lr=cfg.grid.lr)
    return replace(
        cfg, task=TaskConfig(kind=task), model=variant_config(variant, cfg.model), train=train
    )


def check_cells(
    group: str,
    cells: dict[str, GridCell],
    variants: list[str],
    note: str = "",
    tasks: tuple[list[str], str] | None = None,
) -> None:
    """Each cell of the grid or the debate: one of `tasks` (the names and a note; by
    default every task) and one of `variants`, under the key <task>-<variant>."""
    names, task_note = (list(TASKS), "") if tasks is None else tasks
    for name, cell in cells.items():
        key = f"{group}.cells.{name}"
        allowed_tasks = f"allowed: {', '.join(names)}{task_note}"
        check(cell.task in names, f"{key}.task", allowed_tasks, cell.task)
        allowed = f"allowed: {', '.join(variants)}{note}"
        check(cell.variant in variants, f"{key}.variant", allowed, cell.variant)
        # DVC's foreach names the stage and its output after the key (grid@<key>,
        # reports/grid/<key>.json) and the cell writes <task>-<variant>.json: any
        # other key trained, then failed in DVC for the missing output.
        if name != f"{cell.task}-{cell.variant}":
            raise ConfigError(
                f"invalid config value {key}: a cell's key must be its <task>-<variant> "
                f"(DVC names its stage and output after it), here {cell.task}-{cell.variant}"
            )


def check_debate_cells(cfg: Config) -> None:
    """The debate's cells: models whose pooling is linear in each head's weights (the
    tests read such a logit; the exact adversary enumerates steps^heads vertex
    combinations: pipeline/debate/adversary.py), on tasks whose rationale singles out
    steps."""
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
