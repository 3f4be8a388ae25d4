#!/usr/bin/env python3
"""The caching allocator's reserve, held against every peak reserved this project measured.

PyTorch's caching allocator keeps a freed block for reuse by allocations on the stream that
allocated it. So with room to spare, what it reserves is about the sum over streams of the most
each stream's allocations held at once (its pool), not the peak of all of them together: FSDP2's
all-gather buffers (all-gather copy-in stream), reduce-scatter buffers and gradient shards
(reduce-scatter stream) and everything of the compute stream each keep their own. shardline
reports that sum (metrics `allocator_pool_peaks_bytes`, static memory included) and estimates the
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
Added after the fit: four configurations predicted with it and committed before their first run
(h200_reserved_heldout.jsonl; predictions in h200_reserved_heldout_predicted.jsonl), reported as
held-out rows.

  python3 bench/gpu/fit_reserved.py [--binary build/release/cli/shardline]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "published"))
import check  # noqa: E402
import framework_rank as fr  # noqa: E402
import predict as one_gpu  # noqa: E402

GiB = 2.0 ** 30
RANK_FILES = ("h200_framework_rank.jsonl", "h200_framework_rank_heldout.jsonl", "h200_kempnerforge_rank.jsonl",
              "h200_hsdp_rank.jsonl", "h200_hsdp_rank_heldout.jsonl")
HELD_OUT_FILES = ("h200_reserved_heldout.jsonl",)


def metrics_of(binary, scenario):
    m = one_gpu.simulate(binary, scenario)
    if "error" in m:
        sys.exit(f"{scenario.get('name')}: {m['error']}")
    return m


def evidence(binary):
    """(name, framework, measured reserved, measured allocated, metrics), in the rule's order."""
    rows = []
    steps = [json.loads(line) for line in open(os.path.join(HERE, "h200_results_fused_b.jsonl"))][1:]
    for r in steps:
        if "error" in r:
            continue
        m = metrics_of(binary, one_gpu.scenario_of(r, "h200-sxm-hgx-torch2.11"))
        rows.append((f"one-GPU {r['name']}", "fsdp_step", r["max_memory_reserved"], r["max_memory_allocated"], m))
    published = {row["id"]: row for row in check.load_independent([os.path.join(ROOT, "bench", "published", f)
                                                                     for f in fr.PUBLISHED_FILES])[0]}
    for f in RANK_FILES + HELD_OUT_FILES:
        for line in open(os.path.join(HERE, f)):
            r = json.loads(line)
            if "max_memory_reserved" not in r or r["name"] not in fr.CONFIGS:
                continue
            if fr.CONFIGS[r["name"]][0] != "fsdp_step" and fr.HELD_OUT.get(r["name"], (r["name"],))[0] not in published:
                continue  # a smoke test of the method, no published row's scenario
            m = metrics_of(binary, fr.rank_scenario(r["name"], published))
            role = "held-out" if f in HELD_OUT_FILES else fr.CONFIGS[r["name"]][0]
            rows.append((f"one rank {r['name']}", role, r["max_memory_reserved"], r["max_memory_allocated"], m))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/release/cli/shardline"))
    args = ap.parse_args()
    rows = evidence(args.binary)
    fit, check_rows, reported, held_out = [], [], [], []
    k = 0
    for row in rows:
        if row[1] == "kempnerforge":
            reported.append(row)
            continue
        if row[1] == "held-out":
            held_out.append(row)
            continue
        (fit if k % 2 == 0 else check_rows).append(row)
        k += 1
    ratio = lambda row: row[2] / row[4]["allocator_pool_peaks_bytes"] - 1  # noqa: E731
    f = statistics.median(ratio(r) for r in fit)
    print(f"allocator_pool_fragmentation = median over {len(fit)} fit rows of measured / pools - 1 = {f:.4f}")
    print(f"{'run':<62} {'role':<8} {'measured':>9} {'pools':>8} {'x(1+f)':>8} {'error':>7}   {'allocated x1.26':>15}")
    for role, group in (("fit", fit), ("check", check_rows), ("held-out", held_out), ("reported", reported)):
        errors = []
        for name, _, reserved, allocated, m in group:
            pools = m["allocator_pool_peaks_bytes"]
            predicted = pools * (1 + f)
            errors.append(predicted / reserved - 1)
            old = m["peak_memory_bytes"] * 1.26 / reserved - 1
            print(f"{name[-62:]:<62} {role:<8} {reserved / GiB:9.2f} {pools / GiB:8.2f} {predicted / GiB:8.2f} "
                  f"{100 * errors[-1]:+6.1f}%   {100 * old:+14.1f}%")
        absolute = sorted(abs(e) for e in errors)
        print(f"  {role} rows: {len(errors)}, |error| median {100 * statistics.median(absolute):.1f}%, "
              f"worst {100 * absolute[-1]:.1f}%")


if __name__ == "__main__":
    main()
