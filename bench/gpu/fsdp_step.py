#!/usr/bin/env python3
"""A measured FSDP2 training step on this machine's GPU, to hold shardline's GPU predictions
against: a Llama-shaped decoder (RMSNorm, RoPE, SDPA attention, SwiGLU, untied head; ARCH_CONFIGS:
GPT-style ones with LayerNorm, GELU, learned positions, a tied head and biases) wrapped as
torchtitan wrapped it in 2024 (fully_shard on every block, then on the model: the embedding,
final norm and head are the root), bf16 parameters with fp32 gradient reduction, fp32
cross-entropy, AdamW and gradient clipping, optionally full activation checkpointing per block.

For each configuration it prints and writes (JSON lines, --out) the median step time over the
measured steps, tokens/s, and the CUDA caching allocator's peaks after warm-up: allocated, active,
reserved, and its alloc retries, and the host's time to issue the step and each phase of it.
--trace DIR writes a torch.profiler trace of two more steps of the first configuration, or with
--only of each one selected (for `shardline import`). --count-launches counts the GPU activities
each phase launches (one more step, profiled); --host-twin SEQ runs each configuration's host twin
(one sample of SEQ tokens per micro-batch: the host's own cost, for `cluster.host_launch`;
bench/gpu/fit_host.py); --layers N runs it with N blocks.

Runs on one GPU as a one-rank process group (no launcher needed); needs PyTorch >= 2.6.
  python3 bench/gpu/fsdp_step.py --out results.jsonl [--trace DIR] [--steps 10] [--warmup 3]
The configurations are CONFIGS and ARCH_CONFIGS below; docs/benchmarks.md ("One-GPU FSDP2 step") has the
scenario each one becomes and the results.
"""
import argparse
import gc
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import time
import traceback

import torch
import torch.profiler
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.utils.checkpoint import checkpoint

from trace_kernels import GPU_CATEGORIES  # this folder (a script's own folder is on sys.path)

# name, layers, hidden, ffn_hidden, heads, kv_heads, vocab, seq_len, micro_batch_size, checkpointing
CONFIGS = [
    ("llama-1b-none", 16, 2048, 5632, 16, 16, 32000, 2048, 4, "none"),
    ("llama-1b-full", 16, 2048, 5632, 16, 16, 32000, 2048, 8, "full"),
    ("llama3-8b-shape-8-layers-full", 8, 4096, 14336, 32, 8, 128256, 4096, 1, "full"),
    ("llama3-8b-shape-10-layers-full", 10, 4096, 14336, 32, 8, 128256, 4096, 1, "full"),
    ("llama3-8b-shape-12-layers-full", 12, 4096, 14336, 32, 8, 128256, 4096, 1, "full"),
    # More than an 80 GB GPU holds (first run on an H200 141GB): an out-of-memory error is recorded
    # for them on a smaller GPU.
    ("llama3-8b-shape-16-layers-full", 16, 4096, 14336, 32, 8, 128256, 4096, 1, "full"),
    ("llama3-8b-shape-20-layers-full", 20, 4096, 14336, 32, 8, 128256, 4096, 1, "full"),
    # Added 2026-11-26 (second GPU session), predicted before they were first measured: longer
    # sequence, GQA with 64-wide heads, a Llama 3.2 3B shape, the 8B shape without checkpointing.
    ("llama-1b-seq8192-none", 16, 2048, 5632, 16, 16, 32000, 8192, 1, "none"),
    ("llama-1b-gqa-hd64-seq4096-none", 16, 2048, 5632, 32, 8, 32000, 4096, 2, "none"),
    ("llama3-3b-shape-16-layers-seq8192-full", 16, 3072, 8192, 24, 8, 128256, 8192, 1, "full"),
    ("llama3-8b-shape-4-layers-none", 4, 4096, 14336, 32, 8, 128256, 2048, 2, "none"),
]

