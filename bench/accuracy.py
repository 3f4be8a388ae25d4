#!/usr/bin/env python3
"""Predicted vs measured step time on this machine (issue: an honest accuracy figure).

For 2 and 4 ranks: calibrate once (shardline calibrate under mpirun), then for every
combination of the shipped host scenarios (FSDP, HSDP), comm fusion on/off and prefetch on/off:
simulate with the profile, run the same Program for real (shardline exec), and compare.
Prints one markdown table row per combination and the medians, and writes the rows as JSON.
Then, per base scenario (fused, prefetch), the same with an injected straggler (rank 1's compute
1.5x slower, `--straggler 1=1.5`: every rank predicted, the stand-ins slowed in the real run):
predicted vs measured step and straggler cost (step with the straggler / step without). The
symmetric and the straggler run alternate for --straggler-rounds rounds (default 6), each round
in the other order from the one before (symmetric first, then straggler first), so a slow spell
of the machine, or whatever the second of two launches gains or loses, falls on both kinds
alike; each run is its own mpirun launch, and on 2 cores a launch of 4 ranks varies by 10-15%
from the next, so rounds are what the measured cost's precision comes from. The measured step of each kind is the median of
all its rounds' iterations (an iteration's step: its slowest rank's first issue to last end, as
`exec` defines it), and the cost is the ratio of those two medians. The spread of the per-round
costs is printed beside it. With --straggler-calibration fresh, each straggler row is predicted
from a calibration taken right before its rounds (validate's order: calibrate, then run), not
from the one the table used minutes earlier.

  bench/accuracy.py [--binary build/release/cli/shardline] [--out out/accuracy]
                    [--iterations 10] [--warmup 2] [--repetitions 10] [--passes 3] [--straggler-rounds 6]
                    [--straggler-calibration shared|fresh] [--quick]

Nothing here is asserted: it measures. Timing is only meaningful on an otherwise idle machine.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, scenario file, ranks, --set overrides)
BASE = [
    ("FSDP 2", "host-tiny-fsdp.json", 2, []),
    ("FSDP 4", "host-tiny-fsdp.json", 4, ["mesh.shard=4", "cluster.gpus_per_node=4"]),
    ("HSDP 2x2", "host-tiny-hsdp.json", 4, []),
]
VARIANTS = [
    ("fused, prefetch", ["policy.comm_fusion=true", "policy.forward_prefetch=1", "policy.backward_prefetch=1"]),
    ("fused, no prefetch", ["policy.comm_fusion=true", "policy.forward_prefetch=0", "policy.backward_prefetch=0"]),
    ("unfused, prefetch", ["policy.comm_fusion=false", "policy.forward_prefetch=1", "policy.backward_prefetch=1"]),
    ("unfused, no prefetch", ["policy.comm_fusion=false", "policy.forward_prefetch=0", "policy.backward_prefetch=0"]),
]


def run(cmd, log):
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc not in (0, 1):  # compare exits 1 above its tolerance: that is a result, not a failure
        sys.exit(f"accuracy: {' '.join(cmd)} failed (exit {rc}); see {log}")
    return rc


def iteration_steps_us(timeline_path):
    """Each measured iteration's step time (us), as `exec` defines it: per rank, first issue to last
    end of that iteration; the iteration's step is its slowest rank's."""
    with open(timeline_path) as f:
        t = json.load(f)
    fields = t["interval_fields"]
    it, rk, issue, end = (fields.index(k) for k in ("iteration", "rank", "issue_us", "end_us"))
    span = {}
    for iv in t["intervals"]:
        key = (iv[it], iv[rk])
        lo, hi = span.get(key, (iv[issue], iv[end]))
        span[key] = (min(lo, iv[issue]), max(hi, iv[end]))
    steps = {}
    for (i, _), (lo, hi) in span.items():
        steps[i] = max(steps.get(i, 0.0), hi - lo)
    return [steps[i] for i in sorted(steps)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.environ.get("SHARDLINE", os.path.join(ROOT, "build/release/cli/shardline")))
    ap.add_argument("--out", default=os.path.join(ROOT, "out/accuracy"))
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=10, help="calibrate: repetitions per point")
    ap.add_argument("--passes", type=int, default=3, help="calibrate: whole calibrations, medians kept (as validate)")
    ap.add_argument("--straggler-rounds", type=int, default=6,
                    help="alternating symmetric / straggler runs per straggler row, iterations pooled")
    ap.add_argument("--straggler-calibration", choices=["fresh", "shared"], default="shared",
                    help="fresh: calibrate again right before each straggler row's rounds, as validate calibrates "
                         "right before its run; shared: predict them from the calibration the table used, minutes before")
    ap.add_argument("--quick", action="store_true", help="FSDP 2 ranks only, 3 iterations, 1 straggler round (a smoke run; overrides --iterations and --straggler-rounds)")
    args = ap.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"accuracy: no shardline binary at {args.binary} (build it, or pass --binary)")
    os.makedirs(args.out, exist_ok=True)
    base = BASE[:1] if args.quick else BASE
    iterations = 3 if args.quick else args.iterations
    rounds = 1 if args.quick else args.straggler_rounds
    if rounds < 1:
        sys.exit("accuracy: --straggler-rounds must be at least 1")

    def calibrate(np_, tag):
        prof = os.path.join(args.out, f"profile-{tag}.json")
        run([args.binary, "calibrate", "--np", str(np_), "--out", prof, "--max-bytes", "16MiB",
             "--repetitions", str(args.repetitions), "--passes", str(args.passes), "--quiet"], os.path.join(args.out, f"calibrate-{tag}.log"))
        return prof

    profiles = {np_: calibrate(np_, str(np_)) for np_ in sorted({b[2] for b in base})}

    rows = []
    for label, scenario, np_, sets in base:
        for vlabel, vsets in VARIANTS:
            name = f"{label}, {vlabel}"
            tag = name.replace(" ", "").replace(",", "_")
            d = os.path.join(args.out, tag)
            flags = []
            for s in sets + vsets:
                flags += ["--set", s]
            scen = os.path.join(ROOT, "scenarios", scenario)
            run([args.binary, "simulate", scen, *flags, "--profile", profiles[np_], "--out", d + "/predicted"],
                d + ".simulate.log")
            run([args.binary, "exec", scen, *flags, "--np", str(np_), "--iterations", str(iterations),
                 "--warmup", str(args.warmup), "--out", d + "/measured"], d + ".exec.log")
            run([args.binary, "compare", d + "/predicted", d + "/measured", "--out", d], d + ".compare.log")
            with open(os.path.join(d, "compare.json")) as f:
                c = json.load(f)
            row = {
                "name": name, "ranks": np_,
                "predicted_step_us": c["predicted_step_time_us"], "measured_step_us": c["measured_step_time_us"],
                "step_error": c["step_error"],
                "predicted_overlap": c["predicted_overlap_efficiency"], "measured_overlap": c["measured_overlap_efficiency"],
            }
            rows.append(row)
            print(f"{name:34s} predicted {row['predicted_step_us'] / 1e3:8.2f} ms  measured {row['measured_step_us'] / 1e3:8.2f} ms"
                  f"  error {100 * row['step_error']:+6.1f}%  overlap {row['predicted_overlap']:.2f} / {row['measured_overlap']:.2f}",
                  file=sys.stderr, flush=True)

    stragglers = []
    for label, scenario, np_, sets in base:
        vsets = VARIANTS[0][1]
        flags = []
        for s in sets + vsets:
            flags += ["--set", s]
        scen = os.path.join(ROOT, "scenarios", scenario)
        kinds = (("symmetric", []), ("straggler", ["--straggler", "1=1.5"]))
        profile = calibrate(np_, f"straggler-{label.replace(' ', '')}") if args.straggler_calibration == "fresh" else profiles[np_]
        predicted, measured, round_medians = {}, {}, {}
        for kind, extra in kinds:
            d = os.path.join(args.out, f"straggler-{label.replace(' ', '')}-{kind}")
            sim_extra = extra + (["--ranks", "all", "--trace-ranks", "all"] if extra else [])
            run([args.binary, "simulate", scen, *flags, *sim_extra, "--profile", profile, "--out", d + "/predicted"],
                d + ".simulate.log")
            with open(os.path.join(d, "predicted", "metrics.json")) as f:
                predicted[kind] = json.load(f)["step_time_us"]
            measured[kind], round_medians[kind] = [], []
        for r in range(rounds):
            for kind, extra in (kinds if r % 2 == 0 else kinds[::-1]):
                d = os.path.join(args.out, f"straggler-{label.replace(' ', '')}-{kind}")
                out = f"{d}/measured-{r + 1}"
                run([args.binary, "exec", scen, *flags, *extra, "--np", str(np_), "--iterations", str(iterations),
                     "--warmup", str(args.warmup), "--out", out], f"{d}.exec-{r + 1}.log")
                steps = iteration_steps_us(os.path.join(out, "timeline.json"))
                measured[kind] += steps
                round_medians[kind].append(statistics.median(steps))
        for kind, _ in kinds:  # the per-rank detail of the last round
            d = os.path.join(args.out, f"straggler-{label.replace(' ', '')}-{kind}")
            run([args.binary, "compare", d + "/predicted", f"{d}/measured-{rounds}", "--out", d], d + ".compare.log")
        p_sym, p_str = predicted["symmetric"], predicted["straggler"]
        m_sym, m_str = statistics.median(measured["symmetric"]), statistics.median(measured["straggler"])
        round_costs = [b / a for a, b in zip(round_medians["symmetric"], round_medians["straggler"])]
        row = {"name": f"{label}, straggler rank 1 x1.5", "ranks": np_, "rounds": rounds,
               "calibration": args.straggler_calibration,
               "predicted_step_us": p_str, "measured_step_us": m_str, "step_error": (p_str - m_str) / m_str,
               "predicted_cost": p_str / p_sym, "measured_cost": m_str / m_sym,
               # The symmetric runs of the same rounds against their own prediction: when this is
               # off by as much as the straggler step, the miss is the machine's, not the straggler's.
               "predicted_symmetric_step_us": p_sym, "measured_symmetric_step_us": m_sym,
               "symmetric_step_error": (p_sym - m_sym) / m_sym, "round_costs": round_costs}
        stragglers.append(row)
        print(f"{row['name']:34s} predicted {p_str / 1e3:8.2f} ms  measured {m_str / 1e3:8.2f} ms  error "
              f"{100 * row['step_error']:+6.1f}%  straggler cost {row['predicted_cost']:.2f} / {row['measured_cost']:.2f}"
              f"  (rounds {' '.join(f'{c:.2f}' for c in round_costs)})",
              file=sys.stderr, flush=True)

    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"\nMachine: {machine}; {iterations} measured iterations after {args.warmup} warm-up, median reported.\n")
    print("| configuration | ranks | predicted (ms) | measured (ms) | step error | overlap eff. predicted / measured |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['ranks']} | {r['predicted_step_us'] / 1e3:.2f} | {r['measured_step_us'] / 1e3:.2f} | "
              f"{100 * r['step_error']:+.1f}% | {r['predicted_overlap']:.2f} / {r['measured_overlap']:.2f} |")
    abs_err = [abs(r["step_error"]) for r in rows]
    ov_err = [abs(r["predicted_overlap"] - r["measured_overlap"]) for r in rows]
    print(f"\nmedian |step error| {100 * statistics.median(abs_err):.1f}% (max {100 * max(abs_err):.1f}%); "
          f"median |overlap error| {statistics.median(ov_err):.2f} (max {max(ov_err):.2f}); {len(rows)} configurations")
    print(f"\nInjected straggler (measured: median of {rounds} alternating rounds x {iterations} iterations per kind):\n")
    print("| configuration | ranks | predicted (ms) | measured (ms) | step error | straggler cost predicted / measured | "
          "per-round measured cost | symmetric runs of the rounds: predicted / measured (ms), error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in stragglers:
        print(f"| {r['name']} | {r['ranks']} | {r['predicted_step_us'] / 1e3:.2f} | {r['measured_step_us'] / 1e3:.2f} | "
              f"{100 * r['step_error']:+.1f}% | {r['predicted_cost']:.2f} / {r['measured_cost']:.2f} | "
              f"{' '.join(f'{c:.2f}' for c in r['round_costs'])} | "
              f"{r['predicted_symmetric_step_us'] / 1e3:.2f} / {r['measured_symmetric_step_us'] / 1e3:.2f}, "
              f"{100 * r['symmetric_step_error']:+.1f}% |")
    with open(os.path.join(args.out, "accuracy.json"), "w") as f:
        json.dump({"machine": machine, "rows": rows, "stragglers": stragglers}, f, indent=1)


if __name__ == "__main__":
    main()
