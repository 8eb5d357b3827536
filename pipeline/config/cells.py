"""The configs of the next lesson's grid cells: a task and a named model variant
(pipeline/kinds.py) on the lesson's settings, trained as grid.epochs and grid.lr say."""

from __future__ import annotations

from dataclasses import replace

from pipeline.config.schema import Config, ModelConfig, TaskConfig
from pipeline.kinds import VARIANTS


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
