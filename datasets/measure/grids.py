"""grids.py: named measurement grids for measure.py.

A grid is a list of configurations (dicts). c() fills the defaults so each line below only says
what differs. Keys: model, precision (fp32|fp16|bf16|bf16-pure), finetune (full|lora|qlora),
lora_r, lora_targets (q+k+v+o+gate+up+down, or attn|mlp|all), quant (none|int8|nf4), grad_ckpt
(on|off), optimizer (adamw|adamw8bit|sgd), micro_batch, seq_len, attention (sdpa|eager), and
optional features (a list: "paged" for bitsandbytes paged optimizers, "fused" for the fused
torch AdamW kernel, "kbit-prep" for peft's prepare_model_for_kbit_training, "launch-blocking"
for CUDA_LAUNCH_BLOCKING=1: the CPU never runs ahead of the GPU, "cpu-init" for method fsdp1:
the model is built on the CPU and FullyShardedDataParallel moves each unit to the GPU as it
wraps it, as HF Trainer's from_pretrained on the CPU then accelerate's plugin do, and what the
wrap leaves cached stays there into training) and steps.
How it runs: method (single, or cdp = DDP, adp = FSDP2 fully_shard, fsdp1 = FSDP1
FullyShardedDataParallel as accelerate's plugin wraps it for HF Trainer, tp = tensor parallel,
each as rank 0 of `gpus` ranks on PyTorch's fake process group), data (packed: every sample seq_len
tokens; variable: lengths uniform in 1..seq_len, padded per micro-batch), alloc_conf (default or
expandable = PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), runner (loop: our loop; trainer:
transformers.Trainer), snapshot (summarise the live tensors at the last step's peak) and
segments (list the request that cut each allocator segment, per stream and step).

Model names are HF ids as in datasets/models.csv; a bare name ("opt-1.3b") also matches.
"""

PRECISIONS = ("fp32", "fp16", "bf16", "bf16-pure")
FINETUNES = ("full", "lora", "qlora")
QUANTS = ("none", "int8", "nf4")
OPTIMIZERS = ("adamw", "adamw8bit", "sgd")
ATTENTIONS = ("sdpa", "eager")
FEATURES = ("paged", "fused", "kbit-prep", "launch-blocking", "cpu-init")
METHODS = ("single", "cdp", "adp", "fsdp1", "tp")
DATA = ("packed", "variable")
ALLOC_CONFS = ("default", "expandable")
# how method fsdp1 wraps a LoRA model (c(wrap=...))
WRAPS = ("peft", "blocks")
RUNNERS = ("loop", "trainer")
# model_types whose blocks name q/k/v/o_proj and gate/up/down_proj (the tp plan's modules)
TP_TYPES = ("llama", "mistral", "qwen2")


def c(model, precision="bf16", finetune="full", *, r=None, targets=None, quant=None,
      ckpt="off", opt="adamw", mb=1, seq=512, attn="sdpa", features=(), steps=None,
      method="single", gpus=1, data="packed", alloc="default", runner="loop", snapshot=False,
      segments=False, wrap="peft"):
    """One configuration; qlora implies nf4, LoRA without a rank gets 16 and targets 'all'.
    Packed data runs 3 steps by default (every step allocates alike after the first); variable
    data 30, so that segments cut for earlier lengths are still cached when a longer batch
    comes (the allocator effect issue 12 is about). wrap: how method fsdp1 wraps a LoRA model,
    with peft's fsdp_auto_wrap_policy as HF Trainer does ("peft"), or in whole blocks, the
    adapters inside ("blocks": what gpu-fsdp1-09 ran, before the harness took peft's policy)."""
    if finetune == "qlora" and quant is None:
        quant = "nf4"
    lora = finetune != "full"
    return {
        "model": model, "precision": precision, "finetune": finetune,
        "lora_r": (r or 16) if lora else None,
        "lora_targets": (targets or "all") if lora else "",
        "quant": quant or "none", "grad_ckpt": ckpt, "optimizer": opt,
        "micro_batch": mb, "seq_len": seq, "attention": attn,
        "features": list(features),
        "steps": steps or (30 if data == "variable" else 3),
        "method": method, "gpus": gpus, "data": data, "alloc_conf": alloc, "runner": runner,
        "snapshot": snapshot, "segments": segments, "wrap": wrap,
    }


