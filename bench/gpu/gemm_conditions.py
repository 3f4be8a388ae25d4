#!/usr/bin/env python3
"""Does a GEMM's measured rate depend on how it is measured? One shape at a time under the
conditions that differ between kernels.py and a training step: random N(0,1) operands rotated
among buffers (kernels.py), weights at a training scale (N(0, 0.02)), one buffer set (L2-warm
operands), zeros, many calls between one pair of events, and CUDA-graph replay. Prints TFLOP/s,
the SM clock and power read after each (torch.cuda.clock_rate / power_draw, via NVML).

  python3 bench/gpu/gemm_conditions.py --out gemm_conditions.jsonl
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from kernels import Cycle, graph_us, median_us  # noqa: E402

SHAPES = [("1b gate_up fwd", 8192, 2048, 11264), ("1b down fwd", 8192, 5632, 2048), ("3b head fwd", 8192, 3072, 128256),
          ("8b gate_up fwd", 4096, 4096, 28672)]


def sets_of(m, k, n, count, x_std, w_std):
    return [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * x_std,
             torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * w_std) for _ in range(count)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.out, "w") as f:
        for label, m, k, n in SHAPES:
            flops = 2.0 * m * k * n
            per_set = 2 * (m * k + k * n + m * n)
            rot = max(1, min(8, -(-256 * 2**20 // per_set)))
            conditions = {
                "rotated N(0,1) (kernels.py)": Cycle(sets_of(m, k, n, rot, 1.0, 1.0)),
                "rotated, weights N(0,0.02)": Cycle(sets_of(m, k, n, rot, 1.0, 0.02)),
                "one set N(0,1)": Cycle(sets_of(m, k, n, 1, 1.0, 1.0)),
                "zeros": Cycle(sets_of(m, k, n, 1, 0.0, 0.0)),
            }
            for name, cyc in conditions.items():
                fn = (lambda c: lambda: F.linear(*c.next()))(cyc)
                t, _ = median_us(fn, target_ms=200)
                row = {"shape": label, "m": m, "k": k, "n": n, "condition": name, "time_us": t, "tflops": flops / t / 1e6,
                       "sm_clock_mhz": torch.cuda.clock_rate(), "power_mw": torch.cuda.power_draw()}
                f.write(json.dumps(row) + "\n")
                print(f"{label:<16} {name:<30} {row['tflops']:6.0f} TFLOP/s  SM {row['sm_clock_mhz']} MHz  "
                      f"{row['power_mw'] / 1000:.0f} W", flush=True)
            cyc = conditions["rotated N(0,1) (kernels.py)"]
            fn = lambda: F.linear(*cyc.next())  # noqa: E731
            batch, _ = median_us(lambda: [fn() for _ in range(8)], target_ms=200)
            graph = graph_us(fn, per_set)
            for name, t in (("8 calls per event pair", batch / 8), ("graph replay", graph)):
                row = {"shape": label, "condition": name, "time_us": t, "tflops": flops / t / 1e6,
                       "sm_clock_mhz": torch.cuda.clock_rate(), "power_mw": torch.cuda.power_draw()}
                f.write(json.dumps(row) + "\n")
                print(f"{label:<16} {name:<30} {row['tflops']:6.0f} TFLOP/s  SM {row['sm_clock_mhz']} MHz", flush=True)
            del conditions, cyc
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
