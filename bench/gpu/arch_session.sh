#!/usr/bin/env bash
# One call on a machine with one GPU (about 3 minutes), for the architecture knobs other than
# Llama's: fsdp_step.py's ARCH_CONFIGS (GPT-style and MPT-shaped decoders: LayerNorm, GELU, fused
# Wqkv, learned positions, tied head, with and without biases) and two of its Llama configurations
# as anchors to the earlier sessions' figures, with fused AdamW; then two profiled steps of two of
# them, and GPU time by kernel name in those traces (trace_kernels.py).
# Writes into DIR (default $OUT, else /tmp/shardline-gpu): smi.txt, steps_arch.jsonl,
# steps_traced.jsonl, traces/<configuration>.json.gz, kernel_sums.json. A failed part does not stop
# the next. The predictions made before the first run: bench/gpu/*_predicted_arch*.jsonl.
#   bash bench/gpu/arch_session.sh [DIR]
. "$(dirname "$0")/session_start.sh"
steps=gpt-1.3b-shape-none,gpt-760m-shape-seq4096-full,gpt-350m-shape-hd64-none,mpt-7b-shape-4-layers-nobias-full,llama-1b-none,llama3-8b-shape-4-layers-none
timeout 200 python3 bench/gpu/fsdp_step.py --optimizer fused --only "$steps" --out "$out/steps_arch.jsonl" \
  || echo "fsdp_step: exit $?"
traced=gpt-1.3b-shape-none,gpt-350m-shape-hd64-none
timeout 120 python3 bench/gpu/fsdp_step.py --optimizer fused --only "$traced" --steps 3 --warmup 2 \
  --trace "$out/traces" --out "$out/steps_traced.jsonl" >/dev/null || echo "traced steps: exit $?"
python3 bench/gpu/trace_kernels.py "$out"/traces/*.json.gz --out "$out/kernel_sums.json" || echo "trace_kernels: exit $?"
ls -lR "$out" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$out/smi.txt" 2>&1
