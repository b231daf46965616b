#!/usr/bin/env python3
"""Convert the second shared collection (public-measured-2.csv) into llmem-sweep's
measured-CSV format.

Usage:
    python3 datasets/measured/convert_public2.py ../shared/datasets/public-measured-2.csv \
        [datasets/measured/public-2.csv]

Python 3 standard library only; the output is deterministic. The input already has the
measured-CSV contract columns, but its knob cells are free text (what each source set); every
text goes through an explicit table here, and a text no table knows stops the run naming the
row. Every input row is written: rows the model cannot represent carry the feature (or stack)
that makes `validate` list them as skipped with the reason. README.md next to this script
describes the columns and every judgement call ("public-2.csv").
"""

import csv
import io
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the data
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convert_public import lookup, parse_grade, parse_int, split_parts  # noqa: E402

IN_HEADER = [
    "model", "method", "gpus", "tp", "micro_batch", "seq_len", "precision", "finetune",
    "lora_r", "lora_targets", "quant", "grad_ckpt", "optimizer", "metric", "measured_gib",
    "gpu", "framework", "source", "id", "notes", "tokens_per_s_gpu",
]

OUT_HEADER = [
    "model", "method", "gpus", "tp", "micro_batch", "seq_len", "precision", "finetune",
    "lora_r", "lora_targets", "quant", "grad_ckpt", "optimizer", "metric", "measured_gib",
    "gpu", "framework", "source",
    # extension columns: those of public.csv, then data and alloc_conf (README.md)
    "id", "grade", "stack", "features", "attention", "seq_kind", "data", "alloc_conf",
    "tokens_per_s_gpu", "notes",
    # pipeline stages and micro-batches of a pipelined step (method pp), empty otherwise
    "pp", "pp_microbatches",
]

# Canonical order of feature flags; those from selective-ac on make a row unrepresentable.
FEATURE_ORDER = [
    "compile", "compiled-loss", "flash-attn", "adapter-bf16", "lora-dropout", "grad-accum", "fsdp",
    "fsdp-end-units", "fp8-allgather", "fp8-rowwise", "pp-interleaved",
    "selective-ac", "float8", "mxfp8", "rocm", "context-parallel", "pipeline-parallel",
]

# id prefix -> stack. ms-swift 1.5 pins
# transformers>=4.33,<4.37 (requirements/framework.txt @019ebebb): the hf-4.31 profile.
SOURCES = {
    "SWB": "hf-4.31",
    "TT": "torchtitan",
    "TTB": "torchtitan",
    "AOF8": "torchtitan",
}

# method -> (method, features). torchtitan shards with FSDP2 over dp_shard (x cp).
METHOD_MAP = {
    "single": ("single", []),
    "adp": ("adp", ["fsdp"]),
    "adp+cp": ("adp", ["fsdp", "context-parallel"]),
    "adp+tp": ("dp+tp", ["fsdp"]),
    "adp+tp+pp": ("pp", ["fsdp"]),
    "adp+tp+pp+cp": ("pp", ["fsdp", "context-parallel"]),
}

# Pipelined rows: id -> (stages, micro-batches a step). torchtitan runs n_microbatches =
# pipeline_parallel_degree unless configured (parallelisms/pipelining_utils.py L79-81 at
# 9dec370; train_configs/llama3_405b.toml there sets no pipeline_parallel_microbatches), so
# 8 for PP 8 under either schedule: the interleaved one's 16 stages take the same 8 (the
# input notes say "default = number of stages", which gives 8 for 1F1B too). The row's
# micro_batch is the local batch per DP rank, so the pipeline micro-batch is local /
# n_microbatches.
PIPELINES = {
    "TT-13": (8, 8), "TT-14": (8, 8), "TT-15": (8, 8), "TT-16": (8, 8), "TT-17": (8, 8),
    "TT-18": (8, 8),
}

# precision -> (precision, features)
PRECISION_MAP = {
    # FSDP2 MixedPrecisionPolicy: bf16 compute, fp32 sharded master weights and AdamW states
    "bf16 (mixed: FSDP2 MixedPrecisionPolicy param=bf16 reduce=fp32; fp32 master params)":
        ("bf16", []),
    "bf16 (mixed: FSDP2 param=bf16 reduce=fp32; fp32 master params)": ("bf16", []),
    # ms-swift loads the model in bf16 (dtype AUTO on A100) and trains under Trainer bf16=True,
    # i.e. accelerate's bf16 autocast and its fp32 output conversion: `bf16`, as PEFT-MM and
    # PEFT-DOC in public.csv. swift's LoRA is PEFT 0.7's layer, which casts the adapters to
    # the base weight's dtype (adapter-bf16); `bf16` still counts the trained adapters and
    # their AdamW states at 4 bytes (README.md, public-2.csv)
    "bf16 (bf16 frozen base; Trainer bf16 autocast)": ("bf16", ["adapter-bf16"]),
}