L1B = "meta-llama/Llama-3.2-1B"
L3B = "meta-llama/Llama-3.2-3B"
Q05 = "Qwen/Qwen2.5-0.5B"
Q15 = "Qwen/Qwen2.5-1.5B"
Q3B = "Qwen/Qwen2.5-3B"
Q7B = "Qwen/Qwen2.5-7B"
G2 = "google/gemma-2-2b"
G1 = "google/gemma-2b"
PHI3 = "microsoft/Phi-3-mini-4k-instruct"
M7 = "mistralai/Mistral-7B-v0.1"
L8 = "meta-llama/Llama-3.1-8B"
TL = "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T"
OPT = "facebook/opt-1.3b"
BLOOM = "bigscience/bloom-560m"
NEOX = "stabilityai/stablelm-base-alpha-3b"  # model_type gpt_neox
FALCON = "tiiuae/falcon-7b"

# ~20 minutes on one H100 80GB (see README: ~20 s per configuration, dominated by process
# start, imports and CUDA/cuBLAS warm-up; 3 steps of even the 8B points take a few seconds).
# Spread over families and knobs rather than dense in one: one central model (Llama-3.2-1B)
# varies one knob at a time against bf16/full/ckpt-off/adamw/mb4/seq1024/sdpa, and the other
# families add the architecture-specific effects (huge vocabularies, fused projections,
# softcapping, ALiBi, multi-query) at a few points each. Two points sit near or over the
# 80 GB limit on purpose so the fits/does-not-fit boundary is measured too.
H100_30MIN = [
    # Llama-3.2-1B: one knob at a time around a bf16 full fine-tune
    c(L1B, "bf16", mb=4, seq=1024),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on"),
    c(L1B, "bf16", mb=4, seq=1024, attn="eager"),
    c(L1B, "bf16", mb=2, seq=2048),
    c(L1B, "bf16", mb=8, seq=2048, ckpt="on"),
    c(L1B, "fp32", mb=2, seq=1024),
    c(L1B, "bf16-pure", mb=4, seq=1024),
    c(L1B, "bf16-pure", mb=4, seq=1024, opt="sgd"),
    c(L1B, "bf16", mb=4, seq=1024, opt="adamw8bit"),
    c(L1B, "fp16", mb=4, seq=1024, ckpt="on"),
    c(L1B, "bf16", mb=4, seq=1024, features=["fused"]),
    c(L1B, "bf16", "lora", r=16, targets="attn", mb=4, seq=1024),
    c(L1B, "bf16", "lora", r=16, targets="all", mb=4, seq=1024),
    c(L1B, "bf16", "lora", r=64, targets="all", mb=8, seq=2048, ckpt="on"),
    c(L1B, "bf16", "lora", r=8, targets="q+v", mb=4, seq=1024),
    c(L1B, "fp32", "lora", r=16, targets="all", mb=2, seq=1024),
    c(L1B, "bf16", "qlora", r=16, targets="all", mb=4, seq=1024, ckpt="on"),
    # the same prepared by peft's prepare_model_for_kbit_training (fp32 ends and norms)
    c(L1B, "bf16", "qlora", r=16, targets="all", mb=4, seq=1024, ckpt="on", features=["kbit-prep"]),
    # Qwen2.5: 152k vocabulary, so logits dominate at small hidden sizes
    c(Q05, "bf16", mb=8, seq=1024),
    c(Q05, "fp32", mb=4, seq=2048),
    c(Q05, "bf16", mb=8, seq=2048, ckpt="on"),
    c(Q05, "bf16", "lora", r=32, targets="all", mb=8, seq=512, attn="eager"),
    c(Q15, "bf16", mb=4, seq=2048, ckpt="on"),
    c(Q15, "bf16-pure", mb=2, seq=1024),
    c(Q15, "bf16", "lora", r=16, targets="attn", mb=4, seq=1024, opt="sgd"),
    c(Q15, "bf16", "qlora", r=64, targets="all", mb=4, seq=2048, ckpt="on",
      opt="adamw8bit", features=["paged"]),
    # Gemma-2: 256k vocabulary, logit softcapping, eager is the recommended attention
    c(G2, "bf16", mb=2, seq=1024, ckpt="on", attn="eager"),
    c(G2, "bf16", mb=2, seq=1024, ckpt="on", attn="sdpa"),
    c(G2, "bf16", "lora", r=16, targets="all", mb=2, seq=2048, attn="eager"),
    c(G2, "bf16", "qlora", r=16, targets="all", mb=4, seq=2048, ckpt="on", attn="eager"),
    # Gemma (1): head_dim 256 with one KV head
    c(G1, "bf16", "lora", r=8, targets="all", mb=4, seq=1024),
    c(G1, "bf16-pure", mb=4, seq=1024, ckpt="on"),
    # Phi-3-mini: fused qkv_proj and gate_up_proj (a q+v LoRA adapts the whole qkv matrix)
    c(PHI3, "bf16", "lora", r=16, targets="q+v", mb=4, seq=1024),
    c(PHI3, "bf16", "lora", r=16, targets="all", mb=8, seq=2048, ckpt="on"),
    c(PHI3, "bf16-pure", mb=2, seq=1024, ckpt="on"),
    c(PHI3, "bf16", "qlora", r=16, targets="all", mb=4, seq=2048, ckpt="on"),
    # 7-8B: LoRA, pure bf16 and one full mixed-precision point that cannot fit (16 B/param)
    c(M7, "bf16", "lora", r=16, targets="all", mb=2, seq=2048),
    c(M7, "bf16", "lora", r=16, targets="attn", mb=8, seq=4096, ckpt="on"),
    c(M7, "bf16-pure", mb=1, seq=1024, ckpt="on"),      # ~68 GiB: close to the limit
    c(M7, "bf16", "qlora", r=64, targets="all", mb=4, seq=2048, ckpt="on",
      features=["paged"]),
    c(L8, "bf16", "lora", r=16, targets="all", mb=4, seq=4096, ckpt="on"),
    c(L8, "bf16", "lora", r=8, targets="q+v", mb=1, seq=2048, attn="eager"),
    c(L8, "bf16-pure", mb=1, seq=2048, ckpt="on", opt="sgd"),
    c(L8, "bf16", mb=1, seq=512, ckpt="on"),           # 128 GB of states: expected OOM
    c(L8, "bf16", "qlora", r=16, targets="all", mb=2, seq=2048, ckpt="on"),
    c(L8, "bf16", "lora", r=16, targets="attn", quant="int8", mb=2, seq=1024, ckpt="on"),
    # LLMem's own setting: fp16 mixed precision, full fine-tune, checkpointing
    c(OPT, "fp16", mb=8, seq=512, ckpt="on", attn="eager"),
    c(OPT, "fp16", mb=4, seq=1024, ckpt="off", attn="sdpa"),
    c(BLOOM, "fp16", mb=8, seq=512, ckpt="on", attn="eager"),
    c(BLOOM, "fp16", mb=4, seq=1024, ckpt="off", attn="eager"),
    # GPT-NeoX and Falcon: fused query_key_value, parallel residual, multi-query
    c(NEOX, "bf16-pure", mb=2, seq=2048, ckpt="on"),
    c(NEOX, "bf16", "lora", r=16, targets="attn", mb=4, seq=1024),
    c(FALCON, "bf16", "lora", r=16, targets="attn", mb=4, seq=2048, ckpt="on"),
]

