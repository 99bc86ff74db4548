#!/usr/bin/env bash
# Builds the file readers' libFuzzer targets (clang, ASan + UBSan) and runs each for a bounded
# time from a seed corpus of the JSON files in traces/ and tests/. Fails on any crash, hang
# (over 5 s on one input), leak, sanitizer report or exception other than the reader's
# FormatError; the input that did it is kept under $build_dir/artifacts/.
#
# Time: 6 readers x PIPEPROF_FUZZ_SECONDS (default 20) = 120 s of fuzzing, plus the build
# (about 1 minute cold on 2 cores, seconds with ccache). Run one reader longer with e.g.
#   build-fuzz/fuzz/fuzz_report_reader -max_total_time=600 build-fuzz/corpus/report
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${PIPEPROF_FUZZ_BUILD_DIR:-build-fuzz}
seconds=${PIPEPROF_FUZZ_SECONDS:-20}
readers=(profile cluster calibration report trace schedule_csv)

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DPIPEPROF_FUZZ=ON -DPIPEPROF_SANITIZE=address,undefined -DPIPEPROF_WERROR=ON \
  -DPIPEPROF_WITH_TORCH=OFF -DPIPEPROF_WITH_GUI=OFF -DPIPEPROF_WITH_CUPTI=OFF \
  -DPIPEPROF_BUILD_TESTS=OFF -DPIPEPROF_BUILD_BENCHMARKS=OFF >/dev/null
targets=(fuzz_seed_corpus)
for reader in "${readers[@]}"; do targets+=("fuzz_${reader}_reader"); done
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

corpus="$build_dir/corpus"
artifacts="$build_dir/artifacts"
rm -rf "$corpus"
mkdir -p "$artifacts"
find traces tests -name '*.json' -print0 | xargs -0 "$build_dir/fuzz/fuzz_seed_corpus" "$corpus"
mkdir -p "$corpus/schedule_csv"
cp tests/fixtures/pytorch-2.6-schedules/*.csv "$corpus/schedule_csv/"

for reader in "${readers[@]}"; do
  mkdir -p "$corpus/$reader"
  log="$build_dir/fuzz_${reader}.log"
  echo "fuzz: $reader reader for ${seconds} s ($(ls "$corpus/$reader" | wc -l) seeds)"
  if ! "$build_dir/fuzz/fuzz_${reader}_reader" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
      -max_len=65536 -artifact_prefix="$artifacts/${reader}-" "$corpus/$reader" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: the $reader reader failed; the input is in $artifacts/" >&2
    exit 1
  fi
  grep -E "^Done|#[0-9]+ *DONE" "$log" | tail -n 1 || true
done
