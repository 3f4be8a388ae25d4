#!/usr/bin/env python3
"""One rank of a published multi-GPU FSDP2 run, played on one GPU with the framework's own code.

shardline's memory rows (bench/published/) hold its predictions against what published runs on
2 to 128 GPUs logged. This script runs the rank those runs logged, on one GPU: a fake process
group (torch's "fake" backend: collectives return at once and move no data) of the run's world
size, so FSDP2 shards, gathers into and reduces from buffers of exactly the sizes one rank of the
real run allocates. The model, the activation checkpointing, fully_shard, the optimizer and the
step are the framework's own functions at the commit the runs measured, imported from a checkout
of it; tokens are random. Parameters gathered by a fake collective are uninitialised memory, so
the loss is meaningless; sizes and times are what is measured.

- KempnerForge (--kf-root, a checkout at 01b461a; bench/published/kempnerforge.json): its model,
  apply_ac, apply_fsdp2, build_optimizer, maybe_no_sync and clip_grad_norm_, and scripts/train.py's
  non-pipeline step (loss.item() per micro-batch, F.cross_entropy over the bf16 logits). The
  model is built directly on the GPU in bf16, which holds on the GPU what train.py's
  `.to(device, dtype)` of the CPU model holds (the whole bf16 model, then its shards).
- torchtitan (--tt-root, a checkout at 9dec370; bench/published/torchtitan_h100.json, Tables 1
  and 3): its Llama 3 8B, apply_ac (selective, op policy), apply_fsdp (the last block kept after
  forward), meta init, init_weights, train.py's step (fp32 cross-entropy, `del pred` before
  backward), clip_grad_norm_ and AdamW foreach. Two differences from the PyTorch of those runs
  (2024-12) are undone: the root is kept unsharded after forward (set_reshard_after_forward(False,
  recurse=False)), as FSDP2 did before 2.8 whatever reshard_after_forward said, and SDPA is held to
  its flash kernel, which the op policy's save list names (a later PyTorch may pick cuDNN's).

Per configuration (JSON lines, --out): torch.cuda.max_memory_allocated over the whole run (never
reset, as KempnerForge's log; torchtitan's reserved figure is also a run peak here), peak
reserved, the allocated memory at each phase of the recorded steps, and the live allocations at
the peak grouped by where they were made (from the caching allocator's history, replayed). Then
the remaining steps run without the history and are timed: with no communication, each is the
rank's compute and FSDP2's copies alone.

Needs PyTorch 2.11 (KempnerForge's runs' release) and a GPU with the memory of the rank played
(an H200's 141 GB for these runs):
  python3 bench/gpu/framework_rank.py --kf-root KF --tt-root TT --out rank.jsonl [--only ID,...]
Compare with bench/published/check.py's predictions for the same row ids, or here (no GPU):
  python3 bench/gpu/framework_rank.py --predict [--only ID,...] [--out predicted.jsonl]
      [--measured rank.jsonl --gate 0.10]
--predict prints shardline's peak allocated, reserved estimate, step and compute time for each
configuration (a held-out one from its template row's rules, HELD_OUT); with --measured it holds
each peak allocated to the one-rank run's and exits 1 beyond --gate (CTest
published.gpu_heldout_memory).
"""
import argparse
import collections
import importlib.util
import json
import os
import subprocess
import sys
import time