# A handful of quick points that exercise each code path (full, LoRA, QLoRA, checkpointing,
# eager, fp16 scaler, SGD); about two minutes.
SMOKE = [
    c(Q05, "bf16", mb=2, seq=256),
    c(Q05, "fp16", mb=2, seq=256, ckpt="on", attn="eager"),
    c(Q05, "bf16", "lora", r=8, targets="q+v", mb=2, seq=256),
    c(Q05, "bf16-pure", mb=2, seq=256, opt="sgd"),
    c(Q05, "bf16", "qlora", r=8, targets="all", mb=2, seq=256, ckpt="on"),
]

# Issue 11's grid: what users run and where the model is least sure. Two vocabularies
# (Qwen2.5 152k, Llama-3 128k), sizes 0.5B to 8B; HF Trainer + PEFT at the installed versions;
# micro-batch x sequence at equal tokens, packed and variable; one knob at a time around a
# Llama-3.2-1B full bf16 fine-tune; snapshots of the live tensors at four peaks; FSDP, DDP and
# TP at 2 to 8 ranks on the fake process group.
#
# The whole grid takes about 20 to 25 minutes on one H100, more than the device tool lends
# (15 minutes of device time, the machine's start included, 10 minutes a command). So the
# order is the priority: block 1 covers every knob issue 11 names once (about 8 minutes), and
# the later blocks add the pairs and sizes that sharpen it. A lease that stops anywhere has
# measured the most useful prefix, and a later lease resumes where it stopped.
GPU_25MIN = [
    # 1a. one knob at a time around Llama-3.2-1B, full, bf16 mixed, mb 4, seq 1024, packed
    c(L1B, "bf16", mb=4, seq=1024),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on"),
    c(L1B, "bf16", mb=4, seq=1024, attn="eager"),
    c(L1B, "bf16", mb=4, seq=1024, features=["fused"]),
    c(L1B, "bf16", mb=4, seq=1024, opt="sgd"),
    c(L1B, "bf16-pure", mb=4, seq=1024),
    c(L1B, "bf16", "lora", mb=4, seq=1024),
    # 1b. HF Trainer + PEFT (LoRA r16 on every linear layer, bf16 mixed, variable lengths):
    # three Qwen2.5 sizes and Llama at the same tokens -- the loss path's and the allocator's
    # memory should not depend on the model's size -- and packed against variable
    c(Q05, "bf16", "lora", mb=4, seq=1024, data="variable", runner="trainer"),
    c(Q15, "bf16", "lora", mb=4, seq=1024, data="variable", runner="trainer"),
    c(Q3B, "bf16", "lora", mb=4, seq=1024, data="variable", runner="trainer"),
    c(L1B, "bf16", "lora", mb=4, seq=1024, data="variable", runner="trainer"),
    c(Q15, "bf16", "lora", mb=4, seq=1024, runner="trainer"),
    # 1c. multi-GPU layouts as rank 0 of a fake process group, one of each method
    c(L1B, "bf16", mb=4, seq=1024, method="adp", gpus=2),
    c(L1B, "bf16", mb=4, seq=1024, method="cdp", gpus=2),
    c(L1B, "bf16", mb=4, seq=1024, method="tp", gpus=2),
    # 1d. which tensors make the peak (snapshot summaries), packed against variable lengths
    c(L1B, "bf16", mb=4, seq=1024, snapshot=True),
    c(L1B, "bf16", mb=4, seq=2048),
    c(L1B, "bf16", mb=4, seq=2048, data="variable"),
    c(Q15, "bf16", "lora", mb=4, seq=1024, ckpt="on", snapshot=True),
    c(L8, "bf16", "lora", mb=2, seq=2048, ckpt="on", data="variable", runner="trainer"),
    # 2. micro-batch x sequence at 4096 tokens, packed and variable (our loop)
    *[c(Q15, "bf16", "lora", mb=b, seq=s, data=d)
      for b, s in ((1, 4096), (2, 2048), (4, 1024)) for d in ("packed", "variable")],
    # (added after the first lease, which measured up to here) what makes reserved 5.9 GiB
    # above allocated with checkpointing (gpu-25min-01: the optimizer step's foreach
    # temporaries in segments the backward cut?): the same without the temporaries (fused
    # AdamW, SGD) and with expandable segments, which grow a segment instead of cutting more
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on", features=["fused"]),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on", opt="sgd"),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on", alloc="expandable"),
    *[c(Q15, "bf16", "lora", mb=8, seq=512, data=d) for d in ("packed", "variable")],
    c(L1B, "bf16", mb=2, seq=1024, data="variable"),
    c(L1B, "bf16", mb=4, seq=2048, data="variable", alloc="expandable"),
    # 3. the rest of the knobs, sizes and snapshots
    c(L1B, "bf16-pure", mb=4, seq=1024, opt="sgd"),
    c(L1B, "bf16", "lora", mb=4, seq=1024, ckpt="on", attn="eager"),
    c(L3B, "bf16", "lora", mb=4, seq=1024, data="variable", runner="trainer"),
    c(Q15, "bf16", "lora", mb=4, seq=1024, data="variable", alloc="expandable", runner="trainer"),
    c(Q15, "bf16", mb=4, seq=1024, ckpt="on", data="variable", runner="trainer"),
    c(Q7B, "bf16", "lora", mb=2, seq=2048, ckpt="on", data="variable", runner="trainer"),
    c(Q15, "bf16", "lora", mb=4, seq=1024, data="variable", steps=10, snapshot=True),
    c(Q05, "bf16", mb=4, seq=1024, attn="eager", snapshot=True),
    # 4. more ranks
    c(L1B, "bf16", mb=4, seq=1024, method="adp", gpus=4),
    c(L1B, "bf16", mb=4, seq=1024, method="adp", gpus=8),
    c(L1B, "bf16", mb=4, seq=1024, method="cdp", gpus=8),
    c(L1B, "bf16", mb=4, seq=1024, method="tp", gpus=4),
    c(L1B, "bf16-pure", mb=4, seq=1024, method="tp", gpus=8),
    c(Q15, "bf16", "lora", mb=4, seq=1024, method="adp", gpus=4),
    c(L8, "bf16", mb=1, seq=2048, ckpt="on", method="adp", gpus=8),
    # 5. long sequences near the limit
    c(L8, "bf16", "lora", mb=1, seq=8192, ckpt="on", data="variable", steps=15),
    c(Q7B, "bf16", "lora", mb=1, seq=8192, ckpt="on"),
    # 6. paged optimizers (README "Paged optimizers"): PagedAdamW's fp32 states of an 8B model
    # (60 GiB) have no room beside the ~30 GiB the run holds, so some cross PCIe every step
    # (llmem-sweep predicts 10.9 GiB each way, 0.46 s a step); the 8-bit ones (15 GiB) stay
    # on the GPU. The step times of the pair measure the traffic, the device peak what
    # nvidia-smi sees of managed memory.
    c(L8, "bf16-pure", mb=1, seq=1024, ckpt="on", features=["paged"], steps=5),
    c(L8, "bf16-pure", mb=1, seq=1024, ckpt="on", opt="adamw8bit", features=["paged"], steps=5),
]

