"""A second device on a CPU-only machine, for the device-guard tests.

CI has no GPU, and a tensor made without the runs' device (a bootstrap's counts on
the CPU meeting per-seed values on cuda) fails only there. `simulated_cuda()` makes
`train.device=cuda` resolve to a device named `guard`: its tensors hold CPU data
(so every number is the CPU's, bit for bit) but report another device, and any
operation that mixes them with a CPU tensor of one or more dimensions raises, as
CUDA does. A CPU scalar (0-d) may meet them, and CPU indices may index them, as on
CUDA. `.numpy()` of a guard tensor raises, as of a cuda one.

The device is PyTorch's PrivateUse1 backend renamed (the Python device guard that
autograd needs comes with `_setup_privateuseone_for_python_backend`); tensors on
it are `GuardTensor` wrappers, and two modes route every op: a dispatch mode for
aten ops (factories with `device=guard` included) and a function mode for what
never reaches aten (`torch.tensor(..., device=...)`, `.tolist()`, `.numpy()`).
Modes hold in the thread that entered them, so the guard runs our job threads one
at a time in that thread (torch's thread count 1: `pipeline.models.threads`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

NAME = "guard"
if torch._C._get_privateuse1_backend_name() != NAME:  # once per process
    _setup_privateuseone_for_python_backend(NAME)
DEVICE = torch.device(NAME, 0)
# Real CUDA accepts CPU index tensors in advanced indexing.
_INDEXING = {torch.ops.aten.index.Tensor, torch.ops.aten.index_put.default}
_INDEXING |= {torch.ops.aten.index_put_.default, torch.ops.aten._index_put_impl_.default}


class DeviceMixed(RuntimeError):
    """An op met tensors of the runs' device and CPU tensors: it would fail on CUDA."""


class GuardTensor(torch.Tensor):
    """CPU data that reports the guard device."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> GuardTensor:
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.shape,
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            device=DEVICE,
            requires_grad=elem.requires_grad,
        )
        wrapper.elem = elem
        return wrapper

    def __repr__(self) -> str:
        return f"GuardTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


def _on_guard(device) -> bool:
    return device is not None and torch.device(device).type == NAME


def _unwrap(value):
    return value.elem if isinstance(value, GuardTensor) else value


def _wrap(value):
    return GuardTensor(value) if isinstance(value, torch.Tensor) else value


def _run(func, args, kwargs):
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    on_guard = [t for t in tensors if isinstance(t, GuardTensor)]
    on_cpu = [tuple(t.shape) for t in tensors if not isinstance(t, GuardTensor) and t.dim() > 0]
    if on_guard and on_cpu and func not in _INDEXING:
        raise DeviceMixed(
            f"device guard: {func} mixes tensors on the runs' device with CPU tensors of "
            f"shapes {on_cpu}: on CUDA this raises 'Expected all tensors to be on the same device'"
        )
    target = kwargs.get("device")
    if target is not None:
        kwargs = {**kwargs, "device": torch.device("cpu")}
    out = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
    if func is torch.ops.aten._local_scalar_dense.default:  # .item(): a Python number
        return out
    to_guard = _on_guard(target) if target is not None else bool(on_guard)
    return tree_map(_wrap, out) if to_guard else out


def _list_indices_on_cpu(index):
    """A list in an index as a CPU tensor (CUDA, too, takes CPU index tensors)."""
    if isinstance(index, tuple):
        return tuple(_list_indices_on_cpu(part) for part in index)
    if isinstance(index, list):
        return torch.tensor(index, dtype=torch.long) if not index else torch.tensor(index)
    return index


class _Dispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


class _Functions(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        if func is torch.Tensor.tolist and isinstance(first, GuardTensor):
            return first.elem.tolist()
        if func in (torch.Tensor.numpy, torch.Tensor.__array__) and isinstance(first, GuardTensor):
            raise TypeError(f"can't convert {NAME} device type tensor to numpy (as for cuda)")
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and isinstance(
            first, GuardTensor
        ):  # torch makes a list index on the indexed tensor's device outside the modes
            return func(first, _list_indices_on_cpu(args[1]), *args[2:], **kwargs)
        if _on_guard(kwargs.get("device")):  # torch.tensor(..., device=) never reaches aten
            cpu = func(*args, **{**kwargs, "device": torch.device("cpu")})
            return tree_map(_wrap, cpu)
        return func(*args, **kwargs)


@contextlib.contextmanager
def simulated_cuda(monkeypatch) -> Iterator[torch.device]:
    """`train.device: cuda` (and `auto`) resolve to the guard device while inside."""
    import sys

    from pipeline.core import device

    resolve = device.resolve_device

    def to_guard(name: str) -> torch.device:
        return DEVICE if name in ("cuda", "auto") else resolve(name)

    for module in [m for name, m in sys.modules.items() if name.startswith("pipeline")]:
        if getattr(module, "resolve_device", None) is resolve:  # imported by name too
            monkeypatch.setattr(module, "resolve_device", to_guard)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # our job threads run in this one, where the modes hold
    try:
        with _Functions(), _Dispatch():
            yield DEVICE
    finally:
        torch.set_num_threads(threads)
