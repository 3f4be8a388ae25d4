#!/usr/bin/env python3
"""Fits the op-level compute model's per-GPU parameters on the FIT rows of bench/published/runs.json
(never on check rows) and prints the values to put in core/cluster_presets.cpp.

One parameter set per GPU chip: the H100 rows fit the H100 SXM5 numbers; the A100 80GB and 40GB
rows fit one A100 set together (same SM and tensor cores; only the HBM bandwidth, a datasheet
number, differs). The objective is the mean |log(predicted / published)| of tokens/s per GPU
over the chip's fit rows, minimised by Nelder-Mead within physical bounds.

    bench/published/fit.py [--binary build/release/cli/shardline] [--chip h100|a100] [--iterations N] [--set PATH=VALUE ...]
                           [--start V ...] [--only NAME ...]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

CHIPS = {"h100": ["h100_80gb"], "a100": ["a100_80gb", "a100_40gb"]}
# name, scenario key, lower bound, upper bound, unit suffix for --set. kernel_launch is not
# fitted: the published throughputs cannot tell a slower memory-bound kernel from a larger
# per-kernel cost (fits with both free traded one for the other at equal error, up to 80 us per
# kernel), so it stays at the preset's documented value (docs/compute-model.md).
PARAMS = [
    ("gemm_efficiency", "cluster.gpu.gemm_efficiency", 0.2, 1.0, ""),
    ("gemm_half_dim", "cluster.gpu.gemm_half_dim", 0.0, 4096.0, ""),
    ("attention_efficiency", "cluster.gpu.attention_efficiency", 0.05, 1.0, ""),
    ("memory_efficiency", "cluster.gpu.memory_efficiency", 0.2, 1.0, ""),
]
# The memory efficiency's ceiling per chip: the device copy (read + written) measured with
# PyTorch 2.11 (docs/benchmarks.md, "Current software"): 3.02 TB/s of the H100's 3.35 (0.90),
# 4.25 TB/s of the H200's 4.8 (0.885). The H100's fitted numbers are also the h200-sxm-hgx preset's,
# so its bound is the lower of the two. Added 2026-11-27 (twenty-sixth session) after a refit had
# put the H100's memory efficiency at 0.9155, above both. None measured on an A100.
MEMORY_CEILING = {"h100": 0.885, "a100": 1.0}
# With --fit-inter-node, also the achieved bandwidth of one inter-node NIC (what the cluster
# preset's inter_node.bandwidth means), bounded by a NIC's line rate (200 Gb/s on the A100 tables'
# fabric) and a tenth of it.
INTER_NODE = ("inter_node_bandwidth", "cluster.inter_node.bandwidth", 20.0, 200.0, "Gbps")
# With --fit-slowdown, also how much longer compute takes while a collective runs (NCCL's kernels
# hold SMs and HBM bandwidth), bounded by what Lee et al. measured overlapping LLM training compute
# with communication on 4 A100 / H100 / MI250 / MI210 (arXiv 2507.03114, 2025: 18.9% on average,
# 40% at most): 1.0 to 1.4.
SLOWDOWN = ("compute_slowdown_during_comm", "cluster.compute_slowdown_during_comm", 1.0, 1.4, "")


def clamp(x, params=None):
    return [min(max(v, lo), hi) for v, (_, _, lo, hi, _) in zip(x, params or PARAMS)]


def sets_of(x):
    return [f"{key}={v:.6g}{unit}" if unit else f"{key}={v:.6g}" for v, (_, key, _, _, unit) in zip(x, PARAMS)]


def objective(binary, rows, models, x, cache, fixed=()):
    key = tuple(round(v, 6) for v in x)
    if key in cache:
        return cache[key]
    results = check.evaluate(binary, rows, models, list(fixed) + sets_of(x))
    errs = [abs(math.log(1 + r["error_rel"])) for r in results if "error_rel" in r]
    value = sum(errs) / len(errs) if len(errs) == len(rows) else float("inf")
    cache[key] = value
    return value


def nelder_mead(f, x0, steps, iterations, params=None):
    clamp_ = lambda x: clamp(x, params)  # noqa: E731
    n = len(x0)
    simplex = [clamp_(x0)]
    for i in range(n):
        x = list(x0)
        x[i] += steps[i]
        simplex.append(clamp_(x))
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = [sum(p[i] for p in simplex[:-1]) / n for i in range(n)]
        worst = simplex[-1]
        reflected = clamp_([c + (c - w) for c, w in zip(centroid, worst)])
        fr = f(reflected)
        if fr < values[0]:
            expanded = clamp_([c + 2 * (c - w) for c, w in zip(centroid, worst)])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = clamp_([c + 0.5 * (w - c) for c, w in zip(centroid, worst)])
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [clamp_([b + 0.5 * (p - b) for b, p in zip(best, q)]) for q in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    i = min(range(n + 1), key=lambda k: values[k])
    return simplex[i], values[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.environ.get("SHARDLINE", os.path.join(check.ROOT, "build/release/cli/shardline")))
    ap.add_argument("--runs", default=os.path.join(check.HERE, "runs.json"))
    ap.add_argument("--chip", choices=sorted(CHIPS), action="append")
    ap.add_argument("--iterations", type=int, default=120)
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="a fixed scenario override applied to every fit row (not fitted), e.g. a cluster structure to compare")
    ap.add_argument("--fit-inter-node", action="store_true",
                    help="also fit the achieved inter-node bandwidth per NIC (Gb/s) of the chip's cluster presets")
    ap.add_argument("--fit-slowdown", action="store_true",
                    help="also fit the compute slow-down while a collective runs (cluster.compute_slowdown_during_comm)")
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME",
                    help="fit only these parameters (names as printed), the others held at their start values "
                         "(e.g. memory_efficiency alone, with --start at the presets' values, after a change to the bytes "
                         "the model counts)")
    ap.add_argument("--start", nargs="+", type=float, default=None,
                    help="start values, in the order printed (default 0.7 256 0.4 0.7, then 100 with --fit-inter-node, "
                         "then 1.1 with --fit-slowdown)")
    args = ap.parse_args()
    start, steps = [0.7, 256, 0.4, 0.7], [0.1, 256, 0.1, 0.1]
    for wanted, param, first, step in ((args.fit_inter_node, INTER_NODE, 100.0, 50.0), (args.fit_slowdown, SLOWDOWN, 1.1, 0.1)):
        if wanted:
            PARAMS.append(param)
            start.append(first)
            steps.append(step)
    start = args.start or start
    if len(start) != len(PARAMS):
        ap.error(f"--start needs {len(PARAMS)} values: " + " ".join(p[0] for p in PARAMS))
    unknown = sorted(set(args.only or []) - {p[0] for p in PARAMS})
    if unknown:
        ap.error("--only: unknown parameter " + ", ".join(unknown) + "; fitted ones: " + " ".join(p[0] for p in PARAMS))
    if args.only and (args.start is None or not args.chip or len(args.chip) != 1):
        ap.error("--only holds the other parameters at --start: give --start and exactly one --chip")
    data = check.load(args.runs)
    for chip in args.chip or sorted(CHIPS):
        rows = [r for r in data["rows"] if r["split"] == "fit" and r["gpu"] in CHIPS[chip]]
        cache = {}
        params = [(n, k, lo, MEMORY_CEILING[chip] if n == "memory_efficiency" else hi, u) for n, k, lo, hi, u in PARAMS]
        free = [i for i, p in enumerate(params) if args.only is None or p[0] in args.only]
        outside = [f"{n} {v:g}" for v, (n, _, lo, hi, _) in zip(start, params) if not lo <= v <= hi]
        if args.only and outside:
            ap.error(f"--start outside the bounds for {chip}: " + ", ".join(outside))

        def full(sub):
            x = list(start)
            for i, v in zip(free, sub):
                x[i] = v
            return x

        f = lambda sub: objective(args.binary, rows, data["models"], full(sub), cache, args.set)  # noqa: E731
        sub, value = nelder_mead(f, [start[i] for i in free], [steps[i] for i in free], args.iterations,
                                 [params[i] for i in free])
        x = full(sub)
        print(f"{chip}: {len(rows)} fit rows, {len(cache)} evaluations, mean |log error| {value:.4f}")
        for v, (name, key, _, _, unit) in zip(x, PARAMS):
            print(f"  {name:<22} {v:.4g}{unit}")
        print("  --set " + " --set ".join(sets_of(x)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