# lora_targets: swift module names on Qwen v1 -> roles. c_attn is q, k and v in one Linear;
# ALL = every Linear but lm_head (c_attn, attn.c_proj, w1, w2, mlp.c_proj).
TARGETS_MAP = {
    "": "",
    "c_attn (fused qkv)": "q+k+v",
    "ALL (all linear: c_attn,c_proj,w1,w2)": "all",
}

# quant -> (precision or None to keep the precision column's, features): torchao float8
# training recipes (the base is not frozen or quantized) are `--precision fp8`: bf16 FSDP2
# mixed precision with Float8Linear block Linears (README.md, public-2.csv). Where a source
# does not state the recipe, torchtitan's defaults at the row's commit: tensorwise dynamic
# scaling (Float8LinearConfig()) and bf16 all-gather (--float8.enable_fsdp_float8_all_gather
# is store_true, off; torchtitan 9dec370 config_manager.py). MX block scaling (mxfp8) is not
# modelled: the row stays skipped.
FLOAT8 = {
    "float8 linears (torchao; recipe not stated)": [],
    "float8 linears (torchao)": [],
    "float8 linears (torchao Float8Linear; scaling recipe / fp8 all-gather settings not stated)": [],
    "float8 linears (torchao; fp8 FSDP all-gather + precomputed scales per llama3_405b.toml)":
        ["fp8-allgather"],
    "float8 tensorwise linears (torchao; fp8 FSDP all-gather; precompute scales; "
    "force_recompute_fp8_weight_in_bwd)": ["fp8-allgather"],
    "tensorwise with float8 all-gather (torchao low-precision linears)": ["fp8-allgather"],
    "rowwise with bfloat16 all-gather (torchao low-precision linears)": ["fp8-rowwise"],
    # torchao recipe lw_axiswise_with_gw_hp: rowwise casts, the weight gradient from the
    # high-precision input and output gradient: saves what rowwise saves
    "rowwise_with_gw_hp with bfloat16 all-gather (torchao low-precision linears)": ["fp8-rowwise"],
    "float8 tensorwise (f8 all-gather) (torchao low-precision linears)": ["fp8-allgather"],
    "mxfp8_cublas (torchao low-precision linears)": None,
    "mxfp8_cublas_rceil (torchao low-precision linears)": None,
    "float8 rowwise (torchao low-precision linears)": ["fp8-rowwise"],
}
QUANT_MAP = {"none": (None, "none", [])}
QUANT_MAP.update({q: ("fp8", "none", f) if f is not None else (None, "none", ["mxfp8"])
                  for q, f in FLOAT8.items()})

# grad_ckpt -> (off/on/selective, features). torchtitan's per-op selective AC saves chosen op
# outputs (every second matmul, attention) and recomputes the rest: `--grad-ckpt selective`.
CKPT_MAP = {
    "yes": ("on", []),
    "no": ("off", []),
    "full": ("on", []),
    "selective (per-op SAC)": ("selective", []),
    "selective (per-op SAC; train_configs/llama3_8b.toml selective_ac_option='op')":
        ("selective", []),
    "selective (per-op SAC per llama3_8b.toml at e7c0cae)": ("selective", []),
}

OPT_MAP = {
    "torch AdamW (HF Trainer adamw_torch; states in param dtype)": "adamw",
    "torch AdamW (fp32 states; foreach, optimizer.fused=False default at 9dec370)": "adamw",
    "torch AdamW (fp32 states)": "adamw",
}

METRIC_MAP = {"reserved": "reserved"}

# gpu -> datasets/gpus.csv name, or "" when the catalog has no such GPU (the input text is
# kept in notes). The ms-swift doc says "A100"; values up to 78.8 GiB mean the 80GB part,
# SXM assumed as for every A100 row of public.csv.
GPU_MAP = {
    "A100 80GB": "A100-SXM-80GB",
    "H200 141GB (8 per node, NVLink; 400Gb/s RDMA)": "H200-SXM-141GB",
    "H100 SXM HBM2e 96GB (500W, Grand Teton)": "",
    "H100 (8x, variant not stated)": "",
    "MI300X 192GB (8x)": "",
    "B200 (8x, power-limited 750W)": "",
}

SWIFT_FRAMEWORK = (
    "ms-swift ~v1.5 (Dec 2023; script scripts/benchmark/test_memory_time/run_single.py "
    "@019ebebb96efd01dc46ef8f72e3e23d65db939f7); HF Trainer + swift LoRA; torch 2.1.1; CUDA "
    "11.8; flash_attn 2.3.4; xformers 0.0.23; auto_gptq 0.5.1; bitsandbytes 0.41.3.post2")
