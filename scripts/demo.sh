#!/usr/bin/env bash
# Bootstraps, builds (Release) and runs the main job: a sweep of the default model on two CPU
# devices, printing the comparison and writing out/report.json with its traces.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh

build_dir=${PIPEPROF_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target pipeprof

mkdir -p out
"$build_dir/cli/pipeprof" sweep --model mlp --devices cpu,cpu --batch 64 \
  --chunks 1,2,4,8 --checkpoint always,except_last,never --measure top:12 \
  -o out/report.json --traces-dir out/traces "$@"
