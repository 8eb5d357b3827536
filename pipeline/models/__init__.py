"""Model kinds as plug-ins: `model.kind` names a module, found through
`pipeline.kinds.MODEL_KINDS`.

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

A kind's name is registered in pipeline/kinds.py (torch-free, where the config
checks `model.kind`); a new kind is one module, its name there, and one YAML in
conf/model/. A test registers a toy kind with `kinds.register_model`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pipeline.kinds import MODEL_KINDS


def kind_module(kind: str) -> ModuleType:
    """The module of a kind, imported on first use."""
    module = MODEL_KINDS[kind]
    return importlib.import_module(module) if isinstance(module, str) else module