# row id (bench/published/): (framework, shape, world size, batch size, grad accumulation, sequence,
# activation checkpointing)
CONFIGS = {
    "smoke-7b-shape-2-layers-fsdp8": ("kempnerforge", "7b-2-layers", 8, 1, 2, 4096, "full"),
    "kempnerforge-13b-fsdp8": ("kempnerforge", "13b", 8, 4, 4, 4096, "full"),
    "kempnerforge-7b-fsdp2": ("kempnerforge", "7b", 2, 2, 4, 4096, "full"),
    "kempnerforge-7b-fsdp4": ("kempnerforge", "7b", 4, 4, 2, 4096, "full"),
    "kempnerforge-7b-fsdp32-validation": ("kempnerforge", "7b", 32, 4, 4, 4096, "full"),
    "kempnerforge-7b-fsdp4-validation": ("kempnerforge", "7b", 4, 8, 4, 4096, "full"),
    "torchtitan_h100-8b-8": ("torchtitan", "llama3-8b", 8, 2, 1, 8192, "selective_op"),
    "torchtitan_h100-8b-128": ("torchtitan", "llama3-8b", 128, 2, 1, 8192, "selective_op"),
    # Held out: configurations no published row has, predicted (--predict) and committed before
    # they were first run (2026-11-26, eighteenth session), to check the memory model's changes of
    # that session, which were found on the rows above.
    "heldout-torchtitan-8b-full-8": ("torchtitan", "llama3-8b", 8, 2, 1, 8192, "full"),
    "heldout-torchtitan-8b-selective_op-b1-32": ("torchtitan", "llama3-8b", 32, 1, 1, 8192, "selective_op"),
    "heldout-kempnerforge-13b-fsdp16-b2": ("kempnerforge", "13b", 16, 2, 2, 4096, "full"),
    "heldout-kempnerforge-7b-fsdp8-b4": ("kempnerforge", "7b", 8, 4, 1, 4096, "full"),
    # The project's own one-GPU step (bench/gpu/fsdp_step.py), whose peak it predicts 0.57 GiB low.
    "fsdp_step-llama-1b-none": ("fsdp_step", "llama-1b-none", 1, 4, 1, 2048, "none"),
    # HSDP (REPLICATE below): one rank of a 2 x 32 mesh over 64 GPUs, as the shipped 70B scenario's,
    # with fewer layers so that one GPU runs it. Added 2026-11-27 to settle in which order the caching
    # allocator's peak counts FSDP2's HSDP buffers: shardline's simulated peak (memory held until
    # its free runs on its stream) is 6-17% above its Program-order peak (host issue order) here.
    "fsdp_step-70b-shape-8-layers-hsdp2x32-ga2": ("fsdp_step", "llama3-70b-shape-8-layers-full", 64, 1, 2, 8192, "full"),
    "fsdp_step-70b-shape-4-layers-hsdp2x32-ga2": ("fsdp_step", "llama3-70b-shape-4-layers-full", 64, 1, 2, 8192, "full"),
    "fsdp_step-70b-shape-8-layers-hsdp2x32-ga1": ("fsdp_step", "llama3-70b-shape-8-layers-full", 64, 1, 1, 8192, "full"),
    # Held out: predicted (--predict, bench/gpu/h200_hsdp_rank_heldout_predicted.jsonl) and
    # committed before they were first run (2026-11-27), to check the memory model's changes that
    # the three runs above led to (core/block_backward, memory counted in host order).
    "heldout-fsdp_step-70b-shape-6-layers-fsdp32-ga2": ("fsdp_step", "llama3-70b-shape-6-layers-full", 32, 1, 2, 8192, "full"),
    "heldout-fsdp_step-70b-shape-3-layers-none-fsdp16-ga2": ("fsdp_step", "llama3-70b-shape-3-layers-none", 16, 1, 2, 2048, "none"),
    "heldout-fsdp_step-70b-shape-2-layers-none-hsdp2x16": ("fsdp_step", "llama3-70b-shape-2-layers-none", 32, 1, 1, 4096, "none"),
    "heldout-fsdp_step-8b-shape-16-layers-hsdp2x8-b2-ga2": ("fsdp_step", "llama3-8b-shape-16-layers-full", 16, 2, 2, 4096, "full"),
    "heldout-fsdp_step-3b-shape-24-layers-hsdp2x16-ga2": ("fsdp_step", "llama3-3b-shape-24-layers-full", 32, 1, 2, 8192, "full"),
    # Held out for the reserved estimate from the allocator's per-stream pools (bench/gpu/
    # fit_reserved.py, 2026-11-27): predicted (bench/gpu/h200_reserved_heldout_predicted.jsonl)
    # and committed before their first run, allocated and reserved both.
    "heldout2-fsdp_step-70b-shape-5-layers-hsdp2x16": ("fsdp_step", "llama3-70b-shape-5-layers-full", 32, 1, 1, 8192, "full"),
    "heldout2-fsdp_step-13b-shape-10-layers-fsdp16-b2-ga2": ("fsdp_step", "llama3-13b-shape-10-layers-full", 16, 2, 2, 4096, "full"),
    "heldout2-fsdp_step-8b-shape-8-layers-none-hsdp2x4": ("fsdp_step", "llama3-8b-shape-8-layers-none", 8, 1, 1, 4096, "none"),
    "heldout2-fsdp_step-1b-none-hsdp2x4-b4": ("fsdp_step", "llama-1b-none", 8, 4, 1, 2048, "none"),
}
# Configurations whose mesh has a replicate dimension (HSDP): {row id: replicate size}; the shard
# size is the world size over it.
REPLICATE = {name: 2 for name in CONFIGS if "hsdp2x" in name}
# fsdp_step.py-model shapes beyond its own CONFIGS (same fields): Llama 3 70B's layer with fewer
# layers, Llama 3.2 3B's with 24.
FSDP_STEP_SHAPES = {
    f"llama3-70b-shape-{n}-layers-{ac}": (f"llama3-70b-shape-{n}-layers-{ac}", n, 8192, 28672, 64, 8, 128256, 8192, 1, ac)
    for n, ac in ((2, "none"), (3, "none"), (4, "full"), (6, "full"), (8, "full"))
}
FSDP_STEP_SHAPES["llama3-3b-shape-24-layers-full"] = ("llama3-3b-shape-24-layers-full", 24, 3072, 8192, 24, 8, 128256, 8192, 1, "full")
FSDP_STEP_SHAPES["llama3-70b-shape-5-layers-full"] = ("llama3-70b-shape-5-layers-full", 5, 8192, 28672, 64, 8, 128256, 8192, 1, "full")
# KempnerForge's 13B layer (kempnerforge.json's shape) in fsdp_step.py's model.
FSDP_STEP_SHAPES["llama3-13b-shape-10-layers-full"] = ("llama3-13b-shape-10-layers-full", 10, 5120, 17920, 40, 8, 128256, 4096, 1, "full")
FSDP_STEP_SHAPES["llama3-8b-shape-8-layers-none"] = ("llama3-8b-shape-8-layers-none", 8, 4096, 14336, 32, 8, 128256, 4096, 1, "none")
# The published row each held-out configuration is predicted from (with its file's rules), and
# what differs. KempnerForge's runs here are eager, so their norms are the eager fp32 ones.
PUBLISHED_FILES = ("kempnerforge.json", "torchtitan_h100.json")
HELD_OUT = {
    "heldout-torchtitan-8b-full-8": ("torchtitan_h100-8b-8", {"activation_checkpointing": "full"}),
    "heldout-torchtitan-8b-selective_op-b1-32": ("torchtitan_h100-8b-8", {"gpus": 32, "micro_batch_size": 1}),
    "heldout-kempnerforge-13b-fsdp16-b2": ("kempnerforge-13b-fsdp8",
                                           {"gpus": 16, "micro_batch_size": 2, "grad_accum": 2}),
    "heldout-kempnerforge-7b-fsdp8-b4": ("kempnerforge-7b-fsdp4",
                                         {"gpus": 8, "micro_batch_size": 4, "grad_accum": 1,
                                          "architecture": {"norm_impl": "eager_fp32"}}),
}
# KempnerForge: mfu_bench.sh's M7B and M13B at 9f3f03a; full activation checkpointing, fused AdamW
# (lr 3e-4), grad_clip_norm 1.0. torchtitan: llama3_configs["8B"] at 9dec370 with llama3_8b.toml's
# rmsnorm, the Llama 3 tokenizer's 128256 words, selective (op) checkpointing, max_norm 1.0.
KF_SHAPES = {
    "7b": dict(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, ffn_dim_multiplier=1.3,
               max_seq_len=4096, rope_theta=500000.0),
    "13b": dict(dim=5120, n_layers=40, n_heads=40, n_kv_heads=8, vocab_size=128256, ffn_dim_multiplier=1.3,
                max_seq_len=4096, rope_theta=500000.0),
}
KF_SHAPES["7b-2-layers"] = dict(KF_SHAPES["7b"], n_layers=2)
GiB = 2.0 ** 30


