"""What the rest of the pipeline calls on a model, whatever its kind: each function
asks the kind's module through its contract (pipeline/models/kind.py, which holds
the defaults of what a module does not define)."""

from __future__ import annotations

import torch

from pipeline.config import ModelConfig
from pipeline.models import kind_module
from pipeline.models import parameters as layouts
from pipeline.models.kind import Kind, kind_of
from pipeline.models.parameters import Layout, Params


def layout(cfg: ModelConfig, steps: int) -> Layout:
    return kind_module(cfg.kind).layout(cfg, steps)


def parameter_count(cfg: ModelConfig, steps: int) -> int:
    return layouts.parameter_count(layout(cfg, steps))


def flat_names(cfg: ModelConfig, steps: int) -> list[str]:
    return layouts.flat_names(layout(cfg, steps))


def from_flat(flat: torch.Tensor, cfg: ModelConfig, steps: int) -> Params:
    return layouts.from_flat(flat, cfg, layout(cfg, steps))


def init_params(
    data_seed: int,
    run_seeds: list[int],
    cfg: ModelConfig,
    steps: int,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> Params:
    """Run k starts from stream(data_seed + k), drawn in bulk (`parameters.init_runs`)."""
    shapes = layout(cfg, steps)
    rows = layouts.init_runs([data_seed + k for k in run_seeds], shapes, cfg.init_scale)
    return layouts.from_flat(rows.to(dtype=dtype, device=device), cfg, shapes)


def kind(name: str) -> Kind:
    """The kind `name` through its contract (pipeline/models/kind.py)."""
    return kind_of(kind_module(name))


def forward(
    params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (..., S, N) and the pooling weights the metrics read (..., S, N, T).

    `dropped` (bool, broadcastable against (S, N, T), True = removed) takes steps
    out of the pooling softmax (every head's) and renormalises the rest: the step
    ablation. Extra leading dims of the mask become leading dims of the outputs.
    """
    return kind(params.cfg.kind).forward(params, inputs, dropped)


def head_weights(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """Each head's pooling weights (..., S, N, H, T)."""
    return kind(params.cfg.kind).head_weights(params, inputs)


def value_norm(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """sum_h a_{h,t} |w_h . V_{h,t}| (the lesson's a_t |w . V_t|; V read from what the
    pooling attends over): (S, N, T)."""
    return kind(params.cfg.kind).value_norm(params, inputs)


def layer_attention(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """The attention of the kind's layer before the pooling as (S, N, T, T): row t
    holds what position t reads of each input step."""
    return kind(params.cfg.kind).layer_attention(params, inputs)


def randomisation_groups(cfg: ModelConfig) -> layouts.Groups:
    """The parameter groups of the sanity checks' cascade, from the output side inwards."""
    return kind(cfg.kind).randomisation_groups(cfg)


def has_layer_attention(cfg: ModelConfig) -> bool:
    return kind(cfg.kind).defines("layer_attention")


def extra_values(
    params: Params, inputs: torch.Tensor, marked: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The kind's own per-example numbers (S, N) on held-out inputs."""
    return kind(params.cfg.kind).extra_values(params, inputs, marked)


def training_block(params: Params, inputs: torch.Tensor) -> tuple[int, bool] | None:
    """The fast path's (runs per pass, whether the kind computes on threads of its
    own), or None: one pass."""
    return kind(params.cfg.kind).training_block(inputs)


def gradient_step(params: Params, inputs: torch.Tensor, labels: torch.Tensor):
    """The kind's hand-derived `train.descend` step, or None (autograd)."""
    return kind(params.cfg.kind).gradient_step(inputs, labels)


def fused_training(params: Params, inputs: torch.Tensor, labels: torch.Tensor):
    """The kind's whole training in one fused kernel on the inputs' device, or None."""
    return kind(params.cfg.kind).fused_training(inputs, labels)


def loss_step(params: Params, inputs: torch.Tensor, loss, fixed: torch.Tensor | None = None):
    """The kind's fast step on a loss on the pooling (`debate.training.loss_step`), or None."""
    return kind(params.cfg.kind).loss_step(inputs, loss, fixed)


def pooling_heads(cfg: ModelConfig) -> int:
    """Heads whose per-step numbers the kind keeps (the memory estimate's factor)."""
    return kind(cfg.kind).pooling_heads(cfg)


def layer_values(cfg: ModelConfig) -> int:
    """Per-step values of a layer before the pooling (the memory estimate's factor)."""
    return kind(cfg.kind).layer_values(cfg)


def sink_slot(cfg: ModelConfig) -> bool:
    """Whether each head's softmax has one value-less slot beside the steps (a sink)."""
    return kind(cfg.kind).sink_slot(cfg)
