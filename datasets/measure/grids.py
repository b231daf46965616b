"""grids.py: named measurement grids for measure.py.

A grid is a list of configurations (dicts). c() fills the defaults so each line below only says
what differs. Keys: model, precision (fp32|fp16|bf16|bf16-pure), finetune (full|lora|qlora),
lora_r, lora_targets (q+k+v+o+gate+up+down, or attn|mlp|all), quant (none|int8|nf4), grad_ckpt
(on|off), optimizer (adamw|adamw8bit|sgd), micro_batch, seq_len, attention (sdpa|eager), and
optional features (a list: "paged" for bitsandbytes paged optimizers, "fused" for the fused
torch AdamW kernel, "kbit-prep" for peft's prepare_model_for_kbit_training) and steps.

Model names are HF ids as in datasets/models.csv; a bare name ("opt-1.3b") also matches.
"""

PRECISIONS = ("fp32", "fp16", "bf16", "bf16-pure")
FINETUNES = ("full", "lora", "qlora")
QUANTS = ("none", "int8", "nf4")
OPTIMIZERS = ("adamw", "adamw8bit", "sgd")
ATTENTIONS = ("sdpa", "eager")
FEATURES = ("paged", "fused", "kbit-prep")


def c(model, precision="bf16", finetune="full", *, r=None, targets=None, quant=None,
      ckpt="off", opt="adamw", mb=1, seq=512, attn="sdpa", features=(), steps=3):
    """One configuration; qlora implies nf4, LoRA without a rank gets 16 and targets 'all'."""
    if finetune == "qlora" and quant is None:
        quant = "nf4"
    lora = finetune != "full"
    return {
        "model": model, "precision": precision, "finetune": finetune,
        "lora_r": (r or 16) if lora else None,
        "lora_targets": (targets or "all") if lora else "",
        "quant": quant or "none", "grad_ckpt": ckpt, "optimizer": opt,
        "micro_batch": mb, "seq_len": seq, "attention": attn,
        "features": list(features), "steps": steps,
    }


L1B = "meta-llama/Llama-3.2-1B"
Q05 = "Qwen/Qwen2.5-0.5B"
Q15 = "Qwen/Qwen2.5-1.5B"
G2 = "google/gemma-2-2b"
G1 = "google/gemma-2b"
PHI3 = "microsoft/Phi-3-mini-4k-instruct"
M7 = "mistralai/Mistral-7B-v0.1"
L8 = "meta-llama/Llama-3.1-8B"
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

GRIDS = {
    "h100-30min": H100_30MIN,
    "smoke": SMOKE,
}

DEFAULT_GRID = "h100-30min"
