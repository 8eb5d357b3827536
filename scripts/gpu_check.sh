#!/usr/bin/env bash
# The GPU tier and the GPU benchmark, from a fresh checkout on a machine with CUDA:
#
#   bash scripts/gpu_check.sh 2>&1 | tee gpu-check.log
#
# Installs into .venv-gpu. Where python3 already has a CUDA build of torch (a GPU
# image), the venv sees it and installs the rest of the lock beside it; elsewhere
# it installs requirements-torch.txt, PyPI's CUDA build. Then the tests marked
# `gpu` (tests/test_gpu.py: the golden numbers on cuda, a 1000-seed study and
# every model against the CPU) and benchmarks/bench_gpu.py. CI never runs this:
# CI has no GPU. docs/speed.md keeps the last output.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

if python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    python3 -m venv --system-site-packages .venv-gpu
    . .venv-gpu/bin/activate
else
    python3 -m venv .venv-gpu
    . .venv-gpu/bin/activate
    python -m pip install -q -r requirements-torch.txt
fi
# The lock without torch's own pins: the machine's CUDA torch stays.
python -m pip install -q --require-hashes --no-deps -r requirements-dev.lock
python -m pip install -q --no-deps --no-build-isolation -e .
python -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
echo "install: $((SECONDS - start)) s"

python -m pytest -m gpu -p no:cacheprovider -rA tests/test_gpu.py
python benchmarks/bench_gpu.py
echo "total: $((SECONDS - start)) s"
