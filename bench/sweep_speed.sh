#!/usr/bin/env bash
# Times a 9,600-point capacity-planning sweep of the 70B scenario (issue: "a 10,000-point sweep
# finishes in under 60 s on this 2-core machine"). Every point is a valid configuration that the
# simulator really evaluates: forward and backward prefetch depth 0..4, micro-batches 1..8,
# reshard_after_forward true / false / 8, comm fusion, zero-copy, gradient sync, param and reduce dtype.
#   bench/sweep_speed.sh [--binary PATH] [--jobs N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${SHARDLINE:-$root/build/release/cli/shardline}"
jobs=0
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    *) echo "sweep_speed: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
start_ms=$(($(date +%s%N) / 1000000))
"$binary" sweep "$root/scenarios/llama3-70b-hsdp-h100x64.json" --jobs "$jobs" --out "$out" \
  --vary policy.forward_prefetch=0,1,2,3,4 --vary policy.backward_prefetch=0,1,2,3,4 \
  --vary policy.micro_batches=1,2,4,8 --vary policy.reshard_after_forward=true,false,8 \
  --vary policy.comm_fusion=true,false --vary policy.grad_sync=every,last \
  --vary policy.param_dtype=bf16,fp32 --vary policy.reduce_dtype=fp32,bf16 --vary policy.zero_copy=false,true | tail -n 8
end_ms=$(($(date +%s%N) / 1000000))
rows=$(($(wc -l <"$out/sweep.csv") - 1))
echo "sweep_speed: $rows configurations in $(((end_ms - start_ms) / 1000)).$(printf %03d $(((end_ms - start_ms) % 1000))) s on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
