#!/usr/bin/env python3
"""Per-GPU throughput across nodes: measured against predicted.

Usage:
    python3 datasets/measured/node_drop.py [BINARY] [MEASURED.csv]
    (defaults: build/llmem-sweep, datasets/measured/throughput.csv)

Groups the rows that differ only in the GPU count (same model, GPU, sequence, micro-batch,
checkpointing, precision, features, attention) and reach beyond 8 GPUs, and prints for each
count above the group's smallest the change of tokens/s per GPU from that smallest count:
measured and as `validate` predicts it. Python 3 standard library only.
"""

import csv
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict


def predicted(binary, measured):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "v.csv")
        subprocess.run([binary, "validate", "--measured", measured, "--out", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        with open(out, newline="") as fh:
            return {int(r["line"]): r["predicted_tokens_s_gpu"] for r in csv.DictReader(fh)}


def main(argv):
    binary = argv[1] if len(argv) > 1 else "build/llmem-sweep"
    measured = argv[2] if len(argv) > 2 else "datasets/measured/throughput.csv"
    pred = predicted(binary, measured)
    with open(measured, newline="") as fh:
        rows = list(csv.DictReader(fh))
    groups = defaultdict(list)
    for i, r in enumerate(rows):
        key = (r["model"], r["gpu"], r["seq_len"], r["micro_batch"], r["grad_ckpt"], r["precision"],
               r.get("features", ""), r.get("attention", ""))
        groups[key].append((int(r["gpus"]), i + 2, r))
    print("%-28s %-14s %5s %3s %5s %5s %9s %9s" % ("model", "gpu", "seq", "mb", "from", "to",
                                                   "measured", "predicted"))
    diffs, meas, model = [], [], []
    for key, members in groups.items():
        members.sort(key=lambda m: m[0])
        if len(members) < 2 or members[-1][0] <= 8:
            continue
        g0, l0, r0 = members[0]
        for g, line, r in members[1:]:
            if g <= 8 or not pred.get(line) or not pred.get(l0):
                continue
            m = 100.0 * (float(r["tokens_per_s_gpu"]) / float(r0["tokens_per_s_gpu"]) - 1.0)
            p = 100.0 * (float(pred[line]) / float(pred[l0]) - 1.0)
            diffs.append(abs(p - m))
            meas.append(m)
            model.append(p)
            print("%-28s %-14s %5s %3s %5d %5d %+8.1f%% %+8.1f%%" % (
                key[0].split("/")[-1][:28], key[1][:14], key[2], key[3], g0, g, m, p))
    if diffs:
        print("pairs %d: measured mean %+.1f %%, predicted mean %+.1f %%, median |predicted - "
              "measured| %.1f points" % (len(diffs), statistics.mean(meas), statistics.mean(model),
                                         statistics.median(diffs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
