#!/usr/bin/env bash
# One-device CPU runs with the sweep's default threads (max(1, cores / devices): every core) under
# two pipeprof builds, alternated, and with one thread under the second: what the thread policy
# of runtime/torch_environment.h costs or saves (docs/runtime.md, "Threads").
#   bench/one_device_threads.sh OLD_PIPEPROF NEW_PIPEPROF [ROUNDS]
# Prints "round | model flags | old|new|one | step time" lines. OPENBLAS_NUM_THREADS is unset, as a
# newcomer's shell has it.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,7s/^# \{0,1\}//p' "$0" >&2
  exit 2
fi
old=$1
new=$2
rounds=${3:-2}
unset OPENBLAS_NUM_THREADS
cases=("mlp --chunks 8 --batch 128 --balance 15 --steps 20"
       "mlp --chunks 1 --batch 128 --balance 15 --steps 20"
       "gpt --chunks 4 --balance auto --steps 8"
       "resnet --chunks 2 --balance auto --steps 6"
       "unet --chunks 4 --balance auto --steps 8")
for ((round = 1; round <= rounds; ++round)); do
  for flags in "${cases[@]}"; do
    for variant in "old|$old|" "new|$new|" "one|$new|--threads 1"; do
      IFS='|' read -r name binary extra <<<"$variant"
      # shellcheck disable=SC2086  # the flags are words
      step=$("$binary" run --model $flags --devices cpu --checkpoint never $extra 2>&1 | grep '^step time' || true)
      echo "$round | $flags | $name | ${step:-failed}"
    done
  done
done