FRAMEWORK_MAP = {
    SWIFT_FRAMEWORK: "ms-swift 1.5.0.dev @019ebebb (swift LoRA = PEFT 0.7.x layers); "
                     "transformers 4.33-4.36; torch 2.1.1; flash_attn 2.3.4",
}

# Notes parts that only restate what the columns now say (dropped from notes).
SWB_ATTN = {
    "attention: flash-attn 2 (use_flash_attn true)": "flash",
    "attention: no flash-attn (model's non-flash attention path)": "eager",
}


def swb_fields(row, notes):
    """SWB rows: attention from the notes; LoRA dropout 0.05 and gradient accumulation
    ceil(16 / batch_size) > 1 (swift SftArguments at 019ebebb) on every row."""
    attn = [SWB_ATTN[p] for p in notes if p in SWB_ATTN]
    if len(attn) != 1:
        raise ValueError(row["id"] + ": attention not stated once in notes")
    if not any(p.startswith("LoRA r=") and "dropout=0.05" in p for p in notes):
        raise ValueError(row["id"] + ": LoRA dropout 0.05 not stated")
    feats = ["lora-dropout", "grad-accum"]
    if attn[0] == "flash":
        feats.append("flash-attn")
    return attn[0], feats


# torchtitan version -> whether --training.compile also compiles the loss function:
# components/loss.py build_cross_entropy_loss (`loss_fn = torch.compile(loss_fn)`) arrived
# with bbb1b616e (2025-04-02); at 9dec370 train.py has that line commented out. Checked
# with `git merge-base --is-ancestor bbb1b616e <commit>` on pytorch/torchtitan. The PyPI
# release 0.0.2 names no commit: taken as without (not known).
TITAN_COMPILED_LOSS = {
    "9dec370ad26b5f8e9a7333a0e36165018262644b": False,
    "e7c0cae934df78d6e9c2835f42ff1f757dc3fddc": True,
    "6fc499f6f5b32151a799188be2208cfb09faed30": True,
    "2c8b5947991239913d67e2f7d22a255c3e2a9694": True,
    "0.0.2": False,
}

# torchtitan version -> whether apply_fsdp wraps the ends as their own FSDP units: from
# 83e69410 (2025-07-28, "Improve reshard_after_forward logic", #1094) it calls fully_shard
# on tok_embeddings, on each block and on [norm, output] (resharded after forward: the
# embedding and every block; norm and output not), then on the model with no parameters
# left; before, the model's root unit held the embedding, norm and output and the last
# block was not resharded after forward. Checked with `git merge-base --is-ancestor
# 83e69410 <commit>`; 0.0.2 (torch 2.7.0a0 rows) predates it.
TITAN_END_UNITS = {
    "9dec370ad26b5f8e9a7333a0e36165018262644b": False,
    "e7c0cae934df78d6e9c2835f42ff1f757dc3fddc": False,
    "6fc499f6f5b32151a799188be2208cfb09faed30": True,
    "2c8b5947991239913d67e2f7d22a255c3e2a9694": True,
    "0.0.2": False,
}


def titan_framework(text, rid):
    """torchtitan rows: the framework text is already short; torch.compile is a feature,
    and so is the compiled loss of the versions that have it."""
    if not text.startswith("torchtitan "):
        raise ValueError(rid + ": unexpected framework " + text)
    parts = [p.strip() for p in text.split(";")]
    feats = ["compile"] if "torch.compile" in parts else []
    if feats and lookup(TITAN_COMPILED_LOSS, parts[0].split()[1], rid, "torchtitan version"):
        feats.append("compiled-loss")
    if lookup(TITAN_END_UNITS, parts[0].split()[1], rid, "torchtitan version"):
        feats.append("fsdp-end-units")
    return "; ".join(p for p in parts if p != "torch.compile"), feats


def order_features(feats, rid):
    unknown = [f for f in feats if f not in FEATURE_ORDER]
    if unknown:
        raise ValueError(rid + ": unknown feature " + ",".join(unknown))
    return "+".join(f for f in FEATURE_ORDER if f in set(feats))