# The new code paths in a few minutes: run this first on a new machine.
SMOKE_NEW = [
    c(Q05, "bf16", "lora", r=8, mb=2, seq=256, data="variable", steps=6, runner="trainer"),
    c(Q05, "bf16", mb=2, seq=256, data="variable", steps=6, alloc="expandable"),
    c(Q05, "bf16", mb=2, seq=256, snapshot=True),
    c(Q05, "bf16", mb=2, seq=256, method="adp", gpus=2),
    c(Q05, "bf16", mb=2, seq=256, method="cdp", gpus=2),
    c(Q05, "bf16", mb=2, seq=256, method="tp", gpus=2),
]

L2_7B = "meta-llama/Llama-2-7b-hf"

# FSDP1, the sharding HF Trainer runs through accelerate's plugin and llmem-sweep's stack hf
# assumes, had no measurement of our own (gpu-25min's FSDP rows are FSDP2). The first
# configuration is the gate (seconds); then FSDP1 beside gpu-25min's FSDP2 points (-12, -46,
# -47, -41/-42) and, in HF's implementation, the shapes of torchtune's README rows (TTM-02/03/05:
# Llama-2-7B, bf16 weights, batch 4 x 2048), whose metric the public table leaves unsaid.
GPU_FSDP1 = [
    c(Q05, "bf16", mb=2, seq=256, method="fsdp1", gpus=2),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=2),
    c(L8, "bf16", mb=1, seq=2048, ckpt="on", method="fsdp1", gpus=8),
    c(L2_7B, "bf16-pure", mb=4, seq=2048, ckpt="on", method="fsdp1", gpus=4),
    c(Q15, "bf16", "lora", mb=4, seq=1024, method="fsdp1", gpus=4),
    c(L2_7B, "bf16-pure", "lora", r=8, targets="q+v", mb=4, seq=2048, ckpt="on"),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=8),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=4),
    c(L1B, "bf16-pure", mb=4, seq=1024, method="fsdp1", gpus=4),
    c(L2_7B, "bf16-pure", "lora", r=8, targets="q+v", mb=4, seq=2048, method="fsdp1", gpus=2,
      wrap="blocks"),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on", method="fsdp1", gpus=4),
    c(L3B, "bf16", mb=2, seq=2048, method="fsdp1", gpus=4),
    c(L1B, "bf16", "lora", mb=4, seq=1024, method="fsdp1", gpus=2),
    c(Q3B, "bf16", mb=4, seq=1024, data="variable", steps=10, method="fsdp1", gpus=4),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=2, snapshot=True),
]

