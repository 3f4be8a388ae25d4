#!/usr/bin/env python3
"""Turns MosaicML llm-foundry's published MPT training benchmarks into bench/published/runs.json.

Reads scripts/train/benchmarking/README.md and the model yamls (scripts/train/yamls/pretrain/mpt-*.yaml)
from a git clone of mosaicml/llm-foundry at COMMIT and writes one row per table row, with its source
(table, row), its configuration and its measured throughput. Which rows are fit rows and which are
check rows is decided here, by a rule fixed before any fitting (SPLIT_RULE).

The README's tables were not all measured at once: b2a43a147 (2023-10-19) re-measured the A100 80GB
table and kept two rows it did not reproduce. So each row also records `first_published`, the
oldest commit (and the file's path then) whose tables hold that row with the same figures (its
measurement's vintage), and the rows of the earlier A100 80GB table that the re-measurement
replaced are kept as a table of their own (SUPERSEDED), numbered in their own README order under
the same split rule.

    bench/published/extract_llm_foundry.py --repo PATH/TO/llm-foundry [--commit C] > bench/published/runs.json
"""
import argparse
import json
import re
import subprocess
import sys

REPO = "mosaicml/llm-foundry"
README = "scripts/train/benchmarking/README.md"
YAML = "scripts/train/yamls/pretrain/mpt-{}.yaml"
# The tables this check uses. The "H100 80GB FP8" table is left out: its runs use
# TransformerEngine FP8 GEMMs, which shardline's compute model does not describe.
TABLES = {
    "## H100 80GB BF16 (Large Scale, >= 128 GPUs)": "h100_80gb_bf16_large",
    "## H100 80GB BF16": "h100_80gb_bf16",
    "## A100 80GB with 1600 Gbps node-node interconnect (RoCE)": "a100_80gb",
    "## A100 40GB with 1600 Gbps node-node interconnect (RoCE)": "a100_40gb",
}
# Tables replaced by a later re-measurement: (commit, heading) -> table name. Their rows whose
# figures the current tables still carry are not repeated.
SUPERSEDED = {("5f43bf16019e6d24d592c72ac1c97bf217527966", "## A100 80GB"): "a100_80gb_2023_04"}
SPLIT_RULE = ("Rows are numbered 1, 2, 3, ... in README order within each table; odd rows are fit rows, "
              "even rows are check rows. Fixed before any parameter was fitted; model parameters are "
              "fitted on fit rows only and the targets are measured on check rows.")


def git_show(repo, commit, path):
    return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def yaml_int(text, key):
    m = re.search(rf"^\s*{key}:\s*(\d+)", text, re.M)
    if not m:
        raise SystemExit(f"no {key} in yaml")
    return int(m.group(1))


def parse_tables(text, tables=TABLES, strict=True):
    rows, table, header = [], None, None
    for line in text.splitlines():
        if line.startswith("## "):
            table = tables.get(line.strip())
            header = None
            continue
        if table is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("- "):
            continue
        row = dict(zip(header, cells))
        if len(cells) != len(header):
            if not strict:  # an old version's malformed row: not one of the rows used here
                continue
            raise SystemExit(f"{table}: a row with {len(cells)} cells under {len(header)} headers: {line}")
        rows.append((table, row))
    return rows


def measurement(r):
    """What identifies one measurement across the README's history: configuration and figures."""
    by_name = {k.replace("\\", "").replace(" ", ""): v for k, v in r.items()}  # old headers: "\\# GPUs", "Micro BatchSize"
    return tuple(by_name.get(k) for k in ("Model", "SeqLen(T)", "#GPUs", "GPU", "MicroBatchSize", "GradAccum",
                                          "Throughput(T/s)", "Throughput(T/s/GPU)"))


