"""The lesson's single-query attention classifier, S independent runs at once.

Per run: keys K_t = Wk x_t, values V_t = Wv x_t, one learned query q,
weights a = softmax(q . K_t / sqrt(d_k)), logit o = w . sum_t a_t V_t + b.

Its fast path in training: gradients derived by hand (`gradient_step`;
tests/models/test_train.py checks them against torch autograd through `forward`). With a
reading channel and a one-hot marker channel, every softmax sum splits into the
marked step and three moments over the unmarked steps (`TrainingSet`), which is
what makes 1000 runs cheap. Like the lesson, the probability in the gradient uses
the logit clamped to [-30, 30].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from pipeline.config import ModelConfig
from pipeline.models import cuda_launch
from pipeline.models.attention import attention_weights, drop_steps_mask
from pipeline.models.parameters import Layout, Params, lesson_layout
from pipeline.models.pooling import attend as pool
from pipeline.models.pooling import (
    channels,
    head_gradients,
    key_direction,
    lesson_head,
    probability,
    project,
    value_direction,
)
from pipeline.models.pooling_gradients import (
    loss_head,
    one_head,
    one_head_weights,
    runs_last_gradients,
)


def layout(cfg: ModelConfig, steps: int) -> Layout:
    return lesson_layout(cfg)


def attend(params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None):
    """The contract's forward (pipeline/models/kind.py): the pooling every kind shares,
    with one head. `forward` computes the same model in the lesson's own order."""
    return pool(channels(inputs), [lesson_head(params)], params.named["b"], dropped)


