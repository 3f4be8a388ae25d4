#!/usr/bin/env bash
# One call on a machine with one GPU (about 3 minutes; its timeouts allow 8): the host's cost of issuing eager FSDP2
# steps, for a host term in the model. On the same machine:
#  1. full-size steps of ten configurations (fsdp_step.py, fused AdamW), unprofiled, with the
#     host's time per phase, then one more step per configuration profiled phase by phase to count
#     the GPU activities (kernels, memcpys, memsets) each phase launches;
#  2. their host twins (--host-twin 32: the same modules and launches over one sample of 32 tokens
#     per micro-batch, so the GPU never holds the host up): the host's own time per phase;
#  3. twins with half the blocks of three of them: the host's time per block by difference.
# The rule, set before this first ran: the twins (2, 3) are fit data for a host term, the
# full-size steps (1) its check data; no full-size step is fitted on.
# Writes into DIR (default $OUT, else /tmp/shardline-gpu): smi.txt, host_steps.jsonl,
# host_twins.jsonl, host_twins_half.jsonl, host_twins_half_gpt.jsonl. A failed part does not stop the next.
#   bash bench/gpu/host_session.sh [DIR]
. "$(dirname "$0")/session_start.sh"
all=llama-1b-none,llama-1b-full,llama3-8b-shape-4-layers-none,gpt-1.3b-shape-none,gpt-350m-shape-hd64-none
all=$all,mpt-7b-shape-4-layers-nobias-full,llama-1b-none-ga2,gpt-350m-shape-hd64-none-ga2
all=$all,llama-1b-none-ga4,gpt-350m-shape-hd64-none-ga4
step=(python3 bench/gpu/fsdp_step.py --optimizer fused --count-launches)
timeout 240 "${step[@]}" --only "$all" --out "$out/host_steps.jsonl" || echo "full-size steps: exit $?"
timeout 150 "${step[@]}" --only "$all" --host-twin 32 --out "$out/host_twins.jsonl" || echo "twins: exit $?"
timeout 50 "${step[@]}" --only llama-1b-none,llama-1b-full --layers 8 --host-twin 32 --out "$out/host_twins_half.jsonl" \
  || echo "half twins (Llama): exit $?"
timeout 30 "${step[@]}" --only gpt-350m-shape-hd64-none --layers 12 --host-twin 32 --out "$out/host_twins_half_gpt.jsonl" \
  || echo "half twins (GPT): exit $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$out/smi.txt" 2>&1
lscpu | grep -E "Model name|^CPU\(s\)|MHz" >>"$out/smi.txt" 2>&1
