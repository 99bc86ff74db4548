#!/usr/bin/env bash
# Bootstraps, builds everything (warnings are errors) and runs the whole test suite with ctest;
# compiles the LibTorch code against LibTorch 2.6, CPU and CUDA (scripts/torch2-check.sh;
# PIPEPROF_SKIP_TORCH2=1 skips it); builds the torch-free targets with ASan/UBSan and runs their
# tests; then fuzzes every file reader for a bounded time (scripts/fuzz.sh: 5 x 20 s by default).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh

jobs=$(nproc)
build_dir=${PIPEPROF_BUILD_DIR:-build}
sanitize_dir=${PIPEPROF_SANITIZE_BUILD_DIR:-build-sanitize}
export CTEST_OUTPUT_ON_FAILURE=1
export QT_QPA_PLATFORM=offscreen

echo "== build ($build_dir, Release)"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPEPROF_WERROR=ON
cmake --build "$build_dir" -j "$jobs"

echo "== LibTorch 2.6 compile check (scripts/torch2-check.sh: build-torch2-cpu, build-torch2-cuda)"
if [[ "${PIPEPROF_SKIP_TORCH2:-0}" == 1 ]]; then
  echo "skipped (PIPEPROF_SKIP_TORCH2=1)"
else
  ./scripts/torch2-check.sh
fi

echo "== build ($sanitize_dir, address,undefined; torch-free targets)"
cmake -S . -B "$sanitize_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEPROF_WERROR=ON \
  -DPIPEPROF_WITH_TORCH=OFF -DPIPEPROF_BUILD_BENCHMARKS=OFF -DPIPEPROF_SANITIZE=address,undefined
cmake --build "$sanitize_dir" -j "$jobs"

echo "== tests under sanitizers ($sanitize_dir)"
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --test-dir "$sanitize_dir" -j "$jobs" --timeout 600

echo "== tests ($build_dir)"
ctest --test-dir "$build_dir" -j "$jobs" --timeout 1200

echo "== fuzzing the file readers (scripts/fuzz.sh, ${PIPEPROF_FUZZ_SECONDS:-20} s each)"
./scripts/fuzz.sh
