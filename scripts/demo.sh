#!/usr/bin/env bash
# Bootstraps, builds (Release) and runs the main job: a sweep of the default model on two CPU
# devices, printing the comparison and writing out/report.json with its traces in out/traces.
# Builds pipeprof-gui too when CMake found Qt, and prints the command that opens the report in it.
# Extra arguments go to `pipeprof sweep` (e.g. --resume after an interruption).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh

build_dir=${PIPEPROF_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(pipeprof)
# The GUI target exists when CMake found Qt6 Widgets and Charts (PIPEPROF_WITH_GUI=AUTO).
if cmake --build "$build_dir" --target help | grep -q '^pipeprof-gui:'; then
  targets+=(pipeprof-gui)
fi
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

mkdir -p out
# The default model (mlp: 8 Linear layers of width 512 with ReLUs, 15 layers), batch 128, on
# 2 devices: every schedule is predicted -- gpipe, 1f1b and zb1p over every balance of 2
# stages (14) and interleaved, interleaved-zb and zbv with 2 stages per device over every
# balance of 4 stages (364), x chunks 1,2,4,8 (interleaved needs an even count, so its chunks 1
# is left out) x 3 checkpoint modes: 3 x 168 + 3276 + 2 x 4368 candidates; 12 are measured, spread over
# schedules, balances, chunks and
# modes (120 timed steps each, in 8 interleaved rounds of 3 warm-up + 15 steps: on a shared
# machine more steps and rounds average out more of its slow spells, and the best candidates
# lie within a few percent of each other, see docs/notes/accuracy-history.md). A minute or two of sweep
# on an idle 2-core machine (profiling and calibration included), plus the build.
"$build_dir/cli/pipeprof" sweep --model mlp --devices cpu,cpu --batch 128 \
  --schedules gpipe,1f1b,interleaved,zb1p,interleaved-zb,zbv --stages-per-device 1,2 \
  --chunks 1,2,4,8 --checkpoint always,except_last,never --measure top:12 \
  --warmup 3 --steps 120 --rounds 8 -o out/report.json --traces-dir out/traces "$@"

echo
if [[ " ${targets[*]} " == *" pipeprof-gui "* ]]; then
  echo "demo: open the report in the GUI: $build_dir/gui/pipeprof-gui out/report.json"
else
  echo "demo: pipeprof-gui was not built: CMake found no Qt6 Widgets and Charts (./scripts/bootstrap.sh" \
    "installs them; then rerun this script); the report is out/report.json (pipeprof compare out/report.json)"
fi
