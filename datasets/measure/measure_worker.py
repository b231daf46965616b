"""measure_worker.py: build one model with random weights, run a few training steps, report peaks.

Imported only in the worker process (or by `measure.py --in-process`): it is the one module that
needs torch, transformers, peft and, for quantized bases and 8-bit/paged optimizers,
bitsandbytes. run_job() returns a JSON-able dict; measure.py turns it into CSV rows.

Conventions (so the numbers mean what the predictor assumes; see README.md):
  fp32       weights, gradients and optimizer states in fp32, no autocast
  fp16/bf16  HF Trainer mixed precision: trainable weights in fp32, torch.autocast(dtype),
             a GradScaler for fp16; a frozen LoRA/QLoRA base is stored in the 16-bit dtype
  bf16-pure  everything in bf16, AdamW states in bf16
  lora       peft LoRA, alpha = 2r, dropout 0, adapters in fp32 (bf16 under bf16-pure)
  qlora/int8 bitsandbytes Linear4bit (nf4, double quantization) / Linear8bitLt replacing every
             nn.Linear except the LM head, as transformers' bnb integration does
"""

import contextlib
import gc
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import catalog  # noqa: E402

import torch  # noqa: E402


# --- device memory as nvidia-smi sees it --------------------------------------------------

class DeviceMemory:
    """Used memory of the GPU this process runs on: NVML if pynvml imports, else nvidia-smi."""

    def __init__(self):
        self.kind = None
        self.index = 0
        self.uuid = None
        vis = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        if vis.isdigit():
            self.index = int(vis)
        elif vis.startswith(("GPU-", "MIG-")):
            self.uuid = vis
        try:
            import pynvml
            pynvml.nvmlInit()
            self.h = (pynvml.nvmlDeviceGetHandleByUUID(self.uuid) if self.uuid
                      else pynvml.nvmlDeviceGetHandleByIndex(self.index))
            self.nvml = pynvml
            self.kind = "nvml"
        except Exception:  # no pynvml, or NVML refused: fall back to the command line tool
            if shutil.which("nvidia-smi"):
                self.kind = "nvidia-smi"

    def used(self):
        """Bytes in use on the device, or None when neither NVML nor nvidia-smi answers."""
        try:
            if self.kind == "nvml":
                # NVML's v1 `used` counts the framebuffer the driver reserves for itself
                # (hundreds of MiB even on an idle GPU); v2 leaves it out, as nvidia-smi does
                # (NVML nvmlMemory_v2_t). nvidia-ml-py asks for v1 unless told otherwise.
                v2 = getattr(self.nvml, "nvmlMemory_v2", None)
                try:
                    info = self.nvml.nvmlDeviceGetMemoryInfo(self.h, version=v2)
                except Exception:  # an older nvidia-ml-py or driver: v1
                    info = self.nvml.nvmlDeviceGetMemoryInfo(self.h)
                return int(info.used)
            if self.kind == "nvidia-smi":
                sel = self.uuid or str(self.index)
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                     "-i", sel], capture_output=True, text=True, timeout=30).stdout
                return int(float(out.strip().splitlines()[0])) << 20  # MiB
        except Exception:
            return None
        return None


def versions():
    v = {"torch": torch.__version__, "cuda": torch.version.cuda or "none"}
    for mod, key in (("transformers", "transformers"), ("peft", "peft"),
                     ("bitsandbytes", "bnb")):
        try:
            v[key] = __import__(mod).__version__
        except Exception:  # missing, or present but unable to load its CUDA library
            v[key] = None
    return v


def probe():
    """What the parent needs once per run: the GPU and the library versions."""
    if not torch.cuda.is_available():
        raise SystemExit("measure_worker: torch sees no CUDA device")
    props = torch.cuda.get_device_properties(0)
    return {"gpu_name": torch.cuda.get_device_name(0), "total_bytes": int(props.total_memory),
            "versions": versions()}


# --- model construction -------------------------------------------------------------------