def first_published(repo, commit):
    """measurement -> the oldest commit (up to COMMIT) whose README tables hold it, following the
    file through its renames (it began in mosaicml/examples' llm/throughput/)."""
    log = subprocess.run(["git", "-C", repo, "log", "--follow", "--format=%H %cs", "--name-only", commit, "--", README],
                         check=True, capture_output=True, text=True).stdout.split()
    versions = [(log[i], log[i + 1], log[i + 2]) for i in range(0, len(log), 3)]  # newest first
    first = {}
    for c, date, path in reversed(versions):
        text = git_show(repo, c, path)
        # Every table of that version, whatever its heading then.
        headings = {l.strip(): "any" for l in text.splitlines() if l.startswith("## ")}
        for _, r in parse_tables(text, headings, strict=False):
            key = measurement(r)
            if None not in key:
                first.setdefault(key, {"commit": c, "date": date, "path": path})
    return first


def row_of(table, n, r, first):
    return {
        "id": f"{table}-{n:02d}",
        "table": table,
        "table_row": n,
        "split": "fit" if n % 2 == 1 else "check",
        "model": r["Model"],
        "seq_len": int(r["SeqLen (T)"]),
        "gpus": int(r["# GPUs"]),
        "gpu": r["GPU"],
        "micro_batch_size": int(r["MicroBatchSize"]),
        "grad_accum": int(r["GradAccum"]),
        "global_batch_size": int(r["GlobalBatchSize"]),
        "precision": r["Precision"],
        "mp_mode": r["MP Mode"],
        "sharding": r["Sharding Strategy"],
        "activation_checkpointing": r["Activation Checkpointing"] == "True",
        "activation_cpu_offload": r["Activation CPUOffload"] == "True",
        "num_params": int(r["NumParams"]),
        "first_published": first[measurement(r)],
        "published": {"mfu": float(r["MFU"]) / 100, "hfu": float(r["HFU"]) / 100,
                      "tokens_per_s": int(r["Throughput (T/s)"]),
                      "tokens_per_s_per_gpu": int(r["Throughput (T/s/GPU)"])},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="a git clone of mosaicml/llm-foundry")
    ap.add_argument("--commit", default="HEAD")
    args = ap.parse_args()
    commit = subprocess.run(["git", "-C", args.repo, "rev-parse", args.commit], check=True,
                            capture_output=True, text=True).stdout.strip()
    readme = git_show(args.repo, commit, README)
    models = {}
    out_rows = []
    index_in_table = {}
    first = first_published(args.repo, commit)
    current = parse_tables(readme)
    carried = {measurement(r) for _, r in current}
    superseded = []
    for (old_commit, heading), name in SUPERSEDED.items():
        for i, (_, r) in enumerate(parse_tables(git_show(args.repo, old_commit, README), {heading: name}), 1):
            if measurement(r) not in carried:
                superseded.append((name, i, r))
    numbered = []
    for table, r in current:
        index_in_table[table] = index_in_table.get(table, 0) + 1
        numbered.append((table, index_in_table[table], r))
    for table, n, r in numbered + superseded:
        name = r["Model"]
        if name not in models:
            y = git_show(args.repo, commit, YAML.format(name))
            models[name] = {"source": YAML.format(name), "d_model": yaml_int(y, "d_model"),
                            "n_heads": yaml_int(y, "n_heads"), "n_layers": yaml_int(y, "n_layers"),
                            "expansion_ratio": yaml_int(y, "expansion_ratio"), "vocab_size": yaml_int(y, "vocab_size")}
        out_rows.append(row_of(table, n, r, first))
    doc = {
        "source": {"repository": REPO, "path": README, "commit": commit,
                   "tables": list(TABLES.keys()),
                   "superseded_tables": [{"commit": c, "table": h, "as": n} for (c, h), n in SUPERSEDED.items()],
                   "left_out": "the 'H100 80GB FP8' table (TransformerEngine FP8 GEMMs)"},
        "split_rule": SPLIT_RULE,
        "models": models,
        "rows": out_rows,
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