def frame_label(frames, needle):
    for f in frames:
        if needle in f["filename"]:
            return f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}"
    return "-"


def peak_breakdown(snapshot, top):
    """Replays the allocator's history; returns the peak and the live blocks there, grouped by the
    innermost frame in the framework's code, in this script, in FSDP, and the innermost frame of all."""
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
        framework = frame_label(frames, "kempnerforge/")
        if framework == "-":
            framework = frame_label(frames, "torchtitan/")
        if framework == "-":
            framework = frame_label(frames, "fsdp_step.py")
        key = " | ".join((framework, frame_label(frames, "framework_rank.py"),
                          frame_label(frames, "/fsdp/"),
                          f"{os.path.basename(frames[0]['filename'])}:{frames[0]['name']}" if frames else "-"))
        groups[key][0] += ev["size"]
        groups[key][1] += 1
    rows = sorted(groups.items(), key=lambda kv: -kv[1][0])
    return {"replayed_peak_bytes": peak, "events": len(events), "peak_event": peak_index,
            "live_blocks": len(live),
            "groups": [{"where": k, "bytes": v[0], "blocks": v[1]} for k, v in rows[:top]],
            "other_bytes": sum(v[0] for _, v in rows[top:])}


class Recorder:
    """Allocated memory at each phase (synchronised), and the run's peaks over every phase."""

    def __init__(self, torch):
        self.torch, self.phases, self.peak_allocated, self.peak_reserved = torch, [], 0, 0

    def mark(self, label):
        cuda = self.torch.cuda
        cuda.synchronize()
        self.phases.append({"phase": label, "allocated": cuda.memory_allocated(),
                            "peak_since_last": cuda.max_memory_allocated()})
        self.peak_allocated = max(self.peak_allocated, cuda.max_memory_allocated())
        self.peak_reserved = max(self.peak_reserved, cuda.max_memory_reserved())
        cuda.reset_peak_memory_stats()


