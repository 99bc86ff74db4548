#!/usr/bin/env bash
# One prepared run for a lent GPU machine, in at most 12 minutes: build, the gpu-labelled tests,
# a traced probe, one sweep per zoo model within its own --time, and what tracing costs a step
# (none, CUPTI cheap, CUPTI exact) on a launch-bound mlp (width 512, batch 128) and a GPU-bound
# one (width 4096, batch 2048). Every figure goes into $OUT/summary.md with its command as soon
# as it is measured, so a run cut short still leaves what it measured; logs go beside it.
#   scripts/gpu-lease.sh          on the GPU machine, from a checkout with .deps carried
#                                 (scripts/device-deps.sh gathers them here first)
#   scripts/gpu-lease.sh --cpu    the rehearsal on a machine without a GPU: the same steps with
#                                 the existing build/ on cpu,cpu devices; the build, the gpu
#                                 tests and the CUPTI modes are skipped (tracing is the host
#                                 tracer's alone) and the mlp steps are smaller
# Environment: OUT (default out/lease); PIPEPROF_LEASE_SWEEP_TIME (each model's --time, default
# 75s on a GPU, 30s in the rehearsal); PIPEPROF_LEASE_MODELS (default "mlp gpt resnet unet");
# PIPEPROF_LEASE_DEADLINE and PIPEPROF_LEASE_FINISH (seconds, default 660 and 715). Each step
# runs under its own timeout, none past the finish, and a step that would start past the
# deadline is skipped, so the whole ends within 12 minutes by default; the device tool's 600 s a
# call needs a deadline near 480 and a finish near 540.
# On a GPU it also builds and runs scripts/cupti_launch_probe.cu, which lists the API records
# CUPTI writes for a launch under each way of enabling them (exact mode's open question).
set -uo pipefail
cd "$(dirname "$0")/.."

cpu=0
[[ ${1:-} == --cpu ]] && cpu=1
out=${OUT:-out/lease}
mkdir -p "$out"
summary=$out/summary.md
deadline=${PIPEPROF_LEASE_DEADLINE:-660}  # seconds: no step starts later
finish=${PIPEPROF_LEASE_FINISH:-715}      # seconds: no step runs past it
if ((cpu)); then
  devices=cpu,cpu
  pipeprof=build/cli/pipeprof
  sweep_time=${PIPEPROF_LEASE_SWEEP_TIME:-30s}
  export OPENBLAS_NUM_THREADS=1
else
  devices=cuda:0,cuda:0
  pipeprof=build-cuda/cli/pipeprof
  sweep_time=${PIPEPROF_LEASE_SWEEP_TIME:-75s}
fi

{
  echo "# GPU lease run, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown), devices $devices$( ((cpu)) && echo ' (CPU rehearsal)')"
  if command -v nvidia-smi >/dev/null; then
    echo
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/GPU: /'
  fi
  echo
  echo "| step | command | figure | seconds |"
  echo "|---|---|---|---|"
} >"$summary"

# record <step> <command> <figure> <seconds>: one row of the summary, written at once.
record() { printf '| %s | `%s` | %s | %s |\n' "$1" "$2" "$3" "$4" >>"$summary"; }

# step <name> <timeout seconds> <command...>: runs the command under its timeout (cut to what is
# left before $finish) with its log in $out/<name>.log, unless the deadline has passed; sets
# step_rc and step_s.
step() {
  local name=$1 limit=$2
  shift 2
  if ((SECONDS > deadline)); then
    record "$name" "$*" "skipped: past ${deadline} s" 0
    step_rc=124
    step_s=0
    return
  fi
  local started=$SECONDS
  ((limit > finish - SECONDS)) && limit=$((finish - SECONDS))
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
  step_rc=$?
  step_s=$((SECONDS - started))
  echo "$name: rc $step_rc, ${step_s} s"
}

# json_field <log> <python expression over the JSON object j>: reads the first JSON object in a
# command's log (`run --json` prints one; progress lines on stderr hold no braces).
json_field() {
  python3 - "$1" "$2" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    j, _ = json.JSONDecoder().raw_decode(text[text.index("{"):])
    print(eval(sys.argv[2]))
except Exception as error:  # a step that failed or was cut short
    print(f"n/a ({type(error).__name__})")
PY
}

