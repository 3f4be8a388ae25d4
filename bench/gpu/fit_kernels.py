#!/usr/bin/env python3
"""Fits the compute model's chip parameters on kernel microbenchmarks (bench/gpu/kernels.py): a
parameter set for the software those kernels ran on.

The rule, committed before the first kernel was measured (2026-11-26, 6378c36):
  - memory_efficiency and kernel_launch together, on the memory rows (elementwise ops, casts,
    RMSNorm, the fp32 loss, embedding, AdamW; every size): time = bytes / (hbm x efficiency) +
    launch;
  - gemm_efficiency and gemm_half_dim on the GEMM rows (all shapes and passes), with the fitted
    memory_efficiency and launch in the roofline: time = max(flops / (peak x gemm_efficiency x
    d / (d + half_dim)), bytes / (hbm x memory_efficiency)) + launch;
  - attention_efficiency on the attention rows (forward and backward, the model's FLOP
    convention), likewise. Changed 2026-11-27, after that one number's misses were seen (forward
    at long sequences up to 37% faster, backward at s = 512 up to 60% slower): the attention
    rows fit five numbers together, forward and backward efficiency, forward and backward half
    sequence, half head dimension (core/compute_model.h), on the same rows only;
  - copy_bandwidth on the copy rows (FSDP2's foreach copy, split_with_sizes_copy, chunk_cat):
    bytes copied / (time - launch).
Each objective is the mean |log(predicted / measured)| over its rows, minimised on a grid refined
twice. peak (dense bf16) and hbm are the preset's datasheet numbers. --compute takes the GEMM and
attention rows from another file (kernels.py --cool-ms: each call at boost clock), for comparison.

Added after the kernel-only predictions were seen (docs/benchmarks.md, "Current software"): with
--steps RESULTS --preset P, memory_efficiency is refitted on measured one-GPU steps, as the
published-runs fit does (bench/published/fit.py): with the kernel-fitted GEMM, attention, launch
and copy numbers held, one memory efficiency absorbs what the kernel list does not name (eager
PyTorch's layout copies, unfused elementwise pieces, host gaps). Fit rows: the configurations
fsdp_step.py had before 2026-11-26's second GPU session (predict.FIT_CONFIGS); check rows: the four
added then, which no fit reads. Rows with allocator retries (cache flushes, whose cost the model
does not have) are left out of both. --check-preset NAME then exits 1 unless that preset in
core/cluster_presets.cpp carries exactly the fitted values (CTest published.gpu_presets_fit_*).

  bench/gpu/fit_kernels.py KERNELS.jsonl [--compute BOOST.jsonl] [--peak-tflops 989] [--hbm-tb-s 4.8]
                           [--steps RESULTS.jsonl --preset P [--check-preset NAME]] [--rows]
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import predict  # noqa: E402


def mean_abs_log(pairs):
    return sum(abs(math.log(p / m)) for p, m in pairs) / len(pairs)


def grid_min(f, bounds, points=21, rounds=3):
    """Minimises f over a box by a grid, shrunk around the best point each round."""
    lo = [b[0] for b in bounds]
    hi = [b[1] for b in bounds]
    best = None
    for _ in range(rounds):
        axes = [[l + (h - l) * i / (points - 1) for i in range(points)] for l, h in zip(lo, hi)]
        candidates = [[]]
        for axis in axes:
            candidates = [c + [v] for c in candidates for v in axis]
        for x in candidates:
            v = f(x)
            if best is None or v < best[1]:
                best = (x, v)
        span = [(h - l) / (points - 1) * 2 for l, h in zip(lo, hi)]
        lo = [max(b[0], x - s) for x, s, b in zip(best[0], span, bounds)]
        hi = [min(b[1], x + s) for x, s, b in zip(best[0], span, bounds)]
    return best


def model_bytes(row):
    """A row's bytes as the compute model counts that kernel. The committed files recorded RMSNorm's
    backward at 3 bytes per 16-bit element (x, dy, dx); since the twenty-sixth session (2026-11-27) the model counts 5 (the
    weight gradient's kernel reads x and dy again, core/kernels.cpp), and kernels.py records 5."""
    if row.get("op") == "rms_norm_bwd" and row.get("time_us", 0) > 0:
        row = dict(row, bytes=5 * 2 * row["tokens"] * row["hidden"])
        row["gb_per_s"] = row["bytes"] / row["time_us"] / 1e3
    return row


def fit(rows, peak, hbm):
    mem = [r for r in rows if r["kind"] == "memory" and "time_us" in r and r["time_us"] > 0]
    gemm = [r for r in rows if r["kind"] == "gemm"]
    attn = [r for r in rows if r["kind"] == "attention" and r["time_us"] > 0]
    copies = [r for r in rows if r["kind"] == "copy" and "time_us" in r]

    def mem_time(b, em, launch):
        return b / (hbm * em) * 1e6 + launch

    (em, launch), mem_err = grid_min(lambda x: mean_abs_log([(mem_time(r["bytes"], x[0], x[1]), r["time_us"]) for r in mem]),
                                     [(0.2, 1.0), (0.0, 30.0)])

    def gemm_time(r, eg, half):
        d = r["min_dim"]
        return max(r["flops"] / (peak * eg * d / (d + half)) * 1e6, r["bytes"] / (hbm * em) * 1e6) + launch

    (eg, half), gemm_err = grid_min(lambda x: mean_abs_log([(gemm_time(r, x[0], x[1]), r["time_us"]) for r in gemm]),
                                    [(0.2, 1.0), (0.0, 4096.0)])

    def attn_time(r, a):
        """a: forward efficiency, backward efficiency, forward half sequence, backward half
        sequence, half head dimension (core/compute_model.h)."""
        bwd = r["pass"] == "bwd"
        s, d = r["s"], r["head_dim"]
        e = (a[1] if bwd else a[0]) * s / (s + (a[3] if bwd else a[2])) * d / (d + a[4])
        return r["flops"] / (peak * e) * 1e6 + launch

    attention, attn_err = grid_min(lambda x: mean_abs_log([(attn_time(r, x), r["time_us"]) for r in attn]),
                                   [(0.2, 1.0), (0.2, 1.0), (0.0, 4096.0), (0.0, 4096.0), (0.0, 512.0)], points=9, rounds=4)
    ea, eab, half_seq, half_seq_b, half_d = attention
    # One parameter under a mean |log| objective: the median of the rows' own values.
    rates = sorted(r["bytes"] / max(r["time_us"] - launch, 1e-3) * 1e6 for r in copies)
    copy_bw = rates[len(rates) // 2] if rates else float("nan")
    copy_err = mean_abs_log([(r["bytes"] / copy_bw * 1e6 + launch, r["time_us"]) for r in copies]) if copies else float("nan")
    return {
        "memory_efficiency": em, "kernel_launch_us": launch, "gemm_efficiency": eg, "gemm_half_dim": half,
        "attention_efficiency": ea, "attention_backward_efficiency": eab, "attention_half_seq": half_seq,
        "attention_backward_half_seq": half_seq_b, "attention_half_head_dim": half_d, "copy_bandwidth_bytes_per_s": copy_bw,
        "rows": {"memory": len(mem), "gemm": len(gemm), "attention": len(attn), "copy": len(copies)},
        "mean_abs_log_error": {"memory": mem_err, "gemm": gemm_err, "attention": attn_err, "copy": copy_err},
        "predict": {"memory": lambda r: mem_time(r["bytes"], em, launch), "gemm": lambda r: gemm_time(r, eg, half),
                    "attention": lambda r: attn_time(r, attention), "copy": lambda r: r["bytes"] / copy_bw * 1e6 + launch},
    }


def fit_memory_efficiency(steps, preset, f, binary):
    fixed = [f"cluster.gpu.gemm_efficiency={f['gemm_efficiency']:.4f}", f"cluster.gpu.gemm_half_dim={f['gemm_half_dim']:.0f}",
             f"cluster.gpu.attention_efficiency={f['attention_efficiency']:.4f}",
             f"cluster.gpu.attention_backward_efficiency={f['attention_backward_efficiency']:.4f}",
             f"cluster.gpu.attention_half_seq={f['attention_half_seq']:.0f}",
             f"cluster.gpu.attention_backward_half_seq={f['attention_backward_half_seq']:.0f}",
             f"cluster.gpu.attention_half_head_dim={f['attention_half_head_dim']:.0f}",
             f"cluster.gpu.kernel_launch={f['kernel_launch_us']:.2f}us",
             f"cluster.gpu.copy_bandwidth={f['copy_bandwidth_bytes_per_s'] / 1e9:.0f}GB/s"]
    cache = {}

    def errors(em):
        key = round(em, 4)
        if key not in cache:
            cache[key] = predict.step_errors(steps, preset, fixed + [f"cluster.gpu.memory_efficiency={key}"], binary)[0]
        return cache[key]

    (em,), _ = grid_min(lambda x: predict.mean_abs_log_error(errors(x[0]), True), [(0.2, 1.0)], points=9, rounds=4)
    em = round(em, 4)
    return em, errors(em), predict.mean_abs_log_error(errors(em), True), predict.mean_abs_log_error(errors(em), False), fixed


def preset_gpu_fields(name):
    """The "gpu" fields a preset sets itself, read from core/cluster_presets.cpp's JSON."""
    source = open(os.path.join(predict.ROOT, "core", "cluster_presets.cpp")).read()
    presets = json.loads(source[source.index('R"json(') + len('R"json('):source.index(')json"')])
    if name not in presets:
        raise SystemExit(f"no cluster preset {name!r} in core/cluster_presets.cpp")
    return presets[name].get("gpu", {})


def unit_value(text, unit):
    if not text.endswith(unit):
        raise SystemExit(f"expected a value in {unit}, got {text!r}")
    return float(text[:-len(unit)])


def check_preset(name, f, em):
    """Differences between the fitted values (as fit_kernels.py prints them) and the preset's own."""
    gpu = preset_gpu_fields(name)
    fitted = {"gemm_efficiency": round(f["gemm_efficiency"], 4), "gemm_half_dim": round(f["gemm_half_dim"]),
              "attention_efficiency": round(f["attention_efficiency"], 4),
              "attention_backward_efficiency": round(f["attention_backward_efficiency"], 4),
              "attention_half_seq": round(f["attention_half_seq"]), "attention_backward_half_seq": round(f["attention_backward_half_seq"]),
              "attention_half_head_dim": round(f["attention_half_head_dim"]), "memory_efficiency": round(em, 4),
              "kernel_launch": round(f["kernel_launch_us"], 2), "copy_bandwidth": round(f["copy_bandwidth_bytes_per_s"] / 1e9)}
    shipped = {"gemm_efficiency": gpu.get("gemm_efficiency"), "gemm_half_dim": gpu.get("gemm_half_dim"),
               "attention_efficiency": gpu.get("attention_efficiency"),
               "attention_backward_efficiency": gpu.get("attention_backward_efficiency"),
               "attention_half_seq": gpu.get("attention_half_seq"), "attention_backward_half_seq": gpu.get("attention_backward_half_seq"),
               "attention_half_head_dim": gpu.get("attention_half_head_dim"), "memory_efficiency": gpu.get("memory_efficiency"),
               "kernel_launch": unit_value(gpu.get("kernel_launch", "nanus"), "us"),
               "copy_bandwidth": unit_value(gpu.get("copy_bandwidth", "nanGB/s"), "GB/s")}
    return [f"{k}: preset {shipped[k]}, fitted {fitted[k]}" for k in fitted
            if shipped[k] is None or abs(float(shipped[k]) - fitted[k]) > 1e-9]


def label(r):
    if r["kind"] == "gemm":
        return f"{r['family']} {r['proj']} {r['pass']} m{r['m']} k{r['k']} n{r['n']}"
    if r["kind"] == "attention":
        return f"{r['pass']} b{r['b']} s{r['s']} h{r['heads']}/{r['kv_heads']} d{r['head_dim']}"
    return f"{r['op']} {r.get('elements', '')}{r.get('family', '')}{r.get('tokens', '')}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernels")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak of the preset (H100 / H200 SXM: 989)")
    ap.add_argument("--hbm-tb-s", type=float, default=4.8, help="datasheet HBM bandwidth (H200 4.8, H100 SXM 3.35)")
    ap.add_argument("--compute", default="", help="take the GEMM and attention rows from this file instead (kernels.py --cool-ms)")
    ap.add_argument("--rows", action="store_true", help="print every row's predicted / measured time")
    ap.add_argument("--steps", default="", help="fsdp_step.py results: refit memory_efficiency on their fit rows")
    ap.add_argument("--preset", default="", help="with --steps: the cluster preset of the measured GPU")
    ap.add_argument("--binary", default=os.path.join(predict.ROOT, "build/release/cli/shardline"))
    ap.add_argument("--check-preset", default="", metavar="NAME",
                    help="with --steps: exit 1 unless this preset carries exactly the fitted values (CTest)")
    args = ap.parse_args()
    rows = [model_bytes(json.loads(line)) for line in open(args.kernels) if line.strip()]
    if args.compute:
        compute_rows = [json.loads(line) for line in open(args.compute) if line.strip()]
        rows = [r for r in rows if r["kind"] not in ("gemm", "attention")] + \
            [r for r in compute_rows if r["kind"] in ("gemm", "attention")]
    env = next((r for r in rows if r["kind"] == "environment"), {})
    errors = [r for r in rows if "error" in r]
    f = fit(rows, args.peak_tflops * 1e12, args.hbm_tb_s * 1e12)
    print(f"kernels measured on {env.get('gpu')}, PyTorch {env.get('torch')}, CUDA {env.get('cuda')}, cuDNN {env.get('cudnn')}")
    for r in rows:
        if r["kind"] in ("ceiling", "launch"):
            print("  " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    if errors:
        print(f"  {len(errors)} rows recorded an error, e.g. {errors[0].get('op', errors[0].get('section'))}: {errors[0]['error'][:120]}")
    print(f"fitted (rows {f['rows']}):")
    print(f"  gemm_efficiency {f['gemm_efficiency']:.4f}, gemm_half_dim {f['gemm_half_dim']:.0f}, "
          f"attention_efficiency {f['attention_efficiency']:.4f} (backward {f['attention_backward_efficiency']:.4f}), "
          f"attention_half_seq {f['attention_half_seq']:.0f} (backward {f['attention_backward_half_seq']:.0f}), "
          f"attention_half_head_dim {f['attention_half_head_dim']:.0f}, memory_efficiency {f['memory_efficiency']:.4f}, "
          f"kernel_launch {f['kernel_launch_us']:.2f} us, copy_bandwidth {f['copy_bandwidth_bytes_per_s'] / 1e12:.3f} TB/s")
    print("  mean |log error| per kind: " + ", ".join(f"{k} {v:.4f}" for k, v in f["mean_abs_log_error"].items()))
    for kind in ("gemm", "attention", "memory", "copy"):
        errs = sorted((f["predict"][kind](r) / r["time_us"] - 1, label(r)) for r in rows
                      if r["kind"] == kind and r.get("time_us", 0) > 0)
        if errs:
            print(f"  {kind}: error min {errs[0][0]:+.1%} ({errs[0][1]}), median {errs[len(errs) // 2][0]:+.1%}, "
                  f"max {errs[-1][0]:+.1%} ({errs[-1][1]})")
            if args.rows:
                for e, name in errs:
                    print(f"    {e:+7.1%}  {name}")
    if args.steps:
        if not args.preset:
            ap.error("--steps needs --preset (the measured GPU's cluster preset)")
        steps = [json.loads(line) for line in open(args.steps) if line.strip()][1:]
        em, errs, fit_err, check_err, fixed = fit_memory_efficiency(steps, args.preset, f, args.binary)
        print(f"memory_efficiency refitted on the steps' fit rows: {em:.4f} (mean |log error| fit rows {fit_err:.4f}, "
              f"check rows {check_err:.4f})")
        print("  preset values: " + ", ".join(x.removeprefix("cluster.gpu.") for x in fixed) + f", memory_efficiency={em:.4f}")
        for name, e in errs.items():
            print(f"  {'fit  ' if name in predict.FIT_CONFIGS else 'check'} {name:<40} {e:+6.1%}")
        if args.check_preset:
            differences = check_preset(args.check_preset, f, em)
            for d in differences:
                print(f"{args.check_preset} differs from the fit: {d}")
            if differences:
                return 1
            print(f"{args.check_preset} carries the fitted values")
    elif args.check_preset:
        ap.error("--check-preset needs --steps (the memory efficiency is fitted on them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
