"""Tasks as plug-ins: `task.kind` names a module, found through `KINDS`.

Every task draws the lesson's sequences (pipeline/data.py: the same stream, the
same readings and marked step) and labels them by its own rule. A task module
offers, without torch:

- `label(readings, marked, threshold) -> int`: the rule;
- `rationale(marked, steps) -> list[int]`: the steps that decide the label (what
  the faithfulness battery's rationale metrics are scored against; where it is
  every step they are constant and the grid leaves them out);
- a docstring with the rule, its rationale and which faithfulness metrics apply.

A new task is one module plus one YAML in conf/task/.
"""

from __future__ import annotations

import importlib
from types import ModuleType

KINDS: dict[str, str | ModuleType] = {
    kind: f"pipeline.tasks.{kind}" for kind in ("lesson", "two_patterns", "first_half", "rise")
}


def register(kind: str, module: str | ModuleType) -> None:
    """Make `module` (a module or its import path) the task `kind`."""
    KINDS[kind] = module


def task_module(kind: str) -> ModuleType:
    module = KINDS[kind]
    return importlib.import_module(module) if isinstance(module, str) else module


def rationale_rows(kind: str, marked: list[int], steps: int) -> list[list[bool]]:
    """Per example, which of the T steps decide its label (the task's `rationale`)."""
    module = task_module(kind)
    rows = []
    for m in marked:
        deciding = set(module.rationale(m, steps))
        rows.append([t in deciding for t in range(steps)])
    return rows