# Why FSDP1 reserves 2 to 9 GiB above what it allocates (gpu-fsdp1-03/-08: allocated within
# 3.4 %, reserved 35/17 % above the model): the same runs with the CPU held to the GPU
# (CUDA_LAUNCH_BLOCKING: a block freed under record_stream is reusable at once) and with
# expandable segments, each row noting its segments per stream (measure_worker `pools=`);
# then LoRA under FSDP1 as HF Trainer wraps it (peft's fsdp_auto_wrap_policy).
GPU_FSDP1_POOLS = [
    c(L1B, "bf16-pure", mb=4, seq=1024, method="fsdp1", gpus=4),
    c(L1B, "bf16-pure", mb=4, seq=1024, method="fsdp1", gpus=4, features=["launch-blocking"]),
    c(L1B, "bf16-pure", mb=4, seq=1024, method="fsdp1", gpus=4, alloc="expandable"),
    c(L2_7B, "bf16-pure", mb=4, seq=2048, ckpt="on", method="fsdp1", gpus=4),
    c(L2_7B, "bf16-pure", mb=4, seq=2048, ckpt="on", method="fsdp1", gpus=4,
      features=["launch-blocking"]),
    c(Q15, "bf16", "lora", mb=4, seq=1024, method="fsdp1", gpus=4),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=4, features=["launch-blocking"]),
    c(L2_7B, "bf16-pure", "lora", r=8, targets="q+v", mb=4, seq=2048, ckpt="on",
      method="fsdp1", gpus=2),
    c(L1B, "bf16", "lora", mb=4, seq=1024, method="fsdp1", gpus=2),
    c(L1B, "bf16-pure", mb=4, seq=1024, method="adp", gpus=4),
    c(L8, "bf16", mb=1, seq=2048, ckpt="on", method="fsdp1", gpus=8,
      features=["launch-blocking"]),
]

