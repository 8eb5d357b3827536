"""Model kinds as plug-ins: `model.kind` names a module, found through `KINDS`.

Every kind module offers the same small interface (pipeline/models/interface.py
calls it; nothing else looks at the kind):

- `layout(cfg, steps)`: its parameters, (name, shape of one run) in init order
  (pipeline/models/params.py draws the init from it);
- `attend(params, inputs, dropped=None)`: the seed-batched forward, logits
  (..., S, N) and per-head pooling weights and readouts (..., S, N, H, T);
  or `forward` (logits and weights (..., S, N, T)), `head_weights` and
  `value_norm` of its own, as the lesson has;
- optional: `extra_values(params, inputs, marked)` (its own per-example numbers:
  sink mass, per-head numbers), `training_logits` and `training_block` (a layout
  for training speed), `gradient_step` (hand-derived gradients), and the memory
  estimate's `pooling_heads(cfg)` and `layer_values(cfg)`.

This module imports no torch: the config validates `model.kind` against `KINDS`.
A new kind is one module plus one YAML in conf/model/; a test registers a toy kind
with `register`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

KINDS: dict[str, str | ModuleType] = {
    kind: f"pipeline.models.{kind}" for kind in ("lesson", "sink", "multihead", "posenc", "window")
}


def register(kind: str, module: str | ModuleType) -> None:
    """Make `module` (a module or its import path) the kind `kind`."""
    KINDS[kind] = module


def kind_module(kind: str) -> ModuleType:
    """The module of a kind, imported on first use."""
    module = KINDS[kind]
    return importlib.import_module(module) if isinstance(module, str) else module
