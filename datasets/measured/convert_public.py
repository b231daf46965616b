#!/usr/bin/env python3
"""Convert the shared public-measurements CSV into llmem-sweep's measured-CSV format.

Usage:
    python3 datasets/measured/convert_public.py ../shared/datasets/public-measured.csv \
        [datasets/measured/public.csv]

Python 3 standard library only. The output is deterministic (same input, same bytes).
Every value is mapped through explicit tables; an input value that no table knows stops
the conversion with an error naming the row, so nothing is mapped or dropped silently.
See README.md next to this script for the meaning of each column and every judgement call.
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
]

IN_HEADER = [
    "id", "source_url", "model_id", "layers", "hidden", "heads", "kv_heads", "intermediate",
    "vocab", "tied_embeddings", "gpus", "method", "tp", "pp", "zero_stage", "micro_batch",
    "seq_len", "precision", "finetune", "lora_r", "lora_targets", "quant", "grad_ckpt",
    "optimizer", "attention_impl", "framework", "metric", "measured_gib", "notes",
]

# Canonical order of feature flags in the output.
FEATURE_ORDER = [
    "chunked-ce", "untied-head", "opt-in-bwd", "act-offload", "cpu-offload", "compile",
    "paged", "double-quant", "active", "metric-guess", "ckpt-unknown", "dora", "packed",
    "fsdp", "deepspeed", "flash-attn", "no-accum", "logits-kept", "empty-cache",
    "empty-cache-10", "outputs-kept", "lora-dropout", "ds-default-buckets", "fsdp1",
    "longest-first", "unfused-adamw", "fsdp-end-units", "cpu-init", "sync-states",
]

# Out of scope: not decoder-only causal LMs.
OUT_OF_SCOPE = {
    "bert-large-uncased": "encoder-only",
    "bigscience/T0_3B": "encoder-decoder",
    "bigscience/mt0-xxl": "encoder-decoder",
}

# HF checkpoints that tie lm_head to the token embedding. litgpt always allocates a separate
# lm_head, so litgpt rows on these models get the `untied-head` feature.
HF_TIED = {
    "tiiuae/falcon-7b",          # FalconConfig has no tie flag -> PretrainedConfig default True
    "google/gemma-2b", "google/gemma-7b", "google/gemma-2-2b", "google/gemma-2-9b",
    "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.2-3B-Instruct",
    "bigscience/bloomz-7b1",
}
# HF checkpoints known to have a separate lm_head (anything else is an error, so a new model
# forces a decision).
HF_UNTIED = {
    "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-70b-hf",
    "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-405B-Instruct",
    "unsloth/Mistral-7B-v0.2", "mistralai/Mistral-7B-v0.1", "microsoft/phi-2",
    "microsoft/Phi-3-mini-4k-instruct", "microsoft/phi-1_5",
    "stabilityai/stablelm-base-alpha-3b", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
}

METHOD_MAP = {
    "single": "single",
    "FSDP full_shard (litgpt FSDPStrategy)": "adp",
    "FSDP full_shard (litgpt FSDPStrategy, auto-wrap Block)": "adp",
    "FSDP full_shard (torchtune lora_finetune_distributed)": "adp",
    "FSDP full_shard (torchtune full_finetune_distributed)": "adp",
    "FSDP full_shard + fsdp_cpu_offload (torchtune full_finetune_distributed)": "adp-offload",
    "DeepSpeed ZeRO-3 + CPU offload of params and optimizer (1 GPU)": "adp-offload",
    "DeepSpeed ZeRO-3 (no offload)": "adp",
    "DeepSpeed ZeRO-3 (no offload, zero3_init)": "adp",
    "FSDP full_shard + CPU param offload (fsdp_offload_params true)": "adp-offload",
    "FSDP full_shard (no offload)": "adp",
}

PRECISION_MAP = {
    "bf16 pure (litgpt bf16-true: weights, grads, optimizer states in bf16)": "bf16-pure",
    "bf16-true + bnb 4-bit base weights (BitsandbytesPrecision)": "bf16-pure",
    "bf16 pure (--precision bf16-true)": "bf16-pure",
    "bf16-true + bnb 4-bit base weights": "bf16-pure",
    "bf16-mixed (fp32 weights + bf16 autocast; lit-gpt default)": "bf16",
    "bf16 pure (torchtune dtype=bf16)": "bf16-pure",
    "bf16 pure": "bf16-pure",
    "bf16 base weights; LoRA adapter weights fp32 (autocast_adapter_dtype=True)": "bf16",
    "fp32": "fp32",
    "fp16 mixed (AMP; fp32 master weights)": "fp16",
    "fp16 mixed (AMP)": "fp16",
    "bf16 mixed (accelerate mixed_precision bf16)": "bf16",
    "bf16 (model dtype = quant_storage bf16; accelerate mixed_precision bf16)": "bf16",
    "bf16 (model dtype = quant_storage bf16; Trainer --bf16; accelerate mixed_precision no)": "bf16",
    "bf16 (quant_storage bf16)": "bf16",
}

FINETUNE_MAP = {
    "full": ("full", []),
    "lora": ("lora", []),
    "qlora": ("qlora", []),
    "lora (DoRA)": ("lora", ["dora"]),
}

# lora_targets: input text -> output token list. "mlp" is the whole MLP of the model
# (gate+up+down for gated MLPs, the two linears of a plain MLP); "all" = attn + mlp.
TARGETS_MAP = {
    "": "",
    "q,v (lora_query, lora_value)": "q+v",
    "q,k,v,proj,mlp,head (all litgpt LoRA switches true)": "q+k+v+o+mlp+head",
    "q,v": "q+v",
    "q,v,o + mlp (gate,up,down)": "q+v+o+mlp",
    "q,k,v,o + mlp": "q+k+v+o+mlp",
    "q,k,v": "q+k+v",
    "q,k,v,o + mlp + output": "q+k+v+o+mlp+head",
    "q_proj,v_proj": "q+v",
    "gate_proj,up_proj,down_proj": "mlp",
    "PEFT defaults (T5/mT5: q,v; BLOOM: query_key_value)": "q+k+v",  # only BLOOM rows are kept
    "all-linear": "all",
}

# quant: input -> (quant, features)
QUANT_MAP = {
    "": ("none", []),
    "bnb nf4 (no double quant)": ("nf4", []),
    "bnb nf4 + double quant (bnb.nf4-dq)": ("nf4", ["double-quant"]),
    # torchao's NF4Tensor (to_nf4, scaler_block_size=256) always quantizes the per-block
    # scales again: double quantization, whether or not the source row says so.
    "torchao NF4 (torchtune QLoRA; block-wise scales also quantized)": ("nf4", ["double-quant"]),
    "torchtune/torchao NF4": ("nf4", ["double-quant"]),
    "torchao NF4 (torchtune QLoRA)": ("nf4", ["double-quant"]),
    "torchao NF4": ("nf4", ["double-quant"]),
    "bnb nf4 + double quant (use_nested_quant), quant_storage bf16": ("nf4", ["double-quant"]),
    "bnb nf4 + double quant, quant_storage bf16": ("nf4", ["double-quant"]),
}

# grad_ckpt: input -> (on/off, features)
CKPT_MAP = {
    "no": ("off", []),
    "yes (FSDP activation checkpointing per Block)": ("on", []),
    "yes (full AC per layer)": ("on", []),
    "yes": ("on", []),
    "yes + activation offloading to CPU": ("on", ["act-offload"]),
    "yes + activation offloading": ("on", ["act-offload"]),
    "no (7B_lora.yaml enable_activation_checkpointing: False)": ("off", []),
    "not stated": ("off", ["ckpt-unknown"]),
    "yes (use_reentrant False)": ("on", []),
    "yes (use_reentrant True)": ("on", []),
}

# optimizer: input -> (optimizer, features). "not stated" is resolved per row below.
OPT_MAP = {
    "torch.optim.AdamW (bf16 states)": ("adamw", []),
    "bnb.optim.PagedAdamW (32-bit states; litgpt instantiate_bnb_optimizer)": ("adamw", ["paged"]),
    "torch.optim.AdamW (fp32 states)": ("adamw", []),
    "torch.optim.AdamW (INFERRED: 8-bit AdamW only added in a later row)": ("adamw", []),
    "torch.optim.AdamW (inferred)": ("adamw", []),
    "torch.optim.AdamW fused into backward (optimizer_in_bwd=True)": ("adamw", ["opt-in-bwd"]),
    "torch.optim.AdamW in backward": ("adamw", ["opt-in-bwd"]),
    # class not stated: torchao AdamW8bit or bnb PagedAdamW8bit; `paged` deliberately not set
    "8-bit AdamW in backward (exact class not stated; torchtune default single-device config "
    "uses bitsandbytes PagedAdamW8bit)": ("adamw8bit", ["opt-in-bwd"]),
    "torch.optim.AdamW (fused=True), optimizer_in_bwd=False": ("adamw", []),
    "torch.optim.AdamW": ("adamw", []),
    "bitsandbytes PagedAdamW (32-bit) with optimizer_in_bwd=True": ("adamw", ["paged", "opt-in-bwd"]),
    "bitsandbytes PagedAdamW (README footnote *)": ("adamw", ["paged"]),
    "bitsandbytes PagedAdamW with optimizer_in_bwd=True": ("adamw", ["paged", "opt-in-bwd"]),
    "bitsandbytes PagedAdamW8bit, optimizer_in_bwd=True": ("adamw8bit", ["paged", "opt-in-bwd"]),
    "torch.optim.AdamW (fused)": ("adamw", []),
    "torch.optim.AdamW fused, with CPU offload": ("adamw", []),
    "torch.optim.AdamW (bf16 states), lr 1e-5": ("adamw", []),
    "torch.optim.AdamW (fp32 states on fp32 adapters)": ("adamw", []),
    "torch.optim.AdamW (fp32)": ("adamw", []),
    "AdamW (Trainer default adamw_hf, fp32 states)": ("adamw", []),
    "AdamW (adamw_hf)": ("adamw", []),
    "Adafactor (optim=adafactor)": ("adafactor", []),
    "Adafactor": ("adafactor", []),
    "bnb.optim.Adam8bit (8-bit states)": ("adamw8bit", []),
    "bnb.optim.Adam8bit": ("adamw8bit", []),
    "HF Trainer AdamW (adamw_torch)": ("adamw", []),
}

ATTN_MAP = {
    "sdpa (torch scaled_dot_product_attention)": "sdpa",
    "sdpa": "sdpa",
    "sdpa (torchtune default)": "sdpa",
    "sdpa (default)": "sdpa",
    "eager": "eager",
    "flash_attention_2": "flash",
}

# metric: input -> (metric, features). Rows whose stat is inferred get metric-guess below.
METRIC_MAP = {
    "torch.cuda.max_memory_allocated() printed by litgpt finetune script as /1e9 'GB'": ("allocated", []),
    "'Max GPU RAM' = torch.cuda.max_memory_allocated()/1e9 printed as GB": ("allocated", []),
    "'Training Memory' = torch.cuda.max_memory_allocated()/1e9 (GB)": ("allocated", []),
    "torchtune 'Peak Memory Active' = torch.cuda.memory_stats()['active_bytes.all.peak']/2^30 (GiB)":
        ("allocated", ["active"]),
    "torchtune peak memory stat logged as /1e9 GB (alloc vs reserved not stated in README)":
        ("allocated", ["metric-guess"]),
    "torchtune peak memory allocated (/1e9 GB); reserved 'similar'": ("allocated", []),
    "torchtune peak memory (type not stated) GB": ("allocated", ["metric-guess"]),
    "torchtune 'Peak Memory per GPU' (alloc/reserved/active not stated); GiB (torchtune logs GiB "
    "since Aug 2024)": ("allocated", ["metric-guess"]),
    "torchtune peak memory (reserved, per QLoRA tutorial labelling) /1e9 GB": ("reserved", []),
    "torch.cuda.max_memory_reserved()/1e9 during training (GB)": ("reserved", []),
    # "memory at start" is taken before the model is loaded (peft method_comparison/MetaMathQA
    # run.py: init_cuda() at L450, get_model() at L456 @51c2ff66; L378/L384 @5fe7f8f8): an
    # nn.Linear(1, 1), about 2 MiB. So the figure is reserved memory, weights included.
    "99th percentile of torch.cuda.memory_reserved() sampled after every train step, minus reserved "
    "memory at start (training steps only)": ("reserved", []),
    "'GB GPU' per README; example scripts print TorchTracemalloc 'GPU Total Peak Memory consumed "
    "during the train (max)' = torch.cuda.max_memory_allocated in MiB (exact source of table "
    "numbers not stated)": ("allocated", ["metric-guess"]),
    "nvidia-smi 'used' memory via pynvml after trainer.train() returned (MiB, printed as MB) - "
    "includes CUDA context (~1343 MiB measured on same machine) and cached allocator blocks":
        ("device", []),
    "'memory consumed per GPU' read from a GPU-monitoring screenshot / text (tool not stated; likely "
    "nvidia-smi-style incl. context); unit treated as GiB": ("device", ["metric-guess"]),
}

FRAMEWORK_MAP = {
    "litgpt 0.4.0.dev0 @5895df10 (Apr 2024); lightning 2.3.0.dev20240328; torch>=2.2 (exact not "
    "stated); bitsandbytes 0.42.0 (pinned)":
        "litgpt 0.4.0.dev0 @5895df10, lightning 2.3.0.dev20240328, torch>=2.2, bnb 0.42.0",
    "litgpt @e5493986 (Jul 2024); torch version not stated; bitsandbytes 0.42.0 (pinned)":
        "litgpt @e5493986 (Jul 2024), torch ?, bnb 0.42.0",
    "litgpt @2b195c7f (Aug 2024); torch version not stated; bitsandbytes 0.42.0 (pinned)":
        "litgpt @2b195c7f (Aug 2024), torch ?, bnb 0.42.0",
    "litgpt 0.4.13.dev1 @00af8b0d (Sep 2024); lightning 2.4.0.dev20240728; torch version not "
    "stated; bitsandbytes 0.42.0 (pinned)":
        "litgpt 0.4.13.dev1 @00af8b0d, lightning 2.4.0.dev20240728, torch ?, bnb 0.42.0",
    "litgpt @fd71063c (Jul 2024); torch version not stated; bitsandbytes 0.42.0 (pinned)":
        "litgpt @fd71063c (Jul 2024), torch ?, bnb 0.42.0",
    "litgpt @f247be87 (Jul 2024); torch version not stated; bitsandbytes 0.42.0 (pinned)":
        "litgpt @f247be87 (Jul 2024), torch ?, bnb 0.42.0",
    "lit-gpt @8641822 (Oct 2023); PyTorch 2.1.0+cu121; bitsandbytes 0.41.1; A100-SXM4-40GB":
        "lit-gpt @8641822, torch 2.1.0+cu121, bnb 0.41.1",
    "torchtune main @1814feb1 (Nov 2024; ~v0.4); torch version not stated (stable ~2.5 at the time)":
        "torchtune @1814feb1 (~v0.4), torch ~2.5",
    "torchtune main @0217d44c (May 2024; ~v0.1.x); torch version not stated":
        "torchtune @0217d44c (~v0.1), torch ?",
    "torchtune main @30b8519e (Sep 2024; ~v0.3); torch version not stated":
        "torchtune @30b8519e (~v0.3), torch ?",
    "torchtune @ff594c23 / 0914d5cf (Apr 2024; v0.1 era); torch version not stated":
        "torchtune @ff594c23/0914d5cf (v0.1 era), torch ?",
    "PEFT 0.19.2.dev0; transformers 5.13.1; torch 2.13.0+cu130; bitsandbytes 0.49.2 (run 2026-07)":
        "peft 0.19.2.dev0, transformers 5.13.1, torch 2.13.0+cu130 (2026-07)",
    "PEFT 0.18.1.dev0; transformers 4.57.1; torch 2.9.0+cu128; bitsandbytes 0.46.0 (run 2026-01)":
        "peft 0.18.1.dev0, transformers 4.57.1, torch 2.9.0+cu128 (2026-01)",
    "PEFT 0.15.2.dev0; transformers 4.52.4; torch 2.7.1+cu126; bitsandbytes 0.46.0 (run 2025-06)":
        "peft 0.15.2.dev0, transformers 4.52.4, torch 2.7.1+cu126 (2025-06)",
    "peft ~0.1-0.2 (Jan-Feb 2023); accelerate + DeepSpeed; torch/transformers versions not stated":
        "peft ~0.1-0.2 (early 2023), accelerate, DeepSpeed",
    "transformers Trainer (~v4.16-4.21, early 2022); torch version not stated; bitsandbytes (8-bit rows)":
        "transformers Trainer ~4.16-4.21",
    "PEFT + TRL + accelerate + DeepSpeed (versions not stated in section)":
        "peft, trl, accelerate, DeepSpeed (versions ?)",
    "bitsandbytes>=0.43.3, accelerate>=1.0.1, transformers>4.44.2, trl>0.11.4, peft>0.13.0":
        "peft>0.13.0, trl>0.11.4, transformers>4.44.2, accelerate>=1.0.1, bnb>=0.43.3",
}

# Source groups: id prefix -> (source letter, stack). Longest prefix first.
SOURCES = [
    ("PEFT-DOC-", "L", "hf"),
    ("PEFT-MM-", "G", "hf"),
    ("PEFT-RD-", "H", "hf"),
    ("HF-BERT-", "I", "hf"),
    ("LGCH-", "A", "litgpt"),
    ("LGRT-", "B", "litgpt"),
    ("TTF-", "C", "torchtune"),
    ("TTM-", "D", "torchtune"),
    ("TTS-", "E", "torchtune"),
    ("TTT-", "F", "torchtune"),
]

# GPU per row (catalog names where possible; "" = not stated / not identifiable).
def gpu_for(rid):
    if rid.startswith("LGCH-"):
        return "A10G-24GB"
    if rid.startswith("LGRT-"):
        return "A100-SXM-40GB"
    if rid.startswith("TTF-"):
        return "A100-SXM-80GB"
    if rid.startswith("TTM-"):
        return {"TTM-01": "RTX4090-24GB", "TTM-02": "RTX4090-24GB", "TTM-03": "RTX4090-24GB",
                "TTM-04": "RTX4090-24GB", "TTM-05": "RTX4090-24GB", "TTM-06": "",
                "TTM-07": "A100-SXM-80GB", "TTM-08": "", "TTM-09": ""}[rid]
    if rid.startswith("TTS-"):
        return {"TTS-01": "RTX4090-24GB", "TTS-02": "A6000-48GB", "TTS-03": "RTX4090-24GB",
                "TTS-04": "A6000-48GB", "TTS-05": "RTX4090-24GB", "TTS-06": "", "TTS-07": "",
                "TTS-08": "A100-SXM-80GB"}[rid]
    if rid.startswith("TTT-"):
        return ""
    if rid.startswith("PEFT-MM-"):
        return "L40S-48GB"
    if rid.startswith("PEFT-RD-"):
        return "A100-SXM-80GB"
    if rid.startswith("PEFT-DOC-"):
        return {"PEFT-DOC-01": "H100-SXM-80GB", "PEFT-DOC-02": "A100-SXM-40GB",
                "PEFT-DOC-03": "", "PEFT-DOC-04": ""}[rid]
    raise ValueError("no GPU rule for " + rid)


# Conversion remarks added to a row's notes (what this converter decided and why).
SOURCE_REMARKS = {
    "A": "seq_len 512 = max_seq_length cap (pad to longest, truncate); peak includes validation "
         "(unchunked logits) and sample generation",
    "B": "seq_len = longest Alpaca sample (forced into iteration 1); grad accum to global batch 128",
    "C": "A100 80GB inferred (TTF-02 peak 60 GiB > 40 GB), SXM assumed; flags cumulative per "
         "README table",
    "D": "",
    "E": "",
    "F": "seq_len unknown (alpaca_cleaned unpacked, max_seq_len unset); stats reset each log "
         "interval (window peak)",
    "G": "reserved with the weights (PEFT's start value precedes model loading); peak batch "
         "length estimated at 512 from the 1300-character filter (768 is a truncation bound)",
    "H": "script/settings behind the table cell not stated; LoRA r=8 alpha=32, batch 8, fp32 from "
         "the example scripts",
    "L": "value read from a screenshot/prose; TRL SFTTrainer, ultrachat packed to 2048, LoRA r=8 "
         "alpha=16 all-linear; lora_dropout 0.1 in the doc's launch commands (feature "
         "lora-dropout); DeepSpeed rows launched from accelerate configs without a DeepSpeed "
         "JSON keep DeepSpeed's default reduce_bucket_size 5e8 (feature ds-default-buckets)",
}

ROW_REMARKS = {
    "LGRT-28": "bf16-mixed keeps the whole model (frozen base too) in fp32",
    "TTF-01": "baseline overrides inferred; seq_len 4096 is only a cap (unpacked alpaca)",
    "TTF-08": "8-bit AdamW class not stated (torchao AdamW8bit or bnb PagedAdamW8bit): paged not "
              "flagged; the 4.2 GiB drop is closer to 8-bit states kept in the allocator (~6 GiB) "
              "than to paged states outside it (~12 GiB)",
    "TTM-07": "AC not stated: written off+ckpt-unknown; SXM assumed",
    "TTM-09": "A100 40/80GB not stated",
    "TTS-02": "grad_ckpt and optimizer not stated: optimizer assumed = shipped config "
              "(PagedAdamW8bit in backward), AC written off+ckpt-unknown (README: probably off)",
    "TTS-04": "AC not stated: written off+ckpt-unknown",
    "TTS-06": "A100 40/80GB not stated",
    "TTS-07": "A100 40/80GB not stated",
    "TTS-08": "micro_batch 2 kept (README note); packed 2048 and compile per README note; plain CE "
              "in 405B_qlora; SXM assumed",
    "TTT-01": "the QLoRA tutorial labels this value reserved",
    "PEFT-RD-06": "A100 80GB, SXM assumed; PEFT default target query_key_value = q+k+v",
    "PEFT-RD-07": "A100 80GB, SXM assumed; ZeRO-3 offload of params+optimizer on 1 GPU; PEFT "
                  "default target query_key_value = q+k+v",
    "PEFT-DOC-01": "SXM assumed",
    "PEFT-DOC-02": "SXM assumed",
    "PEFT-DOC-03": "GPU model not stated (24GB)",
    "PEFT-DOC-04": "grad accum 2",
}

# litgpt config-hub rows whose recipe does not accumulate gradients (the litgpt stack assumes it
# does): gradient_accumulation_iters = global_batch_size // devices // micro_batch_size, read
# from config_hub/finetune/<model>/<recipe>.yaml at the row's commit.
NO_ACCUM = {
    "LGCH-26": "phi-2/full.yaml @5895df10: 8 // 2 devices // micro 4 = 1",
    "LGCH-36": "tiny-llama/lora.yaml @5895df10: 8 // 1 device // micro 8 = 1",
    "LGCH-37": "tiny-llama/qlora.yaml @5895df10: 8 // 1 device // micro 8 = 1",
}


# Training throughput per GPU the source tables print beside the peak memory (the input CSV
# leaves it out). torchtune logs num_tokens / time_per_step per rank: padded tokens @0217d44c
# ("tokens_per_second") and @30b8519e ("tokens_per_second_per_gpu"), non-padding tokens
# @1814feb1. Rows in the order of their tables; the peak-memory column matches each row.
TOKENS_PER_S_GPU = {
    # README.md @0217d44c, "Training Speed (tokens/sec)"
    "TTM-01": 3155, "TTM-02": 2582, "TTM-03": 2768, "TTM-04": 702, "TTM-05": 1388,
    "TTM-06": 3384, "TTM-07": 2032,
    # README.md @30b8519e, "Tokens/sec" (measured over one full training epoch)
    "TTS-01": 1650, "TTS-02": 2579, "TTS-03": 3083, "TTS-04": 4699, "TTS-05": 2413,
    "TTS-06": 1568, "TTS-07": 3497, "TTS-08": 653,
    # README.md @1814feb1, optimization-flags table, "Tokens Per Second"
    "TTF-01": 2091, "TTF-02": 7075, "TTF-03": 8998, "TTF-04": 9174, "TTF-05": 7210,
    "TTF-06": 7309, "TTF-07": 7301, "TTF-08": 6960, "TTF-09": 8210, "TTF-10": 8035,
}


# Features that follow from a source's documented setup (beyond the per-column maps).
def source_features(letter, row, rid):
    feats = []
    model = row["model_id"]
    if letter in ("A", "B"):
        feats.append("chunked-ce")
        if model in HF_TIED:
            feats.append("untied-head")
        elif model not in HF_UNTIED:
            raise ValueError(rid + ": unknown HF tying for " + model)
    # lit-gpt 8641822's finetune scripts force the longest sample into iteration 0 and draw
    # every later batch (validation's too) at random: get_batch(fabric, train_data,
    # longest_seq_ix if iter_num == 0 else None)
    if letter == "B":
        feats.append("longest-first")
    if letter == "C":
        n = int(rid.split("-")[1])
        if n >= 2:
            feats.append("packed")
        if n >= 3:
            feats.append("compile")
        if n >= 4:
            feats.append("chunked-ce")
    if letter == "D" and rid == "TTM-01":
        feats.append("compile")
    if letter in ("D", "F") and "paged" not in feats and row["optimizer"].startswith("torch.optim.AdamW"):
        # torchtune's configs gained `fused: True` in cca50f02e (2024-09-14, PR #1575 "add fused
        # = true to adam, except pagedAdam"); at 0217d44c and in the v0.1 tutorials they name
        # torch.optim.AdamW alone (recipes/configs/llama2/7B_full.yaml, 7B_lora_single_device.yaml),
        # which torch runs as foreach (one state-sized temporary at the step), not as the
        # fused kernel the stack torchtune assumes
        feats.append("unfused-adamw")
    if letter in ("D", "F"):
        # the recipes @0217d44c (and PR #961's) keep `logits` (the fp32 contiguous slice) alive
        # through loss.backward(); later recipes `del logits` first. The tutorials' commits
        # ff594c23 and 0914d5cf, both before 0217d44c, run the same loop
        # (recipes/lora_finetune_single_device.py L447-468: no `del logits`)
        feats.append("logits-kept")
        if row["finetune"] != "full":
            # no LoRA config of these commits sets lora_dropout (llama2/7B_lora*.yaml,
            # 7B_qlora_single_device.yaml, 70B_lora.yaml), so the builders' default holds:
            # lora_llama2_7b / lora_llama2_70b `lora_dropout: float = 0.05`
            # (torchtune/models/llama2/_model_builders.py L56, L217 @0217d44c; L61 @ff594c23
            # and 0914d5cf; qlora_llama2_7b is a partial of the 7B one), and LoRALinear
            # applies nn.Dropout(p=dropout) to each adapter's input (modules/peft/lora.py
            # L67, L129 @0217d44c; an Identity for p = 0 came later)
            feats.append("lora-dropout")
    if letter == "D":
        if row["method"].startswith("FSDP"):
            # the distributed recipes @0217d44c wrap the model in FSDP1
            # (torch.distributed.fsdp.FullyShardedDataParallel, full_finetune_distributed.py
            # L293, lora_finetune_distributed.py), not the FSDP2 of later torchtune
            feats.append("fsdp1")
            if rid != "TTM-07":
                # rank 0 builds and loads the model on the CPU, the others on meta, and
                # FSDP(device_id=..., sync_module_states=True, param_init_fn=to_empty on the
                # other ranks) moves and broadcasts it unit by unit (full_finetune_distributed.py
                # L253-308, lora_finetune_distributed.py L281-345 @0217d44c). TTM-07's 70B full
                # fine-tuning had no config or recipe settings at that commit
                feats += ["cpu-init", "sync-states"]
    if letter == "E":
        feats += ["packed", "compile"]
        if rid != "TTS-08":          # 405B_qlora uses torch.nn.CrossEntropyLoss at 30b8519e
            feats.append("chunked-ce")
        if rid == "TTS-06":
            # llama3_1/70B_full.yaml L97 @30b8519e: custom_sharded_layers: ['tok_embeddings',
            # 'output']; full_finetune_distributed.py L412-424 adds them to the shard conditions
            # and training/_distributed.py shard_model runs fully_shard(m,
            # reshard_after_forward=True) on each before the root: the embedding and the
            # output are FSDP2 units of their own, the root keeps only the final norm (the
            # LoRA and QLoRA configs of these rows set no custom_sharded_layers)
            feats.append("fsdp-end-units")
    if letter == "L":
        feats += ["packed", "flash-attn"]
        # every launch command of docs/source/accelerate/deepspeed.md and fsdp.md
        # @5d602fdb passes --lora_dropout 0.1 (PEFT keeps each adapter's dropped input and
        # mask for backward)
        feats.append("lora-dropout")
        # the DeepSpeed runs are launched from accelerate configs without a DeepSpeed JSON
        # (examples/sft/configs/deepspeed_config.yaml, deepspeed_config_z3_qlora.yaml):
        # accelerate's DeepSpeedPlugin sets no reduce_bucket_size, so DeepSpeed's default
        # 5e8 stays (resident.c ds_zero3_ipg_bytes)
        if row["method"].startswith("DeepSpeed"):
            feats.append("ds-default-buckets")
    if letter == "G":
        # PEFT method_comparison/MetaMathQA/run.py empties the cache after every step (run.py
        # L296-298 @5fe7f8f8) or every 10th (PR #2894, 90d3fc05), and its batches come in
        # buckets of 20 sorted longest first, so a 10-step window starts at its longest
        # batch: no step finds segments cut by a shorter earlier one (the allocator replay
        # of one length, README "The loss path and the caching allocator"). The runs at
        # 51c2ff66 and a9994269 (2026) use ACCELERATOR_EMPTY_CACHE_SCHEDULE = 10: feature
        # empty-cache-10, whose whole steps stepreplay.c replays over a 10-step window.
        every_step = "f650b08abb011e4cf82b76faf33360d1a8a386f1" in row["source_url"]
        feats.append("empty-cache" if every_step else "empty-cache-10")
        # the loop keeps `outputs = model(**batch, ...)` (16-bit logits and the KV cache of
        # use_cache=True) until the next step's forward rebinds it (run.py L213-215
        # @5fe7f8f8, the same in 8be1a16f and 51c2ff66)
        feats.append("outputs-kept")
        # its optimizer is `getattr(torch.optim, "AdamW")(model.parameters(), lr=...,
        # weight_decay=...)` (method_comparison/MetaMathQA/utils.py get_optimizer_and_scheduler
        # and default_training_params.json @5d602fdb): PyTorch's foreach default, not the
        # fused kernel HF Trainer picks on torch >= 2.8
        feats.append("unfused-adamw")
    if rid in NO_ACCUM:
        feats.append("no-accum")
    # no full-init: lit-gpt 8641822 finetune/lora.py calls
    # fabric.init_module(empty_init=(devices > 1)), and Lightning 71aed751f7's
    # FSDPStrategy.module_init_context builds under torch.device("meta") then, so no rank
    # holds the whole model; what its FSDP rows hold is modelled by resident.c mixed_unit_grads
    return feats


def method_features(method_text):
    feats = []
    if method_text.startswith("FSDP"):
        feats.append("fsdp")
    if method_text.startswith("DeepSpeed"):
        feats.append("deepspeed")
    if "offload" in method_text and "no offload" not in method_text:
        feats.append("cpu-offload")
    return feats


# Stat inferred rather than named by the source (besides what METRIC_MAP already flags).
EXTRA_METRIC_GUESS = {"TTT-02", "TTT-03", "TTT-04"}


def lookup(table, key, rid, col):
    if key not in table:
        raise ValueError("%s: unmapped %s value %r" % (rid, col, key))
    return table[key]


def parse_int(text, rid, col):
    if not text.isdigit():
        raise ValueError("%s: %s is not an integer: %r" % (rid, col, text))
    return str(int(text))


# PEFT MetaMathQA keeps samples of at most 1300 characters (data.py L43-46 @51c2ff66) and
# truncates at 768 tokens, a bound no sample reaches: at 2.5 to 3 characters per token the
# longest is 430 to 520 tokens plus about 15 of template. The peak batch is taken at 512, the
# middle of that range, as an estimate (seq_kind `estimate`).
PEFT_MM_LONGEST = "512"


def parse_seq(text, letter, rid):
    if text == "":
        return "", "unknown"
    if rid.startswith("PEFT-MM-"):
        return PEFT_MM_LONGEST, "estimate"
    if text.startswith("<="):
        num = text[2:].split(" ", 1)[0]
        return parse_int(num, rid, "seq_len"), "cap"
    n = parse_int(text, rid, "seq_len")
    if letter == "A":
        return n, "cap"      # litgpt config-hub: 512 is max_seq_length, a cap
    return n, "exact"


def parse_grade(notes, rid):
    if not notes.startswith("[grade "):
        raise ValueError(rid + ": notes do not start with a grade")
    grade = notes[len("[grade "):notes.index("]")]
    if grade not in ("A", "A-", "B", "B-", "C"):
        raise ValueError(rid + ": bad grade " + grade)
    rest = notes[notes.index("]") + 1:].strip()
    return grade, rest


def source_of(rid):
    for prefix, letter, stack in SOURCES:
        if rid.startswith(prefix):
            return prefix, letter, stack
    raise ValueError("unknown source for id " + rid)


def split_parts(rest):
    """Split notes on '; ' outside parentheses."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(rest):
        ch = rest[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and rest.startswith("; ", i):
            parts.append("".join(cur).strip())
            cur = []
            i += 2
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def common_parts(rows):
    """Note parts shared by every row of a source group (documented in README instead)."""
    groups = {}
    for r in rows:
        prefix, _, _ = source_of(r["id"])
        _, rest = parse_grade(r["notes"], r["id"])
        parts = split_parts(rest)
        groups.setdefault(prefix, []).append(set(parts[1:]))   # parts[0] is raw=...
    common = {}
    for prefix, sets in groups.items():
        common[prefix] = set.intersection(*sets) if len(sets) > 1 else set()
    return common


def order_features(feats):
    for f in feats:
        if f not in FEATURE_ORDER:
            raise ValueError("unknown feature " + f)
    return "+".join(f for f in FEATURE_ORDER if f in set(feats))


def convert_row(row, common):
    rid = row["id"]
    prefix, letter, stack = source_of(rid)
    feats = []

    method = lookup(METHOD_MAP, row["method"], rid, "method")
    feats += method_features(row["method"])
    if row["tp"] != "1" or row["pp"] != "1":
        raise ValueError(rid + ": tp/pp other than 1 not expected")
    gpus = parse_int(row["gpus"], rid, "gpus")
    micro_batch = parse_int(row["micro_batch"], rid, "micro_batch")
    seq_len, seq_kind = parse_seq(row["seq_len"], letter, rid)
    precision = lookup(PRECISION_MAP, row["precision"], rid, "precision")
    finetune, f = lookup(FINETUNE_MAP, row["finetune"], rid, "finetune")
    feats += f
    lora_r = "" if finetune == "full" else parse_int(row["lora_r"], rid, "lora_r")
    targets = lookup(TARGETS_MAP, row["lora_targets"], rid, "lora_targets")
    if (finetune == "full") != (targets == ""):
        raise ValueError(rid + ": lora_targets inconsistent with finetune")
    quant, f = lookup(QUANT_MAP, row["quant"], rid, "quant")
    feats += f
    if (finetune == "qlora") != (quant == "nf4"):
        raise ValueError(rid + ": quant inconsistent with finetune")
    grad_ckpt, f = lookup(CKPT_MAP, row["grad_ckpt"], rid, "grad_ckpt")
    feats += f
    if row["optimizer"] == "not stated":
        if rid != "TTS-02":
            raise ValueError(rid + ": optimizer not stated and no rule")
        # assume the shipped llama3_1/8B_full_single_device optimizer
        optimizer, f = "adamw8bit", ["paged", "opt-in-bwd"]
    else:
        optimizer, f = lookup(OPT_MAP, row["optimizer"], rid, "optimizer")
    feats += f
    attention = lookup(ATTN_MAP, row["attention_impl"], rid, "attention_impl")
    metric, f = lookup(METRIC_MAP, row["metric"], rid, "metric")
    feats += f
    if rid in EXTRA_METRIC_GUESS:
        feats.append("metric-guess")
    feats += source_features(letter, row, rid)

    measured = "%.3f" % float(row["measured_gib"])
    framework = lookup(FRAMEWORK_MAP, row["framework"], rid, "framework")
    grade, rest = parse_grade(row["notes"], rid)

    parts = split_parts(rest)
    if not parts or not parts[0].startswith("raw="):
        raise ValueError(rid + ": notes do not start with raw=")
    specific = [p for p in parts[1:] if p not in common[prefix]]
    notes = [parts[0]]
    if rid in ROW_REMARKS:
        notes.append(ROW_REMARKS[rid])
    if SOURCE_REMARKS.get(letter):
        notes.append(SOURCE_REMARKS[letter])
    notes += specific
    notes_text = "; ".join(notes).replace("\n", " ").replace("\r", " ")

    return [
        row["model_id"], method, gpus, "1", micro_batch, seq_len, precision, finetune,
        lora_r, targets, quant, grad_ckpt, optimizer, metric, measured,
        gpu_for(rid), framework, row["source_url"],
        rid, grade, stack, order_features(feats), attention, seq_kind,
        str(TOKENS_PER_S_GPU.get(rid, "")), notes_text,
    ]


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: convert_public.py PUBLIC-MEASURED.csv [OUT.csv]\n")
        return 2
    src = argv[1]
    out = argv[2] if len(argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "public.csv")
    with open(src, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        if header != IN_HEADER:
            raise ValueError("unexpected input header: %r" % header)
        rows = [dict(zip(header, rec)) for rec in reader if rec]
    for r in rows:
        if len(r) != len(IN_HEADER):
            raise ValueError(r.get("id", "?") + ": wrong number of fields")
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate ids in input")

    common = common_parts(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(OUT_HEADER)
    kept = {}
    dropped = {}
    for r in rows:
        _, letter, _ = source_of(r["id"])
        if r["model_id"] in OUT_OF_SCOPE:
            dropped.setdefault(letter, []).append(r["id"])
            continue
        w.writerow(convert_row(r, common))
        kept[letter] = kept.get(letter, 0) + 1

    tmp = out + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
    os.replace(tmp, out)

    total_dropped = sum(len(v) for v in dropped.values())
    sys.stderr.write("input rows %d, written %d, out of scope %d\n"
                     % (len(rows), sum(kept.values()), total_dropped))
    for letter in sorted(set(kept) | set(dropped)):
        sys.stderr.write("  source %s: kept %d, out of scope %d %s\n"
                         % (letter, kept.get(letter, 0), len(dropped.get(letter, [])),
                            ",".join(dropped.get(letter, []))))
    if "--show-common" in os.environ.get("CONVERT_DEBUG", ""):
        for prefix in sorted(common):
            for p in sorted(common[prefix]):
                sys.stderr.write("common %s %s\n" % (prefix, p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