# Which request cut each allocator segment, per stream and step (measure_worker
# segment_trace_text): FSDP1's pools one by one, for a replay of its steps.
GPU_FSDP1_SEGMENTS = [
    c(L1B, "bf16-pure", mb=4, seq=1024, method="fsdp1", gpus=4, segments=True),
    c(L2_7B, "bf16-pure", mb=4, seq=2048, ckpt="on", method="fsdp1", gpus=4, segments=True),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=4, segments=True),
    c(L1B, "bf16", "lora", mb=4, seq=1024, method="fsdp1", gpus=2, segments=True),
]

# Issue 12's questions for the next lease. What FSDP1's wrap leaves cached: accelerate's
# prepare_model calls no empty_cache after FSDP(model) (accelerator.py @16cb6eb8) and HF
# Trainer's free_memory runs before it, so a real run's reserved peak may carry the wrap's
# freed units; every row before emptied the cache after building. A small batch, where such
# a residue would stand out most, without cpu-init (the gate: a path measured before) and
# with it; twins of gpu-fsdp1-07 and -12 with it. Then bf16 adapters on one GPU without
# checkpointing (the replay's lora16 on its own) and gpu-fsdp1-09 under peft's wrap policy
# (the mixed-units term from the other side). Last, TTM-05's layout (torchtune 0217d44c's
# full_finetune_distributed builds the model on the CPU and lets FSDP move it: cpu-init) on
# this stack: gpu-fsdp1-segments-01 ran it with the cache emptied after the wrap.
GPU_RESIDUE = [
    c(L1B, "bf16", mb=1, seq=256, method="fsdp1", gpus=4),
    c(L1B, "bf16", mb=1, seq=256, method="fsdp1", gpus=4, features=["cpu-init"]),
    c(L1B, "bf16", mb=4, seq=1024, method="fsdp1", gpus=4, features=["cpu-init"]),
    c(L1B, "bf16", "lora", mb=4, seq=1024, method="fsdp1", gpus=2, features=["cpu-init"]),
    c(Q15, "bf16-pure", "lora", mb=4, seq=1024),
    c(L2_7B, "bf16-pure", "lora", r=8, targets="q+v", mb=4, seq=2048, method="fsdp1", gpus=2),
    c(L2_7B, "bf16-pure", mb=4, seq=2048, ckpt="on", method="fsdp1", gpus=4, features=["cpu-init"]),
]