if ((!cpu)); then
  step build 240 env OUT="$out" PIPEPROF_CUDA_TARGETS="pipeprof pipeprof-rank runtime_gpu_tests profiler_gpu_tests" \
    scripts/cuda-check.sh build
  record build "scripts/cuda-check.sh build" "rc $step_rc" "$step_s"
  record "libraries" "ldd $pipeprof" "$(ldd $pipeprof | grep -Eo '(libcupti|libcudart)[^ ]* => [^ ]*' | tr '\n' ' ')" 0
  step cupti-probe 60 bash -c "nvcc -std=c++17 -o $out/cupti_launch_probe scripts/cupti_launch_probe.cu -lcupti -lcuda && $out/cupti_launch_probe"
  record "CUPTI launch records" "scripts/cupti_launch_probe.cu" "rc $step_rc, $out/cupti-probe.log" "$step_s"
  step gpu-tests 150 ctest --test-dir build-cuda -L gpu -j 4 --timeout 60
  record "gpu tests" "ctest -L gpu" "$(grep -Eo '[0-9]+% tests passed.*' "$out/gpu-tests.log" | head -1)" "$step_s"
fi

probe="$pipeprof run --model mlp --devices $devices --chunks 4 --warmup 2 --steps 4 --json --trace $out/probe.json"
step probe 90 $probe
record "traced probe (the process, the device's start included)" "$probe" \
  "rc $step_rc, step median $(json_field "$out/probe.log" 'round(j["step_ns_median"] / 1e6, 2)') ms" "$step_s"

for model in ${PIPEPROF_LEASE_MODELS:-mlp gpt resnet unet}; do
  sweep="$pipeprof sweep --model $model --devices $devices --time $sweep_time -o $out/sweep-$model/report.json"
  step "sweep-$model" 150 $sweep
  figures=$(python3 - "$out/sweep-$model/report.json" "$out/sweep-$model.log" <<'PY'
import json, re, statistics, sys
try:
    report = json.load(open(sys.argv[1]))
except Exception as error:
    print(f"no report ({type(error).__name__})")
    sys.exit()
measured = [c for c in report["candidates"] if c.get("status") == "measured"]
errors = [abs(c["prediction"]["iteration_ns"] / c["measurement"]["step_ns_median"] - 1) * 100 for c in measured]
log = open(sys.argv[2]).read()
rounds = re.findall(r"calibration round \d+: (\d+) of (\d+) reference pipelines in ([0-9.]+) s", log)
spent = re.findall(r"--time \S+: (\d+) s in all -- (\d+) s profiling, calibrating and predicting, (\d+) s measuring", log)
text = f"{len(measured)} measured, step MAPE {statistics.mean(errors):.1f}%" if errors else "none measured"
if rounds:
    text += f"; calibration {sum(int(r[0]) for r in rounds)} references in {sum(float(r[2]) for r in rounds):.1f} s"
if spent:
    text += f"; {spent[-1][0]} s in all ({spent[-1][1]} s before measuring)"
print(text + ("" if report.get("complete") else "; incomplete"))
PY
)
  record "sweep $model within --time $sweep_time" "$sweep" "rc $step_rc: $figures" "$step_s"
done

# What tracing costs a step: the step median untraced, traced with CUPTI cheap and exact (on a
# CPU: the host tracer alone, on shapes a CPU steps through in milliseconds: width 4096 and
# batch 256 took 2.9 s a step here).
shapes=("512 128" "4096 2048")
((cpu)) && shapes=("512 16" "1024 64")
for shape in "${shapes[@]}"; do
  read -r width batch <<<"$shape"
  base="$pipeprof run --model mlp --width $width --batch $batch --devices $devices --chunks 4 --warmup 3 --steps 10 --json"
  modes=(none)
  if ((cpu)); then modes+=(host); else modes+=(cheap exact); fi
  for mode in "${modes[@]}"; do
    case $mode in
      none) command=$base ;;
      host) command="$base --trace $out/trace-$width.json" ;;
      *) command="$base --trace $out/trace-$width-$mode.json --cupti-mode $mode" ;;
    esac
    step "trace-$width-$mode" 90 $command
    record "step, mlp width $width batch $batch, tracing: $mode" "$command" \
      "rc $step_rc, median $(json_field "$out/trace-$width-$mode.log" 'round(j["step_ns_median"] / 1e6, 3)') ms" "$step_s"
  done
done

echo
cat "$summary"
