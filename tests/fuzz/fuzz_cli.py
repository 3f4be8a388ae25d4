#!/usr/bin/env python3
"""Seeded mutation fuzzer for shardline's command line: holds the promise on bad input.

It mutates the shipped scenarios, a cluster profile, and the timeline.json / metrics.json of a
fresh `simulate --out` run, feeds each mutant to the command that reads it (simulate, schedule,
sweep, simulate --profile, simulate --set, compare, regress, track; and a generated profiler
trace to import, with and without a scenario, and an imported run to calibrate --from-trace) and fails when any run

  - exits with a code the command does not document (0 or 2; compare and regress may say 1),
  - dies of a signal (abort, segfault, sanitizer report),
  - uses more than --max-seconds of CPU time (or runs four times that on the clock), or grows
    beyond --max-rss-mb of resident memory,
  - prints an error of more than three lines, or one that is not "shardline <cmd>: error: ...",
    or one with nlohmann's raw "[json.exception...]" text, or (for scenario inputs) one naming an
    internal Program field (ops[N], static_memory_bytes) instead of the scenario key,
  - leaves a temporary output folder behind (".<name>.tmp-*").

Deterministic from --seed: the same seed makes the same mutants in the same order. Failing
mutants are saved under --keep (default: a temporary folder named in the report) with the
command that ran them. Only the Python standard library is used.

    tests/fuzz/fuzz_cli.py --binary build/release/cli/shardline [--seed 1] [--count 2000]
                           [--jobs 2] [--max-seconds 15] [--max-rss-mb 1024]
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Values a hostile or careless user writes: extremes of every JSON number kind, wrong types,
# unit strings at the edges of what parses, empty and odd text.
NUMBERS = [0, -1, 1, 2, 3, 7, 33, 1000, 2**31 - 1, 2**31, 2**32 + 1, 2**53 + 1, 2**62, 2**63 - 1, -(2**63),
           10**30, 1e18, 1e300, 1e-300, -1e300, 0.5, -0.5, 1e-9, 0.999999, 1.0000001, 4096.5]
STRINGS = ["", "x", "unit", "none", "full", "1e300s", "0s", "-5us", "1e-300us", "nan", "inf", "1e300B/s",
           "1e-300B/s", "0B/s", "1B/s", "64MiB", "0MiB", "1EiB", "16EiB", "99999999999999999999B", "-64MiB",
           "1.5.5GB/s", "GB/s", "5", "1e309", "9" * 400, "\u00e9\u00e8\u0001", "../../etc/passwd", "a/../../b",
           "bf16", "fp8", "fp64", "h100-sxm-dgx", "no-such-preset", "/dev/zero", "/tmp", "/"]
OTHERS = [True, False, None, [], {}, [1, 2, 3], {"x": 1}]
# Raw text spliced into the document: numbers JSON cannot hold in a double, nesting, NaN.
RAW = ["1e400", "-1e400", "NaN", "Infinity", "18446744073709551616", "-9223372036854775809",
       "[" * 5000 + "]" * 5000, "{\"a\":" * 3000 + "1" + "}" * 3000, "0.1e-400", "\"\\ud800\""]
# Scenario paths worth setting with --set (leaves that exist, and a few that do not).
SET_PATHS = ["model.transformer.layers", "model.transformer.hidden", "model.transformer.seq_len",
             "model.transformer.micro_batch_size", "model.transformer.vocab", "policy.bucket_bytes",
             "policy.micro_batches", "policy.forward_prefetch", "policy.backward_prefetch",
             "policy.optimizer_bytes_per_param", "policy.reshard_after_forward", "cluster.gpu.efficiency",
             "cluster.gpu.memory", "cluster.gpu.copy_bandwidth", "cluster.intra_node.bandwidth",
             "cluster.intra_node.latency", "cluster.inter_node.latency", "cluster.launch_overhead",
             "cluster.nodes", "mesh.shard", "mesh.replicate", "run.memory_margin", "name", "description",
             "cluster.file", "model.units.0.params", "model.units.0.forward_time", "model.units.0.repeat",
             "model.units.0.activation_bytes", "cluster.gpu.kernel_launch", "cluster.event_latency"]


# Fields of the Program the scheduler makes: a scenario's error must name the scenario key
# that caused it, never these.
INTERNAL_FIELD = re.compile(r"\bops\[\d+\]|static_memory_bytes|\bcompute_us\b")


# ---- mutations --------------------------------------------------------------------------------

def paths_of(node, prefix=()):
    """Every path into a JSON tree (object keys and array indices), the root excluded."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append(prefix + (k,))
            out += paths_of(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append(prefix + (i,))
            out += paths_of(v, prefix + (i,))
    return out


def get(node, path):
    for p in path:
        node = node[p]
    return node


def random_value(rng, old):
    r = rng.random()
    if isinstance(old, (int, float)) and not isinstance(old, bool) and r < 0.35:
        factor = rng.choice([-1, 0, 1e-9, 1e-3, 1e3, 1e6, 1e9, 1e15, 2**20, 2**40])
        v = old * factor
        return int(v) if isinstance(old, int) and abs(v) < 2**64 else v
    if isinstance(old, str) and r < 0.35:
        return rng.choice([old + "x", old[:-1], old * 3, "1e300" + old.lstrip("0123456789."), "-" + old,
                           "0.000000001" + old.lstrip("0123456789."), old.upper()])
    pool = rng.choice([NUMBERS, STRINGS, OTHERS])
    return copy.deepcopy(rng.choice(pool))


def mutate_tree(rng, doc):
    """One to three structural mutations of a parsed JSON document."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        paths = paths_of(doc)
        if not paths:
            return rng.choice(OTHERS + NUMBERS)
        path = rng.choice(paths)
        parent = get(doc, path[:-1])
        key = path[-1]
        op = rng.random()
        if op < 0.6:
            parent[key] = random_value(rng, parent[key])
        elif op < 0.72:
            del parent[key]
        elif op < 0.8 and isinstance(parent, dict):
            parent[rng.choice([str(key) + "s", "extra", str(key)[:-1] or "k"])] = random_value(rng, None)
        elif op < 0.9 and isinstance(parent[key], list) and parent[key]:
            # At most 200,000 elements: a trace's 1,300 events repeated 1,000 times would grow this
            # process to 1 GB, and a child's peak memory includes its parent's at exec (Linux).
            factor = rng.choice([2, 10, 1000])
            while factor > 2 and len(parent[key]) * factor > 200_000:
                factor //= 10
            parent[key] = parent[key] * factor
        else:
            other = get(doc, rng.choice(paths)) if paths else None
            parent[key] = copy.deepcopy(other)
    return doc


def mutate_text(rng, text):
    """Byte-level damage: truncation, a spliced raw token, a flipped byte."""
    op = rng.random()
    if op < 0.3:
        return text[: rng.randrange(len(text) + 1)]
    if op < 0.8:
        # Replace one number in the text with a raw token JSON parsers treat specially.
        digits = [i for i, c in enumerate(text) if c.isdigit() and (i == 0 or not text[i - 1].isalnum())]
        if digits:
            i = rng.choice(digits)
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] in ".eE+-"):
                j += 1
            return text[:i] + rng.choice(RAW) + text[j:]
    i = rng.randrange(len(text)) if text else 0
    return text[:i] + chr(rng.randrange(1, 256)) + text[i + 1:]


def mutant_text(rng, doc, text):
    if rng.random() < 0.8:
        return json.dumps(mutate_tree(rng, doc), indent=1)
    return mutate_text(rng, text)


# ---- cases ------------------------------------------------------------------------------------

class Corpus:
    def __init__(self, binary, work):
        self.scenarios = sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json")))
        self.profile = os.path.join(HERE, "corpus", "profile-host.json")
        self.host = os.path.join(ROOT, "scenarios", "host-tiny-fsdp.json")
        # A real simulate run: its timeline and metrics are what compare, regress and track read.
        self.run_dir = os.path.join(work, "seed-run")
        proc = subprocess.run([binary, "simulate", self.host, "--out", self.run_dir], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"fuzz_cli.py: the seed run failed: {proc.stderr.strip()}")
        # Profiler traces of the same scenario (scripts/fsdp2-trace) and their import: what
        # import and calibrate --from-trace read.
        every = os.path.join(work, "seed-every-rank")
        self.traces = os.path.join(work, "seed-traces")
        self.imported = os.path.join(work, "seed-imported")
        for argv in ([binary, "simulate", self.host, "--ranks", "all", "--trace-ranks", "all", "--out", every],
                     [sys.executable, os.path.join(ROOT, "scripts", "fsdp2-trace"), every, "--out", self.traces,
                      "--iterations", "1", "--plain"],
                     [binary, "import", os.path.join(self.traces, "rank-0.json"), os.path.join(self.traces, "rank-1.json"),
                      "--scenario", self.host, "--out", self.imported]):
            proc = subprocess.run(argv, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"fuzz_cli.py: the seed traces failed: {' '.join(argv)}: {proc.stderr.strip()}")
        self.texts = {p: open(p, encoding="utf-8").read() for p in self.scenarios + [self.profile]}
        for p in (os.path.join(self.run_dir, "timeline.json"), os.path.join(self.run_dir, "metrics.json"),
                  os.path.join(self.traces, "rank-0.json"), os.path.join(self.imported, "timeline.json")):
            self.texts[p] = open(p, encoding="utf-8").read()
        self.docs = {p: json.loads(t) for p, t in self.texts.items()}


def make_case(rng, corpus, case_dir):
    """One mutant: files written into case_dir, the argv to run, and the exit codes allowed."""
    os.makedirs(case_dir)
    kind = rng.choices(["simulate", "schedule", "simulate-out", "set", "sweep", "profile", "compare", "regress", "track",
                        "import", "import-scenario", "calibrate-trace"],
                       weights=[30, 6, 6, 18, 4, 8, 12, 8, 8, 6, 6, 4])[0]

    def write(name, src):
        path = os.path.join(case_dir, name)
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(mutant_text(rng, corpus.docs[src], corpus.texts[src]))
        return path

    if kind in ("simulate", "schedule", "simulate-out", "sweep"):
        src = rng.choice(corpus.scenarios)
        scen = write("scenario.json", src)
        if kind == "simulate":
            return kind, ["simulate", scen, "--json"], {0, 2}
        if kind == "schedule":
            return kind, ["schedule", scen], {0, 2}
        if kind == "simulate-out":
            return kind, ["simulate", scen, "--out", os.path.join(case_dir, "out")], {0, 2}
        axis = rng.choice(["policy.forward_prefetch=0..1", "policy.micro_batches=1..4:x2", "policy.comm_fusion=true,false"])
        return kind, ["sweep", scen, "--vary", axis, "--out", os.path.join(case_dir, "sweep")], {0, 2}
    if kind == "set":
        src = rng.choice(corpus.scenarios)
        args = ["simulate", src, "--json"]
        for _ in range(rng.choice([1, 1, 2])):
            value = random_value(rng, None)
            text = value if isinstance(value, str) else json.dumps(value)
            if rng.random() < 0.15:
                text = rng.choice(RAW)
            args += ["--set", f"{rng.choice(SET_PATHS)}={text}"]
        return kind, args, {0, 2}
    if kind == "profile":
        prof = write("profile.json", corpus.profile)
        return kind, ["simulate", corpus.host, "--profile", prof, "--json"], {0, 2}
    if kind == "compare":
        meas = os.path.join(case_dir, "measured")
        os.makedirs(meas)
        shutil.copy(os.path.join(corpus.run_dir, "metrics.json"), meas)
        with open(os.path.join(meas, "timeline.json"), "w", encoding="utf-8", errors="surrogatepass") as f:
            src = os.path.join(corpus.run_dir, "timeline.json")
            f.write(mutant_text(rng, corpus.docs[src], corpus.texts[src]))
        return kind, ["compare", corpus.run_dir, meas, "--out", os.path.join(case_dir, "cmp")], {0, 1, 2}
    if kind in ("import", "import-scenario"):
        trace = write("rank-0.json", os.path.join(corpus.traces, "rank-0.json"))
        if kind == "import":
            return kind, ["import", trace, "--json"], {0, 2}
        return kind, ["import", trace, os.path.join(corpus.traces, "rank-1.json"), "--scenario", corpus.host,
                      "--out", os.path.join(case_dir, "imported")], {0, 2}
    if kind == "calibrate-trace":
        run = os.path.join(case_dir, "run")
        os.makedirs(run)
        src = os.path.join(corpus.imported, "timeline.json")
        with open(os.path.join(run, "timeline.json"), "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(mutant_text(rng, corpus.docs[src], corpus.texts[src]))
        return kind, ["calibrate", "--from-trace", run, "--out", os.path.join(case_dir, "profile.json")], {0, 2}
    metrics = write("metrics.json", os.path.join(corpus.run_dir, "metrics.json"))
    if kind == "regress":
        base = os.path.join(corpus.run_dir, "metrics.json")
        return kind, ["regress", "--baseline", base, "--current", metrics], {0, 1, 2}
    hist = os.path.join(case_dir, "history.jsonl")
    return kind, ["track", metrics, "--history", hist, "--commit", "fuzz", "--scenario", "fuzz",
                  "--html", os.path.join(case_dir, "trend.html")], {0, 2}


def run_case(binary, argv, cwd, max_seconds):
    """Runs one case; returns (status, rss_kb, cpu_seconds, stdout, stderr). status: the exit
    code, -N for signal N, None when it ran over four times max_seconds of wall-clock time (then
    its process group is killed). The time limit itself is on CPU time (user + system), which
    other load on the machine does not inflate."""
    start = time.monotonic()
    with open(os.path.join(cwd, ".stdout"), "w+b") as out, open(os.path.join(cwd, ".stderr"), "w+b") as err:
        proc = subprocess.Popen([binary] + argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        # Reap it ourselves with wait4, which also gives its peak resident memory.
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() - start > 4 * max_seconds:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = usage.ru_utime + usage.ru_stime
        out.seek(0)
        err.seek(0)
        return (None if timed_out else proc.returncode), usage.ru_maxrss, seconds, out.read(), err.read()


def check_case(kind, argv, allowed, result, case_dir, limits):
    status, rss_kb, seconds, out, err = result
    problems = []
    err_text = err.decode("utf-8", "replace")
    if status is None:
        problems.append(f"still running after {4 * limits['seconds']} s")
    elif seconds > limits["seconds"]:
        problems.append(f"used {seconds:.1f} s of CPU, over {limits['seconds']} s")
    elif status < 0:
        problems.append(f"killed by signal {-status} ({signal.Signals(-status).name})")
    elif status not in allowed:
        problems.append(f"exit code {status} (allowed: {sorted(allowed)})")
    if rss_kb > limits["rss_mb"] * 1024:
        problems.append(f"peak resident memory {rss_kb // 1024} MB over {limits['rss_mb']} MB")
    if status == 2:
        lines = err_text.strip().splitlines()
        if len(lines) > 3:
            problems.append(f"error message of {len(lines)} lines")
        elif not lines or not lines[0].startswith(f"shardline {argv[0]}: error: "):
            problems.append("exit 2 without a 'shardline <cmd>: error:' message")
    if "runtime error:" in err_text or "AddressSanitizer" in err_text:
        problems.append("sanitizer report")
    if "[json.exception" in err_text:
        problems.append("nlohmann's raw exception text in the message")
    if kind not in ("compare", "regress", "track", "calibrate-trace") and INTERNAL_FIELD.search(err_text):
        problems.append("the message names an internal Program field, not the scenario key")
    left = glob.glob(os.path.join(case_dir, ".*.tmp-*")) + glob.glob(os.path.join(case_dir, "*", ".*.tmp-*"))
    if left:
        problems.append(f"temporary output left behind: {os.path.basename(left[0])}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/release/cli/shardline"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-seconds", type=float, default=15.0)
    ap.add_argument("--max-rss-mb", type=int, default=1024)
    ap.add_argument("--keep", help="save failing mutants here (default: a new temporary folder)")
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)  # the cases run inside their own folders
    if not os.access(args.binary, os.X_OK):
        print(f"fuzz_cli.py: no shardline binary at {args.binary}", file=sys.stderr)
        return 2
    limits = {"seconds": args.max_seconds, "rss_mb": args.max_rss_mb}
    work = tempfile.mkdtemp(prefix="shardline-fuzz-")
    keep = args.keep or tempfile.mkdtemp(prefix="shardline-fuzz-failures-")
    try:
        corpus = Corpus(args.binary, work)
        rng = random.Random(args.seed)
        cases = []
        for i in range(args.count):
            case_dir = os.path.join(work, f"case-{i:05d}")
            cases.append((i, case_dir) + make_case(rng, corpus, case_dir))

        def one(case):
            i, case_dir, kind, argv, allowed = case
            result = run_case(args.binary, argv, case_dir, args.max_seconds)
            problems = check_case(kind, argv, allowed, result, case_dir, limits)
            return case, result, problems

        started = time.monotonic()
        failures, by_kind, codes = [], {}, {}
        slowest, largest = (0.0, None), (0, None)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for case, result, problems in pool.map(one, cases):
                i, case_dir, kind, argv, allowed = case
                by_kind[kind] = by_kind.get(kind, 0) + 1
                codes[result[0]] = codes.get(result[0], 0) + 1
                slowest = max(slowest, (result[2], i), key=lambda x: x[0])
                largest = max(largest, (result[1], i), key=lambda x: x[0])
                if problems:
                    dest = os.path.join(keep, os.path.basename(case_dir))
                    shutil.copytree(case_dir, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("out", "sweep", "cmp"))
                    with open(os.path.join(dest, "command.txt"), "w") as f:
                        f.write(" ".join([args.binary] + argv) + "\n")
                        f.write(result[4].decode("utf-8", "replace")[-4000:])
                    failures.append((i, kind, problems, dest))
                shutil.rmtree(case_dir, ignore_errors=True)
        elapsed = time.monotonic() - started
        print(f"fuzz_cli: seed {args.seed}, {len(cases)} mutants in {elapsed:.1f} s "
              f"({', '.join(f'{k} {n}' for k, n in sorted(by_kind.items()))}); exit codes "
              f"{', '.join(f'{c}: {n}' for c, n in sorted(codes.items(), key=lambda x: str(x[0])))}")
        print(f"fuzz_cli: slowest run {slowest[0]:.2f} s of CPU (case {slowest[1]}), largest {largest[0] // 1024} MB resident "
              f"(case {largest[1]}); limits {args.max_seconds} s, {args.max_rss_mb} MB")
        for i, kind, problems, dest in failures[:40]:
            print(f"FAIL case {i} ({kind}): {'; '.join(problems)}  [{dest}]")
        if failures:
            print(f"fuzz_cli: {len(failures)} of {len(cases)} mutants broke the promise; mutants kept in {keep}")
            return 1
        print(f"fuzz_cli: {len(cases)} passed, 0 failed")
        shutil.rmtree(keep, ignore_errors=True)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