# GPT-style decoders (added 2026-11-27, predicted before they were first measured: the first one-GPU
# steps of the architecture knobs other than Llama's): the fields of CONFIGS, then the architecture
# as the scenario's keys (model.transformer: mlp, norm, position, bias, tied_embeddings). LayerNorm
# (F.layer_norm), exact GELU, one fused Wqkv projection, learned positions, the head tied to the
# embedding, as GPT-2 / MPT lay a block out; MPT's ALiBi is left out (SDPA has no fused kernel for it).
GPT = {"mlp": "gelu", "norm": "layernorm", "position": "learned", "bias": True, "tied_embeddings": True}
LLAMA = {"mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "bias": False, "tied_embeddings": False}
ARCH_CONFIGS = [
    ("gpt-1.3b-shape-none", 24, 2048, 8192, 16, 16, 50368, 2048, 4, "none", GPT),
    ("gpt-760m-shape-seq4096-full", 24, 1536, 6144, 12, 12, 50368, 4096, 4, "full", GPT),
    ("gpt-350m-shape-hd64-none", 24, 1024, 4096, 16, 16, 50368, 2048, 8, "none", GPT),
    ("mpt-7b-shape-4-layers-nobias-full", 4, 4096, 16384, 32, 32, 50368, 2048, 4, "full", dict(GPT, bias=False)),
    # Gradient accumulation (added 2026-11-27, predicted before they first ran): `micro_batches`
    # forward / backward passes per optimizer step, each reduce-scattered (FSDP2's default), the
    # same tokens per step as llama-1b-none and gpt-350m-shape-hd64-none.
    ("llama-1b-none-ga2", 16, 2048, 5632, 16, 16, 32000, 2048, 2, "none", dict(LLAMA, micro_batches=2)),
    ("gpt-350m-shape-hd64-none-ga2", 24, 1024, 4096, 16, 16, 50368, 2048, 4, "none", dict(GPT, micro_batches=2)),
    # Four micro-batches (added 2026-11-27, third GPU session, before they first ran): check rows
    # for a host term, with the tokens of the two above (bench/gpu/host_session.sh).
    ("llama-1b-none-ga4", 16, 2048, 5632, 16, 16, 32000, 2048, 1, "none", dict(LLAMA, micro_batches=4)),
    ("gpt-350m-shape-hd64-none-ga4", 24, 1024, 4096, 16, 16, 50368, 2048, 2, "none", dict(GPT, micro_batches=4)),
]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def rope_tables(head_dim, seq_len, device, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device).float()
    angles = torch.outer(t, freqs)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    # x: (batch, heads, seq, head_dim); rotate pairs (even, odd)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, None].to(x.dtype), sin[None, None].to(x.dtype)
    return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)


