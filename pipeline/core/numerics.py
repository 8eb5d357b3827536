"""The numeric environment: kernel paths pinned, so that every x86-64 CPU computes
the same bits.

Torch, MKL and numba each pick their code for the CPU they run on: AVX-512 kernels
on one machine and AVX2 on another sum in another order and take another path
through a vectorised exp. A run of gradient descent can amplify one such bit into
another trained model (unpinned, a seed of the grid's rise x window2 cell trains to
another model on another CPU: docs/pipeline.md, "Bytes on any machine"). So every
process of the pipeline pins,
before torch or numba is imported, the one path that every x86-64-v3 CPU (AVX2
and FMA: Intel since 2013, AMD since 2015) can take:

- torch's own kernels at ATEN_CPU_CAPABILITY=avx2;
- MKL's BLAS in its conditional numerical reproducibility mode (MKL_CBWR);
- numba compiling for a generic x86-64 (NUMBA_CPU_NAME), without host extensions.

These override the caller's environment: a setting that changed the bytes would
break the promise (docs/pipeline.md, "Bytes on any machine"). `PIN_OFF` lifts
the pin, to measure what the written precision and the tie rule hold on their
own (the same page); the provenance records then name the paths that ran.
"""

from __future__ import annotations

import os
import sys

PINNED = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "NUMBA_CPU_NAME": "generic",
}
PIN_OFF = "PIPELINE_NATIVE_KERNELS"  # =1: each library picks for this CPU (measurement only)


def pin() -> None:
    """Set the pinned kernel paths; must run before torch and numba are imported."""
    if os.environ.get(PIN_OFF) == "1":
        return
    os.environ.update(PINNED)


def environment() -> dict[str, str]:
    """What produced a stage's bytes, for its provenance record: the torch version and
    the kernel paths in force. Machine-specific facts that do not change the bytes
    (the CPU model, the thread count) stay out: the record is committed."""
    record = {name.lower(): os.environ.get(name, "") for name in PINNED}
    from importlib import metadata  # not at start-up: pipeline/__init__ imports this module

    # The release, installed whether or not the stage loads it; not the build tag
    # (+cpu, +cu130): a CPU or CUDA build of one release gives the same bytes.
    record["torch"] = metadata.version("torch").split("+")[0]
    torch = sys.modules.get("torch")
    if torch is not None:  # the kernel level torch actually took (lower where a CPU lacks AVX2)
        record["aten_cpu_capability"] = torch.backends.cpu.get_cpu_capability().lower()
    return dict(sorted(record.items()))