def forward(
    params: Params, inputs: torch.Tensor, dropped: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (..., S, N) and attention weights (..., S, N, T) as the lesson computes
    them (the metrics read these); `dropped` as in `pooling.attend`."""
    head, xs = lesson_head(params), channels(inputs)
    scores = project(xs, key_direction(head))  # (S, N, T)
    mask = None if dropped is None else drop_steps_mask(dropped, scores.dtype)
    weights = attention_weights(scores, mask)  # (..., S, N, T)
    step_values = project(xs, value_direction(head))  # (S, N, T)
    logits = (weights * step_values).sum(-1) + params.named["b"][:, None]
    return logits, weights


def head_weights(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    return forward(params, inputs)[1].unsqueeze(-2)


def value_norm(params: Params, inputs: torch.Tensor) -> torch.Tensor:
    """a_t |w . V_t|: (S, N, T)."""
    weights = forward(params, inputs)[1]
    return weights * project(channels(inputs), value_direction(lesson_head(params))).abs()


@dataclass(frozen=True)
class TrainingSet:
    """Per-example constants of the one-hot marker channel, computed once.

    With x_t = (r_t, [t == m]), a step's score is u0 r_t + u1 [t == m]. The
    softmax sums then split into the marked step (an (S, N) quantity) and
    three moments of exp(u0 r_t) over the unmarked steps: one exp pass over
    (S, N, T) per epoch and one batched matmul, nothing else that large.
    """

    readings: torch.Tensor  # (N, T), the marked entry replaced by an unmarked reading
    moments: torch.Tensor  # (N, 3, T): unmarked * [1, r, r^2]
    marked_reading: torch.Tensor  # (N,)
    unmarked_max: torch.Tensor  # (N,)
    unmarked_min: torch.Tensor  # (N,)
    labels: torch.Tensor  # (N,)

    @classmethod
    def build(cls, inputs: torch.Tensor, labels: torch.Tensor) -> TrainingSet:
        readings, marker = inputs[..., 0], inputs[..., 1]
        is_marked = marker > 0.5
        unmarked = (~is_marked).to(readings.dtype)
        first_unmarked = (~is_marked).to(torch.int8).argmax(-1, keepdim=True)
        # The masked-out entry only has to keep exp() from overflowing.
        safe = torch.where(is_marked, readings.gather(-1, first_unmarked), readings)
        return cls(
            readings=safe,
            moments=torch.stack([unmarked, unmarked * readings, unmarked * readings**2], 1),
            marked_reading=(readings * marker).sum(-1),
            unmarked_max=safe.amax(-1),
            unmarked_min=safe.amin(-1),
            labels=labels,
        )


def logits_and_gradients(
    params: Params, batch: TrainingSet
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Training logits (S, N) and the gradient of the mean BCE for every parameter
    (in `params.tensors()` order)."""
    head = lesson_head(params)
    logits, dkey_dir, dvalue_dir, dbias, _ = moment_gradients(
        key_direction(head), value_direction(head), params.named["b"], batch
    )
    return logits, [*head_gradients(head, dkey_dir, dvalue_dir), dbias]


def moment_gradients(
    key_dir: torch.Tensor,
    value_dir: torch.Tensor,
    bias: torch.Tensor,
    batch: TrainingSet,
    heads: int = 1,
    sink: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Logits (S, N) and the mean BCE's gradients for each head's key and value
    direction (H * S, C) each, head-major as `key_dir` and `value_dir` come, the bias
    (S,) and the sink logit (S,); the logit is the sum of the heads' contexts plus b.
    Also the sink kind's and multihead's fast path: a sink adds exp(sink) to every
    softmax sum and takes no value, dsink = -sum g a_sink context.

    Computed example-major, (N, S) and (N, T, S): runs innermost, so the batched
    matmul is (3, T) @ (T, S) per example (faster than (S, T) @ (T, 3) on the CPU:
    docs/speed.md) and every (N, S) operand it yields is contiguous along the runs.
    """
    reading_key, marker_key = key_dir[:, 0], key_dir[:, 1]  # (H * S,) each
    reading_value, marker_value = value_dir[:, 0], value_dir[:, 1]
    marked_reading = batch.marked_reading[:, None]  # (N, 1)

    # The exact max score of every (example, run): the softmax shift.
    extreme = torch.where(
        reading_key > 0, batch.unmarked_max[:, None], batch.unmarked_min[:, None]
    )  # (N, S)
    marked_score = marked_reading * reading_key + marker_key  # (N, S)
    shift = torch.maximum(reading_key * extreme, marked_score)
    if sink is not None:
        sink = sink.repeat(heads)
        shift = torch.maximum(shift, sink)
    exps = torch.addcmul(
        -shift[:, None, :], batch.readings[:, :, None], reading_key[None, None, :]
    ).exp_()  # (N, T, S)
    unmarked_sum, unmarked_r, unmarked_rr = torch.bmm(batch.moments, exps).unbind(1)

    marked_exp = torch.exp(marked_score - shift)  # (N, S)
    total = unmarked_sum + marked_exp
    if sink is not None:
        sink_exp = torch.exp(sink - shift)
        total = total + sink_exp
    marked_weight = marked_exp / total
    mean_reading = (unmarked_r + marked_exp * marked_reading) / total  # sum_t a_t r_t
    mean_square = (unmarked_rr + marked_exp * marked_reading**2) / total
    context = reading_value * mean_reading + marker_value * marked_weight  # sum_t a_t z_t
    examples = batch.labels.shape[0]
    heads_context = context if heads == 1 else context.view(examples, heads, -1).sum(1)
    logits = heads_context + bias

    dlogit = (probability(logits) - batch.labels[:, None]) / examples  # (N, S)
    dcontext = dlogit if heads == 1 else dlogit.repeat(1, heads)
    # sum_t a_t (z_t - context) x_t, channel by channel.
    spread_reading = (
        reading_value * mean_square
        + marker_value * marked_weight * marked_reading
        - context * mean_reading
    )
    marked_value = reading_value * marked_reading + marker_value
    spread_marker = marked_weight * (marked_value - context)
    dvalue_dir = torch.stack(
        [(dcontext * mean_reading).sum(0), (dcontext * marked_weight).sum(0)], -1
    )
    dkey_dir = torch.stack(
        [(dcontext * spread_reading).sum(0), (dcontext * spread_marker).sum(0)], -1
    )
    dsink = None
    if sink is not None:
        dsink = -(dcontext * (sink_exp / total) * context).sum(0).view(heads, -1).sum(0)
    return logits.T, dkey_dir, dvalue_dir, dlogit.sum(0), dsink


def gradient_step(
    inputs: torch.Tensor, labels: torch.Tensor
) -> Callable[[Params], tuple[torch.Tensor, list[torch.Tensor]]]:
    """The fast path's step for `train.descend`: params -> (logits, hand-derived gradients).
    It assumes the data's inputs (`frames.features`): channel 1 one-hot, a single step
    at 1.0 and the rest 0.0, which the moments' split into the marked step and the
    unmarked ones needs (`TrainingSet`); on other inputs its numbers are not the
    model's (autograd and the fused CUDA kernels take any inputs)."""
    batch = TrainingSet.build(inputs, labels)
    return lambda params: logits_and_gradients(params, batch)


def fused_training(inputs: torch.Tensor, labels: torch.Tensor):
    """On cuda, the whole training in one fused kernel (pipeline/models/cuda_pooling.py):
    one thread a run, no (N, T, S) tensor; None elsewhere."""
    if not cuda_launch.on_cuda(inputs):
        return None
    from pipeline.models.cuda_pooling import Pooling, training  # numba: loaded on use

    return training(inputs, labels, lambda params: Pooling())


def loss_step(inputs: torch.Tensor, loss, fixed: torch.Tensor | None = None):
    """A fast step on any loss on the pooling (pipeline/experiments/debate/training.py): the
    pooling's hand-derived chain (pipeline/models/pooling_gradients.py, no offsets),
    the loss's own part by autograd on the pooling's numbers alone."""
    head_loss = one_head(loss_head(loss, one_head_weights(fixed)))
    no_offsets = inputs.new_zeros(inputs.shape[1], 1, inputs.shape[2])  # (T, 1, C)

    def step(params: Params) -> tuple[torch.Tensor, list[torch.Tensor]]:
        head, bias = lesson_head(params), params.named["b"]
        grads = runs_last_gradients(inputs, [head], bias, head_loss, no_offsets, False)
        return grads.logits, [*head_gradients(head, grads.keys[0], grads.values[0]), grads.bias]

    return step
