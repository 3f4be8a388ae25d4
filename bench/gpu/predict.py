#!/usr/bin/env python3
"""shardline's prediction beside each measured one-GPU FSDP2 step of bench/gpu/fsdp_step.py.

Each measured row becomes the scenario it describes (scenario_of: the transformer shorthand with
the row's shape, RMSNorm, RoPE, SwiGLU, untied head, fp32 loss, the root group; the H100 preset
on one GPU, mesh shard 1; bf16 parameters, fp32 reduction, AdamW), is simulated, and printed as
predicted vs measured step time, tokens/s, peak allocated and peak reserved memory.

  bench/gpu/predict.py bench/gpu/h100_results.jsonl [--binary build/release/cli/shardline]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GiB = 2.0 ** 30


def scenario_of(row, preset):
    return {
        "name": row["name"],
        "model": {"transformer": {
            "layers": row["layers"], "hidden": row["hidden"], "ffn_hidden": row["ffn_hidden"], "heads": row["heads"],
            "kv_heads": row["kv_heads"], "vocab": row["vocab"], "seq_len": row["seq_len"],
            "micro_batch_size": row["micro_batch_size"], "activation_checkpointing": row["checkpointing"],
            "tied_embeddings": False, "loss": "fp32"}},
        "cluster": {"preset": preset, "nodes": 1, "gpus_per_node": 1},
        "mesh": {"shard": 1},
        # The row's torch.optim.AdamW implementation (rows without one: foreach, its default).
        "policy": {"param_dtype": "bf16", "reduce_dtype": "fp32", "micro_batches": 1,
                   "optimizer_implementation": row.get("optimizer", "foreach")},
    }


def simulate(binary, scenario):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scenario, f)
        path = f.name
    try:
        out = subprocess.run([binary, "simulate", path, "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            return {"error": out.stderr.strip()}
        j = json.loads(out.stdout)
        return j.get("metrics", j)
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/release/cli/shardline"))
    ap.add_argument("--preset", default="h100-sxm-dgx")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.results) if line.strip()]
    env = rows[0].get("environment", {})
    print(f"measured on {env.get('gpu')}, PyTorch {env.get('torch')}, CUDA {env.get('cuda')}, NCCL {env.get('nccl')}")
    print(f"{'configuration':<32} {'step pred/meas (ms)':>20} {'error':>7}  {'allocated pred/meas GiB':>24}  "
          f"{'reserved pred/meas GiB':>23}  {'needed':>6}  {'meas reserved/active-1':>22}")
    for r in rows[1:]:
        if "error" in r:
            print(f"{r['name']:<32} measured run failed: {r['error']}")
            continue
        m = simulate(args.binary, scenario_of(r, args.preset))
        if "error" in m:
            print(f"{r['name']:<32} simulate failed: {m['error']}")
            continue
        pred_ms = m["step_time_us"] / 1000.0
        meas_ms = r["step_ms_median"]
        frag = r["max_memory_reserved"] / r["active_bytes_peak"] - 1
        print(f"{r['name']:<32} {pred_ms:9.1f} / {meas_ms:8.1f} {100 * (pred_ms / meas_ms - 1):+6.1f}%  "
              f"{m['peak_memory_bytes'] / GiB:11.1f} / {r['max_memory_allocated'] / GiB:10.1f}  "
              f"{m['peak_reserved_bytes'] / GiB:10.1f} / {r['max_memory_reserved'] / GiB:10.1f}  "
              f"{m['min_reserved_bytes'] / GiB:6.1f}  {frag:22.3f}"
              + ("  (flushes predicted)" if m.get("allocator_cache_flushes") else "")
              + (f"  (alloc retries measured: {r['num_alloc_retries']})" if r.get("num_alloc_retries") else ""))


if __name__ == "__main__":
    sys.exit(main())