def make_config(row):
    """An HF config object for the catalog row, and the keys its class did not accept."""
    import inspect
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    kwargs = catalog.hf_config_kwargs(row)
    cls = CONFIG_MAPPING[row["model_type"]]
    params = inspect.signature(cls.__init__).parameters
    dropped = []
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        # A strict config class: pass what it names, report the rest (a version difference).
        dropped = [k for k in kwargs if k not in params]
        for k in dropped:
            kwargs.pop(k)
    cfg = cls(**kwargs)
    # Some classes default pad_token_id to a real id (Phi-3: 32000); it must index the table.
    pad = getattr(cfg, "pad_token_id", None)
    if isinstance(pad, int) and pad >= row["vocab"]:
        cfg.pad_token_id = None
    return cfg, dropped


def weight_dtype(cfg):
    """Storage dtype of the model as built (before LoRA adapters are added)."""
    prec, ft = cfg["precision"], cfg["finetune"]
    if prec == "bf16-pure":
        return torch.bfloat16
    if prec == "fp32" or ft == "full":
        return torch.float32  # full mixed precision keeps fp32 master weights
    return torch.float16 if prec == "fp16" else torch.bfloat16  # frozen base in 16 bits


def compute_dtype(cfg):
    return {"fp32": torch.float32, "fp16": torch.float16}.get(cfg["precision"], torch.bfloat16)


def build_model(hf_cfg, attention, dtype):
    """Random-weight model constructed directly on the GPU (no CPU copy, no download)."""
    import transformers
    from transformers import AutoModelForCausalLM
    major_minor = tuple(int(x) for x in transformers.__version__.split(".")[:2])
    # transformers 4.56 renamed torch_dtype to dtype; v5 warns on the old name.
    dkey = "dtype" if major_minor >= (4, 56) else "torch_dtype"
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(hf_cfg, attn_implementation=attention,
                                                 **{dkey: dtype})
    model.to("cuda")  # a no-op normally; catches buffers a model creates on the CPU
    return model


def ensure_tied(model, hf_cfg):
    """True when the LM head shares the embedding (as the config asks)."""
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    if out is None or inp is None:
        return False
    if getattr(hf_cfg, "tie_word_embeddings", False) and out.weight is not inp.weight:
        model.tie_weights()
    return out.weight is inp.weight


def quantize_linears(model, quant, cdtype):
    """Replaces every nn.Linear except the LM head by its bitsandbytes counterpart.

    transformers' bnb integration does the same at load time (it keeps the output embedding in
    16 bits). The weights pass through the CPU because older bitsandbytes quantizes only on a
    CPU -> GPU move; each layer's dense weight is freed as soon as it is replaced.
    """
    import bitsandbytes as bnb
    head = model.get_output_embeddings()
    targets = [(parent, name, child)
               for parent in model.modules()
               for name, child in parent.named_children()
               if isinstance(child, torch.nn.Linear) and child is not head]
    for parent, name, lin in targets:
        has_bias = lin.bias is not None
        w = lin.weight.data.to("cpu")
        if quant == "nf4":
            new = bnb.nn.Linear4bit(lin.in_features, lin.out_features, bias=has_bias,
                                    compute_dtype=cdtype, compress_statistics=True,
                                    quant_type="nf4", device="meta")
            qw = bnb.nn.Params4bit(w, requires_grad=False, compress_statistics=True,
                                   quant_type="nf4")
        else:
            new = bnb.nn.Linear8bitLt(lin.in_features, lin.out_features, bias=has_bias,
                                      has_fp16_weights=False, threshold=6.0, device="meta")
            qw = bnb.nn.Int8Params(w, requires_grad=False, has_fp16_weights=False)
        # Assigned into _parameters, as transformers does: Module.to() would keep the
        # original Parameter object and, on some bitsandbytes versions, lose its quant_state.
        new._parameters["weight"] = qw.to("cuda")  # the CPU -> GPU move quantizes
        if has_bias:
            new._parameters["bias"] = torch.nn.Parameter(lin.bias.data.to("cuda", cdtype),
                                                          requires_grad=False)
        setattr(parent, name, new)
        del lin, w, qw
    for p in model.parameters():
        p.requires_grad_(False)


