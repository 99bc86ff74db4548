#!/usr/bin/env bash
# Bootstraps, builds (Release) and runs the main job: a sweep of the default model on two CPU
# devices, printing the comparison and writing out/report.json with its traces in out/traces.
# Extra arguments go to `pipeprof sweep` (e.g. --resume after an interruption).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh

build_dir=${PIPEPROF_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target pipeprof

mkdir -p out
# The default model (mlp: 8 Linear layers of width 512 with ReLUs, 15 layers), batch 128:
# every balance of 2 partitions x chunks 1,2,4,8 x 3 checkpoint modes is predicted (168
# candidates); 12 are measured (120 timed steps each, in 8 interleaved rounds of 3 warm-up +
# 15 steps: on a shared machine more steps and rounds average out more of its slow spells,
# and the four best candidates lie within a few percent of each other, see
# docs/performance.md). About a minute of sweep on an idle 2-core machine (profiling and
# calibration included), plus the build.
"$build_dir/cli/pipeprof" sweep --model mlp --devices cpu,cpu --batch 128 \
  --chunks 1,2,4,8 --checkpoint always,except_last,never --measure top:12 \
  --warmup 3 --steps 120 --rounds 8 -o out/report.json --traces-dir out/traces "$@"
