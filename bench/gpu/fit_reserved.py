#!/usr/bin/env python3
"""The caching allocator's reserve, held against every peak reserved this project measured.

PyTorch's caching allocator keeps a freed block for reuse by allocations on the stream that
allocated it. So with room to spare, what it reserves is about the sum over streams of the most
each stream's allocations held at once (its pool), not the peak of all of them together: FSDP2's
all-gather buffers (all-gather copy-in stream), reduce-scatter buffers and gradient shards
(reduce-scatter stream) and everything of the compute stream each keep their own. shardline
reports that sum (metrics `allocator_pool_peak_bytes`, static memory included) and estimates the
typical reserve as that sum x (1 + `allocator_pool_fragmentation`).

The rule, written and committed before the fit (2026-11-27):
- Evidence: every `torch.cuda.max_memory_reserved` this project measured, with the run's
  scenario: the one-GPU FSDP2 steps (h200_results_fused_b.jsonl, file order), then the one-rank
  runs (h200_framework_rank.jsonl, h200_framework_rank_heldout.jsonl, h200_kempnerforge_rank.jsonl,
  h200_hsdp_rank.jsonl, h200_hsdp_rank_heldout.jsonl, file order).
- KempnerForge's runs are reported, not fitted nor checked: its setup moves the whole bf16 model
  to the GPU before sharding it (`.to(device, dtype)`), and the allocator keeps those segments,
  which a training-step model does not know (docs/benchmarks.md).
- Of the others, in that order, the 1st, 3rd, 5th ... are fit rows and the 2nd, 4th ... check rows.
- `allocator_pool_fragmentation` = the median over the fit rows of measured / pools - 1. The check
  rows' |error| (median, worst) is reported beside the fit rows'.

  python3 bench/gpu/fit_reserved.py [--binary build/release/cli/shardline]
"""
