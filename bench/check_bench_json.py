#!/usr/bin/env python3
"""Smoke check of the benchmark binaries (registered by tests/bench_smoke.cmake).

collectives: runs `mpirun -n NP shardline_bench --smoke --benchmark_out=FILE` and checks that
  only rank 0 reported, that every (collective, variant, parameter set) family ran once, and
  that the counters are sane: bytes as computed from the bucket size, busbw > 0 and
  busbw / algbw equal to the nccl-tests factor, collectives issued, copy share.
sim: runs `shardline_bench_sim` on the tiny scenarios and the sweep point and checks the
  events-per-second counter.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    print(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"command failed with exit code {proc.returncode}")
    return proc.stdout


def load(path):
    with open(path) as f:
        return json.load(f)["benchmarks"]


def check_collectives(args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        stdout = run(args.mpiexec + ["-n", str(args.np), args.binary, "--smoke", "--benchmark_out=" + out,
                                     "--benchmark_color=false"])
        benchmarks = load(out)
    check(stdout.count("Running ") == 1, "only rank 0 prints the benchmark table")
    n = args.np
    seen = set()
    for b in benchmarks:
        name = b["name"]
        parts = name.split("/")
        backend, kind, variant, pset, bucket = parts[0], parts[1], parts[2], parts[3], int(parts[4])
        seen.add((kind, variant, pset))
        check(backend == "mpi", f"{name}: backend")
        check(b["iterations"] == 2, f"{name}: smoke runs 2 iterations")
        check(bucket == 64 * 1024, f"{name}: smoke bucket is 64 KiB")
        check(b["ranks"] == n, f"{name}: ranks {b['ranks']} != {n}")
        expected_bytes = bucket - bucket % (4 * n)
        check(b["bytes"] == expected_bytes, f"{name}: bytes {b['bytes']} != {expected_bytes}")
        check(b["algbw_GBps"] > 0 and b["busbw_GBps"] > 0, f"{name}: bandwidths must be > 0")
        # nccl-tests: busbw = algbw * (n-1)/n, times 2 for all-reduce.
        factor = (n - 1) / n * (2 if kind == "all_reduce" else 1)
        check(abs(b["busbw_GBps"] - b["algbw_GBps"] * factor) <= 1e-9 * b["algbw_GBps"] + 1e-12,
              f"{name}: busbw/algbw != {factor}")
        # algbw = bytes / time (the reported mean time, in us).
        check(b["time_unit"] == "us", f"{name}: time unit")
        algbw = b["bytes"] / (b["real_time"] * 1e-6) / 1e9
        check(abs(algbw - b["algbw_GBps"]) <= 1e-6 * algbw, f"{name}: algbw {b['algbw_GBps']} != bytes/time {algbw}")
        if variant == "unfused":
            check(b["collectives"] == b["params"] and b["params"] > 1, f"{name}: one collective per parameter")
        else:
            check(b["collectives"] == 1, f"{name}: one collective")
        if variant == "fused":
            check(0 < b["copy_share"] < 1, f"{name}: copy share {b['copy_share']} not in (0, 1)")
        else:
            check(b["copy_share"] == 0, f"{name}: copy share must be 0 without copies")
    for kind in ("all_gather", "reduce_scatter", "all_reduce"):
        for variant in ("unfused", "fused", "zero_copy"):
            for pset in ("llama3-8b", "llama3-70b", "equal16"):
                check((kind, variant, pset) in seen, f"missing {kind}/{variant}/{pset}")
    check(len(benchmarks) == 27, f"{len(benchmarks)} benchmarks, expected 27")


def check_sim(args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.json")
        run([args.binary, "--benchmark_filter=host-tiny|sweep_point", "--benchmark_min_time=0.001",
             "--benchmark_out=" + out, "--benchmark_color=false"])
        benchmarks = load(out)
    families = {b["name"].split("/")[1] for b in benchmarks}
    for f in ("simulate", "schedule", "parse", "metrics", "sweep_point"):
        check(f in families, f"missing sim/{f}")
    for b in benchmarks:
        if b["name"].startswith("sim/simulate/"):
            check(b["events"] > 0 and b["events_per_second"] > 0, f"{b['name']}: events per second must be > 0")
            check(b["intervals"] == b["ops"], f"{b['name']}: every op simulated once")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["collectives", "sim"])
    p.add_argument("--binary", required=True)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--mpiexec", default="mpirun", help="mpirun and its flags, one string")
    args = p.parse_args()
    args.mpiexec = shlex.split(args.mpiexec)
    (check_collectives if args.mode == "collectives" else check_sim)(args)
    for f in FAILURES:
        print("FAIL:", f)
    if FAILURES:
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