class LayerNorm(nn.Module):
    def __init__(self, dim, bias, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


class Block(nn.Module):
    def __init__(self, h, f, heads, kv_heads, arch=None):
        super().__init__()
        arch = arch or LLAMA
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, h // heads
        self.gelu, self.rope = arch["mlp"] == "gelu", arch["position"] == "rope"
        bias = arch["bias"]
        kv = kv_heads * self.head_dim

        def norm():
            return LayerNorm(h, bias) if arch["norm"] == "layernorm" else RMSNorm(h)

        self.attention_norm = norm()
        if self.gelu:  # GPT-2 / MPT: one fused Wqkv projection, up and down
            self.wqkv = nn.Linear(h, h + 2 * kv, bias=bias)
        else:
            self.wq = nn.Linear(h, h, bias=bias)
            self.wk = nn.Linear(h, kv, bias=bias)
            self.wv = nn.Linear(h, kv, bias=bias)
        self.wo = nn.Linear(h, h, bias=bias)
        self.ffn_norm = norm()
        self.w1 = nn.Linear(h, f, bias=bias)
        if not self.gelu:
            self.w3 = nn.Linear(h, f, bias=bias)
        self.w2 = nn.Linear(f, h, bias=bias)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        y = self.attention_norm(x)
        if self.gelu:
            q, k, v = self.wqkv(y).split([h, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        else:
            q, k, v = self.wq(y), self.wk(y), self.wv(y)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.rope:
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        gqa = {"enable_gqa": True} if self.kv_heads != self.heads else {}
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, h))
        y = self.ffn_norm(x)
        if self.gelu:
            return x + self.w2(F.gelu(self.w1(y)))
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class Model(nn.Module):
    def __init__(self, layers, h, f, heads, kv_heads, vocab, seq_len, full_ckpt, arch=None):
        super().__init__()
        arch = arch or LLAMA
        self.full_ckpt, self.rope = full_ckpt, arch["position"] == "rope"
        self.tok_embeddings = nn.Embedding(vocab, h)
        self.pos_embeddings = nn.Embedding(seq_len, h) if arch["position"] == "learned" else None
        self.layers = nn.ModuleList(Block(h, f, heads, kv_heads, arch) for _ in range(layers))
        self.norm = LayerNorm(h, arch["bias"]) if arch["norm"] == "layernorm" else RMSNorm(h)
        self.output = nn.Linear(h, vocab, bias=False)
        if arch["tied_embeddings"]:
            self.output.weight = self.tok_embeddings.weight
        self.head_dim, self.seq_len = h // heads, seq_len

    def forward(self, tokens):
        cos, sin = rope_tables(self.head_dim, tokens.shape[1], tokens.device) if self.rope else (None, None)
        x = self.tok_embeddings(tokens)
        if self.pos_embeddings is not None:
            x = x + self.pos_embeddings(torch.arange(tokens.shape[1], device=tokens.device))
        for layer in self.layers:
            x = checkpoint(layer, x, cos, sin, use_reentrant=False) if self.full_ckpt else layer(x, cos, sin)
        return self.output(self.norm(x))


def launches_per_phase(step):
    """GPU activities (kernels, memcpys, memsets) each phase of one step launches: the step run
    once more under a CUDA-only profiler, stopped and started at each phase's mark, each part's
    trace counted by category as trace_kernels.py reads them."""
    from torch.profiler import ProfilerActivity, profile
    counts, box = {}, {}

    def begin():
        box["prof"] = profile(activities=[ProfilerActivity.CUDA])
        box["prof"].__enter__()

    def mark(phase):
        torch.cuda.synchronize()
        box["prof"].__exit__(None, None, None)
        path = f"/tmp/fsdp_step_launches_{os.getpid()}.json"
        box["prof"].export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        os.remove(path)
        mine = counts.setdefault(phase, {})
        for e in events:
            if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES:
                mine[e["cat"]] = mine.get(e["cat"], 0) + 1
        begin()

    torch.cuda.synchronize()
    begin()
    try:
        step(mark)
        torch.cuda.synchronize()
    finally:  # a failed step must not leave a profiler running for the next configuration
        box["prof"].__exit__(None, None, None)
    return counts


def run_config(cfg, steps, warmup, trace_dir, optimizer="foreach", host_twin_seq=0, layers_override=0, count_launches=False):
    name, layers, h, f, heads, kv_heads, vocab, seq, mbs, ckpt = cfg[:10]
    # A host twin: the same modules, parameters and launches (to within the position table), over
    # host_twin_seq tokens of one sample per micro-batch, so that its GPU work is too small to hold
    # the host up: its host times are the host's own cost of issuing the configuration's step.
    if layers_override:
        name, layers = f"{name}-{layers_override}-layers", layers_override
    full_size_name = name  # the configuration a twin stands for (with its blocks)
    if host_twin_seq:
        name, seq, mbs = f"{name}-host-twin", host_twin_seq, 1
    extra = cfg[10] if len(cfg) > 10 else LLAMA
    arch = {k: v for k, v in extra.items() if k != "micro_batches"}
    micro_batches = extra.get("micro_batches", 1)
    # FSDP modules hold reference cycles: the previous configuration's tensors stay allocated
    # until the cycle collector runs (seen: 3.6 and 7.2 GiB carried into the next one).
    gc.collect()
    torch.cuda.empty_cache()
    allocated_at_start = torch.cuda.memory_allocated()
    # The allocator's retry count runs from the process start; this configuration's own is the rise.
    retries_at_start = torch.cuda.memory_stats().get("num_alloc_retries", 0)
    torch.manual_seed(0)
    # A tied head is built on the GPU (the tie is made in __init__; fully_shard keeps one shared
    # parameter in the root group); the others on the meta device, materialized after sharding.
    tied = arch["tied_embeddings"]
    with torch.device("cuda" if tied else "meta"):
        model = Model(layers, h, f, heads, kv_heads, vocab, seq, ckpt == "full", arch)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    if not tied:
        model.to_empty(device="cuda")
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
            else:
                p.fill_(0.0 if pname.endswith("bias") else 1.0)
    if tied and model.output.weight is not model.tok_embeddings.weight:
        raise RuntimeError(f"{name}: the head's weight is no longer the embedding's after fully_shard")
    gc.collect()
    torch.cuda.empty_cache()
    params = sum(p.numel() for p in model.parameters())
    # torch.optim's default on CUDA tensors is foreach; fused is torchtitan's default.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, **{optimizer: True})
    tokens = torch.randint(0, vocab, (micro_batches, mbs, seq + 1), device="cuda")
    all_inputs, all_labels = tokens[:, :, :-1].contiguous(), tokens[:, :, 1:].contiguous()
    inputs, labels = all_inputs[0], all_labels[0]  # the phase-by-phase step below runs one micro-batch

    def step(mark=lambda phase: None):
        # mark(phase) is called as each phase of the step has been issued (host_phases below).
        for m in range(micro_batches):  # FSDP2 reduce-scatters after each backward by default
            logits = model(all_inputs[m])
            mark("forward")
            loss = F.cross_entropy(logits.float().view(-1, vocab), all_labels[m].view(-1)) / micro_batches
            del logits
            mark("loss")
            loss.backward()
            mark("backward")
        # The range names the clipping in a profiler trace, as `shardline import` needs it
        # (docs/import.md); it costs about a microsecond of host time when no profiler runs.
        with torch.profiler.record_function("clip_grad_norm"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        mark("clip_grad_norm")
        opt.step()
        mark("optimizer_step")
        opt.zero_grad(set_to_none=True)
        mark("zero_grad")
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    # One step phase by phase: allocated before each phase, its peak above that, allocated after.
    phases = {}

    def phase(label, fn):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        value = fn()
        torch.cuda.synchronize()
        phases[label] = {"allocated_before": before, "peak_above_before": torch.cuda.max_memory_allocated() - before,
                         "allocated_after": torch.cuda.memory_allocated()}
        return value

    logits = phase("forward", lambda: model(inputs))
    loss = phase("loss", lambda: F.cross_entropy(logits.float().view(-1, vocab), labels.view(-1)))
    del logits
    phase("backward", lambda: loss.backward())
    phase("clip_grad_norm", lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    phase("optimizer_step", lambda: opt.step())
    phase("zero_grad", lambda: opt.zero_grad(set_to_none=True))
    del loss
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times, host_ms, phase_ms = [], [], []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        marks = []
        step(lambda phase: marks.append((phase, time.perf_counter())))
        # The host's time to issue the step (nothing in it waits for the GPU unless the launch
        # queue fills): where it is about the step time, the host sets the step.
        host_ms.append(1e3 * (time.perf_counter() - t0))
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        # The host's time per phase, summed over the micro-batches (perf_counter: well under a
        # microsecond per mark).
        this, before = {}, t0
        for phase_name, t in marks:
            this[phase_name] = this.get(phase_name, 0.0) + 1e3 * (t - before)
            before = t
        phase_ms.append(this)
    stats = torch.cuda.memory_stats()
    step_ms = statistics.median(times)
    result = {
        "name": name, "layers": layers, "hidden": h, "ffn_hidden": f, "heads": heads, "kv_heads": kv_heads,
        "vocab": vocab, "seq_len": seq, "micro_batch_size": mbs, "checkpointing": ckpt, "params": params,
        "architecture": arch,
        "optimizer": optimizer,
        "steps": steps, "warmup": warmup, "step_ms_median": step_ms, "step_ms_all": times,
        "host_issue_ms_median": statistics.median(host_ms),
        "host_phase_ms_median": {k: statistics.median(p[k] for p in phase_ms) for k in phase_ms[0]},
        "micro_batches": micro_batches,
        "host_twin_of": full_size_name if host_twin_seq else None,
        "tokens_per_s": micro_batches * mbs * seq / (step_ms / 1000.0),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "active_bytes_peak": stats.get("active_bytes.all.peak"),
        "num_alloc_retries": stats.get("num_alloc_retries"),
        "alloc_retries": stats.get("num_alloc_retries", 0) - retries_at_start,
        "phases": phases,
        "allocated_at_start": allocated_at_start,
    }
    if count_launches:
        try:
            result["launches_per_phase"] = launches_per_phase(step)
        except Exception as e:  # noqa: BLE001 - the step's own figures above are kept
            traceback.print_exc()
            result["launches_error"] = f"{type(e).__name__}: {e}"
    if trace_dir:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
            for i in range(2):
                with torch.profiler.record_function(f"ProfilerStep#{i}"):
                    step()
            torch.cuda.synchronize()
        os.makedirs(trace_dir, exist_ok=True)
        raw = os.path.join(trace_dir, f"{name}.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(raw)
        result["trace"] = os.path.basename(raw) + ".gz"
    del model, opt
    gc.collect()
    torch.cuda.empty_cache()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trace", default="")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated configuration names")
    ap.add_argument("--optimizer", choices=["foreach", "fused"], default="foreach",
                    help="torch.optim.AdamW's implementation (foreach: its default on CUDA; fused: torchtitan's)")
    ap.add_argument("--host-twin", type=int, default=0, metavar="SEQ",
                    help="run each configuration's host twin instead: one sample of SEQ tokens per micro-batch")
    ap.add_argument("--layers", type=int, default=0, help="run each configuration with this many blocks instead")
    ap.add_argument("--count-launches", action="store_true",
                    help="count the GPU activities each phase launches (one more step, profiled)")
    args = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    nccl = torch.cuda.nccl.version()
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
           "total_memory": torch.cuda.get_device_properties(0).total_memory}
    print(json.dumps(env), flush=True)
    with open(args.out, "w") as out:
        out.write(json.dumps({"environment": env}) + "\n")
        for i, cfg in enumerate(CONFIGS + ARCH_CONFIGS):
            if args.only and cfg[0] not in args.only.split(","):
                continue
            t0 = time.time()
            try:
                traced = bool(args.only) or i == 0
                r = run_config(cfg, args.steps, args.warmup, args.trace if traced else "", args.optimizer,
                               args.host_twin, args.layers, args.count_launches)
            except torch.OutOfMemoryError as e:
                r = {"name": cfg[0], "error": "out of memory: " + str(e).splitlines()[0]}
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001 - one configuration's failure is recorded; the others still run
                traceback.print_exc()
                r = {"name": cfg[0], "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
                gc.collect()
                torch.cuda.empty_cache()
            r["wall_s"] = time.time() - t0
            out.write(json.dumps(r) + "\n")
            out.flush()
            print(json.dumps({k: v for k, v in r.items() if k not in ("step_ms_all", "phases")}), flush=True)
            for label, ph in r.get("phases", {}).items():
                print(f"  {label:<15} before {ph['allocated_before'] / 2**30:6.2f} GiB, peak +{ph['peak_above_before'] / 2**30:6.2f}, "
                      f"after {ph['allocated_after'] / 2**30:6.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