def kempnerforge_rank(torch, mesh, shape, kf_root):
    """KempnerForge at 01b461a: the model, its step (one micro-batch) and the end of the step."""
    sys.path.insert(0, os.path.abspath(kf_root))
    import torch.nn.functional as F
    from kempnerforge.config.schema import ActivationCheckpointing, ModelConfig, OptimizerConfig
    from kempnerforge.distributed.parallel import apply_ac, apply_fsdp2, default_mp_policy
    from kempnerforge.distributed.utils import clip_grad_norm_
    from kempnerforge.model.transformer import Transformer
    from kempnerforge.training.grad import maybe_no_sync
    from kempnerforge.training.optimizer import build_optimizer

    config = ModelConfig(**KF_SHAPES[shape])
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = Transformer(config)
    torch.set_default_dtype(torch.float32)
    apply_ac(model, ActivationCheckpointing.full)
    apply_fsdp2(model, mesh, mp_policy=default_mp_policy(torch.bfloat16))
    optimizer = build_optimizer(model, OptimizerConfig(lr=3e-4, fused=True))
    held = {}

    def micro_step(tokens, labels, micro, accum, mark):
        with maybe_no_sync(model, micro, accum):
            held["logits"] = model(tokens)  # train.py's `logits` lives until the next forward returns
            logits = held["logits"]
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            mark("forward")
            (loss / accum).backward()
            loss.item()

    def end_of_step(mark):
        clip_grad_norm_(model, 1.0)
        mark("clip")
        optimizer.step()
        mark("optimizer")
        optimizer.zero_grad()

    return model, config.vocab_size, micro_step, end_of_step, lambda: None