def convert_row(row):
    rid = row["id"]
    prefix = rid.rsplit("-", 1)[0]
    stack = lookup(SOURCES, prefix, rid, "id")
    grade, rest = parse_grade(row["notes"], rid)
    parts = split_parts(rest)
    if not parts or not parts[0].startswith("raw="):
        raise ValueError(rid + ": notes do not start with raw=")
    method, feats = lookup(METHOD_MAP, row["method"], rid, "method")
    feats = list(feats)
    precision, f = lookup(PRECISION_MAP, row["precision"], rid, "precision")
    feats += f
    finetune = row["finetune"]
    if finetune not in ("full", "lora"):
        raise ValueError(rid + ": finetune " + finetune)
    targets = lookup(TARGETS_MAP, row["lora_targets"], rid, "lora_targets")
    if (finetune == "full") != (targets == ""):
        raise ValueError(rid + ": lora_targets inconsistent with finetune")
    lora_r = "" if finetune == "full" else parse_int(row["lora_r"], rid, "lora_r")
    prec8, quant, f = lookup(QUANT_MAP, row["quant"], rid, "quant")
    feats += f
    if prec8:
        if precision != "bf16":
            raise ValueError(rid + ": float8 recipe on a precision other than bf16")
        precision = prec8
    grad_ckpt, f = lookup(CKPT_MAP, row["grad_ckpt"], rid, "grad_ckpt")
    feats += f
    optimizer = lookup(OPT_MAP, row["optimizer"], rid, "optimizer")
    metric = lookup(METRIC_MAP, row["metric"], rid, "metric")
    gpu = lookup(GPU_MAP, row["gpu"], rid, "gpu")
    if row["gpu"].startswith("MI300X"):  # ROCm: another allocator and other kernels
        feats.append("rocm")
    notes = [parts[0]] + ([] if gpu else ["gpu: " + row["gpu"]])
    if stack == "hf-4.31":
        framework = lookup(FRAMEWORK_MAP, row["framework"], rid, "framework")
        attention, f = swb_fields(row, parts)
        feats += f
        # The published numbers were run with truncation 'delete', not truncation_left as the
        # input notes say: ms-swift 018ee833 (2024-01-02) removed truncation_left from
        # scripts/benchmark/test_memory_time/run_single.py, so SftArguments' default drops
        # samples longer than max_length (argument.py L68-69, template.py L219-222 @97e4d198)
        # and kept lengths spread over [91, cap]; the doc got these values the same day
        # (306fa15a) and lost its truncation_left line the next (a5cea945). The longest kept
        # sample still reaches about the cap; the batches vary in length.
        seq_kind, data = "exact", "variable"
        notes += [p for p in parts[1:] if p not in SWB_ATTN]
        notes += ["conversion: run with truncation 'delete' (ms-swift 018ee833), not "
                  "truncation_left: samples above max_length dropped, lengths vary per step"]
    else:
        framework, f = titan_framework(row["framework"], rid)
        feats += f
        # torchtitan pretraining reads C4 in fixed seq_len windows: every batch is full
        attention, seq_kind, data = "sdpa", "exact", "packed"
        notes += parts[1:]
    tp = parse_int(row["tp"], rid, "tp")
    if method != "pp" and (method == "dp+tp") != (tp != "1"):
        raise ValueError(rid + ": tp inconsistent with method")
    micro = parse_int(row["micro_batch"], rid, "micro_batch")
    pp, pp_micro = "", ""
    if method == "pp":
        stages, m = lookup(PIPELINES, rid, rid, "pipeline")
        if int(micro) % m:
            raise ValueError(rid + ": local batch not a multiple of the micro-batches")
        pp, pp_micro, micro = str(stages), str(m), str(int(micro) // m)
        # torchtitan's pipeline_parallel_schedule as the table names it (Table 5's rows)
        if "schedule 'Interleaved 1F1B'" in row["notes"]:
            feats.append("pp-interleaved")
        notes.append("conversion: pipeline micro-batch = local batch %s / %d micro-batches"
                     % (row["micro_batch"], m))
    return [
        row["model"], method, parse_int(row["gpus"], rid, "gpus"), tp,
        micro, parse_int(row["seq_len"], rid, "seq_len"),
        precision, finetune, lora_r, targets, quant, grad_ckpt, optimizer, metric,
        "%.3f" % float(row["measured_gib"]), gpu, framework, row["source"],
        rid, grade, stack, order_features(feats, rid), attention, seq_kind, data, "default",
        row["tokens_per_s_gpu"], "; ".join(notes).replace("\n", " ").replace("\r", " "),
        pp, pp_micro,
    ]


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: convert_public2.py PUBLIC-MEASURED-2.csv [OUT.csv]\n")
        return 2
    out = argv[2] if len(argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "public-2.csv")
    with open(argv[1], newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        if next(reader) != IN_HEADER:
            raise ValueError("unexpected input header")
        rows = [dict(zip(IN_HEADER, rec)) for rec in reader if rec]
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate ids in input")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(OUT_HEADER)
    for r in rows:
        w.writerow(convert_row(r))
    tmp = out + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
    os.replace(tmp, out)
    sys.stderr.write("input rows %d, written %d\n" % (len(rows), len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
