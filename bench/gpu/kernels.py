#!/usr/bin/env python3
"""Kernel microbenchmarks on this machine's GPU through PyTorch: the fit data for a parameter set
of current software (docs/benchmarks.md, "Current software"; fitted by fit_kernels.py).

Each row times one kernel (or one PyTorch call) in isolation and counts its work in shardline's
own convention (docs/compute-model.md):
  gemm       bf16 matrix products of the transformer shapes: forward x W^T, input gradient
             dY W, weight gradient dY^T X; flops 2mnk, min_dim the smallest of m, n, k
  attention  scaled_dot_product_attention, causal, bf16, forward and backward (backward = the
             forward-and-backward call minus the forward call); flops in the model's
             convention: forward 4 b s^2 (heads x head_dim) x the causal fraction, backward 2.5x
  memory     memory-bound kernels (elementwise, casts, RMSNorm, the fp32 loss, embedding, AdamW);
             bytes read plus written
  copy       the copies FSDP2 makes (foreach copy into a flat buffer, split_with_sizes_copy out
             of one, chunk_cat); bytes copied (one side)
  launch     back-to-back tiny kernels, eager and replayed from a CUDA graph: time per kernel
  ceiling    a large device-to-device copy and an 8192^3 bf16 product
Every time is the median of CUDA-event intervals recorded back to back (no synchronisation
between repetitions) after warm-up; inputs are random, and rotate among several buffers where
one set would sit in L2; calls short enough for the Python launch path to set the pace are timed
from a CUDA graph. --cool-ms N idles N ms before each GEMM and attention timing (boost clock).

  python3 bench/gpu/kernels.py --out kernels.jsonl [--budget-s 240] [--sections gemm,attention] [--cool-ms 100]
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

MiB = 2 ** 20
L2_ROTATE_BYTES = 256 * MiB  # rotate inputs until this many bytes are touched: several times any L2


def median_us(fn, target_ms=40.0, min_reps=5, max_reps=60, warmup=2):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    estimate_ms = max(s.elapsed_time(e), 1e-3)
    reps = int(min(max_reps, max(min_reps, target_ms / estimate_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [1000.0 * a.elapsed_time(b) for a, b in zip(starts, ends)]
    return statistics.median(times), times


COOL_S = 0.0  # --cool-ms: idle before each GEMM and attention timing, so that it starts at boost clock


def compute_us(fn):
    """median_us for the compute-bound sections: with --cool-ms, a short burst after an idle gap
    (a sustained stream of GEMMs holds the GPU at its power limit and lowers the SM clock; inside
    a training step, memory-bound kernels between the GEMMs keep it near boost clock). Returns the
    median, the times and the SM clock read just after (MHz)."""
    if COOL_S:
        torch.cuda.synchronize()
        time.sleep(COOL_S)
        t, times = median_us(fn, target_ms=5.0, min_reps=3, max_reps=10, warmup=1)
    else:
        t, times = median_us(fn)
    return t, times, torch.cuda.clock_rate()


def graph_us(fn, nbytes):
    """fn's GPU time per call with no host in the way: several calls captured in one CUDA graph
    and replayed (eager timing of a small kernel measures the Python launch path instead)."""
    calls = int(max(1, min(20, 4e9 // max(nbytes, 1))))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    t, _ = median_us(g.replay, min_reps=3, max_reps=20)
    del g
    return t / calls


def rotation(bytes_per_set):
    return max(1, min(8, math.ceil(L2_ROTATE_BYTES / max(bytes_per_set, 1))))


class Cycle:
    def __init__(self, sets):
        self.sets, self.i = sets, 0

    def next(self):
        self.i = (self.i + 1) % len(self.sets)
        return self.sets[self.i]


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device="cuda", dtype=dtype)


# (family, hidden, ffn_hidden, heads, kv_heads, vocab)
FAMILIES = [
    ("125m", 768, 3072, 12, 12, 50368),
    ("1b", 2048, 5632, 16, 16, 32000),
    ("3b", 3072, 8192, 24, 8, 128256),
    ("8b", 4096, 14336, 32, 8, 128256),
    ("70b", 8192, 28672, 64, 8, 128256),
]
TOKENS = [1024, 2048, 4096, 8192, 16384]


def gemm_rows(out, deadline):
    for fam, h, f, heads, kv_heads, vocab in FAMILIES:
        kv = kv_heads * (h // heads)
        projections = [("q", h, h), ("kv", h, kv), ("qkv", h, h + 2 * kv), ("o", h, h), ("up", h, f), ("gate_up", h, 2 * f),
                       ("down", f, h), ("head", h, vocab)]
        for tokens in TOKENS:
            for proj, k_in, n_out in projections:
                if (fam == "70b" or proj == "head") and tokens > 8192:
                    continue
                if time.time() > deadline:
                    return
                per_set = 2 * (tokens * k_in + k_in * n_out + tokens * n_out)
                sets = [(randn(tokens, k_in), randn(n_out, k_in), randn(tokens, n_out)) for _ in range(rotation(per_set))]
                cyc = Cycle(sets)
                passes = {
                    "fwd": lambda: (lambda x, w, dy: F.linear(x, w))(*cyc.next()),
                    "dgrad": lambda: (lambda x, w, dy: torch.mm(dy, w))(*cyc.next()),
                    "wgrad": lambda: (lambda x, w, dy: torch.mm(dy.t(), x))(*cyc.next()),
                }
                for name, fn in passes.items():
                    t, times, clock = compute_us(fn)
                    eager = t
                    if t < 200:  # short enough for the launch path to set the pace: time it from a graph
                        t = graph_us(fn, per_set)
                    flops = 2.0 * tokens * k_in * n_out
                    out({"kind": "gemm", "family": fam, "proj": proj, "pass": name, "m": tokens, "k": k_in, "n": n_out,
                         "flops": flops, "bytes": float(per_set), "min_dim": min(tokens, k_in, n_out), "time_us": t,
                         "tflops": flops / t / 1e6, "reps": len(times), "eager_us": eager,
                         "mode": "graph" if t != eager else "eager", "sm_clock_mhz": clock, "cool_ms": COOL_S * 1000})
                del sets, cyc


def causal_fraction(s):
    return min(1.0, 0.5 * (1 + 128.0 / s))


def attention_rows(out, deadline):
    # (heads, kv_heads, head_dim): 1B MHA, 8B GQA, head_dim 64
    shapes = [(16, 16, 128), (32, 8, 128), (32, 32, 64)]
    for heads, kv_heads, d in shapes:
        for s in [512, 1024, 2048, 4096, 8192, 16384, 32768]:
            if time.time() > deadline:
                return
            b = max(1, 16384 // s)
            q = randn(b, heads, s, d).requires_grad_()
            k = randn(b, kv_heads, s, d).requires_grad_()
            v = randn(b, kv_heads, s, d).requires_grad_()
            do = randn(b, heads, s, d)
            gqa = kv_heads != heads

            def fwd():
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)

            def fwd_bwd():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                o.backward(do)
                q.grad = k.grad = v.grad = None

            tf, _, clock = compute_us(fwd)
            tfb, times, _ = compute_us(fwd_bwd)
            hidden = heads * d
            flops_fwd = 4.0 * b * s * s * hidden * causal_fraction(s)
            base = {"kind": "attention", "b": b, "s": s, "heads": heads, "kv_heads": kv_heads, "head_dim": d, "causal": True,
                    "sm_clock_mhz": clock, "cool_ms": COOL_S * 1000}
            out(dict(base, **{"pass": "fwd", "flops": flops_fwd, "time_us": tf, "tflops": flops_fwd / tf / 1e6}))
            tb = tfb - tf
            out(dict(base, **{"pass": "bwd", "flops": 2.5 * flops_fwd, "time_us": tb, "tflops": 2.5 * flops_fwd / tb / 1e6,
                              "fwd_bwd_us": tfb}, **({"names": kernel_names(fwd_bwd)} if s == 4096 else {})))
            del q, k, v, do


def kernel_names(fn):
    """The GPU kernels one call of fn launches (names only), for the record."""
    import os
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    try:
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        path = os.path.join(tempfile.mkdtemp(), "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
        return sorted({e.get("name", "?") for e in events if e.get("cat") == "kernel"})[:8]
    except Exception as e:  # noqa: BLE001 - the names are a record, not a measurement
        return [f"profiler failed: {e!r}"[:200]]


def timed_row(out, kind, name, nbytes, fn, graph=False, **extra):
    """One bytes-counted row; a call PyTorch refuses is recorded as such and the section goes on.
    With graph, time_us is the CUDA-graph replay time per call (eager_us keeps the eager one)."""
    try:
        t, times = median_us(fn)
        eager = t
        if graph:
            t = graph_us(fn, nbytes)
    except RuntimeError as e:
        out(dict({"kind": kind, "op": name, "error": repr(e)[:300]}, **extra))
        return
    out(dict({"kind": kind, "op": name, "bytes": float(nbytes), "time_us": t, "gb_per_s": nbytes / t / 1e3, "reps": len(times),
              "eager_us": eager, "mode": "graph" if graph else "eager"}, **extra))


def memory_rows(out, deadline):
    def row(name, nbytes, fn, graph=True, **extra):
        timed_row(out, "memory", name, nbytes, fn, graph=graph, **extra)

    for n in [1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]:
        if time.time() > deadline:
            return
        rot = rotation(3 * 2 * n)
        a = Cycle([(randn(n), randn(n)) for _ in range(rot)])
        row("add_bf16", 3 * 2 * n, lambda: torch.add(*a.next()), elements=n)
        row("mul_bf16", 3 * 2 * n, lambda: torch.mul(*a.next()), elements=n)
        row("silu_bf16", 2 * 2 * n, lambda: F.silu(a.next()[0]), elements=n)
        row("copy_bf16", 2 * 2 * n, lambda: (lambda x, y: y.copy_(x))(*a.next()), elements=n)
        del a
        c = Cycle([(randn(n, dtype=torch.float32), randn(n)) for _ in range(rotation(6 * n))])
        row("cast_fp32_to_bf16", 6 * n, lambda: (lambda x, y: y.copy_(x))(*c.next()), elements=n)
        row("cast_bf16_to_fp32", 6 * n, lambda: (lambda x, y: x.copy_(y))(*c.next()), elements=n)
        del c
    # RMSNorm forward and backward over (tokens, hidden); the backward alone through autograd.grad
    # on a kept graph (sizes large enough that the GPU, not the launch path, sets the pace)
    for tokens, h in [(16384, 2048), (16384, 4096), (32768, 4096), (16384, 8192)]:
        if time.time() > deadline:
            return
        x = randn(tokens, h).requires_grad_()
        # bf16 like the input, as FSDP2's mixed precision gives it (an fp32 weight takes an unfused path)
        w = torch.ones(h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        dy = randn(tokens, h)
        nb = 2 * tokens * h
        row("rms_norm_fwd", 2 * nb, lambda: F.rms_norm(x, (h,), w, 1e-5), tokens=tokens, hidden=h)
        y = F.rms_norm(x, (h,), w, 1e-5)
        # input gradient (reads x and dy, writes dx) and weight gradient (GammaBeta: x and dy again)
        row("rms_norm_bwd", 5 * nb, lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True), graph=False, tokens=tokens,
            hidden=h)
        del x, w, dy, y
    # The fp32 loss: logits.float(), cross entropy forward and backward, over (tokens, vocab)
    for tokens, vocab in [(4096, 32000), (8192, 32000), (4096, 128256), (8192, 128256)]:
        if time.time() > deadline:
            return
        logits = randn(tokens, vocab).requires_grad_()
        labels = torch.randint(0, vocab, (tokens,), device="cuda")

        def loss_fwd():
            return F.cross_entropy(logits.float(), labels)

        def loss_fb():
            F.cross_entropy(logits.float(), labels).backward()
            logits.grad = None
        tf, _ = median_us(loss_fwd)
        tfb, _ = median_us(loss_fb)
        tv = tokens * vocab
        out({"kind": "memory", "op": "loss_fp32_fwd", "bytes": 14.0 * tv, "time_us": tf, "gb_per_s": 14 * tv / tf / 1e3,
             "tokens": tokens, "vocab": vocab, "names": kernel_names(loss_fwd)})
        out({"kind": "memory", "op": "loss_fp32_bwd", "bytes": 22.0 * tv, "time_us": tfb - tf, "gb_per_s": 22 * tv / (tfb - tf) / 1e3,
             "tokens": tokens, "vocab": vocab, "fwd_bwd_us": tfb})
        del logits, labels
    # Embedding gather over (tokens, hidden) from a (vocab, hidden) table
    for tokens, vocab, h in [(8192, 32000, 2048), (8192, 128256, 4096)]:
        table = randn(vocab, h)
        idx = torch.randint(0, vocab, (tokens,), device="cuda")
        row("embedding_fwd", 2 * 2 * tokens * h, lambda: F.embedding(idx, table), tokens=tokens, vocab=vocab, hidden=h)
        del table, idx
    # AdamW over fp32 parameter lists, fused and foreach (28 and 80 bytes per parameter counted)
    for total, tensors in [(64 << 20, 64), (256 << 20, 128), (512 << 20, 32)]:
        if time.time() > deadline:
            return
        for impl, per_param in [("fused", 28), ("foreach", 80)]:
            params = [torch.nn.Parameter(torch.randn(total // tensors, device="cuda")) for _ in range(tensors)]
            for p in params:
                p.grad = torch.randn_like(p)
            opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1, **{impl: True})
            row(f"adamw_{impl}", per_param * total, opt.step, graph=False, params=total, tensors=tensors)
            del opt, params


def copy_rows(out, deadline):
    def row(name, nbytes, fn, **extra):
        timed_row(out, "copy", name, nbytes, fn, graph=True, **extra)

    # A transformer block's parameters as FSDP2 holds them: (sizes of its tensors)
    for fam, h, f, heads, kv_heads, _ in FAMILIES[1:4]:
        if time.time() > deadline:
            return
        kv = kv_heads * (h // heads)
        sizes = [h, h * h, h * kv, h * kv, h * h, h, h * f, h * f, f * h]
        total = sum(sizes)
        shards = [randn(s) for s in sizes]
        shards32 = [randn(s, dtype=torch.float32) for s in sizes]
        flat = randn(total)
        views = list(torch.split(flat, sizes))
        row("foreach_copy_bf16", 2 * total, lambda: torch._foreach_copy_(views, shards), family=fam, tensors=len(sizes))
        row("foreach_cast_fp32_to_bf16", 2 * total, lambda: torch._foreach_copy_(views, shards32), family=fam, tensors=len(sizes),
            note="bytes counted as the bf16 side")
        outs = [randn(s) for s in sizes]
        row("split_with_sizes_copy", 2 * total, lambda: torch.split_with_sizes_copy(flat, sizes, out=outs), family=fam,
            tensors=len(sizes))
        grads = [randn(s) for s in sizes]
        rs_in = randn(1, total)
        row("chunk_cat_bf16", 2 * total, lambda: torch._chunk_cat(grads, dim=0, num_chunks=1, out=rs_in), family=fam,
            tensors=len(sizes))
        rs_in32 = randn(1, total, dtype=torch.float32)
        row("chunk_cat_bf16_to_fp32", 2 * total, lambda: torch._chunk_cat(grads, dim=0, num_chunks=1, out=rs_in32),
            family=fam, tensors=len(sizes), note="bytes counted as the bf16 side")
        del shards, shards32, flat, views, outs, grads, rs_in, rs_in32


def launch_rows(out):
    x = randn(1024)
    y = randn(1024)
    kernels = 2000

    def many():
        for _ in range(kernels):
            torch.add(x, y, out=y)
    t, _ = median_us(many, target_ms=200, min_reps=3, max_reps=10)
    out({"kind": "launch", "mode": "eager", "kernels": kernels, "time_us": t, "us_per_kernel": t / kernels})
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        many()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        many()
    t, _ = median_us(g.replay, target_ms=200, min_reps=3, max_reps=10)
    out({"kind": "launch", "mode": "graph", "kernels": kernels, "time_us": t, "us_per_kernel": t / kernels})


def ceiling_rows(out):
    n = 1 << 30  # 2 GiB of bf16 each way
    a, b = randn(n), randn(n)
    t, _ = median_us(lambda: b.copy_(a))
    out({"kind": "ceiling", "op": "d2d_copy", "bytes": 4.0 * n, "time_us": t, "gb_per_s": 4.0 * n / t / 1e3,
         "note": "bytes read plus written"})
    del a, b
    m = 8192
    x, w = randn(m, m), randn(m, m)
    t, _ = median_us(lambda: torch.mm(x, w))
    out({"kind": "ceiling", "op": "gemm_8192", "flops": 2.0 * m ** 3, "time_us": t, "tflops": 2.0 * m ** 3 / t / 1e6})


def smi():
    try:
        q = "name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,utilization.gpu"
        return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - a record, not a check
        return f"nvidia-smi failed: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=240.0, help="stop adding rows to a section after this much wall time")
    ap.add_argument("--sections", default="ceiling,launch,gemm,attention,memory,copy")
    ap.add_argument("--cool-ms", type=float, default=0.0,
                    help="idle this long before each GEMM and attention timing and time a short burst (boost clock)")
    args = ap.parse_args()
    global COOL_S
    COOL_S = args.cool_ms / 1000.0
    t0 = time.time()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    env = {"gpu": props.name, "sms": props.multi_processor_count, "total_memory": props.total_memory, "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "smi_before": smi()}
    f = open(args.out, "w")
    counts = {}

    def out(row):
        f.write(json.dumps(row) + "\n")
        f.flush()
        counts[row["kind"]] = counts.get(row["kind"], 0) + 1

    out({"kind": "environment", **env})
    print(json.dumps(env), flush=True)
    # Each section gets a share of the budget; a failed section is recorded and the rest go on.
    weights = {"ceiling": 0.05, "launch": 0.05, "gemm": 0.35, "attention": 0.2, "memory": 0.25, "copy": 0.1}
    chosen = args.sections.split(",")  # the chosen sections share the whole budget
    shares = {k: v / sum(weights[c] for c in chosen) for k, v in weights.items()}
    start = time.time()
    for section in chosen:
        deadline = time.time() + shares[section] * args.budget_s
        ts = time.time()
        try:
            if section == "ceiling":
                ceiling_rows(out)
            elif section == "launch":
                launch_rows(out)
            elif section == "gemm":
                gemm_rows(out, deadline)
            elif section == "attention":
                attention_rows(out, deadline)
            elif section == "memory":
                memory_rows(out, deadline)
            elif section == "copy":
                copy_rows(out, deadline)
        except Exception as e:  # noqa: BLE001 - recorded as a row, the next section still runs
            out({"kind": "error", "section": section, "error": repr(e), "traceback": traceback.format_exc()[-2000:]})
            print(f"section {section} failed: {e!r}", flush=True)
        torch.cuda.empty_cache()
        print(f"section {section}: {time.time() - ts:.1f} s, rows so far {counts}", flush=True)
    out({"kind": "end", "wall_s": time.time() - t0, "smi_after": smi(), "rows": counts})
    print(f"kernels.py done in {time.time() - start:.1f} s: {counts}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
