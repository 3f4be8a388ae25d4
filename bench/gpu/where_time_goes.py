#!/usr/bin/env python3
"""Where a measured one-GPU step's GPU time goes, by kind of kernel, beside shardline's kernel list.

Reads the GPU time per step by kernel name (trace_kernels.py's JSON of fsdp_step.py traces), groups
the names into kinds, and puts beside each kind what `shardline simulate` predicts for the same
configuration (the predicted trace's kernel slices, and its copy and optimizer ops), in ms per step.

  bench/gpu/where_time_goes.py RESULTS.jsonl KERNEL_SUMS.json [--preset P] [--set PATH=VALUE ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import predict  # noqa: E402

KINDS = ["GEMMs", "attention", "norms", "loss", "other memory-bound", "layout copies", "FSDP copies and casts",
         "fills", "optimizer and clipping"]


def measured_kind(cat, name):
    """The kind of a measured kernel, from its name (PyTorch 2.11, cuBLAS, cuDNN on Hopper)."""
    if cat == "gpu_memset" or "FillFunctor" in name:
        return "fills"
    if cat == "gpu_memcpy":
        return "FSDP copies and casts" if "DtoD" in name else "other memory-bound"
    if "nvjet" in name or "gemm" in name.lower() or "cutlass" in name:
        return "GEMMs"
    if "sdpa" in name or "flash" in name or "cudnn" in name:
        return "attention"
    if "FusedOptimizer" in name or "LpNorm" in name or "lpnorm" in name or "TensorListMetadata" in name \
            or "reciprocal" in name:
        return "optimizer and clipping"
    if "SoftMax" in name or "nll_loss" in name:
        return "loss"
    if "layer_norm" in name or "GammaBeta" in name or "rms_norm" in name.lower():
        return "norms"
    if "chunk_cat" in name or "bfloat16_copy_kernel" in name or "split_with_sizes" in name or "CatArray" in name:
        return "FSDP copies and casts"
    if "direct_copy" in name:
        # fp32 <-> bf16 casts are vectorised copies with a cast; the unvectorised ones make
        # strided views contiguous (the RoPE stack, the attention output's transpose)
        return "FSDP copies and casts" if "LoadWithCast" in name else "layout copies"
    return "other memory-bound"


def predicted_kind(name):
    base = name.removeprefix("recompute.").split(".")[0]
    if base in ("qkv", "wq", "wk", "wv", "attention_out", "mlp_gate", "mlp_up", "mlp_gate_up", "mlp_down", "output"):
        return "GEMMs"
    if base == "attention":
        return "attention"
    if base.endswith("norm"):
        return "norms"
    if base == "loss":
        return "loss"
    return "other memory-bound"


def predicted(binary, scenario, sets):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scenario.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        out = subprocess.run([binary, "simulate", path, "--out", os.path.join(tmp, "out")] + predict.set_flags(sets),
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(out.stderr.strip())
        with open(os.path.join(tmp, "out", "trace.json")) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ms = {k: 0.0 for k in KINDS}
    for e in events:
        if e.get("ph") != "X":
            continue
        args = e.get("args", {})
        if e.get("cat") == "kernel":
            ms[predicted_kind(e["name"])] += args.get("kernel_us", 0.0) / 1000.0
        elif args.get("kind") in ("copy_in", "copy_out"):
            ms["FSDP copies and casts"] += e["dur"] / 1000.0
        elif e["name"].split(" ")[0] in ("optimizer_step", "clip_grad_norm"):
            ms["optimizer and clipping"] += e["dur"] / 1000.0
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("sums")
    ap.add_argument("--binary", default=os.path.join(predict.ROOT, "build/release/cli/shardline"))
    ap.add_argument("--preset", default="h100-sxm-dgx")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    args = ap.parse_args()
    rows = {r["name"]: r for r in (json.loads(line) for line in open(args.results) if line.strip()) if "name" in r}
    for s in json.load(open(args.sums)):
        name = s["trace"].split(".json")[0]
        if name not in rows or "error" in rows[name]:
            continue
        meas = {k: 0.0 for k in KINDS}
        for k in s["kernels"]:
            meas[measured_kind(k["cat"], k["name"])] += k["us_per_step"] / 1000.0
        pred = predicted(args.binary, predict.scenario_of(rows[name], args.preset), args.set)
        print(f"{name} (step measured {rows[name]['step_ms_median']:.1f} ms; GPU busy {s['gpu_us_per_step'] / 1000:.1f} ms)")
        print(f"  {'kind':<24} {'predicted':>9} {'measured':>9}")
        for k in KINDS:
            print(f"  {k:<24} {pred[k]:9.1f} {meas[k]:9.1f}")
        print(f"  {'sum':<24} {sum(pred.values()):9.1f} {sum(meas.values()):9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
