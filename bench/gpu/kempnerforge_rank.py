#!/usr/bin/env python3
"""One rank of a published KempnerForge FSDP2 run, played on one GPU with KempnerForge's own code.

bench/published/kempnerforge.json holds five KempnerForge runs on 2-32 H200s; shardline predicts
their peak allocated memory 2.3-2.9 GiB above what they logged. This script runs the rank those
runs logged, on one GPU: a fake process group (torch's "fake" backend: collectives return at once
and move no data) of the run's world size, so FSDP2 shards, gathers into and reduces from buffers
of exactly the sizes one rank of the real run allocates. The model, the activation checkpointing,
fully_shard, the optimizer, the no-sync micro-batches and the clipping are KempnerForge's own
functions at the commit the runs measured (01b461a), imported from a checkout of it (--kf-root);
the step is scripts/train.py's non-pipeline step with random tokens (its loss.item() per
micro-batch, F.cross_entropy over the bf16 logits, clipping, AdamW, zero_grad). The model is built
directly on the GPU in bf16, which holds on the GPU what train.py's `.to(device, dtype)` of the CPU
model holds (the whole bf16 model, then its shards). Parameters gathered by a fake collective are
uninitialised memory, so the loss is meaningless; sizes and times are what is measured.

Per configuration (JSON lines, --out): torch.cuda.max_memory_allocated over the whole run (as
KempnerForge's log reports it: never reset), peak reserved, the allocated memory at each phase
of the first two steps, and the live allocations at the peak grouped by where they were made (from
the caching allocator's history, replayed). Then one step without the history is timed: with no
communication it is the rank's compute and FSDP2's copies alone.

Needs PyTorch 2.11 (the runs' release) and a GPU with the memory of the rank played (the H200's
141 GB for these runs):
  git -C KF checkout 01b461a; python3 bench/gpu/kempnerforge_rank.py --kf-root KF --out rank.jsonl
Compare with bench/published/check.py's predictions for the same row ids.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

# row id (bench/published/kempnerforge.json): (shape, world size, batch size, grad accumulation)
CONFIGS = {
    "smoke-7b-shape-2-layers-fsdp8": ("7b-2-layers", 8, 1, 2),
    "kempnerforge-13b-fsdp8": ("13b", 8, 4, 4),
    "kempnerforge-7b-fsdp2": ("7b", 2, 2, 4),
    "kempnerforge-7b-fsdp4": ("7b", 4, 4, 2),
    "kempnerforge-7b-fsdp32-validation": ("7b", 32, 4, 4),
    "kempnerforge-7b-fsdp4-validation": ("7b", 4, 8, 4),
}
# mfu_bench.sh's M7B and M13B at 9f3f03a; seq_len 4096, full activation checkpointing, fused AdamW
# (lr 3e-4), grad_clip_norm 1.0.
SHAPES = {
    "7b": dict(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, ffn_dim_multiplier=1.3,
               max_seq_len=4096, rope_theta=500000.0),
    "13b": dict(dim=5120, n_layers=40, n_heads=40, n_kv_heads=8, vocab_size=128256, ffn_dim_multiplier=1.3,
                max_seq_len=4096, rope_theta=500000.0),
}
SEQ_LEN = 4096
SHAPES["7b-2-layers"] = dict(SHAPES["7b"], n_layers=2)
GiB = 2.0 ** 30


def frame_label(frames, needle):
    for f in frames:
        if needle in f["filename"]:
            return f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}"
    return "-"


def peak_breakdown(snapshot, top):
    """Replays the allocator's history; returns the peak and the live blocks there, grouped by the
    innermost frame in KempnerForge or this script, in FSDP, and the innermost frame of all."""
    events = snapshot["device_traces"][0]
    current, peak, peak_index = 0, 0, -1
    for i, ev in enumerate(events):
        if ev["action"] == "alloc":
            current += ev["size"]
            if current > peak:
                peak, peak_index = current, i
        elif ev["action"] == "free_completed":
            current -= ev["size"]
    live = {}
    for ev in events[:peak_index + 1]:
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
        elif ev["action"] == "free_completed":
            live.pop(ev["addr"], None)
    groups = collections.defaultdict(lambda: [0, 0])
    for ev in live.values():
        frames = ev.get("frames", [])
        key = " | ".join((frame_label(frames, "kempnerforge"), frame_label(frames, "kempnerforge_rank.py"),
                          frame_label(frames, "/fsdp/"),
                          f"{os.path.basename(frames[0]['filename'])}:{frames[0]['name']}" if frames else "-"))
        groups[key][0] += ev["size"]
        groups[key][1] += 1
    rows = sorted(groups.items(), key=lambda kv: -kv[1][0])
    return {"replayed_peak_bytes": peak, "events": len(events), "peak_event": peak_index,
            "live_blocks": len(live),
            "groups": [{"where": k, "bytes": v[0], "blocks": v[1]} for k, v in rows[:top]],
            "other_bytes": sum(v[0] for _, v in rows[top:])}


def run_child(args):
    name = args.only
    shape, world, batch, accum = CONFIGS[name]
    sys.path.insert(0, os.path.abspath(args.kf_root))
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    torch.cuda.set_device(0)
    torch.cuda.memory._record_memory_history(enabled="all", context="alloc", stacks="python",
                                            max_entries=args.max_entries)
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    mesh = init_device_mesh("cuda", (world,), mesh_dim_names=("dp_shard",))

    from kempnerforge.config.schema import ActivationCheckpointing, ModelConfig, OptimizerConfig
    from kempnerforge.distributed.parallel import apply_ac, apply_fsdp2, default_mp_policy
    from kempnerforge.distributed.utils import clip_grad_norm_
    from kempnerforge.model.transformer import Transformer
    from kempnerforge.training.grad import maybe_no_sync
    from kempnerforge.training.optimizer import build_optimizer

    config = ModelConfig(**SHAPES[shape])
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = Transformer(config)
    torch.set_default_dtype(torch.float32)
    apply_ac(model, ActivationCheckpointing.full)
    apply_fsdp2(model, mesh, mp_policy=default_mp_policy(torch.bfloat16))
    optimizer = build_optimizer(model, OptimizerConfig(lr=3e-4, fused=True))
    params = sum(p.numel() for p in model.parameters())  # global (DTensor) sizes

    phases = []

    def mark(label):
        torch.cuda.synchronize()
        phases.append({"phase": label, "allocated": torch.cuda.memory_allocated(),
                       "peak_since_last": torch.cuda.max_memory_allocated()})
        run_peak[0] = max(run_peak[0], torch.cuda.max_memory_allocated())
        run_peak[1] = max(run_peak[1], torch.cuda.max_memory_reserved())
        torch.cuda.reset_peak_memory_stats()

    run_peak = [0, 0]
    mark("built")
    step_s = []
    for step in range(args.steps):
        record = step < args.recorded_steps
        if step == args.recorded_steps:
            torch.cuda.memory._record_memory_history(enabled=None)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for micro in range(accum):
            tokens = torch.randint(0, config.vocab_size, (batch, SEQ_LEN), device="cuda")
            labels = torch.randint(0, config.vocab_size, (batch, SEQ_LEN), device="cuda")
            with maybe_no_sync(model, micro, accum):
                logits = model(tokens)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
                if record:
                    mark(f"step{step} micro{micro} forward")
                (loss / accum).backward()
                loss.item()
                if record:
                    mark(f"step{step} micro{micro} backward")
        clip_grad_norm_(model, 1.0)
        if record:
            mark(f"step{step} clip")
        optimizer.step()
        if record:
            mark(f"step{step} optimizer")
        optimizer.zero_grad()
        torch.cuda.synchronize()
        step_s.append(time.perf_counter() - t0)
        if record:
            mark(f"step{step} zero_grad")
        if step == args.recorded_steps - 1:
            snapshot = torch.cuda.memory._snapshot()
    run_peak[0] = max(run_peak[0], torch.cuda.max_memory_allocated())
    run_peak[1] = max(run_peak[1], torch.cuda.max_memory_reserved())
    stats = torch.cuda.memory_stats()
    result = {
        "name": name, "world_size": world, "batch_size": batch, "grad_accum": accum, "seq_len": SEQ_LEN,
        "parameters": params, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "max_memory_allocated": run_peak[0], "max_memory_reserved": run_peak[1],
        "alloc_retries": stats.get("num_alloc_retries", 0),
        "step_s": step_s, "timed_steps_without_history": step_s[args.recorded_steps:],
        "tokens_per_s_per_gpu_compute_only": [batch * SEQ_LEN * accum / s for s in step_s[args.recorded_steps:]],
        "phases": phases, "peak": peak_breakdown(snapshot, args.top),
    }
    with open(args.child_out, "w") as f:
        f.write(json.dumps(result) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kf-root", required=True, help="a KempnerForge checkout at 01b461a")
    ap.add_argument("--out", required=True, help="JSON lines, one per configuration")
    ap.add_argument("--only", default="", help="comma-separated row ids (default: all, in CONFIGS order)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--recorded-steps", type=int, default=2, help="steps with the allocator history on")
    ap.add_argument("--timeout-s", type=int, default=150, help="per configuration")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--max-entries", type=int, default=3_000_000)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_out:
        run_child(args)
        return
    names = args.only.split(",") if args.only else list(CONFIGS)
    for name in names:
        child_out = args.out + f".{name}.tmp"
        cmd = [sys.executable, os.path.abspath(__file__), "--kf-root", args.kf_root, "--out", args.out,
               "--only", name, "--steps", str(args.steps), "--recorded-steps", str(args.recorded_steps),
               "--top", str(args.top), "--max-entries", str(args.max_entries), "--child-out", child_out]
        t0 = time.time()
        try:
            proc = subprocess.run(cmd, timeout=args.timeout_s, capture_output=True, text=True)
            error = None if proc.returncode == 0 else f"exit {proc.returncode}: " + proc.stderr[-1500:]
        except subprocess.TimeoutExpired:
            error = f"timed out after {args.timeout_s} s"
        if error is None:
            with open(child_out) as f:
                row = json.loads(f.read())
            os.remove(child_out)
            print(f"{name}: peak allocated {row['max_memory_allocated'] / GiB:.2f} GiB (replayed "
                  f"{row['peak']['replayed_peak_bytes'] / GiB:.2f}), reserved {row['max_memory_reserved'] / GiB:.2f} GiB, "
                  f"steps {', '.join(f'{s:.2f}' for s in row['step_s'])} s ({time.time() - t0:.0f} s wall)", flush=True)
        else:
            row = {"name": name, "error": error}
            print(f"{name}: {error}", flush=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
