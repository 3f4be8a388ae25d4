#!/usr/bin/env python3
"""Markdown tables from a shardline_bench JSON file (--benchmark_out): per collective and
parameter set, busbw (GB/s) of unfused / fused / zero-copy and the fused copy share per bucket
size; then, per collective and variant, where fusion starts to win over unfused and the smallest
bucket whose busbw reaches 90% of the best busbw.

usage: summarize.py RESULTS.json [--sets llama3-8b,equal16]
"""
import argparse
import json
from collections import defaultdict

VARIANTS = ("unfused", "fused", "zero_copy")


def human(nbytes):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:g} {unit}"
    return f"{nbytes} B"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--sets", default="", help="comma-separated parameter sets (default: all)")
    args = p.parse_args()
    with open(args.results) as f:
        data = json.load(f)
    ctx = data["context"]
    rows = defaultdict(dict)  # (backend, kind, set) -> bucket -> variant -> benchmark
    for b in data["benchmarks"]:
        backend, kind, variant, pset, bucket = b["name"].split("/")[:5]
        rows[(backend, kind, pset)].setdefault(int(bucket), {})[variant] = b
    wanted = set(filter(None, args.sets.split(",")))
    ranks = {int(b["ranks"]) for b in data["benchmarks"]}
    print(f"Run {ctx.get('date', '?')} on {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz, "
          f"load average {', '.join(f'{x:.1f}' for x in ctx.get('load_avg', []))}; ranks {sorted(ranks)}.\n")
    summary = []
    for (backend, kind, pset), by_bucket in sorted(rows.items()):
        if wanted and pset not in wanted:
            continue
        print(f"#### {backend} {kind}, {pset} (busbw GB/s; time per step in us)\n")
        print("| bucket | unfused | fused | zero-copy | fused copy share | fused / unfused time |")
        print("|---:|---:|---:|---:|---:|---:|")
        for bucket in sorted(by_bucket):
            v = by_bucket[bucket]
            cells = []
            for name in VARIANTS:
                b = v.get(name)
                cells.append(f"{b['busbw_GBps']:.2f} ({b['real_time']:.0f})" if b else "-")
            share = f"{v['fused']['copy_share'] * 100:.0f}%" if "fused" in v else "-"
            ratio = (f"{v['fused']['real_time'] / v['unfused']['real_time']:.2f}"
                     if "fused" in v and "unfused" in v else "-")
            print(f"| {human(bucket)} | " + " | ".join(cells) + f" | {share} | {ratio} |")
        print()
        # Fusion wins where fused time < unfused time; report the buckets where it does.
        wins = [bk for bk, v in sorted(by_bucket.items())
                if "fused" in v and "unfused" in v and v["fused"]["real_time"] < v["unfused"]["real_time"]]
        line = {"collective": f"{backend} {kind}", "set": pset,
                "fused wins at": ", ".join(human(b) for b in wins) or "never"}
        for name in VARIANTS:
            pts = [(bk, v[name]["busbw_GBps"]) for bk, v in sorted(by_bucket.items()) if name in v]
            if not pts:
                continue
            best = max(bw for _, bw in pts)
            first = next(bk for bk, bw in pts if bw >= 0.9 * best)
            line[name] = f"best {best:.2f}, 90% at {human(first)}"
        summary.append(line)
    print("#### Summary\n")
    print("| collective | set | fused faster than unfused at | unfused: best busbw, 90% reached at | "
          "fused | zero-copy |")
    print("|---|---|---|---|---|---|")
    for s in summary:
        print(f"| {s['collective']} | {s['set']} | {s['fused wins at']} | {s.get('unfused', '-')} | "
              f"{s.get('fused', '-')} | {s.get('zero_copy', '-')} |")


if __name__ == "__main__":
    main()