def apply_lora(model, row, cfg, adapter_dtype):
    from peft import LoraConfig, get_peft_model
    names = catalog.lora_target_modules(row["model_type"], cfg["lora_targets"])
    r = int(cfg["lora_r"])
    lcfg = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules=names,
                      bias="none", task_type="CAUSAL_LM",
                      fan_in_fan_out=row["model_type"] in catalog.CONV1D_TYPES)
    model = get_peft_model(model, lcfg)
    # peft upcasts 16-bit adapters to fp32 by default; be explicit so bf16-pure stays bf16.
    for p in model.parameters():
        if p.requires_grad and p.dtype != adapter_dtype:
            p.data = p.data.to(adapter_dtype)
    return model, names


def make_optimizer(cfg, params):
    """The optimizer, and a note saying which implementation it is."""
    feats = cfg.get("features", ())
    lr = 1e-5
    if cfg["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=lr), "torch.SGD momentum=0"
    if cfg["optimizer"] == "adamw8bit":
        import bitsandbytes as bnb
        cls = bnb.optim.PagedAdamW8bit if "paged" in feats else bnb.optim.AdamW8bit
        return cls(params, lr=lr), f"bnb.{cls.__name__}"
    if "paged" in feats:
        import bitsandbytes as bnb
        return bnb.optim.PagedAdamW(params, lr=lr), "bnb.PagedAdamW"
    if "fused" in feats:
        return torch.optim.AdamW(params, lr=lr, fused=True), "torch.AdamW fused"
    # torch's default on CUDA is the foreach implementation (one temporary the size of the
    # squared-gradient state during step()).
    return torch.optim.AdamW(params, lr=lr), "torch.AdamW foreach"


# --- the measurement ----------------------------------------------------------------------

def _is_oom(e):
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in msg or "cuda_error_out_of_memory" in msg)


