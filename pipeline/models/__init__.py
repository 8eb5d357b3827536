"""Model kinds as plug-ins: `model.kind` names a module, found through
`pipeline.core.kinds.MODEL_KINDS`.

What a kind module defines, and the defaults of what it need not, is written once:
pipeline/models/kind.py. pipeline/models/interface.py is what the rest of the
pipeline calls; nothing else looks at the kind.

A kind's name is registered in pipeline/core/kinds.py (torch-free, where the config
checks `model.kind`); a new kind is one module and its name there, and `python -m
pipeline.params --defaults` writes its option conf/model/<kind>.yaml. A test
registers a toy kind with `kinds.register_model`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pipeline.core.kinds import MODEL_KINDS


def kind_module(kind: str) -> ModuleType:
    """The module of a kind, imported on first use."""
    module = MODEL_KINDS[kind]
    return importlib.import_module(module) if isinstance(module, str) else module