# For the next lease (stop 36), in priority order. The allocator's segments one by one, each
# with the request that cut it (segments=True), where the whole-step replay has a number to
# compare but no segment list: smoke-08 (FSDP2 on 2 ranks, reserved 8 % above the model; the
# gate, a path measured before), gpu-25min-01 (checkpointing, foreach AdamW) and -17 (30
# variable widths). Then TP with an untied lm_head (Llama-3.1-8B: the harness splits it as
# transformers' colwise_rep, never run), and gpu-25min-01's checkpointed steps over 10 steps
# (does the reserve grow after the third?).
GPU_NEXT = [
    # First (stop 37, redrawn stop 38): does the cache FSDP1's wrap leaves stay in the
    # reserved peak when training asks the default stream for little? gpu-residue's kept
    # cache (1.2 to 2.5 GiB) was reused, and the reserved peak moved at most 0.09 GiB, but
    # those runs' activations and states were large. Answer.AI's fsdp_qlora benchmark
    # (datasets/measured/answerai-3090.csv) measures Llama-2-7B LoRA r64, batch 1, FSDP1 over 2
    # ranks at a reserved peak constant in the context (10.24 / 10.22 GiB at 512 / 2048
    # tokens). Since stop 38 the model replays the wrap (engine/model/fsdpwrap.c) and takes
    # its reserved as a floor. Its layout on TinyLlama (32k vocabulary, so the step's demand
    # stays below the wrap's floor), 128 tokens, the wrap's cache kept and emptied; the
    # model's prediction (`explain --measured`): reserved 2.566 GiB kept, 1.977 emptied,
    # allocated 1.854 both:
    c(TL, "bf16-pure", "lora", r=64, targets="q+k+v+gate+up+down", mb=1, seq=128, ckpt="on",
      method="fsdp1", gpus=2, features=["cpu-init"]),
    c(TL, "bf16-pure", "lora", r=64, targets="q+k+v+gate+up+down", mb=1, seq=128, ckpt="on",
      method="fsdp1", gpus=2),
    c(Q05, "bf16", mb=2, seq=256, method="adp", gpus=2, segments=True),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on", segments=True),
    c(L1B, "bf16", mb=4, seq=2048, data="variable", segments=True),
    c(L8, "bf16-pure", mb=1, seq=2048, ckpt="on", method="tp", gpus=2),
    c(L1B, "bf16", mb=4, seq=1024, ckpt="on", steps=10),
]

GRIDS = {
    "gpu-next": GPU_NEXT,
    "gpu-residue": GPU_RESIDUE,
    "gpu-fsdp1-segments": GPU_FSDP1_SEGMENTS,
    "gpu-fsdp1-pools": GPU_FSDP1_POOLS,
    "gpu-25min": GPU_25MIN,
    "gpu-fsdp1": GPU_FSDP1,
    "h100-30min": H100_30MIN,
    "smoke": SMOKE + SMOKE_NEW,
}

DEFAULT_GRID = "gpu-25min"
