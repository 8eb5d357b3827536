"""Window: one causal sliding-window self-attention layer (seed 003), then the pooling.

h_t = x_t + sum_{j=t-w+1..t} softmax_j(Q_t . K_j / sqrt(d_k)) V_j, with
Q = Wq_layer x, K = Wk_layer x, V = Wv_layer x (Wv_layer: C x C), residual; then
the lesson's pooling on the whole sequence h_0..h_{T-1}. The pooling weights weigh
the positions h_t, whose receptive field is the steps t-w+1..t of the input. Step
ablation drops a step from the pooling only: the layer still sees every step.

Its fast path in training on the CPU: the layer and the pooling as compiled loops
(`pipeline.models.window_kernel`), forward and backward fused per tile of runs
(`gradient_step`), with the chain to the parameters derived by hand. On cuda, the
same math in one CUDA thread a run (`fused_training`, pipeline/models/cuda_window.py).
"""

from __future__ import annotations

import math

import torch

from pipeline.config import ModelConfig
from pipeline.core.errors import PipelineError
from pipeline.models import cuda_launch
from pipeline.models.attention import drop_steps_mask
from pipeline.models.parameters import (
    CHANNELS,
    LESSON_GROUPS,
    Groups,
    Layout,
    Params,
    lesson_layout,
)
from pipeline.models.pooling import (
    attend as pool,
)
from pipeline.models.pooling import (
    channels,
    head_gradients,
    key_direction,
    lesson_head,
    project,
    total,
    value_direction,
)
from pipeline.models.pooling_gradients import loss_head, one_head_weights
from pipeline.models.threads import available

OWN_KEYS = ("window",)  # the model.* key this kind alone reads (kind.py)

# Runs per training pass of the compiled kernel (the fused step's and autograd's): it
# keeps no (N, T, runs) intermediates (it tiles its work itself), and each pass costs
# a fixed Python overhead (docs/speed.md): larger passes than `train.AUTOGRAD_BLOCK`.
KERNEL_BLOCK = 250


def layout(cfg: ModelConfig, steps: int) -> Layout:
    layer = [
        ("Wq_layer", (cfg.d_k, CHANNELS)),
        ("Wk_layer", (cfg.d_k, CHANNELS)),
        ("Wv_layer", (CHANNELS, CHANNELS)),
    ]
    return lesson_layout(cfg) + layer


def randomisation_groups(cfg: ModelConfig) -> Groups:
    """The layer sits before the pooling: the last group."""
    return [*LESSON_GROUPS, ("layer", ("Wq_layer", "Wk_layer", "Wv_layer"))]


def layer_values(cfg: ModelConfig) -> int:
    """Values per (run, example, step) the layer keeps: keys, values, scores and
    weights of each offset (the memory estimate's factor)."""
    return 8 * cfg.window


def shifted(steps_last: torch.Tensor, offset: int) -> torch.Tensor:
    """Step t takes the value of step t - offset (zero before step 0): (..., T)."""
    if offset == 0:
        return steps_last
    return torch.nn.functional.pad(steps_last, (offset, 0))[..., : steps_last.shape[-1]]


def layer_bilinear(params: Params) -> torch.Tensor:
    """The layer's A = Wq^T Wk / sqrt(d_k), (S, C, C): Q_t . K_j = x_t^T A x_j."""
    n = params.named
    return torch.einsum("sic,sid->scd", n["Wq_layer"], n["Wk_layer"]) / math.sqrt(
        n["Wq_layer"].shape[1]
    )


