#!/usr/bin/env python3
"""Import round trip (docs/import.md): simulate a scenario with every rank kept, write the
FSDP2-shaped profiler traces of that run (scripts/fsdp2-trace), import them against the same
scenario, and require the imported timeline to equal the known answer exactly: every op of
every rank and iteration, issue, start and end. Then `shardline compare` of the simulated and
the imported run must find no step-time error. Last, `calibrate --from-trace` on the imported
run and `simulate --profile` must predict that run's step time within 3%.

    import_roundtrip.py --binary SHARDLINE --scenario S.json --work DIR [--set PATH=VALUE ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))

p = argparse.ArgumentParser()
p.add_argument("--binary", required=True)
p.add_argument("--scenario", required=True)
p.add_argument("--work", required=True)
p.add_argument("--set", action="append", default=[])
p.add_argument("--plain", action="store_true")
p.add_argument("--realistic", action="store_true", help="scripts/fsdp2-trace --realistic: extra work the report must count")
p.add_argument("--root-units", default="", help="scripts/fsdp2-trace --root-units: the root module's units, without an FQN")
p.add_argument("--reverse-events", action="store_true",
               help="write every trace's events in reverse file order (with --plain): the import must not depend on it")
p.add_argument("--what-if", help="PATH=VALUE: predicted from the profile, within 3%% of the model the traces came from")
a = p.parse_args()
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
sets = sum((["--set", s] for s in a.set), [])


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (r.returncode, " ".join(cmd), r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


sim, gen, imp = (os.path.join(a.work, d) for d in ("sim", "traces", "imported"))
run([a.binary, "simulate", a.scenario, "--ranks", "all", "--trace-ranks", "all", "--out", sim] + sets)
run([sys.executable, os.path.join(repo, "scripts", "fsdp2-trace"), sim, "--out", gen, "--iterations", "3"]
    + (["--plain"] if a.plain else []) + (["--realistic"] if a.realistic else [])
    + (["--root-units", a.root_units] if a.root_units else []))
traces = sorted(os.path.join(gen, f) for f in os.listdir(gen) if f.startswith("rank-"))


def top_level_events(text):
    """The traceEvents array's entries as text (a JSON library would round the 19-digit times)."""
    begin = text.index('"traceEvents": [') + len('"traceEvents": [')
    entries, depth, start, in_string, escaped = [], 0, begin, False, False
    for i in range(begin, len(text)):
        c = text[i]
        if in_string:
            escaped, in_string = (False, in_string) if escaped else (c == "\\", c != '"')
            continue
        if c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            if depth == 0:
                entries.append(text[start:i].strip())
                return text[:begin], entries, text[i:]
            depth -= 1
        elif c == "," and depth == 0:
            entries.append(text[start:i].strip())
            start = i + 1
    raise SystemExit("FAILED: no end of traceEvents")


if a.reverse_events:
    for path in traces:
        head, entries, tail = top_level_events(open(path).read())
        open(path, "w").write(head + ", ".join(reversed([e for e in entries if e])) + tail)
out = run([a.binary, "import"] + traces + ["--scenario", a.scenario, "--out", imp] + sets)
expected = json.load(open(os.path.join(gen, "expected-timeline.json")))
got = json.load(open(os.path.join(imp, "timeline.json")))
want, have = sorted(map(tuple, expected["intervals"])), sorted(map(tuple, got["intervals"]))
if want != have:
    diff = [(w, h) for w, h in zip(want, have) if w != h][:5]
    sys.exit("FAILED: the imported timeline differs from the known answer (%d vs %d intervals); first differences "
             "(op, rank, iteration, issue, start, end) expected vs imported: %s" % (len(want), len(have), diff))
for key in ("iterations", "reported_iteration", "ranks", "source", "backend"):
    if expected[key] != got[key]:
        sys.exit("FAILED: %s: expected %r, imported %r" % (key, expected[key], got[key]))
report = json.load(open(os.path.join(imp, "import.json")))
extra = {what: n["count"] for what, n in report["not_in_program"].items()}
want_extra = json.load(open(os.path.join(gen, "expected-report.json")))["not_in_program"]
if report["unmatched_steps"] or report["markers_from_stream_order"] or extra != want_extra:
    sys.exit("FAILED: the import report is not the expected one (GPU work not in the Program: expected %s): %s"
             % (json.dumps(want_extra), json.dumps(report)))
run([a.binary, "compare", sim, imp, "--tolerance", "0.0001", "--out", os.path.join(a.work, "compare")])
# The traces' [memory] events carry the allocator's running totals in issue order (scripts/
# fsdp2-trace): the import keeps their peak over the reported step exactly, and compare holds the
# prediction's peak against it. (The two are not equal on every case: the totals run in the
# order the markers are issued, the simulator's memory in the order they happen on their streams;
# on the HSDP cases the traces' peak is 2-4% below the simulated one. Not checked here.)
want_peak = json.load(open(os.path.join(gen, "expected-report.json")))["allocator_peak_allocated_bytes"]
mem = json.load(open(os.path.join(a.work, "compare", "compare.json")))["allocator_memory"]
if mem is None or mem["measured_peak_allocated_bytes"] != want_peak:
    sys.exit("FAILED: the allocator's peak over the reported step: expected %d, compare has %s" % (want_peak, json.dumps(mem)))

# Calibrated from the imported run, the simulator predicts that same run again: its step time
# within 3% (the profile's tables are medians per size and alpha-beta between them).
profile = os.path.join(a.work, "profile.json")
run([a.binary, "calibrate", "--from-trace", imp, "--out", profile])
again = os.path.join(a.work, "predicted-from-profile")
run([a.binary, "simulate", a.scenario, "--profile", profile, "--out", again] + sets)
measured = json.load(open(os.path.join(sim, "metrics.json")))["step_time_us"]
predicted = json.load(open(os.path.join(again, "metrics.json")))["step_time_us"]
error = predicted / measured - 1
if abs(error) > 0.03:
    sys.exit("FAILED: calibrated on the imported run, the prediction of that run is off by %.1f%% (%.0f vs %.0f us)"
             % (100 * error, predicted, measured))
print("ok: %d intervals of %d ranks x %d iterations imported exactly; re-predicted from its profile within %+.2f%%"
      % (len(have), got["ranks"], got["iterations"], 100 * error))

# A what-if (e.g. another bucket size) predicted from that profile agrees with the model the
# traces were generated from: the profile carries the run's costs, not the run's shape.
if a.what_if:
    steps = []
    for extra in (["--profile", profile], []):
        out_dir = os.path.join(a.work, "what-if-%s" % ("profile" if extra else "model"))
        run([a.binary, "simulate", a.scenario, "--set", a.what_if, "--out", out_dir] + extra + sets)
        steps.append(json.load(open(os.path.join(out_dir, "metrics.json")))["step_time_us"])
    error = steps[0] / steps[1] - 1
    if abs(error) > 0.03:
        sys.exit("FAILED: what-if %s: from the profile %.0f us, from the model %.0f us (%+.1f%%)"
                 % (a.what_if, steps[0], steps[1], 100 * error))
    print("ok: what-if %s from the profile within %+.2f%% of the model" % (a.what_if, 100 * error))
