#!/usr/bin/env bash
# Bootstraps, builds everything (Release, warnings are errors) and runs the whole test suite:
#   0. rooms                     scripts/check_rooms.py: every include of the runtime points down
#                                its rooms (runtime/rooms.txt); a second, before any compiling
#   1. build (Release)           build/, every target
#   2. tests (Release)           ctest, every label; the longest tests start first
#   3. LibTorch 2.6, CPU         scripts/torch2-check.sh: every LibTorch object against 2.6
#   4. LibTorch 2.6, CUDA        only the units the CPU configuration does not compile
#                                (CUDA backends, CUPTI), and the NCCL probe
#   5. sanitizer build, tests    build-sanitize/: the torch-free targets but the GUI, with ASan +
#                                UBSan
#   6. fuzzing                   scripts/fuzz.sh: every file reader, 6 x 20 s
# and prints each stage's wall time at the end. About 43 minutes on this project's slower 2-core
# machines with an empty ccache (25 on the faster ones); see docs/performance.md, "The test
# command's time".
#   scripts/test.sh            everything
#   scripts/test.sh --quick    stages 0, 1 and 2 for the tests labelled unit and torch only (the
#                              target quick-tests): the edit-test loop -- no CLI, GUI, benchmarks,
#                              e2e, dist or gui tests, LibTorch 2.6, sanitizer or fuzzing stage
# Environment: PIPEPROF_SKIP_TORCH2=1 skips stages 3-4; PIPEPROF_BUILD_DIR,
# PIPEPROF_SANITIZE_BUILD_DIR; PIPEPROF_FUZZ_SECONDS (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h | --help) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg' (--quick, or none for the whole suite)" >&2; exit 2 ;;
  esac
done

jobs=$(nproc)
build_dir=${PIPEPROF_BUILD_DIR:-build}
sanitize_dir=${PIPEPROF_SANITIZE_BUILD_DIR:-build-sanitize}
export CTEST_OUTPUT_ON_FAILURE=1
export QT_QPA_PLATFORM=offscreen

# stage <title> <command...>: runs one stage and records its wall time, the CPU time of the
# processes it ran (user + system: on an idle machine a build's wall time is about this over the
# cores) and the load average (1 minute) at its start and end; a failed stage ends the run with
# the table so far.
stage_names=()
stage_times=()
stage_cpu=()
stage_loads=()
run_start=$SECONDS
# children_cpu: sets cpu_now to the CPU seconds of every child process waited for so far (bash's
# times builtin, run in this shell: a subshell's count starts from zero).
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
children_cpu() {
  times > "$times_file"
  cpu_now=$(awk 'NR == 2 {
    total = 0
    for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); total += t[1] * 60 + t[2] }
    printf "%d", total + 0.5 }' "$times_file")
}
print_times() {
  local i
  echo "== stage times (wall and CPU seconds; load average at the stage's start -> end)"
  for i in "${!stage_names[@]}"; do
    printf '  %-40s %6s s wall %6s s CPU   load %s\n' "${stage_names[$i]}" "${stage_times[$i]}" \
      "${stage_cpu[$i]}" "${stage_loads[$i]}"
  done
  children_cpu
  printf '  %-40s %6s s wall %6s s CPU   %s cores\n' "total" "$((SECONDS - run_start))" "$cpu_now" "$jobs"
}
stage() {
  local title=$1 start=$SECONDS cpu load rc=0
  shift
  children_cpu
  cpu=$cpu_now
  load=$(cut -d ' ' -f 1 /proc/loadavg)
  echo "== $title"
  "$@" || rc=$?
  stage_names+=("$title")
  stage_times+=("$((SECONDS - start))")
  children_cpu
  stage_cpu+=("$((cpu_now - cpu))")
  stage_loads+=("$load -> $(cut -d ' ' -f 1 /proc/loadavg)")
  if ((rc != 0)); then
    echo "== $title failed (exit $rc)" >&2
    print_times
    exit "$rc"
  fi
}

# The stages' functions chain their commands with &&: set -e does not reach into them (stage
# calls them in an || list).
release_build() {
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIPEPROF_WERROR=ON &&
    cmake --build "$build_dir" -j "$jobs" "$@"
}

release_tests() {
  ctest --test-dir "$build_dir" -j "$jobs" --timeout 1200 "$@"
}

# -O1 -g1: half the compile time of RelWithDebInfo's -O2 -g; the sanitizers check as much (-O1
# is what ASan's documentation suggests), reports keep file:line, and the Release build checks
# the warnings that need optimization. The GUI is left out: its objects and tests were a quarter
# of this build's compile time, and its code reads files through core's readers, which the
# core tests here and the fuzzers run under the sanitizers.
sanitize_build() {
  cmake -S . -B "$sanitize_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPEPROF_WERROR=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DPIPEPROF_WITH_GUI=OFF \
    -DPIPEPROF_WITH_TORCH=OFF -DPIPEPROF_BUILD_BENCHMARKS=OFF -DPIPEPROF_SANITIZE=address,undefined &&
    cmake --build "$sanitize_dir" -j "$jobs"
}

sanitize_tests() {
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --test-dir "$sanitize_dir" -j "$jobs" --timeout 600
}

stage "bootstrap" ./scripts/bootstrap.sh
stage "rooms (scripts/check_rooms.py)" ./scripts/check_rooms.py
if ((quick)); then
  stage "build ($build_dir, Release, target quick-tests)" release_build --target quick-tests
  stage "tests ($build_dir, labels unit, torch)" release_tests -L '^(unit|torch)$'
  print_times
  echo "test.sh --quick skipped: the CLI, GUI and benchmark targets, the tests labelled e2e, dist," \
    "gui and gpu, the LibTorch 2.6 compile check (scripts/torch2-check.sh), the sanitizer build" \
    "and its tests ($sanitize_dir), and fuzzing (scripts/fuzz.sh); ./scripts/test.sh runs them all"
  exit 0
fi

stage "build ($build_dir, Release)" release_build

stage "tests ($build_dir)" release_tests
if [[ "${PIPEPROF_SKIP_TORCH2:-0}" == 1 ]]; then
  echo "== LibTorch 2.6 compile check skipped (PIPEPROF_SKIP_TORCH2=1)"
else
  stage "LibTorch 2.6, CPU (build-torch2-cpu)" env PIPEPROF_TORCH2_CONFIGS=cpu ./scripts/torch2-check.sh
  stage "LibTorch 2.6, CUDA (build-torch2-cuda)" env PIPEPROF_TORCH2_CONFIGS=cuda ./scripts/torch2-check.sh
fi
stage "sanitizer build ($sanitize_dir)" sanitize_build
stage "sanitizer tests ($sanitize_dir)" sanitize_tests
stage "fuzzing (scripts/fuzz.sh, ${PIPEPROF_FUZZ_SECONDS:-20} s a reader)" ./scripts/fuzz.sh
print_times
