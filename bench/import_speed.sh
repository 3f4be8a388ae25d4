#!/usr/bin/env bash
# Times `shardline import` on a 1 GB profiler trace (issue: "a 1 GB trace imports in under 60 s
# and under 1 GB of memory"). The trace is FSDP2-shaped, written by scripts/fsdp2-trace from a
# simulated host-tiny-fsdp run repeated over 10,600 profiler steps (4.3 M events in the one file),
# plain JSON. Two timings, each with /usr/bin/time -v (wall clock and maximum resident memory):
#   1. one 1 GB trace, no scenario: the per-step summary;
#   2. two 0.5 GB traces (1 GB in all, 5,300 profiler steps each) mapped onto the scenario's
#      Program (--scenario), with the measured timeline written (--out): every step is read and
#      matched, and the first 1,024 (the most a timeline holds) imported (--steps 1..1024).
#   bench/import_speed.sh [--binary PATH] [--work DIR] [--keep]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${SHARDLINE:-$root/build/release/cli/shardline}"
work=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift ;;
    --work) work="$2"; shift ;;
    --keep) keep=1 ;;
    *) echo "import_speed: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$work" ]; then work="$(mktemp -d)"; fi
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
scenario="$root/scenarios/host-tiny-fsdp.json"
if [ ! -f "$work/big/rank-0.json" ] || [ ! -f "$work/half/rank-1.json" ]; then
  "$binary" simulate "$scenario" --ranks all --trace-ranks all --out "$work/sim" >/dev/null
  python3 "$root/scripts/fsdp2-trace" "$work/sim" --out "$work/big" --iterations 10600 --plain --ranks 0
  python3 "$root/scripts/fsdp2-trace" "$work/sim" --out "$work/half" --iterations 5300 --plain
fi
measure() {  # label, command...
  local label="$1"; shift
  /usr/bin/time -v "$@" >"$work/out.txt" 2>"$work/time.txt"
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$work/time.txt" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$work/time.txt" | awk '{print $NF}')
  echo "import_speed: $label: wall $wall, max RSS $((rss / 1024)) MiB"
}
echo "import_speed: $(du -b "$work/big/rank-0.json" | cut -f1) bytes in one trace; $(($(du -b "$work/half/rank-0.json" | cut -f1) + $(du -b "$work/half/rank-1.json" | cut -f1))) bytes in two"
measure "summary of one 1 GB trace" "$binary" import "$work/big/rank-0.json"
measure "two 0.5 GB traces onto the Program, 1,024 steps imported, timeline written" "$binary" import "$work/half/rank-0.json" "$work/half/rank-1.json" --scenario "$scenario" --steps 1..1024 --out "$work/imported"
echo "import_speed: on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
