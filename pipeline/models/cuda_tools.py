"""Where CUDA's compiler tools come from: libNVVM and libdevice (numba compiles a
kernel to PTX with them) and ptxas (assembles PTX for a GPU), no GPU needed.

Looked for in this order, the first found wins:

1. a CUDA toolkit on the machine: libNVVM and libdevice where numba 0.68 looks
   (numba/cuda/cuda_paths.py: a conda environment, CUDA_HOME or CUDA_PATH,
   /usr/local/cuda, then the system loader's search for libnvvm.so); ptxas on PATH,
   then under CUDA_HOME, CUDA_PATH or /usr/local/cuda;
2. NVIDIA's wheels on the package index, which the dev lock installs
   (`cuda-toolkit[nvcc]`: nvidia-nvvm and nvidia-cuda-nvcc, laid out under the
   `nvidia` namespace package as nvidia/cu13/lib/libnvvm.so.4,
   nvidia/cu13/nvvm/libdevice/libdevice.10.bc and nvidia/cu13/bin/ptxas; CUDA 12's
   nvidia-cuda-nvcc-cu12 as nvidia/cuda_nvcc/nvvm/lib64 and bin).

numba 0.68 knows no wheel layout, so where the machine has no libNVVM,
`use_wheel_nvvm` hands numba the wheel's files (its cached path decision) before
libNVVM is loaded. Why: the compile gate (`python -m pipeline cuda-check`, the
gpu_compile tests) then runs on any machine with the dev lock installed.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
from functools import cache
from pathlib import Path

# Each tool's files under the `nvidia` package's folder, the CUDA 13 wheels' first
WHEEL_FILES = {
    "nvvm": ("cu13/lib/libnvvm.so*", "cuda_nvcc/nvvm/lib64/libnvvm.so*"),
    "libdevice": ("cu13/nvvm/libdevice/libdevice*.bc", "cuda_nvcc/nvvm/libdevice/libdevice*.bc"),
    "cudart": ("cu13/lib/libcudart.so.*", "cuda_runtime/lib/libcudart.so.*"),
    "ptxas": ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas"),
}


def wheel_folders() -> list[Path]:
    """The folders of the `nvidia` namespace package (the wheels' common root)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def wheel_tool(which: str) -> Path | None:
    """A wheel's 'nvvm' (libNVVM), 'libdevice' (its .bc file), 'cudart' (the CUDA
    runtime, whose version numba reads for the capabilities it compiles for) or
    'ptxas', or None."""
    for root in wheel_folders():
        for pattern in WHEEL_FILES[which]:
            found = sorted(p for p in root.glob(pattern) if p.is_file())
            if found and (which != "ptxas" or os.access(found[-1], os.X_OK)):
                return found[-1]
    return None


def system_ptxas() -> str | None:
    """A toolkit's ptxas: on PATH, else under CUDA_HOME, CUDA_PATH or /usr/local/cuda."""
    found = shutil.which("ptxas")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "ptxas").is_file():
            return str(Path(root) / "bin" / "ptxas")
    return None


def ptxas() -> str | None:
    """CUDA's assembler: the machine's (`system_ptxas`), else a wheel's."""
    found = system_ptxas()
    if found:
        return found
    wheel = wheel_tool("ptxas")
    return str(wheel) if wheel else None


def system_nvvm() -> bool:
    """Whether numba's own search finds a libNVVM and a CUDA runtime that load, and a
    libdevice."""
    from numba.cuda.cudadrv import libs

    libdevice = libs.get_libdevice()
    if not libdevice or not Path(libdevice).is_file():
        return False
    try:
        ctypes.CDLL(libs.get_cudalib("nvvm"))
        ctypes.CDLL(libs.get_cudalib("cudart"))
    except OSError:
        return False
    return True


@cache
def use_wheel_nvvm() -> str:
    """Where numba's libNVVM comes from: 'system' where numba finds one (with
    libdevice and the CUDA runtime: `system_nvvm`), else 'wheel' after pointing numba
    at a wheel's libNVVM, libdevice and runtime, else 'none'. Once a process, before
    numba first loads libNVVM (its NVVM object keeps the library it opened)."""
    if system_nvvm():
        return "system"
    nvvm, libdevice, cudart = (wheel_tool(t) for t in ("nvvm", "libdevice", "cudart"))
    if nvvm is None or libdevice is None or cudart is None:
        return "none"
    from numba.cuda import cuda_paths

    paths = cuda_paths.get_cuda_paths()  # numba's decision, cached on the function
    found = cuda_paths._env_path_tuple
    paths["nvvm"] = found("NVIDIA wheel", str(nvvm))
    paths["libdevice"] = found("NVIDIA wheel", str(libdevice))
    paths["cudalib_dir"] = found("NVIDIA wheel", str(cudart.parent))
    return "wheel"
