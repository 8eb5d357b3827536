"""The cells of the experiments that train one task x model variant per DVC stage
(the next lesson's grid, the attention debate): a task and a named model variant
(pipeline/core/kinds.py) on the lesson's settings, trained as the experiment's settings
say; their configs, and the checks of the cells conf/ lists.

Imports nothing of the schema (pipeline/config/schema.py imports the experiments'
config modules, which declare their cells with `GridCell`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from pipeline.config.intervals import check
from pipeline.core.errors import ConfigError
from pipeline.core.kinds import TASKS, VARIANTS

# The schema's Config and ModelConfig, not imported: the schema imports this module.
Config = ModelConfig = Any


@dataclass
class GridCell:
    task: str
    variant: str  # a name of pipeline/core/kinds.py


class CellTraining(Protocol):
    """The settings a cell trains with instead of the lesson's train.epochs and train.lr."""

    epochs: int
    lr: float


def variant_cells(attribute: str) -> dict[str, GridCell]:
    """Each task module's `attribute` (GRID_VARIANTS, DEBATE_VARIANTS: pipeline/tasks/)
    as cells under their keys <task>-<variant>: an experiment's default cells."""
    from pipeline.tasks import task_module

    return {
        f"{task}-{variant}": GridCell(task, variant)
        for task in TASKS
        for variant in getattr(task_module(task), attribute, ())
    }


def cell_label(task: str, variant: str) -> str:
    """How a cell is named in printouts, tables, figures and MLflow: "<task> x <variant>"."""
    return f"{task} x {variant}"


def variant_config(variant: str, base: ModelConfig) -> ModelConfig:
    """`base` (the lesson's sizes and init) as the named variant."""
    return replace(base, **VARIANTS[variant])


def cell_config(cfg: Config, task: str, variant: str, training: CellTraining) -> Config:
    """A cell's config: the task and the model variant on the lesson's settings, with
    `training`'s own epochs and learning rate."""
    train = replace(cfg.train, epochs=training.epochs, lr=training.lr)
    return replace(
        cfg,
        task=replace(cfg.task, kind=task),
        model=variant_config(variant, cfg.model),
        train=train,
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
