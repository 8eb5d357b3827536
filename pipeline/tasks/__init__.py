"""Tasks as plug-ins: `task.kind` names a module, found through
`pipeline.kinds.TASKS`.

Every task draws the lesson's sequences (pipeline/data.py: the same stream, the
same readings and marked step) and labels them by its own rule. A task module
offers, without torch:

- `label(readings, marked, threshold) -> int`: the rule;
- `rationale(marked, steps) -> list[int]`: the steps that decide the label (what
  the faithfulness battery's rationale metrics are scored against; where it is
  every step they are constant and the grid leaves them out);
- a docstring with the rule, its rationale and which faithfulness metrics apply.

A new task is one module, its name in pipeline/kinds.py, and one YAML in
conf/task/.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pipeline.kinds import TASKS


def task_module(kind: str) -> ModuleType:
    module = TASKS[kind]
    return importlib.import_module(module) if isinstance(module, str) else module


def rationale_rows(kind: str, marked: list[int], steps: int) -> list[list[bool]]:
    """Per example, which of the T steps decide its label (the task's `rationale`)."""
    module = task_module(kind)
    rows = []
    for m in marked:
        deciding = set(module.rationale(m, steps))
        rows.append([t in deciding for t in range(steps)])
    return rows
