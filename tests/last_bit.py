"""Another CPU, emulated on this one: every floating result of the operations whose
last bit depends on the machine moved by one ulp, with seeded signs.

Two x86-64 CPUs agree on each correctly rounded IEEE operation (+, -, *, /, sqrt).
Where they differ is in what a library chooses for the CPU: the blocking and FMA
use of a matrix product, the order of a reduction, the polynomial of a vectorised
exp, log or tanh. `LastBitNudge` moves each result of those operations by one unit
in the last place, up or down by a seeded coin, the way another machine's path
would, so that a test on one CPU sees what a second CPU would write. numba's CPU
code is nudged at its outputs (`nudge_numba`), since its inside cannot be reached
from Python.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

# Operations whose result may differ in its last bits between CPUs: products and sums
# that a library blocks or vectorises, and the transcendental functions.
MACHINE_DEPENDENT = {
    "mm", "bmm", "addmm", "addmv", "mv", "dot", "baddbmm", "addbmm", "matmul",
    "linalg_matrix_exp", "linalg_vector_norm", "norm",
    "sum", "mean", "cumsum", "prod", "var", "std", "logsumexp",
    "exp", "expm1", "log", "log1p", "log2", "tanh", "sigmoid", "erf", "pow", "sin", "cos",
    "tanh_backward", "sigmoid_backward", "_softmax", "_log_softmax",
    "_softmax_backward_data", "_log_softmax_backward_data",
    "binary_cross_entropy_with_logits", "log_sigmoid_forward", "softplus",
    "_foreach_sqrt", "_foreach_addcdiv", "_foreach_addcmul", "_foreach_lerp", "lerp",
    "addcdiv", "addcmul",
}  # fmt: skip


def _name(func) -> str:
    return func.overloadpacket.__name__.removesuffix("_")


class LastBitNudge(TorchDispatchMode):
    """Inside it, each floating result of a MACHINE_DEPENDENT op moves by one ulp,
    the direction drawn from a generator seeded with `seed` (the same sequence of
    ops gets the same nudges). `nudged` counts the values moved."""

    def __init__(self, seed: int = 0):
        super().__init__()
        self.generator = torch.Generator().manual_seed(seed)
        self.nudged = 0

    def _nudge(self, value):
        if not (isinstance(value, torch.Tensor) and value.is_floating_point()):
            return value
        if value.numel() == 0:
            return value
        up = torch.rand(value.shape, generator=self.generator) < 0.5
        target = torch.where(up, torch.inf, -torch.inf).to(value.dtype)
        # Zeros and infinities stay: an exact zero (0 * x, a squared zero gradient)
        # is exact on every machine, and a sign flip there would be no CPU's result.
        movable = (value != 0) & value.isfinite()
        moved = torch.where(movable, torch.nextafter(value, target.to(value.device)), value)
        self.nudged += int(movable.sum())
        return moved

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if _name(func) not in MACHINE_DEPENDENT:
            return out
        if func._schema.is_mutable:  # in place (`add_`, `_foreach_addcdiv_`) or out=:
            written = args[0] if out is None else out  # the result is moved where it lives
            for tensor in written if isinstance(written, list | tuple) else [written]:
                tensor.copy_(self._nudge(tensor))
            return out
        if isinstance(out, list | tuple):
            return type(out)(self._nudge(item) for item in out)
        return self._nudge(out)


@contextlib.contextmanager
def nudged(seed: int = 0):
    """The block's torch operations as another CPU would compute them."""
    with LastBitNudge(seed) as mode:
        yield mode


def _nudge_array(array, generator) -> None:
    """One ulp up or down, in place, on a numpy array's non-zero finite values."""
    import numpy as np

    up = generator.random(array.shape) < 0.5
    movable = (array != 0) & np.isfinite(array)
    array[...] = np.where(movable, np.nextafter(array, np.where(up, np.inf, -np.inf)), array)


# numba's compiled loops of the window kernel and the arguments they write.
NUMBA_OUTPUTS = {"_layer_scores": (3,), "_layer_outputs": (4, 5), "_backward_tile": (6,)}


def nudge_numba(monkeypatch, seed: int = 0) -> None:
    """The window kernel's compiled loops with each array they write nudged by one ulp
    after they return, as another CPU's vector path would leave it."""
    import numpy as np

    from pipeline.models import window_kernel

    generator = np.random.default_rng(seed)
    for name, outputs in NUMBA_OUTPUTS.items():
        compiled = getattr(window_kernel, name)

        def nudged_call(*args, _compiled=compiled, _outputs=outputs):
            _compiled(*args)
            for index in _outputs:
                _nudge_array(args[index], generator)

        monkeypatch.setattr(window_kernel, name, nudged_call)