def offset_weights(params: Params, xs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The layer's softmax weights, one (..., S, N, T) slab per offset: entry t of
    offset o is what position t puts on step t - o (0 before step 0).

    Q_t . K_j = x_t^T A x_j with A = Wq^T Wk / sqrt(d_k) (C x C), so the scores need
    only C channels. Banded: position t scores the w positions t-w+1..t, one offset
    at a time, T * w scores, not T * T; the softmax runs over the offsets (dim 0).
    """
    bilinear = layer_bilinear(params)
    keys = [project(xs, bilinear[:, c]) for c in range(len(xs))]  # (A x)_c
    steps = torch.arange(xs[0].shape[-1], device=xs[0].device)
    scores = torch.stack(
        [
            total(x * shifted(k, offset) for x, k in zip(xs, keys, strict=True))
            + drop_steps_mask(steps < offset, xs[0].dtype)
            for offset in range(params.cfg.window)
        ]
    )  # (w, ..., S, N, T): offset first
    return torch.softmax(scores, dim=0).unbind(0)


def layer_channels(params: Params, inputs: torch.Tensor) -> list[torch.Tensor]:
    """h = x + causal sliding-window self-attention of x, per channel: (..., S, N, T) each.

    Channels and offsets are kept as separate (..., S, N, T) slabs: elementwise work,
    no reduction over a tiny last dim.
    """
    xs = channels(inputs)  # (..., N, T) or (..., S, N, T) each
    values = [project(xs, params.named["Wv_layer"][:, c]) for c in range(len(xs))]
    weights = offset_weights(params, xs)
    return [
        x + total(a * shifted(v, offset) for offset, a in enumerate(weights))
        for x, v in zip(xs, values, strict=True)
    ]


def layer_attention(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """The layer's weights as a matrix (S, N, T, T): entry (t, j) is what position t
    puts on input step j, zero outside its window t-w+1..t."""
    weights = offset_weights(params, channels(inputs))
    return sum(
        torch.diag_embed(a[..., offset:], offset=-offset) for offset, a in enumerate(weights)
    )


def layer(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """The layer's output h: (..., S, N, T, C)."""
    return torch.stack(layer_channels(params, inputs), -1)


def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
    pooled = layer_channels(params, inputs)
    return pool(pooled, [lesson_head(params)], params.named["b"], dropped)


def training_block(inputs: torch.Tensor) -> tuple[int, bool] | None:
    """On the CPU the compiled kernel: its block of runs, and that it runs on threads
    of its own (torch's ops on one meanwhile). None elsewhere: on cuda training takes
    `fused_training` (autograd where numba cannot compile), the debate autograd."""
    return (KERNEL_BLOCK, True) if inputs.device.type == "cpu" else None


def gradient_step(inputs: torch.Tensor, labels: torch.Tensor):
    """Training's fast path on the CPU (None elsewhere: autograd through `attend`):
    the fused kernel's step on the mean BCE."""
    if training_block(inputs) is None:
        return None
    return kernel_step(inputs, cpu_kernel().bce_head(labels))


def cpu_kernel():
    """pipeline.models.window_kernel, numba's compiled loops (slow to import, so on use).
    Without an importable numba (a `numba.py` in the working folder shadowing it, a
    broken install) one line: torch's autograd would train other bits than the kernel,
    so there is no fallback here, where the CUDA path falls back to torch's ops."""
    try:
        from pipeline.models import window_kernel
    except ImportError as err:
        raise PipelineError(
            f"the window model's CPU kernel needs numba, which does not import here "
            f"({type(err).__name__}: {err}): remove what shadows it (a numba.py or numba/ "
            "in the working folder or on PYTHONPATH) or reinstall requirements.lock"
        ) from None
    return window_kernel


def fused_training(inputs: torch.Tensor, labels: torch.Tensor):
    """On cuda, the whole training in one fused kernel, the layer's and the pooling's
    chain in each run's thread (pipeline/models/cuda_window.py); None elsewhere."""
    if not cuda_launch.on_cuda(inputs):
        return None
    from pipeline.models.cuda_window import training  # numba: loaded on use

    return training(inputs, labels)


def loss_step(inputs: torch.Tensor, loss, fixed: torch.Tensor | None = None):
    """The fused kernel's step on any loss on the pooling (pipeline/experiments/debate/training.py,
    whose reference is autograd through `attend`): the loss's gradients w.r.t. the logits,
    readouts and pooling scores by autograd on each tile's pooling alone, the layer's
    chain in the compiled loops. `fixed` weights stand in for the pooling's. None off
    the CPU."""
    if training_block(inputs) is None:
        return None
    return kernel_step(inputs, loss_head(loss, one_head_weights(fixed)))


def kernel_step(inputs: torch.Tensor, head):
    """`train.descend`'s step through the fused kernel with the pooling `head`: its
    gradients for A, u_k, u_v, beta and gamma, then by hand A = Wq^T Wk / sqrt(d_k),
    beta = Wv^T u_k, gamma = Wv^T u_v and the head's chain."""
    logits_and_gradients = cpu_kernel().logits_and_gradients
    threads = available()

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        n, head_params, wv_layer = params.named, lesson_head(params), params.named["Wv_layer"]
        key_dir, value_dir, beta, gamma = kernel_directions(params)
        logits, dbilinear, dkey, dvalue, dbeta, dgamma, dbias = logits_and_gradients(
            layer_bilinear(params), key_dir, value_dir, beta, gamma, n["b"], inputs, head,
            params.cfg.window, threads,
        )  # fmt: skip
        dkey = dkey + torch.einsum("scd,sd->sc", wv_layer, dbeta)
        dvalue = dvalue + torch.einsum("scd,sd->sc", wv_layer, dgamma)
        dbilinear = dbilinear / math.sqrt(n["Wq_layer"].shape[1])
        return logits, [
            *head_gradients(head_params, dkey, dvalue),
            dbias,
            torch.einsum("scd,sid->sic", dbilinear, n["Wk_layer"]),  # Wq_layer
            torch.einsum("scd,sic->sid", dbilinear, n["Wq_layer"]),  # Wk_layer
            key_dir[:, :, None] * dbeta[:, None, :] + value_dir[:, :, None] * dgamma[:, None, :],
        ]

    return step


def kernel_directions(params: Params) -> tuple[torch.Tensor, ...]:
    """The kernel's u_k, u_v, beta = Wv^T u_k and gamma = Wv^T u_v: (S, C) each."""
    head, layer_values = lesson_head(params), params.named["Wv_layer"]
    key_dir, value_dir = key_direction(head), value_direction(head)
    beta = torch.einsum("scd,sc->sd", layer_values, key_dir)
    gamma = torch.einsum("scd,sc->sd", layer_values, value_dir)
    return key_dir, value_dir, beta, gamma
