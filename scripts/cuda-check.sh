#!/usr/bin/env bash
# Builds pipeprof against the CUDA LibTorch of the machine's PyTorch, runs the gpu-labelled
# tests and sweeps the training-step matrix on the GPU. Meant for a bare GPU machine: run
# scripts/device-deps.sh first where Debian's packages are, and bring .deps along. Logs go to
# $OUT (or out/cuda) when set.
#   scripts/cuda-check.sh [build] [test] [all-tests] [probe] [sweeps]
# PIPEPROF_CUDA_TARGETS names the targets to build (default: all); PIPEPROF_CTEST_TIMEOUT bounds
# each test (default 600 s). The sweeps stage runs bench/training_step_sweeps.py on
# cuda:0,cuda:0 one cell (model/optimizer/precision of PIPEPROF_SWEEP_CELLS) at a time, each
# within PIPEPROF_SWEEP_CELL_TIMEOUT seconds, and starts no cell once the script has run
# PIPEPROF_SWEEP_DEADLINE seconds; PIPEPROF_SWEEP_FLAGS replaces its sweep flags (fewer shapes:
# add --schedules 1f1b --checkpoint except_last); each report keeps its measured and its 20 best
# predicted candidates (a whole one is 20-30 MiB). The probe stage times what a sweep's
# calibration repeats on CUDA: one traced run, then 3 rounds of 2 reference pipelines.
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
  local targets
  read -r -a targets <<<"${PIPEPROF_CUDA_TARGETS:-all}"
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" -- -k 0 > "$logs/build.log" 2>&1
  local rc=$?
  grep -E "error|FAILED" "$logs/build.log" | head -40
  return $rc
}

run_tests() {
  CTEST_OUTPUT_ON_FAILURE=1 ctest --test-dir "$build_dir" -L "$1" -j 4 --timeout "${PIPEPROF_CTEST_TIMEOUT:-600}" \
    > "$logs/ctest-$1.log" 2>&1
  local rc=$?
  tail -25 "$logs/ctest-$1.log"
  return $rc
}

default_cells="mlp/adamw/bf16 gpt/adamw/bf16 resnet/adamw/bf16 unet/adamw/bf16
  mlp/adamw/fp32 gpt/adamw/fp32 resnet/adamw/fp32 unet/adamw/fp32
  mlp/adamw/fp16 gpt/adamw/fp16 resnet/adamw/fp16 unet/adamw/fp16
  mlp/sgd/fp32 gpt/sgd/fp32 resnet/sgd/fp32 unet/sgd/fp32
  mlp/sgd/bf16 gpt/sgd/bf16 resnet/sgd/bf16 unet/sgd/bf16"

sweeps() {
  local flags=${PIPEPROF_SWEEP_FLAGS:-"--measure top:6 --steps 8 --rounds 3 --warmup 2 --profile-budget 4 --calibration-budget 2"}
  local deadline=${PIPEPROF_SWEEP_DEADLINE:-100000} cell model optimizer precision
  for cell in ${PIPEPROF_SWEEP_CELLS:-$default_cells}; do
    if (( SECONDS > deadline )); then
      echo "deadline (${deadline} s): $cell and the cells after it not swept"
      break
    fi
    IFS=/ read -r model optimizer precision <<<"$cell"
    local started=$SECONDS
    timeout -k 5 "${PIPEPROF_SWEEP_CELL_TIMEOUT:-300}" \
      "$python" bench/training_step_sweeps.py --pipeprof "$build_dir/cli/pipeprof" --devices cuda:0,cuda:0 \
      --out "$logs/sweeps" --models "$model" --optimizers "$optimizer" --precisions "$precision" \
      --sweep-flags "$flags" >"$logs/sweeps-${model/:/-}-$optimizer-$precision.log" 2>&1
    echo "$cell: rc $?, $((SECONDS - started)) s"
    "$python" - "$logs/sweeps/${model/:/-}-$optimizer-$precision/report.json" <<'PY'
import json, os, sys
path = sys.argv[1]
if os.path.exists(path):
    report = json.load(open(path))
    report["candidates"] = [c for c in report["candidates"]
                            if c.get("status") == "measured" or (c.get("predicted_rank") or 1e9) <= 20]
    json.dump(report, open(path, "w"))
PY
  done
  "$python" bench/training_step_sweeps.py --report-only --out "$logs/sweeps" --devices cuda:0,cuda:0 \
    --models mlp gpt resnet unet --optimizers adamw sgd --precisions bf16 fp16 fp32
}

probe() {
  local pipeprof=$build_dir/cli/pipeprof started
  started=$SECONDS
  timeout -k 5 120 "$pipeprof" run --model mlp --devices cuda:0,cuda:0 --chunks 4 --warmup 2 --steps 4 \
    --trace "$logs/probe-run.json" >"$logs/probe-run.log" 2>&1
  echo "a traced run (its process, CUDA's start included): rc $?, $((SECONDS - started)) s"
  started=$SECONDS
  timeout -k 5 240 "$pipeprof" calibrate --model mlp --devices cuda:0,cuda:0 --chunks 2,4 --budget 600 --rounds 3 \
    -o "$logs/probe-calibration.json" >"$logs/probe-calibrate.log" 2>&1
  echo "calibrate, 3 rounds of 2 traced references: rc $?, $((SECONDS - started)) s"
  grep -h "round\|profiling" "$logs/probe-calibrate.log"
}

status=0
for stage in "${stages[@]}"; do
  echo "== $stage (at $SECONDS s)"
  case $stage in
    build) build || status=1 ;;  # what did build is still tested and swept
    test) run_tests gpu || status=1 ;;
    all-tests) run_tests '.*' || status=1 ;;
    probe) probe || status=1 ;;
    sweeps) sweeps || status=1 ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
exit $status
