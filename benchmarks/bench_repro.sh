#!/usr/bin/env bash
# Wall time of `dvc repro` in a fresh clone of this repository: cold (data,
# models and the study are rebuilt), --force, and a no-op (issue 10's target:
# at most 3 s on the project's 2-core machines); then the README's experiment,
# `dvc exp run -S train.lr=0.3` (issue 31's target: at most 60 s). Run from the project root with
# the virtualenv active: bash benchmarks/bench_repro.sh
set -euo pipefail
clone="$(mktemp -d)/project"
trap 'rm -rf "$(dirname "$clone")"' EXIT
git clone -q "$PWD" "$clone"
cd "$clone"
timed() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    printf '%-28s %6.1f s\n' "$*" "$(echo "$end - $start" | bc)"
}
timed dvc repro
timed dvc repro --force
timed dvc repro
timed dvc exp run -S train.lr=0.3
