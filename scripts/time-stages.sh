#!/usr/bin/env bash
# Times ./scripts/test.sh the way CI runs it: cold, from a fresh clone with an empty ccache and
# an empty LibTorch 2.6 cache (its packages are downloaded again); with --warm, then once more
# from a fresh clone at the same path with the caches the first run filled (ccache hits need
# the same path for the tests' objects: they are compiled with the source directory's absolute
# path). Prints the machine, the revision and each run's stage table (docs/performance.md,
# "The test command's time").
#   scripts/time-stages.sh [--quick] [--warm] [REV]     REV defaults to HEAD (commit first)
# Logs and clones go to $PIPEPROF_TIMING_DIR (default /tmp/pipeprof-timing-<date>), removed
# again unless the run fails or PIPEPROF_TIMING_KEEP=1. Run it on a machine doing nothing else:
# wall times depend on what else runs (CPU times much less); each stage shows the load average.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

quick=()
warm=0
rev=HEAD
for arg in "$@"; do
  case $arg in
    --quick) quick=(--quick) ;;
    --warm) warm=1 ;;
    -h | --help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "time-stages.sh: unknown option '$arg' (--quick, --warm)" >&2; exit 2 ;;
    *) rev=$arg ;;
  esac
done
commit=$(git -C "$repo" rev-parse --verify "$rev^{commit}")

dir=${PIPEPROF_TIMING_DIR:-/tmp/pipeprof-timing-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$dir"
export CCACHE_DIR=$dir/ccache PIPEPROF_TORCH2_CACHE=$dir/torch2-cache
rm -rf "$CCACHE_DIR" "$PIPEPROF_TORCH2_CACHE"
mkdir -p "$CCACHE_DIR" "$PIPEPROF_TORCH2_CACHE"

summary=$dir/summary.txt
{
  echo "scripts/test.sh ${quick[*]} at $(git -C "$repo" log -1 --format='%h %s' "$commit")"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1))," \
    "$(free -g | awk '/^Mem:/ {print $2}') GiB, load average $(cut -d ' ' -f 1-3 /proc/loadavg) at the start"
} | tee "$summary"

# run <name>: test.sh in a fresh clone; its stage table goes to the summary.
run() {
  local name=$1 clone=$dir/clone log=$dir/$1.log rc=0
  rm -rf "$clone"
  git clone -q --no-hardlinks "$repo" "$clone"
  git -C "$clone" checkout -q --detach "$commit"
  echo "== $name run: $clone, log $log"
  (cd "$clone" && ./scripts/test.sh "${quick[@]}") > "$log" 2>&1 || rc=$?
  {
    echo "-- $name (ccache: $(ccache -s 2>/dev/null | sed -n 's/^ *Hits: *\([0-9]*\) \/ *\([0-9]*\).*/\1 hits of \2/p' | head -n 1))"
    sed -n '/^== stage times/,$p' "$log" | sed '1d'
    if ((rc != 0)); then echo "   FAILED (exit $rc): see $log"; fi
  } | tee -a "$summary"
  return $rc
}

status=0
ccache -z >/dev/null 2>&1 || true
run cold || status=$?
if ((warm && status == 0)); then
  ccache -z >/dev/null 2>&1 || true
  run warm || status=$?
fi
echo "== summary: $summary"
if ((status == 0)) && [[ "${PIPEPROF_TIMING_KEEP:-0}" != 1 ]]; then
  rm -rf "$dir/clone" "$CCACHE_DIR" "$PIPEPROF_TORCH2_CACHE"
fi
exit $status
