#!/usr/bin/env python3
"""The README's tables of our own measurements (README "Ground truth of our own"; not run
by ctest).

One line per measured configuration of DATA (default datasets/measured/h100-20261127.csv;
the H200 lease's is h200-20261127.csv): what it ran, the
three measured peaks (allocated, reserved, device) and the model's error on each, from
`llmem-sweep validate --out`. With a second binary (BEFORE), that build's error on one metric
too (METRIC, default allocated), so a model change shows row by row.

Usage: python3 tests/research/h100_table.py [BINARY [BEFORE [DATA [METRIC]]]]   (default
build/llmem-sweep; BEFORE "-" for none; run in the repo root)
"""
import csv
import subprocess
import sys
import tempfile

DATA = "datasets/measured/h100-20261127.csv"
METRICS = ("allocated", "reserved", "device")


def errors(binary, data):
    """(csv line -> error %) from validate --out."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        subprocess.run([binary, "validate", "--measured", data, "--out", out.name],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out.name, newline="") as f:
            return {int(r["line"]): r["error_pct"] for r in csv.DictReader(f)}


def describe(r):
    parts = [r["model"].split("/")[-1], r["precision"], r["finetune"]]
    if r["grad_ckpt"] == "on":
        parts.append("ckpt")
    if r["attention"] != "sdpa":
        parts.append(r["attention"])
    if r["optimizer"] != "adamw":
        parts.append(r["optimizer"])
    elif "unfused-adamw" not in r["features"]:
        parts.append("fused")
    parts.append(f"{r['micro_batch']}x{r['seq_len']}")
    if r["data"] == "variable":
        parts.append("variable")
    if r["alloc_conf"] != "default":
        parts.append(r["alloc_conf"])
    if "hf-trainer" in r["features"]:
        parts.append("Trainer")
    if r["method"] != "single":
        parts.append(f"{r['method']} x{r['gpus']} (fake pg)")
    return " ".join(parts)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/llmem-sweep"
    data = sys.argv[3] if len(sys.argv) > 3 else DATA
    metric = sys.argv[4] if len(sys.argv) > 4 else "allocated"
    if metric not in METRICS:
        sys.exit(f"h100_table.py: METRIC is one of {', '.join(METRICS)}, not {metric!r}")
    now = errors(binary, data)
    before = errors(sys.argv[2], data) if len(sys.argv) > 2 and sys.argv[2] != "-" else None
    with open(data, newline="") as f:
        rows = list(csv.DictReader(f))
    configs = {}
    for line, r in enumerate(rows, 2):
        configs.setdefault(r["id"], []).append((line, r))
    head = "| id | configuration | allocated GiB | reserved GiB | device GiB | error % (alloc / res / dev)"
    head += f" | {metric} before % |" if before else " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for cid, lines in configs.items():
        first = lines[0][1]
        if first["status"] != "ok":
            cols = ["", "", "", first["status"]] + ([""] if before else [])
        else:
            by = {r["metric"]: (line, r) for line, r in lines}
            cols = [by[m][1]["measured_gib"] if m in by else "" for m in METRICS]
            cols.append(" / ".join(now.get(by[m][0], "-") if m in by else "-" for m in METRICS))
            if before:
                cols.append(before.get(by[metric][0], "-") if metric in by else "-")
        print(f"| {cid} | {describe(first)} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
