#!/usr/bin/env python3
"""The host term's one number, `cluster.host_launch`, measured on host twins, and the full-size
steps it is checked on (bench/gpu/host_session.sh, docs/compute-model.md "The host").

A host twin (fsdp_step.py --host-twin) runs a configuration's modules over one 32-token sample,
so its GPU never holds the host up: its host issue time over the GPU activities it launched
(counted by --count-launches) is the host's time per launch. The value is their median over the
twins (the fit data, the rule written in host_session.sh before the first run). Then each
full-size step (the check data) is simulated with it and without it, beside its measurement,
and shardline's launch count for the step beside the counted one.

  bench/gpu/fit_host.py bench/gpu/h100_host_twins.jsonl --steps bench/gpu/h100_host_steps.jsonl \
      --preset h100-sxm-dgx-torch2.11 [--gate MAX]

--gate MAX exits 1 when the check rows' mean |log(predicted / measured)| step time with the term
is above MAX. The value is the measured machine's host's: no preset carries it (one host-bound
step took 1.6x as long on one H200 machine as on another; docs/compute-model.md, "The host").
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import predict  # noqa: E402  (scenario_of, the binary's default path)


def rows_of(path):
    """The file's first environment record and its measured rows (environment records of files
    joined together, and rows that failed, left out)."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    environment = next((r["environment"] for r in rows if "environment" in r), {})
    return environment, [r for r in rows if "name" in r and "error" not in r]


def launches(row):
    """GPU activities the measured step launched, all phases (None: not counted in that run)."""
    if "launches_per_phase" not in row:
        return None
    return sum(sum(per_kind.values()) for per_kind in row["launches_per_phase"].values())


def simulate(binary, row, preset, sets=()):
    """shardline's step (ms) and the launches its Program counts for the row's scenario."""
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "scenario.json")
        with open(path, "w") as f:
            json.dump(predict.scenario_of(row, preset), f)
        args = [binary, "simulate", path, "--out", os.path.join(out, "o")] + predict.set_flags(sets)
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{row['name']}: simulate failed: {done.stderr.strip()}")
        with open(os.path.join(out, "o", "metrics.json")) as f:
            step_ms = json.load(f)["step_time_us"] / 1000.0
        with open(os.path.join(out, "o", "program.json")) as f:
            counted = sum(op["host_launches"] for op in json.load(f)["ops"])
    return step_ms, counted


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("twins", help="fsdp_step.py --host-twin --count-launches results (fit data)")
    ap.add_argument("--steps", required=True, help="full-size fsdp_step.py --count-launches results (check data)")
    ap.add_argument("--preset", required=True)
    ap.add_argument("--binary", default=os.path.join(predict.ROOT, "build/release/cli/shardline"))
    ap.add_argument("--gate", type=float, default=None, metavar="MAX")
    args = ap.parse_args()

    env, twins = rows_of(args.twins)
    print(f"host twins measured on {env.get('gpu')}, PyTorch {env.get('torch')} (fit data)")
    print(f"{'twin':<46} {'host ms':>8} {'launches':>8} {'us/launch':>9}")
    per_launch = []
    for r in twins:
        n = launches(r)
        if not n:
            raise SystemExit(f"{args.twins}: {r['name']} has no launch counts (fsdp_step.py --count-launches)")
        per_launch.append(1000.0 * r["host_issue_ms_median"] / n)
        print(f"{r['name']:<46} {r['host_issue_ms_median']:8.1f} {n:8d} {per_launch[-1]:9.1f}")
    host_launch_us = round(statistics.median(per_launch), 1)
    print(f"host_launch: {host_launch_us} us (median of {len(per_launch)}; range {min(per_launch):.1f}-{max(per_launch):.1f})")

    env, steps = rows_of(args.steps)
    print(f"\nfull-size steps measured on {env.get('gpu')} (check data), preset {args.preset}")
    print(f"{'configuration':<40} {'measured':>8} {'host':>7} {'no term':>16} {'with the term':>16} "
          f"{'launches counted/measured':>26}")
    log_errors, log_errors_without = [], []
    sets = [f"cluster.host_launch={host_launch_us}us"]
    for r in steps:
        without, _ = simulate(args.binary, r, args.preset, ["cluster.host_launch=0us"])
        with_term, counted = simulate(args.binary, r, args.preset, sets)
        measured = r["step_ms_median"]
        log_errors.append(abs(math.log(with_term / measured)))
        log_errors_without.append(abs(math.log(without / measured)))
        n = launches(r)
        host = r.get("host_issue_ms_median")
        print(f"{r['name']:<40} {measured:8.1f} {host if host is not None else float('nan'):7.1f} "
              f"{without:7.1f} {100 * (without / measured - 1):+7.1f}% {with_term:7.1f} {100 * (with_term / measured - 1):+7.1f}% "
              + (f"{counted:10d} / {n:6d} {counted / n:5.2f}" if n else f"{counted:10d} / {'-':>6}"))
    mean = sum(log_errors) / len(log_errors)
    print(f"mean |log error| with the term: {mean:.4f} over {len(log_errors)} check rows "
          f"(without it: {sum(log_errors_without) / len(log_errors_without):.4f})")
    failed = False
    if args.gate is not None and mean > args.gate:
        print(f"above the gate {args.gate}")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