def run_job(job):
    cfg, row = job["config"], job["model_row"]
    notes = []
    res = {"status": "error:unknown", "notes": notes}
    phase = "init"
    dev = DeviceMemory()
    try:
        idle = dev.used()
        # CUDA context: what NVML sees after the first allocation, less what the caching
        # allocator holds for that tiny tensor and less what was in use before we started.
        phase = "cuda init"
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        used = dev.used()
        if idle is not None and used is not None:
            res["context"] = used - idle - torch.cuda.memory_reserved()
            notes.append(f"nvml_idle_gib={idle / 2**30:.4f}")
        if dev.kind:
            notes.append(f"device_via={dev.kind}")
        alloc_conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
        if alloc_conf:
            notes.append(f"alloc_conf={alloc_conf}")
        torch.manual_seed(0)

        phase = "build"
        hf_cfg, dropped = make_config(row)
        if dropped:
            notes.append("config_keys_dropped=" + "+".join(dropped))
        model = build_model(hf_cfg, cfg["attention"], weight_dtype(cfg))
        tied = ensure_tied(model, hf_cfg)
        n_params = sum(p.numel() for p in model.parameters())
        notes.append(f"params={n_params} tied={int(tied)}")
        if row.get("params", 0) > 0 and abs(n_params - row["params"]) > 0.01 * row["params"]:
            notes.append(f"params_mismatch catalog={row['params']}")
        notes.append(f"attn_impl={getattr(model.config, '_attn_implementation', '?')}")

        ckpt = cfg["grad_ckpt"] == "on"
        if cfg["quant"] != "none":
            phase = "quantize"
            quantize_linears(model, cfg["quant"], compute_dtype(cfg))
            if "kbit-prep" in cfg.get("features", ()):
                from peft import prepare_model_for_kbit_training
                model = prepare_model_for_kbit_training(
                    model, use_gradient_checkpointing=ckpt,
                    gradient_checkpointing_kwargs={"use_reentrant": False})
        if ckpt:
            # Before peft wraps the model, as prepare_model_for_kbit_training does; the
            # non-reentrant variant needs no input that requires grad under a frozen base.
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})

        if cfg["finetune"] != "full":
            phase = "peft"
            adapter_dtype = torch.bfloat16 if cfg["precision"] == "bf16-pure" else torch.float32
            model, names = apply_lora(model, row, cfg, adapter_dtype)
            notes.append("lora_modules=" + "+".join(names))
        model.train()
        trainable = [p for p in model.parameters() if p.requires_grad]
        notes.append(f"trainable={sum(p.numel() for p in trainable)}")

        optimizer, opt_note = make_optimizer(cfg, trainable)
        notes.append(f"optim_impl={opt_note}")
        scaler = None
        amp = contextlib.nullcontext()
        if cfg["precision"] in ("fp16", "bf16"):
            amp_dtype = torch.float16 if cfg["precision"] == "fp16" else torch.bfloat16
            amp = torch.autocast("cuda", dtype=amp_dtype)
            if cfg["precision"] == "fp16":
                scaler = torch.amp.GradScaler("cuda")  # HF Trainer's default init scale 2^16

        vocab = int(getattr(hf_cfg, "vocab_size", row["vocab"]))
        ids = torch.randint(0, vocab, (cfg["micro_batch"], cfg["seq_len"]), device="cuda")

        # Leftovers of construction (the dense copy a quantized layer replaced, init
        # temporaries) sit in the allocator's cache; a loaded model would not have them.
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        notes.append(f"static_gib={torch.cuda.memory_allocated() / 2**30:.4f}")

        peaks = {"forward": 0, "backward": 0, "optimizer": 0}
        reserved = 0
        device = None
        overhead = None
        step_s, losses, skipped = [], [], 0

        def close_phase(name):
            nonlocal reserved, device, overhead
            torch.cuda.synchronize()
            peaks[name] = max(peaks[name], torch.cuda.max_memory_allocated())
            reserved = max(reserved, torch.cuda.max_memory_reserved())
            u = dev.used()
            if u is not None:
                device = u if device is None else max(device, u)
                if idle is not None:
                    # device memory outside the caching allocator: context, cuBLAS/cuDNN
                    # workspaces and lazily loaded kernels
                    o = u - idle - torch.cuda.memory_reserved()
                    overhead = o if overhead is None else max(overhead, o)
            torch.cuda.reset_peak_memory_stats()

        torch.cuda.reset_peak_memory_stats()
        for step in range(1, cfg.get("steps", 3) + 1):
            t0 = time.perf_counter()
            phase = f"step {step} forward"
            with amp:
                loss = model(input_ids=ids, labels=ids).loss  # HF shifts the labels
            losses.append(float(loss.detach().float()))
            close_phase("forward")
            phase = f"step {step} backward"
            (scaler.scale(loss) if scaler else loss).backward()
            del loss
            close_phase("backward")
            phase = f"step {step} optimizer"
            if scaler:
                before = scaler.get_scale()
                scaler.step(optimizer)
                scaler.update()
                skipped += scaler.get_scale() < before  # inf/nan gradients: step skipped
            else:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            close_phase("optimizer")
            step_s.append(time.perf_counter() - t0)

        res.update(status="ok", peak_allocated=max(peaks.values()), peak_reserved=reserved,
                   peak_device=device, phase_forward=peaks["forward"],
                   phase_backward=peaks["backward"], phase_optimizer=peaks["optimizer"])
        notes.append("step_s=" + "/".join(f"{s:.2f}" for s in step_s))
        tokens = cfg["micro_batch"] * cfg["seq_len"]
        if len(step_s) > 1:
            notes.append(f"tokens_per_s={tokens * (len(step_s) - 1) / sum(step_s[1:]):.0f}")
        notes.append("loss=" + "/".join(f"{x:.3f}" for x in losses))
        if overhead is not None:
            notes.append(f"nonalloc_gib={overhead / 2**30:.4f}")
        if scaler:
            notes.append(f"fp16_skipped_steps={skipped}")
        if cfg["optimizer"] != "sgd" and not getattr(optimizer, "state", None):
            notes.append("warning: optimizer state never created")
    except Exception as e:  # every failure becomes a row; the parent goes on
        if _is_oom(e):
            res["status"] = "oom"
            notes.append(f"oom in {phase}")
            notes.append(f"allocated_at_oom_gib={torch.cuda.memory_allocated() / 2**30:.4f}")
        else:
            res["status"] = f"error:{type(e).__name__}"
            notes.append(f"in {phase}: {str(e).splitlines()[0][:300] if str(e) else ''}")
            import traceback
            traceback.print_exc()  # goes to the log file
    return res
