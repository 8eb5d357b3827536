"""The window kind's compiled training loops (pipeline/models/window_kernel.py).

That they compute `window.attend` and its autograd gradients is checked in
tests/models/test_models.py (test_hand_gradients_of_every_kind_are_autograds,
test_fast_training_is_autograd_training);
here: what the threads, tiles and blocks must not change, and failure.
"""

from __future__ import annotations

import pytest
import torch

from pipeline.config import ModelConfig
from pipeline.core.errors import DivergenceError
from pipeline.models import interface, train, window, window_kernel
from pipeline.models.parameters import to_flat
from tests.models.helpers import F64, STEPS, random_inputs, random_params, small_set

CFG = ModelConfig(kind="window")
THREADS = torch.get_num_threads()


def test_the_fused_step_changes_no_bit_with_threads(monkeypatch):
    """Training's fused step (`window.gradient_step`): the same bytes on any thread
    count (threads take whole tiles); another tile width moves only the last bits
    (torch's exp takes a scalar path for a buffer's tail)."""
    params = random_params(CFG, 7, seed=37)
    inputs = random_inputs(9, STEPS, seed=38)
    labels = (torch.arange(9) % 2).to(F64)

    def fused(threads: int) -> list[torch.Tensor]:
        torch.set_num_threads(threads)
        try:
            logits, gradients = window.gradient_step(inputs, labels)(params)
        finally:
            torch.set_num_threads(THREADS)
        return [logits, *gradients]

    wide = {}
    for tile in (window_kernel.TILE, 2):
        monkeypatch.setattr(window_kernel, "TILE", tile)
        wide[tile] = fused(1)
        for threads in (2, 3):
            got = fused(threads)
            assert all(torch.equal(g, w) for g, w in zip(got, wide[tile], strict=True)), tile
    for g, w in zip(wide[2], wide[window_kernel.TILE], strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-15)


def test_training_in_one_block_or_many_is_the_same(monkeypatch):
    (train_x, train_y), _ = small_set()
    initial = interface.init_params(4242, [1, 2, 3, 4, 5], CFG, STEPS)
    whole, _ = train.train(initial, train_x, train_y, 5, 0.6)
    monkeypatch.setattr(window, "KERNEL_BLOCK", 2)
    assert interface.training_block(initial, train_x) == (2, True)
    blocks, _ = train.train(initial, train_x, train_y, 5, 0.6)
    assert torch.equal(to_flat(whole), to_flat(blocks))


def test_training_leaves_torch_threads_as_they_were():
    (train_x, train_y), _ = small_set()
    before = torch.get_num_threads()
    train.train(interface.init_params(4242, [1, 2], CFG, STEPS), train_x, train_y, 2, 0.6)
    assert torch.get_num_threads() == before


def test_a_diverging_window_run_is_refused():
    """NaN and inf pass through the compiled loops (no fast-math that assumes them away)."""
    (train_x, train_y), _ = small_set()
    cfg = ModelConfig(kind="window", init_scale=50.0)
    initial = interface.init_params(4242, [1, 2], cfg, STEPS)
    before = torch.get_num_threads()
    with pytest.raises(DivergenceError, match=r"train\.lr"):
        train.train(initial, train_x, train_y, 20, 1e6)
    assert torch.get_num_threads() == before


def test_a_nan_parameter_gives_nan_logits_not_numbers():
    params = random_params(CFG, 3, seed=33)
    params.named["Wq_layer"][1, 0, 0] = float("nan")
    inputs = random_inputs(4, STEPS, seed=34)
    logits, _ = window.gradient_step(inputs, (torch.arange(4) % 2).to(F64))(params)
    assert torch.isnan(logits[1]).all()
    assert torch.isfinite(logits[[0, 2]]).all()


def test_other_devices_train_through_forward():
    """The kernel is the CPU's; elsewhere (a GPU) window trains by the definition,
    autograd through `forward`. The meta device stands in for one here: shapes only,
    and no numpy view is taken."""
    params = random_params(CFG, 3, seed=35).map(lambda t: t.to("meta"))
    inputs = random_inputs(4, STEPS, seed=36).to("meta")
    labels = (torch.arange(4) % 2).to(F64).to("meta")
    assert window.training_block(inputs) is None
    assert interface.gradient_step(params, inputs, labels) is None
    logits, gradients = train.autograd_step(inputs, labels)(params)
    assert logits.device.type == "meta" and logits.shape == (3, 4)
    assert [g.shape for g in gradients] == [t.shape for t in params.tensors()]
