"""Tasks as plug-ins: `task.kind` names a module of this folder, found by its file
name (`pipeline.core.kinds.TASKS`).

Every task draws the lesson's sequences (pipeline/data.py: the same stream, the
same readings and marked step) and labels them by its own rule. A task module
offers, without torch:

- `label(readings, marked, threshold) -> int`: the rule;
- `rationale(marked, steps) -> list[int]`: the steps that decide the label (what
  the faithfulness battery's rationale metrics are scored against; where it is
  every step they are constant and the grid leaves them out);
- `HAND_SET` (model variant -> the name of a hand-set model in
  pipeline/experiments/grid/capacity.py) and `CANNOT` (variant -> why the kind cannot
  express the rule): one of the two for every variant the grid runs on it;
- `GRID_VARIANTS`: the model variants of its next-lesson cells (the grid's default
  cells; conf/grid/lesson.yaml lists the same, since DVC composes conf/ alone);
- optional: `DEBATE_VARIANTS`, the model variants of its attention-debate cells
  (the debate's default cells, listed in conf/debate/lesson.yaml as well): a
  variant that can solve the task, on a task whose rationale singles out steps;
- optional: `observe(readings, draw) -> readings`, the readings as the task's
  sequences show them (its own draws from the sequence's stream, after the marked
  step: the lesson's readings and marked step stay), and `suppressors(marked,
  steps) -> list[int]`, steps that carry no label information but that a model can
  use to cancel noise (the grid's cell reports each explainer's attribution on them);
- optional: `ORDERED = True` where the label depends on where steps sit (the grid
  adds a shuffled control), `EXPERIMENT = "heads"` for the next lesson's heads
  section (the default: "order");
- a docstring with the rule, its rationale and which faithfulness metrics apply.

A new task is one module here; `python -m pipeline.params --defaults` writes its
option conf/task/<kind>.yaml (the docstring's first paragraph its header) and its
cells into conf/grid/lesson.yaml, and conf/debate/lesson.yaml where it has debate
cells.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pipeline.core.kinds import TASKS

# Reasons several tasks give for a variant that cannot express their rule.
COSINE = (
    "open (no hand-set model found): the fixed encoding adds cos t to the marker channel, "
    "and 1 + cos m < cos 0 for m = 2, 3, 4, 8, 9, 10, so no key direction puts the most "
    "weight on the marker whatever the readings"
)
SET_ORDER = "sees the steps as a set: the set's distribution does not depend on m"
ONE_HEAD = ("lesson", "sink", "posenc_learned", "window2", "window3", "window12")


def task_module(kind: str) -> ModuleType:
    """The module of a task, imported on first use."""
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
