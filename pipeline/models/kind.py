"""The contract of a model kind, written once: what a kind module must define, what
it may, and the default for each optional function.

A kind is a module of pipeline/models/ found by name (pipeline/core/kinds.py). It must
define

- `layout(cfg, steps)`: its parameters, (name, shape of one run) in init order
  (pipeline/models/parameters.py draws the init from it);
- `attend(params, inputs, dropped=None)`: the seed-batched forward, the definition
  of the model: logits (..., S, N), per-head pooling weights and readouts
  (..., S, N, H, T). `dropped` (bool, broadcastable against (S, N, T), True =
  removed) takes steps out of every head's pooling softmax: the step ablation.

Training's reference is autograd through `attend` (`forward`'s logits), for every
kind. The rest is optional; a module that defines a function of the same name
replaces the default below:

- what is read (`forward`, `head_weights`, `value_norm`, `extra_values`): by default
  from `attend`, the weights the metrics read being the mean over heads;
- `layer_attention(params, inputs)`: where the kind has a self-attention layer
  before the pooling, its weights as a (S, N, T, T) matrix (row t: what position t
  reads of each input step). Attention rollout and flow read it; a kind without
  it has no layer, and those explainers do not apply (`defines`);
- the fast path in training (`gradient_step`, `training_block`; `loss_step` for a
  loss on the pooling other than the BCE, the debate's): by default none, autograd.
  `fused_training(inputs, labels)`: the whole training in one compiled kernel where
  the runs' tensors are on a cuda device (pipeline/models/cuda_launch.py), else None;
  A kind's hand-derived gradients or compiled kernel are optimisations:
  tests/models/test_models.py checks each against autograd through `attend`;
- the memory estimate's factors (`pooling_heads`, `layer_values`);
- `sink_slot(cfg)`: whether each head's softmax has one value-less slot beside the
  steps (a sink): its weight is what the steps do not take, 1 - sum_t a_t, and it
  adds nothing to the logit. The debate's tests (pipeline/experiments/debate/) count it as one
  more place for the mass, with readout 0. By default none;
- `randomisation_groups(cfg)`: its parameters in groups from the output side
  inwards, the sanity checks' cascade (by default the lesson's readout, values,
  keys; every parameter of the layout in exactly one group).

Besides its functions a module may declare `OWN_KEYS`, a tuple written as a literal:
the model.* keys it alone reads (multihead's `heads`). By default none. Its option
conf/model/<kind>.yaml sets them at ModelConfig's defaults (pipeline/config/conf_files.py,
with the module's docstring as its header), and the config checks them for this kind
alone (pipeline/config/checks.py); both read it without importing the module
(`pipeline.core.kinds.declared`).
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

import torch

from pipeline.config import ModelConfig
from pipeline.models.parameters import LESSON_GROUPS, Groups, Layout, Params

REQUIRED = ("layout", "attend")
OPTIONAL = (
    "forward",
    "head_weights",
    "value_norm",
    "extra_values",
    "layer_attention",
    "gradient_step",
    "loss_step",
    "training_block",
    "fused_training",
    "pooling_heads",
    "layer_values",
    "sink_slot",
    "randomisation_groups",
)


class Kind:
    """A kind module seen through the contract (`kind_of`): the module's own functions
    where it defines them, these defaults where it does not."""

    def layout(self, cfg: ModelConfig, steps: int) -> Layout:
        raise NotImplementedError

    def attend(self, params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
        raise NotImplementedError

    def forward(
        self, params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (..., S, N) and the mean pooling weights over heads (..., S, N, T)."""
        logits, weights, _ = self.attend(params, inputs, dropped)
        if weights.shape[-2] == 1:
            return logits, weights.squeeze(-2)  # the mean over one head, without a pass
        return logits, weights.mean(-2)

    def head_weights(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """Each head's pooling weights (..., S, N, H, T)."""
        return self.attend(params, inputs)[1]

    def value_norm(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """sum_h a_{h,t} |w_h . V_{h,t}|: how much step t moves the logit through its
        value (S, N, T)."""
        _, weights, readouts = self.attend(params, inputs)
        return (weights * readouts.abs()).sum(-2)

    def extra_values(
        self, params: Params, inputs: torch.Tensor, marked: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The kind's own per-example numbers (S, N) on held-out inputs: none."""
        return {}

    def layer_attention(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """The layer's attention matrix (S, N, T, T): a kind without a layer has none."""
        raise TypeError(f"model kind {params.cfg.kind} has no layer before its pooling")

    def defines(self, name: str) -> bool:
        """Whether the kind's module defines `name` itself (not the default)."""
        return name in vars(self)

    def gradient_step(self, inputs: torch.Tensor, labels: torch.Tensor):
        """A hand-derived `train.descend` step (params -> logits, gradients), or None:
        autograd through `attend`."""
        return None

    def loss_step(self, inputs: torch.Tensor, loss, fixed: torch.Tensor | None = None):
        """A fast `train.descend` step on a loss on the pooling (`debate.training.loss_step`), or
        None: autograd through `attend`."""
        return None

    def training_block(self, inputs: torch.Tensor) -> tuple[int, bool] | None:
        """(runs per pass of the fast path, whether it computes on threads of its own),
        or None: one pass of every run."""
        return None

    def fused_training(self, inputs: torch.Tensor, labels: torch.Tensor):
        """A `cuda_launch.FusedTraining` (the kernel of the runs' shape; called,
        (params, epochs, lr) -> (trained params, loss, accuracy (epochs, S))) by a fused
        kernel on the inputs' device, or None: `train.train`'s epochs."""
        return None

    def pooling_heads(self, cfg: ModelConfig) -> int:
        """Heads whose per-step numbers the kind keeps (the memory estimate's factor)."""
        return 1

    def layer_values(self, cfg: ModelConfig) -> int:
        """Per-step values of a layer before the pooling (the memory estimate's factor)."""
        return 0

    def sink_slot(self, cfg: ModelConfig) -> bool:
        """Whether each head's softmax has one value-less slot beside the steps."""
        return False

    def randomisation_groups(self, cfg: ModelConfig) -> Groups:
        """The parameter groups of the sanity checks' cascade, output side first."""
        return list(LESSON_GROUPS)


@cache
def kind_of(module: ModuleType) -> Kind:
    """`module` through the contract. A module without `layout` and `attend` is
    refused, naming what it lacks."""
    missing = [name for name in REQUIRED if not hasattr(module, name)]
    if missing:
        raise TypeError(f"model kind {module.__name__} lacks {', '.join(missing)}")
    kind = Kind()
    for name in (*REQUIRED, *OPTIONAL):
        if hasattr(module, name):
            setattr(kind, name, getattr(module, name))  # the module's own, unbound
    return kind