def torchtitan_rank(torch, mesh, shape, ac, tt_root):
    """torchtitan at 9dec370 (Llama 3 8B), as its train.py runs one step without pipelining."""
    sys.path.insert(0, os.path.abspath(tt_root))
    import copy
    import importlib
    import types
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    # Modules 2024's torchtitan imports that a later PyTorch may have moved; none is used on this
    # path but the names. The parallelisms package's __init__ (pipelining) is skipped the same way.
    for old, new in (("torch.distributed._tensor", "torch.distributed.tensor"),):
        try:
            importlib.import_module(old)
        except ImportError:
            sys.modules[old] = importlib.import_module(new)
    try:
        importlib.import_module("torch.distributed._composable.replicate")
    except ImportError:
        sys.modules["torch.distributed._composable.replicate"] = types.SimpleNamespace(replicate=None)
    package = types.ModuleType("torchtitan.parallelisms")
    package.__path__ = [os.path.join(os.path.abspath(tt_root), "torchtitan", "parallelisms")]
    sys.modules["torchtitan.parallelisms"] = package
    from torchtitan.models.llama import Transformer, llama3_configs
    from torchtitan.parallelisms.parallelize_llama import apply_ac, apply_fsdp
    from torchtitan.utils import clip_grad_norm_

    assert shape == "llama3-8b"
    config = copy.deepcopy(llama3_configs["8B"])
    config.norm_type, config.vocab_size, config.max_seq_len = "rmsnorm", 128256, 8192
    with torch.device("meta"):
        model = Transformer.from_model_args(config)
    apply_ac(model, types.SimpleNamespace(mode="full") if ac == "full" else
             types.SimpleNamespace(mode="selective", selective_ac_option="op"))
    apply_fsdp(model, mesh, param_dtype=torch.bfloat16, reduce_dtype=torch.float32, pp_enabled=False)
    model.set_reshard_after_forward(False, recurse=False)  # the root kept, as before PyTorch 2.8
    model.to_empty(device="cuda")
    with torch.no_grad():
        model.init_weights()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=8e-4, betas=(0.9, 0.95), weight_decay=0.1,
                                  fused=False, foreach=True)

    def micro_step(tokens, labels, micro, accum, mark):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            pred = model(tokens)
            loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
            del pred
            mark("forward")
            loss.backward()

    def end_of_step(mark):
        clip_grad_norm_(list(model.parameters()), 1.0, foreach=True)
        mark("clip")
        optimizer.step()
        mark("optimizer")

    return model, config.vocab_size, micro_step, end_of_step, optimizer.zero_grad


