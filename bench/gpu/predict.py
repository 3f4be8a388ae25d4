#!/usr/bin/env python3
"""shardline's prediction beside each measured one-GPU FSDP2 step of bench/gpu/fsdp_step.py.

Each measured row becomes the scenario it describes (scenario_of: the transformer shorthand with
the row's shape and architecture (rows that name none: RMSNorm, RoPE, SwiGLU, untied head), fp32
loss, the root group; the H100 preset
on one GPU, mesh shard 1; bf16 parameters, fp32 reduction, AdamW), is simulated, and printed as
predicted vs measured step time, tokens/s, peak allocated and peak reserved memory.

  bench/gpu/predict.py bench/gpu/h100_results.jsonl [--binary build/release/cli/shardline] [--preset P]

--set PATH=VALUE applies a scenario override to every row. --gate MAX prints each row's step error
as fit or check row (FIT_CONFIGS) and exits 1 when the check rows' mean |log(predicted /
measured)| is above MAX (CTest published.gpu_steps_*, with the -torch2.11 presets);
--memory-gate FRACTION also fails it when a row's peak allocated is missed by more than FRACTION
(CTest published.gpu_arch_steps_*).

--before predicts fsdp_step.py's CONFIGS without a measurement (read from that file, so no PyTorch
is needed here), to print and save (--save FILE, JSON lines) the predictions before a run:
  bench/gpu/predict.py --before --optimizer fused --preset h200-sxm-hgx --save predicted.jsonl
"""
import argparse
import ast
import functools
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GiB = 2.0 ** 30


