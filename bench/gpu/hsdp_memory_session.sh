#!/usr/bin/env bash
# One call on a machine with one GPU (about 3 minutes), for the memory model:
# - one rank of three HSDP runs (a 2 x 32 mesh, 70B-shaped layers) played with a fake process group
#   (framework_rank.py): in which order the caching allocator's peak counts FSDP2's HSDP buffers;
# - two profiled one-GPU steps with the allocator's totals (fsdp_step.py --trace, profile_memory),
#   for `shardline import` to read on real data.
# Writes into DIR (default $OUT, else /tmp/shardline-gpu): smi.txt, hsdp_rank.jsonl,
# steps_traced.jsonl, traces/<configuration>.json.gz. A failed part does not stop the next.
# ROWS (framework_rank.py row ids) and TRACED (fsdp_step.py configurations; empty: none) choose
# other runs, e.g. the held-out rows predicted in bench/gpu/h200_hsdp_rank_heldout_predicted.jsonl.
#   [ROWS=id,...] [TRACED=name,...] bash bench/gpu/hsdp_memory_session.sh [DIR]
. "$(dirname "$0")/session_start.sh"
rows=${ROWS:-fsdp_step-70b-shape-8-layers-hsdp2x32-ga2,fsdp_step-70b-shape-4-layers-hsdp2x32-ga2,fsdp_step-70b-shape-8-layers-hsdp2x32-ga1}
traced=${TRACED-llama-1b-none,llama-1b-full}
timeout 400 python3 bench/gpu/framework_rank.py --out "$out/hsdp_rank.jsonl" --timeout-s 75 --only "$rows" \
  || echo "framework_rank: exit $?"
if [ -n "$traced" ]; then
  timeout 150 python3 bench/gpu/fsdp_step.py --optimizer fused --only "$traced" --steps 5 --warmup 3 \
    --trace "$out/traces" --out "$out/steps_traced.jsonl" >/dev/null || echo "traced steps: exit $?"
fi
ls -lR "$out" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$out/smi.txt" 2>&1
