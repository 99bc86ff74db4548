#!/usr/bin/env bash
# Builds pipeprof against the CUDA LibTorch of the machine's PyTorch and runs the gpu-labelled
# tests. Meant for a bare GPU machine: run scripts/device-deps.sh first where Debian's packages
# are, and bring .deps along. Logs go to $OUT (or out/cuda) when set.
#   scripts/cuda-check.sh [build] [test] [all-tests]
set -uo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
logs=${OUT:-out/cuda}
build_dir=${PIPEPROF_CUDA_BUILD_DIR:-build-cuda}
jobs=$(nproc)
mkdir -p "$logs"
stages=("$@")
(( ${#stages[@]} )) || stages=(build test)

torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
echo "torch $("$python" -c 'import torch; print(torch.__version__, torch.version.cuda, "cxx11abi", torch.compiled_with_cxx11_abi())')"

build() {
  if [[ ! -d .deps/gtest ]]; then
    cmake -S .deps/googletest-src -B .deps/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$PWD/.deps/gtest" >/dev/null &&
      cmake --build .deps/gtest-build -j "$jobs" >/dev/null &&
      cmake --install .deps/gtest-build >/dev/null || return 1
  fi
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$PWD/.deps/prefix;$PWD/.deps/gtest" \
    -DPIPEPROF_WITH_CUPTI=ON -DPIPEPROF_WITH_GUI=OFF -DPIPEPROF_BUILD_BENCHMARKS=OFF \
    2>&1 | tee "$logs/configure.log" | tail -5 || return 1
  cmake --build "$build_dir" -j "$jobs" -- -k 0 > "$logs/build.log" 2>&1
  local rc=$?
  grep -E "error|FAILED" "$logs/build.log" | head -40
  return $rc
}

run_tests() {
  CTEST_OUTPUT_ON_FAILURE=1 ctest --test-dir "$build_dir" -L "$1" -j 4 --timeout 600 \
    > "$logs/ctest-$1.log" 2>&1
  local rc=$?
  tail -25 "$logs/ctest-$1.log"
  return $rc
}

status=0
for stage in "${stages[@]}"; do
  echo "== $stage"
  case $stage in
    build) build || { status=1; break; } ;;
    test) run_tests gpu || status=1 ;;
    all-tests) run_tests '.*' || status=1 ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
exit $status
