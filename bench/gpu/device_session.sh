#!/usr/bin/env bash
# One call on a machine with a GPU (about 4 minutes): the fsdp_step.py configurations with fused
# AdamW, the kernel microbenchmarks (kernels.py), its GEMM and attention rows again at boost clock
# (--cool-ms), the GEMM conditions (gemm_conditions.py), and GPU time by kernel name for two
# profiled steps of five configurations (trace_kernels.py). Writes into DIR (default $OUT, else
# /tmp/shardline-gpu): steps_fused.jsonl, kernels.jsonl, kernels_boost.jsonl,
# gemm_conditions.jsonl, kernel_sums.json, smi.txt. Each part has its own time limit and a failed
# part does not stop the next.
#   bash bench/gpu/device_session.sh [DIR]
. "$(dirname "$0")/session_start.sh"
timeout 120 python3 bench/gpu/fsdp_step.py --optimizer fused --out "$out/steps_fused.jsonl" || echo "fsdp_step: exit $?"
timeout 120 python3 bench/gpu/kernels.py --out "$out/kernels.jsonl" --budget-s 100 || echo "kernels: exit $?"
timeout 150 python3 bench/gpu/kernels.py --out "$out/kernels_boost.jsonl" --sections gemm,attention --cool-ms 100 \
  --budget-s 130 || echo "kernels (boost clock): exit $?"
timeout 60 python3 bench/gpu/gemm_conditions.py --out "$out/gemm_conditions.jsonl" || echo "gemm_conditions: exit $?"
traced=llama-1b-none,llama-1b-seq8192-none,llama-1b-gqa-hd64-seq4096-none,llama3-3b-shape-16-layers-seq8192-full,llama3-8b-shape-4-layers-none
rm -rf /tmp/shardline-traces
timeout 90 python3 bench/gpu/fsdp_step.py --optimizer fused --only "$traced" --steps 3 --warmup 2 \
  --trace /tmp/shardline-traces --out /tmp/shardline-traced.jsonl >/dev/null || echo "traced steps: exit $?"
python3 bench/gpu/trace_kernels.py /tmp/shardline-traces/*.json.gz --out "$out/kernel_sums.json" || echo "trace_kernels: exit $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$out/smi.txt" 2>&1