def fsdp_step_rank(torch, mesh, shape):
    """bench/gpu/fsdp_step.py's model and step (fused AdamW), one of its CONFIGS by name."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fsdp_step
    import torch.nn.functional as F
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    name, layers, h, f, heads, kv_heads, vocab, seq, mbs, ckpt = next(
        c for c in list(fsdp_step.CONFIGS) + list(FSDP_STEP_SHAPES.values()) if c[0] == shape)
    with torch.device("meta"):
        model = fsdp_step.Model(layers, h, f, heads, kv_heads, vocab, seq, ckpt == "full")
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    model.to_empty(device="cuda")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02) if p.dim() > 1 else p.fill_(1.0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)

    def micro_step(tokens, labels, micro, accum, mark):
        logits = model(tokens)
        loss = F.cross_entropy(logits.float().view(-1, vocab), labels.view(-1))
        del logits
        mark("forward")
        loss.backward()

    def end_of_step(mark):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        mark("clip")
        optimizer.step()
        mark("optimizer")
        optimizer.zero_grad(set_to_none=True)

    return model, vocab, micro_step, end_of_step, lambda: None


def run_child(args):
    name = args.only
    framework, shape, world, batch, accum, seq_len, ac = CONFIGS[name]
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    torch.cuda.set_device(0)
    torch.cuda.memory._record_memory_history(enabled="all", context="alloc", stacks="python",
                                            max_entries=args.max_entries)
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    if name in REPLICATE:  # HSDP: fully_shard over a 2-D mesh replicates along the first dimension
        replicate = REPLICATE[name]
        mesh = init_device_mesh("cuda", (replicate, world // replicate), mesh_dim_names=("dp_replicate", "dp_shard"))
    else:
        mesh = init_device_mesh("cuda", (world,), mesh_dim_names=("dp_shard",))
    if framework == "kempnerforge":
        model, vocab, micro_step, end_of_step, start_of_step = kempnerforge_rank(torch, mesh, shape, args.kf_root)
    elif framework == "fsdp_step":
        model, vocab, micro_step, end_of_step, start_of_step = fsdp_step_rank(torch, mesh, shape)
    else:
        model, vocab, micro_step, end_of_step, start_of_step = torchtitan_rank(torch, mesh, shape, ac, args.tt_root)
    params = sum(p.numel() for p in model.parameters())  # global (DTensor) sizes

    rec = Recorder(torch)
    rec.mark("built")
    step_s, snapshot = [], None
    for step in range(args.steps):
        record = step < args.recorded_steps
        if step == args.recorded_steps:
            torch.cuda.memory._record_memory_history(enabled=None)
        mark = (lambda label, step=step: rec.mark(f"step{step} {label}")) if record else (lambda label: None)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start_of_step()
        for micro in range(accum):
            tokens = torch.randint(0, vocab, (batch, seq_len), device="cuda")
            labels = torch.randint(0, vocab, (batch, seq_len), device="cuda")
            micro_step(tokens, labels, micro, accum, lambda label, micro=micro: mark(f"micro{micro} {label}"))
            mark(f"micro{micro} backward")
        end_of_step(mark)
        torch.cuda.synchronize()
        step_s.append(time.perf_counter() - t0)
        mark("end")
        if step == args.recorded_steps - 1:
            snapshot = torch.cuda.memory._snapshot()
    rec.mark("after")
    stats = torch.cuda.memory_stats()
    timed = step_s[args.recorded_steps:]
    result = {
        "name": name, "framework": framework, "world_size": world, "batch_size": batch, "grad_accum": accum,
        "seq_len": seq_len, "parameters": params, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "max_memory_allocated": rec.peak_allocated, "max_memory_reserved": rec.peak_reserved,
        "alloc_retries": stats.get("num_alloc_retries", 0),
        "step_s": step_s, "timed_steps_without_history": timed,
        "tokens_per_s_per_gpu_compute_only": [batch * seq_len * accum / s for s in timed],
        "phases": rec.phases, "peak": peak_breakdown(snapshot, args.top),
    }
    with open(args.child_out, "w") as f:
        f.write(json.dumps(result) + "\n")


def fsdp_step_rank_scenario(name):
    """The scenario of a configuration of fsdp_step.py's model (bench/gpu/predict.py's scenario of
    it, fused AdamW) on world-size GPUs of the H100 preset, 8 per node."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import predict as one_gpu
    _, shape, world, batch, accum, seq_len, ac = CONFIGS[name]
    cfg = next(dict(zip(one_gpu.CONFIG_FIELDS, c)) for c in FSDP_STEP_SHAPES.values() if c[0] == shape) \
        if shape in FSDP_STEP_SHAPES else next(c for c in one_gpu.configs() if c["name"] == shape)
    cfg.update(name=name, micro_batch_size=batch, seq_len=seq_len, checkpointing=ac, optimizer="fused")
    scenario = one_gpu.scenario_of(cfg, "h100-sxm-dgx")
    scenario["cluster"].update(nodes=max(1, world // 8), gpus_per_node=min(world, 8))
    replicate = REPLICATE.get(name, 1)
    scenario["mesh"] = {"shard": world // replicate, "replicate": replicate}
    scenario["policy"]["micro_batches"] = accum
    return scenario


def rank_scenario(name, published):
    """The scenario of a one-rank configuration: fsdp_step.py's model (fsdp_step_rank_scenario), or
    a published row's as bench/published/check.py makes it (`published`: {row id: row}), a
    held-out one's from its template row with its changes (HELD_OUT)."""
    if CONFIGS[name][0] == "fsdp_step":
        return fsdp_step_rank_scenario(name)
    published_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "published")
    sys.path.insert(0, published_dir)
    import check
    template, changes = HELD_OUT.get(name, (name, None))
    row = published[template]
    if changes is not None:
        row = dict(row, id=name, **{k: v for k, v in changes.items() if k != "architecture"})
        row["architecture"] = dict(row.get("architecture", {}), **changes.get("architecture", {}))
        row["gpus_per_node"] = min(row["gpus"], row.get("gpus_per_node", 8))
    return check.scenario_of(row, None)


def predict_fsdp_step_rank(binary, name):
    """shardline's metrics for a configuration of fsdp_step.py's model (fsdp_step_rank_scenario),
    and the peak of its Program in issue order: static memory plus each alloc and free marker as
    the host issues it."""
    import tempfile
    scenario = fsdp_step_rank_scenario(name)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "scenario.json"), "w") as f:
            json.dump(scenario, f)
        proc = subprocess.run([binary, "simulate", os.path.join(tmp, "scenario.json"), "--out", tmp],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()}, None
        with open(os.path.join(tmp, "metrics.json")) as f:
            metrics = json.load(f)
        with open(os.path.join(tmp, "program.json")) as f:
            program = json.load(f)
    held = peak = program["static_memory_bytes"]
    for op in program["ops"]:
        if op["kind"] in ("alloc", "free"):
            held += op["bytes"] if op["kind"] == "alloc" else -op["bytes"]
            peak = max(peak, held)
    return metrics, peak


