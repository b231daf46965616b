#!/usr/bin/env python3
"""Convert the shared throughput CSV (llm-foundry MPT benchmark tables) into llmem-sweep's
measured-CSV format, as throughput-only rows (metric `none`, empty measured_gib).

Usage:
    python3 datasets/measured/convert_throughput.py ../shared/datasets/public-throughput.csv \
        [datasets/measured/throughput.csv]

Python 3 standard library only; deterministic output (same input, same bytes). Every value
goes through an explicit table; an unknown value stops the run with an error naming the row.
README.md next to this script describes the columns ("Throughput-only rows").
"""

import csv
import io
import os
import sys

OUT_HEADER = [
    "model", "method", "gpus", "tp", "micro_batch", "seq_len", "precision", "finetune",
    "lora_r", "lora_targets", "quant", "grad_ckpt", "optimizer", "metric", "measured_gib",
    "gpu", "framework", "source",
    # extension columns (allowed after the contract columns)
    "id", "grade", "stack", "features", "attention", "seq_kind", "tokens_per_s_gpu", "notes",
    "group",
]

IN_HEADER = [
    "source_url", "model", "gpu", "gpus", "method", "tp", "micro_batch", "seq", "precision",
    "finetune", "grad_ckpt", "measured_tokens_s_gpu", "notes", "group", "label", "multi_node",
]

# "mosaicml/mpt-7b (llm-foundry scripts/train/yamls/pretrain/mpt-7b.yaml)" -> catalog id.
MODELS = {
    "mosaicml/mpt-%s (llm-foundry scripts/train/yamls/pretrain/mpt-%s.yaml)" % (s, s):
        "llm-foundry/mpt-%s" % s
    for s in ("125m", "350m", "760m", "1b", "3b", "7b", "13b", "30b", "70b")
}
GPUS = {"A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM-80GB"}
METHODS = {"adp": "adp"}          # FSDP FULL_SHARD


# The table's "Sharding Strategy" column, copied into the notes: FULL_SHARD is ZeRO-3 (adp);
# SHARD_GRAD_OP keeps the parameters gathered between forward and backward and shards the
# gradients and optimizer states: ZeRO-2, method zero2 (README "Methods beyond LLMem").
def method_of(row, line):
    m = lookup(METHODS, row["method"], "method", line)
    if " SHARD_GRAD_OP;" in row["notes"]:
        return "zero2"
    if " FULL_SHARD;" in row["notes"]:
        return m
    sys.exit("convert_throughput: line %d: no FSDP sharding strategy in notes" % line)
PRECISIONS = {"bf16": "bf16"}     # composer amp_bf16: fp32 master weights and states
FINETUNES = {"full": "full"}
CKPT = {"on": "on", "off": "off"}
# llm-foundry's pretrain yamls (mpt-*.yaml @4952183) use decoupled_adamw: composer's
# DecoupledAdamW updates one parameter at a time (composer/optim/decoupled_weight_decay.py
# adamw: `for i, param in enumerate(params)`), not a fused kernel (feature unfused-adamw).
OPTIMIZER = "adamw"
# scripts/train/benchmarking/submit_benchmarks.py (@b2a43a14, @5e85bd62, the commits that
# wrote the tables): --attn_impl default 'triton' (llm-foundry's flash_attn_triton.py).
FRAMEWORK = "llm-foundry @4952183 (composer, FSDP, amp_bf16, attn_impl triton)"


# The table's "MP Mode" column, copied into the notes as "<precision> <MP mode> <sharding>":
# composer's FSDP mixed precision (composer/trainer/mosaic_fsdp_utils.py @28cc4caf,
# get_mixed_precision): DEFAULT reduces gradients in fp32 (reduce_dtype=torch.float32), PURE
# in the autocast dtype.
def mp_features(row, line):
    if " DEFAULT " in row["notes"]:
        return "+fsdp-fp32-reduce"
    if " PURE " in row["notes"]:
        return ""
    sys.exit("convert_throughput: line %d: no FSDP mixed-precision mode in notes" % line)


def out_of_scope(row):
    """The reason a row is left out, or None."""
    if "amp_fp8" in row["notes"]:
        return "fp8 matmuls through NVIDIA Transformer Engine (composer amp_fp8), not the torchao Float8Linear that --precision fp8 models"
    return None


def lookup(table, value, field, line):
    if value not in table:
        sys.exit("convert_throughput: line %d: unknown %s '%s'" % (line, field, value))
    return table[value]


def convert(row, line, index):
    model = lookup(MODELS, row["model"], "model", line)
    gpu = row["gpu"]
    if gpu not in GPUS:
        sys.exit("convert_throughput: line %d: unknown gpu '%s'" % (line, gpu))
    if row["tp"] != "1":
        sys.exit("convert_throughput: line %d: tp '%s' (only 1 occurs)" % (line, row["tp"]))
    multi = lookup({"0": False, "1": True}, row["multi_node"], "multi_node", line)
    notes = "raw=%s tokens/s/GPU; %s; table row '%s'%s" % (
        row["measured_tokens_s_gpu"], row["notes"], row["label"],
        "; multi-node over RoCE" if multi else "")
    return {
        "model": model,
        "method": method_of(row, line),
        "gpus": row["gpus"],
        "tp": "1",
        "micro_batch": row["micro_batch"],
        "seq_len": row["seq"],
        "precision": lookup(PRECISIONS, row["precision"], "precision", line),
        "finetune": lookup(FINETUNES, row["finetune"], "finetune", line),
        "lora_r": "", "lora_targets": "", "quant": "none",
        "grad_ckpt": lookup(CKPT, row["grad_ckpt"], "grad_ckpt", line),
        "optimizer": OPTIMIZER,
        "metric": "none", "measured_gib": "",
        "gpu": gpu, "framework": FRAMEWORK, "source": row["source_url"],
        "id": "LF-%03d" % index, "grade": "A-", "stack": "hf",
        "features": "packed+fsdp" + mp_features(row, line) + "+unfused-adamw", "attention": "triton",
        "seq_kind": "exact",
        "tokens_per_s_gpu": "%g" % float(row["measured_tokens_s_gpu"]),
        "notes": notes, "group": row["group"],
    }


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    with open(argv[1], newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != IN_HEADER:
            sys.exit("convert_throughput: %s: unexpected header %s" % (argv[1], reader.fieldnames))
        rows = list(reader)
    out, skipped = [], []
    for i, row in enumerate(rows):
        line = i + 2
        why = out_of_scope(row)
        if why:
            skipped.append((line, row["label"], why))
            continue
        out.append(convert(row, line, i + 1))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=OUT_HEADER, lineterminator="\n")
    w.writeheader()
    w.writerows(out)
    if len(argv) == 3:
        with open(argv[2], "w", newline="", encoding="utf-8") as f:
            f.write(buf.getvalue())
    else:
        sys.stdout.write(buf.getvalue())
    sys.stderr.write("convert_throughput: %d rows written, %d out of scope\n" % (len(out), len(skipped)))
    for line, label, why in skipped:
        sys.stderr.write("  line %d (%s): %s\n" % (line, label, why))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
