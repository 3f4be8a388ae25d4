#!/usr/bin/env python3
"""GPU time per step by kernel name, from the torch.profiler traces fsdp_step.py --trace writes.

For each trace (two profiled steps), sums the duration and count of every GPU kernel, memcpy and
memset by name and divides by the steps profiled: a small JSON file to bring home instead of the
traces themselves. Grouping the names into kinds happens on the reading side.

  python3 bench/gpu/trace_kernels.py TRACE.json.gz [...] --out kernel_sums.json [--steps 2]
"""
import argparse
import collections
import gzip
import json
import os
import sys

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def summarize(path, steps):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    per_name = collections.defaultdict(lambda: [0.0, 0])
    busy = 0.0
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") != "X" or ev.get("cat") not in GPU_CATEGORIES:
            continue
        dur = float(ev.get("dur", 0))
        if dur <= 0:
            continue
        acc = per_name[(ev["cat"], ev.get("name", "?"))]
        acc[0] += dur
        acc[1] += 1
        busy += dur
    rows = [{"cat": cat, "name": name, "us_per_step": us / steps, "count_per_step": n / steps}
            for (cat, name), (us, n) in sorted(per_name.items(), key=lambda kv: -kv[1][0])]
    return {"trace": os.path.basename(path), "steps": steps, "gpu_us_per_step": busy / steps, "kernels": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    result = [summarize(p, args.steps) for p in args.traces]
    with open(args.out, "w") as f:
        json.dump(result, f)
    for r in result:
        print(f"{r['trace']}: {r['gpu_us_per_step'] / 1000:.1f} ms of GPU work per step, {len(r['kernels'])} kernel names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
