#!/usr/bin/env bash
# torch's two hashed files, for the version that requirements-torch.txt pins
# (scripts/lock.sh runs this after the locks; run it alone after moving torch):
#
#   requirements-torch.txt        torch==X with the sha256 of every build an install
#                                 may pick: each of PyPI's wheels (on Linux x86_64 the
#                                 CUDA build) and each of the CPU build's (X+cpu)
#   requirements-torch-cuda.lock  the packages PyPI's CUDA build needs beyond the main
#                                 lock (nvidia-*, cuda-*, triton), pinned and hashed
#
# Both install with `--require-hashes --no-deps`: a wheel whose hash is not listed
# (a fake torch in an offline folder, say) is refused, whatever its version says.
# The CPU build's hashes come from the PyTorch CPU index, or with
# TORCH_CPU_WHEELS=/path/to/wheels from the CPU wheels in that folder (sha256sum of
# each torch-X+cpu-*.whl there: uv hashes no local wheel).
set -euo pipefail
cd "$(dirname "$0")/.."

torch=$(sed -n 's/^torch==\([^ ]*\).*/\1/p' requirements-torch.txt)
platform=(--python-version 3.11 --python-platform x86_64-manylinux_2_28)

hashes() {  # the --hash lines of every file of one pinned version
    # shellcheck disable=SC2086  # $2 holds several options
    echo "torch==$1" | uv pip compile - --no-deps --generate-hashes --no-header \
        --no-annotate "${platform[@]}" $2 | grep -o -- '--hash=sha256:[0-9a-f]*'
}
pypi=$(hashes "$torch" "--index-url https://pypi.org/simple")
if [ -n "${TORCH_CPU_WHEELS:-}" ]; then
    cpu=$(cd "$TORCH_CPU_WHEELS" && sha256sum "torch-${torch}+cpu-"*.whl | sed 's/ .*//; s/^/--hash=sha256:/')
else
    cpu=$(hashes "$torch+cpu" "--index-url https://download.pytorch.org/whl/cpu")
fi
{
    echo "# torch, pinned with the hash of every build an install may pick: PyPI's"
    echo "# wheels (on Linux x86_64 the CUDA build, whose own packages are in"
    echo "# requirements-torch-cuda.lock) and the CPU build's (${torch}+cpu). Install with"
    echo "# --require-hashes --no-deps (README). Made by bash scripts/lock_torch.sh."
    echo "torch==${torch} \\"
    sort -u <<<"$pypi"$'\n'"$cpu" | sed 's/^/    /; $!s/$/ \\/'
} >requirements-torch.txt.new
mv requirements-torch.txt.new requirements-torch.txt

# The CUDA build's own packages: what PyPI's torch needs that the main lock lacks.
skip=(--no-emit-package torch)
while read -r name; do skip+=(--no-emit-package "$name"); done \
    < <(sed -n 's/^\([A-Za-z0-9][A-Za-z0-9._-]*\)==.*/\1/p' requirements.lock)
echo "torch==${torch}" | uv pip compile - --generate-hashes "${platform[@]}" \
    --index-url https://pypi.org/simple --constraint requirements-dev.lock "${skip[@]}" \
    --custom-compile-command "bash scripts/lock_torch.sh" \
    --output-file requirements-torch-cuda.lock