@functools.lru_cache(maxsize=None)
def fsdp_step_source():
    """fsdp_step.py's dict constants (GPT, LLAMA) and configuration lists (CONFIGS, ARCH_CONFIGS),
    read from its source (it imports PyTorch): the lists are evaluated with only those constants
    and dict() in scope (`dict(GPT, bias=False)`)."""
    tree = ast.parse(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsdp_step.py")).read())
    names, lists = {}, {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        target = node.targets[0].id
        if target in ("GPT", "LLAMA"):
            names[target] = ast.literal_eval(node.value)
        elif target in ("CONFIGS", "ARCH_CONFIGS"):
            code = compile(ast.Expression(node.value), "fsdp_step.py", "eval")
            lists[target] = eval(code, {"__builtins__": {}}, dict(names, dict=dict))
    if "CONFIGS" not in lists or "LLAMA" not in names:
        raise SystemExit("fsdp_step.py: no CONFIGS or no LLAMA")
    return names, lists


def implementation_of(architecture):
    """How fsdp_step.py's Block runs an architecture, as scenario keys (its code, not recorded in
    the rows): SwiGLU blocks project q, k, v and gate, up separately (wq, wk, wv, w1, w3), GELU
    blocks through one Wqkv; RoPE is apply_rope, PyTorch ops on the halves in the activation dtype
    (rope_impl eager_stack). Norms are F.layer_norm / F.rms_norm: norm_impl fused (one kernel
    forward, two backward)."""
    out = {"projections": "separate" if architecture["mlp"] == "swiglu" else "fused"}
    if architecture["position"] == "rope":
        out["rope_impl"] = "eager_stack"
    return out


def scenario_of(row, preset):
    # A row that names no architecture is fsdp_step.py's Llama (its CONFIGS; rows measured before 2026-11-27).
    architecture = row["architecture"] if "architecture" in row else fsdp_step_source()[0]["LLAMA"]
    architecture = dict(architecture, **implementation_of(architecture))
    return {
        "name": row["name"],
        "model": {"transformer": dict({
            "layers": row["layers"], "hidden": row["hidden"], "ffn_hidden": row["ffn_hidden"], "heads": row["heads"],
            "kv_heads": row["kv_heads"], "vocab": row["vocab"], "seq_len": row["seq_len"],
            "micro_batch_size": row["micro_batch_size"], "activation_checkpointing": row["checkpointing"],
            "loss": "fp32"}, **architecture)},
        "cluster": {"preset": preset, "nodes": 1, "gpus_per_node": 1},
        "mesh": {"shard": 1},
        # The row's torch.optim.AdamW implementation (rows without one: foreach, its default);
        # fsdp_step.py deletes the logits before backward (`del logits`): output_lifetime loss.
        "policy": {"param_dtype": "bf16", "reduce_dtype": "fp32", "micro_batches": row.get("micro_batches", 1),
                   "optimizer_implementation": row.get("optimizer", "foreach"), "output_lifetime": "loss"},
    }


def set_flags(sets):
    """`--set PATH=VALUE` arguments for `shardline simulate`, one pair per override."""
    return [a for s in sets for a in ("--set", s)]


def simulate(binary, scenario, sets=()):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scenario, f)
        path = f.name
    try:
        out = subprocess.run([binary, "simulate", path, "--json"] + set_flags(sets), capture_output=True, text=True)
        if out.returncode != 0:
            return {"error": out.stderr.strip()}
        j = json.loads(out.stdout)
        return j.get("metrics", j)
    finally:
        os.unlink(path)


CONFIG_FIELDS = ("name", "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len", "micro_batch_size",
                 "checkpointing")


def configs():
    """fsdp_step.py's CONFIGS, then its ARCH_CONFIGS (CONFIGS' fields and the architecture, with
    micro_batches where the step accumulates gradients)."""
    lists = fsdp_step_source()[1]
    out = []
    for key, width in (("CONFIGS", len(CONFIG_FIELDS)), ("ARCH_CONFIGS", len(CONFIG_FIELDS) + 1)):
        for c in lists.get(key, []):
            if len(c) != width:
                raise SystemExit(f"fsdp_step.py {key} entry {c!r}: expected {width} fields ({', '.join(CONFIG_FIELDS)}"
                                 + (", architecture)" if width > len(CONFIG_FIELDS) else ")"))
            row = dict(zip(CONFIG_FIELDS, c))
            if width > len(CONFIG_FIELDS):  # the architecture, and micro_batches when it accumulates
                row["architecture"] = {k: v for k, v in c[-1].items() if k != "micro_batches"}
                row["micro_batches"] = c[-1].get("micro_batches", 1)
            out.append(row)
    return out


# The configurations fsdp_step.py had before 2026-11-26's second GPU session: the fit rows of the
# -torch2.11 presets' memory efficiency (fit_kernels.py --steps); the others are check rows.
FIT_CONFIGS = ("llama-1b-none", "llama-1b-full", "llama3-8b-shape-8-layers-full", "llama3-8b-shape-10-layers-full",
               "llama3-8b-shape-12-layers-full", "llama3-8b-shape-16-layers-full", "llama3-8b-shape-20-layers-full")


def own_alloc_retries(steps):
    """{configuration: allocator retries during its own run} for the rows that ran. Rows measured
    since 2026-11-26's second GPU session carry their own count (alloc_retries); before, only
    num_alloc_retries, which counts from the process start: a row's own is the rise, except after
    a configuration that ran out of memory (its retries land in the next row's count)."""
    own = {}
    before, failed_before = 0, False
    for r in steps:
        if "error" in r:
            failed_before = True
            continue
        total = r.get("num_alloc_retries") or 0
        own[r["name"]] = r["alloc_retries"] if "alloc_retries" in r else 0 if failed_before else total - before
        before, failed_before = total, False
    return own


def step_errors(steps, preset, sets, binary):
    """({configuration: predicted / measured step - 1}, {configuration: predicted / measured peak
    allocated - 1}) for each step row without allocator retries."""
    retries = own_alloc_retries(steps)
    errors, memory_errors = {}, {}
    for r in steps:
        if "error" in r or retries[r["name"]] > 0:
            continue
        m = simulate(binary, scenario_of(r, preset), sets)
        if "error" in m:
            raise SystemExit(f"{r['name']}: {m['error']}")
        errors[r["name"]] = m["step_time_us"] / 1000.0 / r["step_ms_median"] - 1
        memory_errors[r["name"]] = m["peak_memory_bytes"] / r["max_memory_allocated"] - 1
    return errors, memory_errors


def mean_abs_log_error(errors, fit):
    """Mean |log(predicted / measured)| over the fit rows (fit=True) or the check rows."""
    vals = [abs(math.log(1 + e)) for n, e in errors.items() if (n in FIT_CONFIGS) == fit]
    return sum(vals) / len(vals) if vals else float("nan")


def predict_before(args):
    print(f"predicted before measuring, preset {args.preset}, optimizer {args.optimizer}")
    print(f"{'configuration':<32} {'step (ms)':>10} {'tokens/s':>9} {'allocated GiB':>14} {'reserved GiB':>13} {'needed GiB':>11}")
    saved = []
    failed = 0
    for cfg in configs():
        m = simulate(args.binary, scenario_of(dict(cfg, optimizer=args.optimizer), args.preset), args.set)
        if "error" in m:
            print(f"{cfg['name']:<32} simulate failed: {m['error']}")
            failed += 1
            continue
        row = {"name": cfg["name"], "preset": args.preset, "optimizer": args.optimizer,
               "step_ms": m["step_time_us"] / 1000.0, "tokens_per_s": m["throughput"]["tokens_per_s"],
               "peak_memory_bytes": m["peak_memory_bytes"], "peak_reserved_bytes": m["peak_reserved_bytes"],
               "min_reserved_bytes": m["min_reserved_bytes"], "fits": m["fits_memory"],
               "allocator_cache_flushes": m["allocator_cache_flushes"]}
        saved.append(row)
        print(f"{cfg['name']:<32} {row['step_ms']:10.1f} {row['tokens_per_s']:9.0f} {row['peak_memory_bytes'] / GiB:14.1f} "
              f"{row['peak_reserved_bytes'] / GiB:13.1f} {row['min_reserved_bytes'] / GiB:11.1f}"
              + ("" if row["fits"] else "  does not fit") + ("  (flushes)" if row["allocator_cache_flushes"] else ""))
    if failed:  # predictions that are not all there are not saved as the record of a run to come
        print(f"predict.py: {failed} configuration(s) failed to simulate; nothing saved", file=sys.stderr)
        return 1
    if args.save:
        with open(args.save, "w") as f:
            for row in saved:
                f.write(json.dumps(row) + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/release/cli/shardline"))
    ap.add_argument("--preset", default="h100-sxm-dgx")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="a scenario override for every row, e.g. cluster.gpu.gemm_efficiency=0.72")
    ap.add_argument("--gate", type=float, default=None, metavar="MAX",
                    help="exit 1 when the check rows' mean |log(predicted / measured)| step time is above MAX")
    ap.add_argument("--memory-gate", type=float, default=None, metavar="FRACTION",
                    help="with --gate: also exit 1 when a row's predicted peak allocated misses the measured one "
                         "by more than FRACTION (every row, fit or check)")
    ap.add_argument("--before", action="store_true", help="predict fsdp_step.py's CONFIGS before measuring them")
    ap.add_argument("--optimizer", choices=["foreach", "fused"], default="foreach", help="with --before")
    ap.add_argument("--save", default="", help="with --before: write the predictions here (JSON lines)")
    args = ap.parse_args()
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        ap.error(f"--binary {args.binary}: no shardline binary there (build it, or give its path)")
    if args.save and not os.path.isdir(os.path.dirname(os.path.abspath(args.save))):
        ap.error(f"--save {args.save}: the folder {os.path.dirname(os.path.abspath(args.save))} does not exist")
    if args.memory_gate is not None and args.gate is None:
        ap.error("--memory-gate goes with --gate MAX")
    if args.before:
        if args.results:
            ap.error("--before predicts without a measurement: give no results file")
        return predict_before(args)
    if not args.results:
        ap.error("a results file, or --before")
    try:
        with open(args.results) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError as e:
        ap.error(f"{args.results}: {e.strerror}")
    except ValueError as e:
        ap.error(f"{args.results}: not JSON lines ({e})")
    if args.gate is not None:
        errors, memory_errors = step_errors(rows[1:], args.preset, args.set, args.binary)
        fit, check = mean_abs_log_error(errors, True), mean_abs_log_error(errors, False)
        for name, e in errors.items():
            print(f"{'fit  ' if name in FIT_CONFIGS else 'check'} {name:<40} step {e:+6.1%}  peak allocated {memory_errors[name]:+6.1%}")
        print(f"mean |log error|: fit rows {fit:.4f}, check rows {check:.4f} (gate {args.gate})")
        failed = check > args.gate
        if args.memory_gate is not None:
            worst = max(memory_errors, key=lambda n: abs(memory_errors[n]))
            print(f"peak allocated: worst {worst} {memory_errors[worst]:+.1%} (gate {args.memory_gate:.0%})")
            failed = failed or abs(memory_errors[worst]) > args.memory_gate
        return 1 if failed else 0
    env = rows[0].get("environment", {})
    print(f"measured on {env.get('gpu')}, PyTorch {env.get('torch')}, CUDA {env.get('cuda')}, NCCL {env.get('nccl')}")
    print(f"{'configuration':<32} {'step pred/meas (ms)':>20} {'error':>7}  {'allocated pred/meas GiB':>24}  "
          f"{'reserved pred/meas GiB':>23}  {'needed':>6}  {'meas reserved/active-1':>22}")
    retries = own_alloc_retries(rows[1:])
    failed = 0
    for r in rows[1:]:
        if "error" in r:
            print(f"{r['name']:<32} measured run failed: {r['error']}")
            continue
        m = simulate(args.binary, scenario_of(r, args.preset), args.set)
        if "error" in m:
            print(f"{r['name']:<32} simulate failed: {m['error']}")
            failed += 1
            continue
        pred_ms = m["step_time_us"] / 1000.0
        meas_ms = r["step_ms_median"]
        frag = r["max_memory_reserved"] / r["active_bytes_peak"] - 1
        print(f"{r['name']:<32} {pred_ms:9.1f} / {meas_ms:8.1f} {100 * (pred_ms / meas_ms - 1):+6.1f}%  "
              f"{m['peak_memory_bytes'] / GiB:11.1f} / {r['max_memory_allocated'] / GiB:10.1f}  "
              f"{m['peak_reserved_bytes'] / GiB:10.1f} / {r['max_memory_reserved'] / GiB:10.1f}  "
              f"{m['min_reserved_bytes'] / GiB:6.1f}  {frag:22.3f}"
              + ("  (flushes predicted)" if m.get("allocator_cache_flushes") else "")
              + (f"  (alloc retries measured: {retries[r['name']]})" if retries[r["name"]] else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
