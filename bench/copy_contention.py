#!/usr/bin/env python3
"""How much slower a measured run's copies were than calibrated, by what else was running.

    bench/copy_contention.py VALIDATE_OUT [--skip-iterations 0]

VALIDATE_OUT is the folder `shardline validate` wrote (profile.json, measured/program.json,
measured/timeline.json). For every copy-in and copy-out of every rank and measured iteration, the
ratio of its measured duration to the profile's copy time (copy_latency_us + bytes /
copy_bandwidth_bytes_per_s), grouped by how many other copies and collectives ran beside it on
its own rank and on the other ranks (each neighbour counted by the fraction of the copy it
overlapped, the sums rounded). A calibrated mpi profile models a rank's copies and collectives as
sharing that rank's CPU and nothing else: ratio 1 with nothing beside it on its own rank, 2 with
one other op there. docs/exec.md ("Binding") has a table made with it. Standard library only.
"""
import argparse
import json
import os
import signal
import statistics
from collections import defaultdict

COPIES = ("copy_in", "copy_out")
COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("validate_out")
    ap.add_argument("--skip-iterations", type=int, default=0, help="leave out the first K measured iterations")
    a = ap.parse_args()
    if a.skip_iterations < 0:
        ap.error("--skip-iterations must be at least 0")

    def load(*parts):
        path = os.path.join(a.validate_out, *parts)
        try:
            with open(path) as f:
                return json.load(f)
        except OSError as e:
            ap.error(f"{path}: {e.strerror} (expected the --out folder of `shardline validate`)")
        except ValueError as e:
            ap.error(f"{path} is not JSON ({e})")

    profile = load("profile.json")
    ops = load("measured", "program.json")["ops"]
    timeline = load("measured", "timeline.json")
    bandwidth = profile["copy_bandwidth_bytes_per_s"]
    if not bandwidth > 0:  # 0: not measured (a zero-copy calibration), so no calibrated copy time
        ap.error(f"{a.validate_out}/profile.json measured no copy bandwidth (copy_bandwidth_bytes_per_s 0): nothing to hold the copies to")
    latency = profile.get("copy_latency_us", 0.0)

    by_iteration = defaultdict(list)  # iteration -> [(op, rank, start, end)] of copies and collectives
    for op, rank, iteration, _issue, start, end in timeline["intervals"]:
        if iteration >= a.skip_iterations and ops[op]["kind"] in COPIES + COLLECTIVES:
            by_iteration[iteration].append((op, rank, start, end))

    ratios = defaultdict(list)
    for spans in by_iteration.values():
        for op, rank, start, end in spans:
            if ops[op]["kind"] not in COPIES or end <= start:
                continue
            own = other = 0.0
            for op2, rank2, start2, end2 in spans:
                if (op2, rank2) == (op, rank):
                    continue
                share = max(0.0, min(end, end2) - max(start, start2)) / (end - start)
                if rank2 == rank:
                    own += share
                else:
                    other += share
            calibrated_us = latency + ops[op]["bytes"] / bandwidth * 1e6
            ratios[(round(own), round(other))].append((end - start) / calibrated_us)

    print("| ops beside it on its own rank | on the other ranks | copies | measured / calibrated: median (p25-p75) |")
    print("|---|---|---|---|")
    for (own, other), values in sorted(ratios.items()):
        q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        print(f"| {own} | {other} | {len(values)} | {statistics.median(values):.2f} ({q[0]:.2f}-{q[2]:.2f}) |")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the table quietly
    main()
