#!/usr/bin/env bash
# Regenerate the locks from pyproject.toml for Linux x86_64 and CPython 3.11: every
# package pinned, with sha256 hashes.
#
#   requirements.lock      the main job: the lesson, DVC, MLflow, Hydra, the explainers
#   requirements-dev.lock  the same pins plus every extra: the test tools, the sweep
#                          launchers (joblib, Ray, SLURM), the tracking server's
#                          psycopg2 and the browser driver (what the tests use)
#
# torch itself is left out: requirements-torch.txt pins its version with the hash
# of every build (CUDA from PyPI, or the CPU build), so that each user installs the
# build that fits, and requirements-torch-cuda.lock the CUDA build's own packages;
# scripts/lock_torch.sh writes both, last. Its dependencies are resolved from the
# CPU build's metadata, so the locks carry no CUDA-only package.
#
#   pip install uv && bash scripts/lock.sh            # keep pins, add what is new
#   bash scripts/lock.sh --upgrade                    # move every pin to the newest
#
# Where the CPU build of torch comes from: TORCH_CPU_SOURCE (uv options), by
# default the PyTorch CPU index; a machine with a local wheel directory can use
# TORCH_CPU_SOURCE="--find-links /path/to/wheels".
set -euo pipefail
cd "$(dirname "$0")/.."

torch=$(sed -n 's/^torch==\([^ ]*\).*/\1/p' requirements-torch.txt)
source_opts=${TORCH_CPU_SOURCE:-"--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match"}
constraint=$(mktemp)
trap 'rm -f "$constraint"' EXIT
echo "torch==${torch}+cpu" >"$constraint"

# shellcheck disable=SC2086  # source_opts holds several options
uv pip compile pyproject.toml --all-extras \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-emit-package torch \
    --constraint "$constraint" $source_opts \
    --custom-compile-command "bash scripts/lock.sh" \
    --output-file requirements-dev.lock "$@"
# The core with the dev lock's pins: both installs run the same versions.
# shellcheck disable=SC2086
uv pip compile pyproject.toml \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-emit-package torch \
    --constraint "$constraint" --constraint requirements-dev.lock $source_opts \
    --custom-compile-command "bash scripts/lock.sh" \
    --output-file requirements.lock
# torch's own hashed files, from the pins just written.
bash scripts/lock_torch.sh