def predict(args):
    """shardline's prediction for each configuration (here, no GPU): a published row's scenario as
    bench/published/check.py makes it, a held-out one's from its template row with its changes."""
    published = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "published")
    sys.path.insert(0, published)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import check
    import predict as one_gpu
    rows = {row["id"]: row for row in check.load_independent([os.path.join(published, f) for f in PUBLISHED_FILES])[0]}
    names = args.only.split(",") if args.only else [n for n in CONFIGS if n in rows or n in HELD_OUT]
    measured, failed = {}, []
    for path in args.measured:  # one-rank runs (this script's output): their peak allocated, to hold predictions to
        for line in open(path):
            r = json.loads(line)
            if "max_memory_allocated" in r:
                measured[r["name"]] = r["max_memory_allocated"] / GiB
    for name in names:
        issue_order_peak = None
        if CONFIGS[name][0] == "fsdp_step":
            m, issue_order_peak = predict_fsdp_step_rank(args.binary, name)
        else:
            m = one_gpu.simulate(args.binary, rank_scenario(name, rows))
        if "error" in m:
            sys.exit(f"{name}: {m['error']}")
        out = {"name": name, "predicted_peak_allocated_gib": m["peak_memory_bytes"] / GiB,
               "predicted_peak_allocator_reserved_gib": m["peak_allocator_reserved_bytes"] / GiB,
               "predicted_step_s": m["step_time_us"] / 1e6, "predicted_compute_busy_s": m["compute_busy_us"] / 1e6}
        if issue_order_peak is not None:
            out["program_order_peak_allocated_gib"] = issue_order_peak / GiB
        if name in measured:
            out["measured_peak_allocated_gib"] = measured[name]
            out["error"] = out["predicted_peak_allocated_gib"] / measured[name] - 1
            if abs(out["error"]) > args.gate:
                failed.append(f"{name} {100 * out['error']:+.1f}%")
        print(json.dumps(out), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(out) + "\n")
    if args.measured:
        missing = [n for n in names if n not in measured]
        print(f"peak allocated against {', '.join(os.path.basename(m) for m in args.measured)}: {len(names) - len(missing)} runs, "
              f"{'none' if not failed else ', '.join(failed)} beyond {100 * args.gate:.0f}%"
              + (f"; not measured there: {', '.join(missing)}" if missing else ""))
        if failed or missing:
            return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kf-root", default="", help="a KempnerForge checkout at 01b461a (its rows)")
    ap.add_argument("--tt-root", default="", help="a torchtitan checkout at 9dec370 (its rows)")
    ap.add_argument("--out", help="JSON lines, one per configuration (required unless --predict)")
    ap.add_argument("--only", default="", help="comma-separated row ids (default: those whose checkout is given)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--recorded-steps", type=int, default=2, help="steps with the allocator history on")
    ap.add_argument("--timeout-s", type=int, default=150, help="per configuration")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--max-entries", type=int, default=3_000_000)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--predict", action="store_true", help="print (and with --out append) shardline's predictions instead")
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build/release/cli/shardline"))
    ap.add_argument("--measured", action="append", default=[],
                    help="with --predict: one-rank results (JSON lines) to hold each prediction to (repeatable)")
    ap.add_argument("--gate", type=float, default=0.10,
                    help="with --measured: exit 1 when a peak allocated misses its measurement by more than this")
    args = ap.parse_args()
    if args.child_out:
        run_child(args)
        return
    unknown = [n for n in args.only.split(",") if n and n not in CONFIGS] if args.only else []
    if unknown:
        ap.error(f"--only: no configuration {unknown[0]!r}; expected some of: {', '.join(CONFIGS)}")
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        ap.error(f"--out {args.out}: the folder {os.path.dirname(os.path.abspath(args.out))} does not exist")
    if args.predict:
        if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
            ap.error(f"--binary {args.binary}: no shardline binary there")
        for path in args.measured:
            if not os.path.isfile(path):
                ap.error(f"--measured {path}: no such file")
        sys.exit(predict(args))
    if not args.out:
        sys.exit("--out is required")
    if importlib.util.find_spec("torch") is None:
        ap.error("the runs need PyTorch (and a GPU); without them, --predict")
    # The flag each framework's checkout comes from (fsdp_step.py is in this repository: none).
    roots = {"kempnerforge": ("--kf-root", args.kf_root), "torchtitan": ("--tt-root", args.tt_root)}

    def missing_checkout(name):
        """The flag of the checkout this configuration needs and was not given, else None."""
        flag, root = roots.get(CONFIGS[name][0], (None, None))
        return flag if flag and not root else None

    names = args.only.split(",") if args.only else [n for n in CONFIGS if not missing_checkout(n)]
    failed = []
    for name in names:
        if flag := missing_checkout(name):
            sys.exit(f"{name}: needs {flag}")
        child_out = args.out + f".{name}.tmp"
        cmd = [sys.executable, os.path.abspath(__file__), "--kf-root", args.kf_root, "--tt-root", args.tt_root,
               "--out", args.out, "--only", name, "--steps", str(args.steps), "--recorded-steps",
               str(args.recorded_steps), "--top", str(args.top), "--max-entries", str(args.max_entries),
               "--child-out", child_out]
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
            failed.append(name)
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
    # Every configuration's row is written, failed ones with their error; the exit says whether any failed.
    if failed:
        sys.exit(f"framework_rank.py: {len(failed)} of {len(names)} configurations failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
