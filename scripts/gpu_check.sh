#!/usr/bin/env bash
# The GPU tier, from a checkout on a machine with CUDA (docs/testing.md):
#
#   bash scripts/gpu_check.sh 2>&1 | tee gpu-check.log
#
# Installs into .venv-gpu, every package checked against its hash in the locks but
# one. Where python3 already has a CUDA build of torch (a GPU image), that torch
# stays on purpose (no hash list can name an image's own build): the script says so
# and prints where it comes from; the venv reads python3's site-packages after its
# own, and installs the whole lock (requirements.lock, the main job's pins) into
# itself, hashes checked, even what the machine has at the lock's version
# (--ignore-installed: "already satisfied" would check no hash). Elsewhere it
# installs PyPI's CUDA build (requirements-torch.txt and requirements-torch-cuda.lock,
# hashes checked) first. Then:
# `python -m pipeline cuda-check` (every kind's fused kernel compiled for cc 8.0 and
# 9.0, registers and spills; where one does not compile, or no libNVVM is found, the
# script goes on and exits 1 at its end), the
# tests marked `gpu` (tests/models/test_gpu.py: the golden numbers
# on cuda, a 1000-seed study, every model, every stage's bytes against the CPU),
# `dvc repro --force` with train.device auto and `git status` (REPRO=0 skips it),
# and benchmarks/bench_gpu.py (BENCH=0 skips it; BENCH_ARGS passes it options, e.g.
# BENCH_ARGS="--sizes 1000 100000 --no-stages"). CI never runs this: it has no GPU.
#
# Offline (a cluster node that reaches no package index), from a wheel folder made
# beforehand on a machine that has one, for the node's Python:
#
#   pip download --no-deps --require-hashes -r requirements.lock -d wheels \
#       --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 ...
#   WHEELS=wheels bash scripts/gpu_check.sh
#
# (plus requirements-torch.txt and requirements-torch-cuda.lock where the node has no
# CUDA torch): a wheel there whose hash the locks do not list is refused.
# KEEP_INSTALLED=1 also keeps every package the machine's python has, at any version
# (those at another version than the lock's named on stderr, and those at the lock's
# version too, with where they are: neither is hash-checked), so the folder needs
# only what it lacks.
# The outputs' bytes are promised with the lock's versions only (docs/pipeline.md).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
source=()
[ -n "${WHEELS:-}" ] && source=(--no-index --find-links "$WHEELS")

if python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    # No pip of its own (a GPU image's python may lack ensurepip): the machine's, read
    # through the same path, installs into the venv.
    python3 -m venv --clear --without-pip .venv-gpu
    machine=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    venv=$(.venv-gpu/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$machine" >"$venv/machine-site-packages.pth"  # after the venv's own packages
    . .venv-gpu/bin/activate
    python -c 'import sys, torch; print(f"keeping the machine'"'"'s torch {torch.__version__} (cuda {torch.version.cuda}) from {torch.__path__[0]} on purpose: the GPU image'"'"'s own build, not hash-checked", file=sys.stderr)'
    fresh=(--ignore-installed)
else
    python3 -m venv --clear .venv-gpu
    . .venv-gpu/bin/activate
    python -m pip install -q "${source[@]}" --require-hashes --no-deps \
        -r requirements-torch.txt -r requirements-torch-cuda.lock
    fresh=()
fi
requirements=requirements.lock
if [ -n "${KEEP_INSTALLED:-}" ]; then
    requirements=.venv-gpu/requirements-missing.txt
    python scripts/lock_subset.py requirements.lock --missing >"$requirements"
fi
# No build isolation: an sdist in the lock (antlr4-python3-runtime) builds with the
# setuptools at hand, which an offline node cannot fetch into an isolated build.
[ -s "$requirements" ] && python -m pip install -q "${source[@]}" --require-hashes --no-deps \
    "${fresh[@]}" --no-build-isolation -r "$requirements"
if [ -z "${KEEP_INSTALLED:-}" ] || ! python -c 'import pytest' 2>/dev/null; then
    python scripts/lock_subset.py requirements-dev.lock --only pytest pluggy iniconfig \
        >.venv-gpu/requirements-pytest.txt
    python -m pip install -q "${source[@]}" --require-hashes --no-deps "${fresh[@]}" \
        -r .venv-gpu/requirements-pytest.txt
fi
export PYTHONPATH=$PWD  # the checkout's package, no build step
python -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
echo "install: $((SECONDS - start)) s"
# The fused training kernels (numba.cuda) need the CUDA toolkit's libNVVM: without
# it cuda-check says so and exits non-zero, and training would take torch's ops.
python -c 'from pipeline.models import cuda_launch; print("numba sees the GPU:", "yes" if cuda_launch.numba_sees_gpu() else "no (torch ops)")'
tick=$SECONDS
gate=0
python -m pipeline cuda-check || gate=$?
echo "cuda-check: $((SECONDS - tick)) s$([ "$gate" = 0 ] || echo ", FAILED (exit $gate)")"

# One process (no xdist): the GPU is one device.
python -m pytest -o addopts="" -p no:cacheprovider -rA -q tests/models/test_gpu.py
echo "tier: $((SECONDS - start)) s"

if [ "${REPRO:-1}" != 0 ]; then
    tick=$SECONDS
    dvc repro --force
    echo "dvc repro --force (train.device $(python -c 'import yaml; print(yaml.safe_load(open("params.yaml"))["train"]["device"])')): $((SECONDS - tick)) s"
    git status --porcelain --untracked-files=no
    git diff --quiet && echo "git status: clean (every committed output byte for byte)"
fi
[ "${BENCH:-1}" != 0 ] && python benchmarks/bench_gpu.py ${BENCH_ARGS:-}
echo "total: $((SECONDS - start)) s"
exit "$gate"
