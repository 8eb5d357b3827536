"""Where a plug-in is found by name: model kinds, tasks, the grid's named model
variants and the experiments.

Torch-free and importing nothing of the project, so that the config checks a name
(pipeline/config/checks.py) without loading a model, and the generate stage, which
only labels sequences, does not depend on pipeline/models/. The modules are
imported on use: `pipeline.models.kind_module`, `pipeline.tasks.task_module`,
`experiment_part`; `declared` reads what a plug-in module declares without importing
it. A test registers a toy kind, task or experiment with `register_model`,
`register_task` or `register_experiment`.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

MODEL_KINDS: dict[str, str | ModuleType] = {
    kind: f"pipeline.models.{kind}" for kind in ("lesson", "sink", "multihead", "posenc", "window")
}

# The kinds whose logit is linear in their heads' pooling weights,
# sum_h sum_t a_{h,t} r_{h,t} + b with each a_h a distribution over the steps (and a
# sink's value-less slot): what the debate's tests read (pipeline/experiments/debate/pooling.py).
POOLING_KINDS = {"lesson", "sink", "multihead", "posenc", "window"}
# The most heads the debate's exact adversary enumerates (pipeline/experiments/debate/adversary.py):
# multihead4's, the largest variant (933k candidates per example over 12 steps).
DEBATE_MAX_HEADS = 4


def task_modules() -> dict[str, str]:
    """Every module of pipeline/tasks/ is a task, `task.kind` its file name: found by
    file, none imported. The lesson's first, the others by name."""
    found = pkgutil.iter_modules([str(Path(__file__).parents[1] / "tasks")])
    names = sorted((info.name != "lesson", info.name) for info in found if not info.ispkg)
    return {name: f"pipeline.tasks.{name}" for _, name in names}


TASKS: dict[str, str | ModuleType] = task_modules()
# A model kind with the one setting that matters on a task (its heads, its
# encoding, its window width): the grid's cells and the capacity table name these.
VARIANTS: dict[str, dict] = {
    "lesson": {"kind": "lesson"},
    "sink": {"kind": "sink"},
    "multihead2": {"kind": "multihead", "heads": 2},
    "multihead4": {"kind": "multihead", "heads": 4},
    "posenc_learned": {"kind": "posenc", "positional": "learned"},
    "posenc_sinusoidal": {"kind": "posenc", "positional": "sinusoidal"},
    "window2": {"kind": "window", "window": 2},
    "window3": {"kind": "window", "window": 3},
    "window12": {"kind": "window", "window": 12},
}


def register_model(kind: str, module: str | ModuleType, pooling: bool = False) -> None:
    """Make `module` (a module or its import path) the model kind `kind`; `pooling`:
    its logit is linear in its heads' pooling weights (POOLING_KINDS)."""
    MODEL_KINDS[kind] = module
    if pooling:
        POOLING_KINDS.add(kind)


def register_task(kind: str, module: str | ModuleType) -> None:
    """Make `module` (a module or its import path) the task `kind`."""
    TASKS[kind] = module


def declared(module: str | ModuleType) -> dict[str, Any]:
    """What a plug-in module (a registry's entry) declares at its top: its `__doc__`,
    its `__name__` and each constant written as a literal (a model kind's `OWN_KEYS`),
    read from its source without importing it where it is not a module already: a
    model kind imports torch, and the config checks and conf/'s writer do not."""
    if isinstance(module, ModuleType):
        return vars(module)
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no module {module}")
    tree = ast.parse(Path(spec.origin).read_text())
    found: dict[str, Any] = {"__doc__": ast.get_docstring(tree), "__name__": module}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        # a value that is no literal is an expression the module computes: left out
        if isinstance(target, ast.Name):
            with contextlib.suppress(TypeError, ValueError):
                found[target.id] = ast.literal_eval(value)
    return found


# The experiments (pipeline/experiments/<name>/, docs/architecture.md), in the order
# of their config groups in params.yaml: each is one folder and one line here.
EXPERIMENTS: dict[str, str] = {
    "study": "pipeline.experiments.study",
    "faithfulness": "pipeline.experiments.faithfulness",
    "grid": "pipeline.experiments.grid",
    "debate": "pipeline.experiments.debate",
    "erasure": "pipeline.experiments.erasure",
    "abstraction": "pipeline.experiments.abstraction",
    "roar": "pipeline.experiments.roar",
    "dynamics": "pipeline.experiments.dynamics",
}


def experiment(name: str) -> ModuleType:
    """An experiment's package: its DOCUMENT and SHAPE (pipeline/experiments/__init__.py)."""
    return importlib.import_module(EXPERIMENTS[name])


def experiment_part(name: str, part: str) -> ModuleType:
    """An experiment's module `part` (`config`, `memory`, `report`, ...), imported on use."""
    return importlib.import_module(f"{EXPERIMENTS[name]}.{part}")


def has_part(name: str, part: str) -> bool:
    """Whether the experiment `name` has the module `part` (an optional one, `tracked`)."""
    return importlib.util.find_spec(f"{EXPERIMENTS[name]}.{part}") is not None


def register_experiment(name: str, package: str) -> None:
    """Make the package `package` (its import path) the experiment `name`."""
    EXPERIMENTS[name] = package
