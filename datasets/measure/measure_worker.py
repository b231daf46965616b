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
import json
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


def build_model(hf_cfg, attention, dtype, device="cuda"):
    """Random-weight model constructed directly on `device`: the GPU (no CPU copy, no
    download), or the CPU for FSDP1 to move unit by unit (feature cpu-init)."""
    import transformers
    from transformers import AutoModelForCausalLM
    major_minor = tuple(int(x) for x in transformers.__version__.split(".")[:2])
    # transformers 4.56 renamed torch_dtype to dtype; v5 warns on the old name.
    dkey = "dtype" if major_minor >= (4, 56) else "torch_dtype"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(hf_cfg, attn_implementation=attention,
                                                 **{dkey: dtype})
    model.to(device)  # a no-op normally; catches buffers a model creates on the CPU
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


def param_groups(params):
    """The parameters as optimizer groups: one, or under tensor parallelism the DTensor
    shards apart from the replicated plain tensors (embedding, norms, lm_head), since a
    foreach kernel refuses a list that mixes them ("got mixed torch.Tensor and DTensor",
    torch 2.11). AdamW steps group by group, so its foreach temporary is the larger group's;
    torchtitan shards every parameter and has one group."""
    from torch.distributed.tensor import DTensor
    dt = [p for p in params if isinstance(p, DTensor)]
    if not dt or len(dt) == len(params):
        return params, ""
    plain = [p for p in params if not isinstance(p, DTensor)]
    return [{"params": dt}, {"params": plain}], ", 2 groups (DTensor shards, plain tensors)"


def make_optimizer(cfg, params):
    """The optimizer, and a note saying which implementation it is."""
    feats = cfg.get("features", ())
    lr = 1e-5
    params, groups = param_groups(list(params))
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
        return torch.optim.AdamW(params, lr=lr, fused=True), "torch.AdamW fused" + groups
    # torch's default on CUDA is the foreach implementation (one temporary the size of the
    # squared-gradient state during step()).
    return torch.optim.AdamW(params, lr=lr), "torch.AdamW foreach" + groups


# --- the measurement ----------------------------------------------------------------------

PHASES = ("forward", "loss", "backward", "optimizer")


def _is_oom(e):
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in msg or "cuda_error_out_of_memory" in msg)


class PhasePeaks:
    """Per-phase peaks: each phase's statistics are reset when the phase before it closes.

    forward ends when the LM head has produced the logits (a forward hook on the output
    embeddings), loss when the model returns its loss, backward before optimizer.step(),
    optimizer after zero_grad. Each close also samples the device's used memory (NVML), since
    reserved memory only grows inside a step and a sample after each phase sees its peak.
    """

    def __init__(self, dev, idle):
        self.dev, self.idle = dev, idle
        self.peaks = dict.fromkeys(PHASES, 0)
        self.reserved = 0
        self.device = None
        self.overhead = None
        # GPU time of each phase per step (from the previous close, or the step's begin(),
        # to this close's synchronize; the sampling below is left out), for the speed model
        self.seconds = {k: [] for k in PHASES}
        self.last = None

    def begin(self):
        """The start of a step's timed phases."""
        torch.cuda.synchronize()
        self.last = time.perf_counter()

    def close(self, name):
        torch.cuda.synchronize()
        if self.last is not None:
            self.seconds[name].append(time.perf_counter() - self.last)
        self.peaks[name] = max(self.peaks[name], torch.cuda.max_memory_allocated())
        self.reserved = max(self.reserved, torch.cuda.max_memory_reserved())
        u = self.dev.used()
        if u is not None:
            self.device = u if self.device is None else max(self.device, u)
            if self.idle is not None:
                # device memory outside the caching allocator: context, cuBLAS/cuDNN
                # workspaces, NCCL or lazily loaded kernels
                o = u - self.idle - torch.cuda.memory_reserved()
                self.overhead = o if self.overhead is None else max(self.overhead, o)
        torch.cuda.reset_peak_memory_stats()
        self.last = time.perf_counter()

    def phase_note(self):
        """phase_s=forward/loss/backward/optimizer: each phase's median seconds over the steps
        after the first (the first allocates the optimizer states and warms the kernels)."""
        med = []
        for k in PHASES:
            v = sorted(self.seconds[k][1:]) or sorted(self.seconds[k])
            med.append(f"{v[len(v) // 2]:.4f}" if v else "-")
        return "phase_s=" + "/".join(med)


def make_batches(cfg, vocab, steps, pad_id=0):
    """The step's batches: (input_ids, attention_mask or None, labels), on the CPU as a data
    loader yields them (each step copies its batch to the GPU).

    packed: every sample has seq_len tokens (labels = input_ids; HF shifts them). variable:
    each sample's length is uniform in 1..seq_len (the distribution llmem-sweep's allocator
    replay assumes, README "The loss path and the caching allocator"), the micro-batch is
    right-padded to its longest sample as HF's DataCollatorWithPadding does, padding is masked
    and its labels are -100. Seeded, so a configuration sees the same lengths on every run.
    """
    g = torch.Generator().manual_seed(1234)
    mb, seq = cfg["micro_batch"], cfg["seq_len"]
    out = []
    for _ in range(steps):
        if cfg.get("data", "packed") == "packed":
            ids = torch.randint(0, vocab, (mb, seq), generator=g)
            out.append((ids, None, ids.clone()))
            continue
        lens = torch.randint(1, seq + 1, (mb,), generator=g)
        width = int(lens.max())
        ids = torch.randint(0, vocab, (mb, width), generator=g)
        mask = (torch.arange(width)[None, :] < lens[:, None]).long()
        ids = torch.where(mask.bool(), ids, torch.full_like(ids, pad_id))
        labels = torch.where(mask.bool(), ids, torch.full_like(ids, -100))
        out.append((ids, mask, labels))
    return out


def decoder_layers(model):
    """The transformer blocks (the classes HF lists in _no_split_modules), in order."""
    names = set()
    for m in model.modules():
        names.update(getattr(m, "_no_split_modules", None) or ())
    return [m for m in model.modules() if type(m).__name__ in names]


def parallelize(model, cfg, notes):
    """Wraps the model as rank 0 of a world of cfg["gpus"] ranks on PyTorch's fake process group.

    torch.testing._internal.distributed.fake_pg: collectives do no communication but return
    outputs of the right shape, allocated as a real rank allocates them; so sharded
    parameters, gradients, optimizer states, all-gather and reduce-scatter buffers are real,
    NCCL's own buffers and the timing of overlap are not. Returns (model, uses_autocast).
    """
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    world = cfg["gpus"]
    if not dist.is_initialized():
        dist.init_process_group(backend="fake", rank=0, world_size=world, store=FakeStore())
    method = cfg["method"]
    if method == "cdp":  # DDP, default buckets (25 MiB), gradient_as_bucket_view False (HF's)
        from torch.nn.parallel import DistributedDataParallel
        notes.append("wrap=DDP")
        ddp = DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
        # The fake group's all-reduce completes with no value, which DDP's reducer refuses
        # ("expected the hook result is either a Tensor or a TensorList found None", torch
        # 2.11); a real all-reduce works in place on the bucket, so returning the bucket as
        # it is allocates what a rank allocates.
        def in_place_allreduce(state, bucket):
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer())
            return fut
        ddp.register_comm_hook(None, in_place_allreduce)
        notes.append("comm_hook=in-place (fake group)")
        return ddp, True
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cuda", (world,))
    layers = decoder_layers(model)
    if not layers:
        raise RuntimeError("no decoder layers found (_no_split_modules)")
    if method == "fsdp1":
        return fsdp1_wrap(model, cfg, layers, notes)
    if method == "adp":
        try:
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        except ImportError:  # torch < 2.6
            from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
        mp = None
        if cfg["precision"] in ("bf16", "fp16"):
            # torchtitan's policy (and accelerate's FSDP2 mixed precision): compute in the
            # 16-bit dtype, reduce gradients in fp32; fully_shard casts, so no autocast
            half = torch.bfloat16 if cfg["precision"] == "bf16" else torch.float16
            mp = MixedPrecisionPolicy(param_dtype=half, reduce_dtype=torch.float32)
        for layer in layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp) if mp else fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh, mp_policy=mp) if mp else fully_shard(model, mesh=mesh)
        notes.append(f"wrap=fully_shard per block ({len(layers)}) + root")
        return model, False
    # tp: what transformers' tp_plan does (models/llama/configuration_llama.py
    # base_model_tp_plan: the blocks' q/k/v/gate/up colwise, o/down rowwise; embed_tokens and
    # the norms whole; LlamaForCausalLM._tp_plan "colwise_rep": an untied lm_head split by
    # vocabulary, its logits gathered). A tied lm_head is embed_tokens' weight: left whole.
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    plan = {"self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
            "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel()}
    for layer in layers:
        parallelize_module(layer, mesh, plan)
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is model.get_input_embeddings().weight
    if head is not None and not tied:
        parallelize_module(head, mesh, ColwiseParallel(output_layouts=Replicate()))
    notes.append(f"wrap=tensor parallel q/k/v/gate/up colwise, o/down rowwise ({len(layers)})"
                 + ("" if tied or head is None else ", lm_head colwise, logits gathered"))
    return model, True


def run_traced(model, optimizer, scaler, amp, batches, peaks, cfg, job):
    """run_loop one step at a time under the allocator's history (Python stacks only), then
    the summary of segment_trace_text. The history costs host time, not GPU memory."""
    torch.cuda.memory._record_memory_history(enabled="all", context="alloc", stacks="python",
                                             max_entries=2000000)
    step_s, losses, skipped, marks = [], [], 0, []
    for batch in batches:
        s, l, k = run_loop(model, optimizer, scaler, amp, [batch], peaks, None)
        step_s, losses, skipped = step_s + s, losses + l, skipped + k
        marks.append(len(torch.cuda.memory._snapshot()["device_traces"][0]))
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    return step_s, losses, skipped, segment_trace_text(snap, marks, cfg, job)


def where(frames):
    """The first two frames of torch.distributed, torch.nn/optim, transformers, peft or the
    harness: which code asked for the bytes."""
    keep = ("torch/distributed", "torch/nn", "torch/optim", "torch/autograd", "transformers/",
            "peft/", "measure_worker")
    picked = [f"{os.path.basename(f['filename'])}:{f['line']} {f['name']}" for f in frames
              if any(k in f["filename"] for k in keep)]
    return " < ".join(picked[:2]) or "?"


def segment_trace_text(snap, marks, cfg, job):
    """Every segment the allocator cut (segment_alloc), in order: the step, the stream, its
    size, the request that cut it and where that came from; then the segments at the end."""
    trace = snap["device_traces"][0]
    out = [f"# {job['id']} {cfg['model']} {json.dumps(cfg, sort_keys=True)}",
           f"trace events {len(trace)}, step ends at {marks}",
           "   event step      stream  segment MiB  request MiB  where"]
    for i, ev in enumerate(trace):
        if ev["action"] not in ("segment_alloc", "segment_free"):
            continue
        step = 1 + sum(m <= i for m in marks)
        req = next((e for e in trace[i + 1:i + 16] if e["action"] == "alloc"
                    and e["stream"] == ev["stream"]), None)
        size = f"{req['size'] / 2**20:11.3f}" if req else "          -"
        what = "" if ev["action"] == "segment_alloc" else " FREED"
        out.append(f"{i:8d} {step:4d} {ev['stream']:11d} {ev['size'] / 2**20:12.1f} {size}  "
                   f"{where((req or ev).get('frames', []))}{what}")
    out.append("segments at the end: stream, MiB reserved, MiB allocated, blocks (MiB, a = active)")
    for seg in sorted(snap["segments"], key=lambda g: (g["stream"], -g["total_size"])):
        blocks = " ".join(f"{b['size'] / 2**20:.1f}{'a' if b['state'] == 'active_allocated' else ''}"
                          for b in seg["blocks"][:8])
        out.append(f"{seg['stream']:11d} {seg['total_size'] / 2**20:9.1f} "
                   f"{seg['allocated_size'] / 2**20:9.1f}  {blocks}")
    return "\n".join(out) + "\n"


def pools_note():
    """The caching allocator's segments after the last step, per stream (0: the default
    stream; FSDP's all-gather and reduce-scatter streams have their own pools): segments,
    reserved and allocated GiB. Segments are kept until empty_cache, so the reserved peak's
    are here unless an allocation failed and the allocator freed cached ones."""
    by = {}
    for seg in torch.cuda.memory_snapshot():
        n, tot, used = by.get(seg["stream"], (0, 0, 0))
        by[seg["stream"]] = (n + 1, tot + seg["total_size"], used + seg["allocated_size"])
    return "pools=" + "/".join(f"{s}:{n}:{t / 2**30:.4f}:{u / 2**30:.4f}"
                               for s, (n, t, u) in sorted(by.items()))


def fsdp1_mixed_precision(half, notes):
    """FSDP1's MixedPrecision as the installed accelerate builds it for mixed_precision bf16/fp16
    (FullyShardedDataParallelPlugin.set_mixed_precision); PyTorch's own class with every dtype
    16-bit, accelerate's documented default, when the plugin cannot be built here."""
    from torch.distributed.fsdp import MixedPrecision
    name = "bf16" if half == torch.bfloat16 else "fp16"
    try:
        from accelerate.utils import FullyShardedDataParallelPlugin
        try:
            plugin = FullyShardedDataParallelPlugin(fsdp_version=1)
        except TypeError:  # accelerate < 1.6 knows FSDP1 only
            plugin = FullyShardedDataParallelPlugin()
        plugin.set_mixed_precision(name)
        mp, origin = plugin.mixed_precision_policy, "accelerate"
    except Exception as e:  # record why, measure with the documented default
        mp, origin = None, f"fallback ({type(e).__name__})"
    if not isinstance(mp, MixedPrecision):
        mp = MixedPrecision(param_dtype=half, reduce_dtype=half, buffer_dtype=half)
    notes.append(f"fsdp1_mp={origin} param={mp.param_dtype} reduce={mp.reduce_dtype} "
                 f"buffer={mp.buffer_dtype}".replace("torch.", ""))
    return mp


def fsdp1_wrap(model, cfg, layers, notes):
    """FullyShardedDataParallel as HF Trainer runs it through accelerate: one unit per decoder
    block (transformer_auto_wrap_policy on _no_split_modules) and the root, FULL_SHARD,
    use_orig_params=True (TrainingArguments' fsdp_config default, which PEFT needs for frozen and
    trainable parameters in one unit), PyTorch's defaults otherwise (BACKWARD_PRE prefetch,
    limit_all_gathers, no forward prefetch). Mixed precision is MixedPrecision under autocast:
    accelerate wraps the model's forward in autocast as well, so autocast is kept."""
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    policy = ModuleWrapPolicy({type(m) for m in layers})
    if cfg["finetune"] != "full" and cfg.get("wrap", "peft") == "peft":
        # transformers Trainer._fsdp_qlora_plugin_updates: a LoRA model gets peft's
        # fsdp_auto_wrap_policy, which also makes each trainable Linear (lora_A, lora_B) its
        # own unit, so fp32 adapters and bf16 base weights never share a flat parameter
        from peft.utils.other import fsdp_auto_wrap_policy
        policy = fsdp_auto_wrap_policy(model)
        notes.append("fsdp1_policy=peft fsdp_auto_wrap_policy")
    elif cfg["finetune"] != "full":
        # whole blocks, adapters inside: one flat parameter that requires grad (grid wrap=blocks)
        notes.append("fsdp1_policy=blocks, adapters inside")
    mp = None
    if cfg["precision"] in ("bf16", "fp16"):
        mp = fsdp1_mixed_precision(torch.bfloat16 if cfg["precision"] == "bf16"
                                   else torch.float16, notes)
    wrapped = FullyShardedDataParallel(
        model, auto_wrap_policy=policy,
        sharding_strategy=ShardingStrategy.FULL_SHARD, mixed_precision=mp,
        device_id=torch.cuda.current_device(), use_orig_params=True)
    notes.append(f"wrap=FSDP1 per block ({len(layers)}) + root, FULL_SHARD, use_orig_params")
    return wrapped, True


class LiveTensors:
    """At the step's highest allocated memory between operators, what is alive.

    A TorchDispatchMode sees every operator's outputs (forward and backward: the autograd engine
    carries the mode to its thread) and keeps, per storage address, the producing operator,
    shape and dtype, with weak references so dead tensors drop out. Once the allocated memory
    passes `threshold` and reaches a new maximum, it captures the live records and, when the
    allocator records history, the allocator's live blocks with their frames
    (snapshot_summary.py joins and prints them).
    """

    def __init__(self, threshold, roles):
        import weakref
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves
        outer = self
        self.weakref = weakref
        self.threshold, self.roles = threshold, roles
        self.entries = {}
        self.best = 0
        self.capture = None

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in tree_leaves(out):
                    if isinstance(t, torch.Tensor) and t.is_cuda:
                        outer.note(t, func)
                outer.check()
                return out

        self.mode = Mode()

    def note(self, t, func):
        try:
            st = t.untyped_storage()
            ptr, nbytes = st.data_ptr(), st.nbytes()
        except Exception:  # a tensor without storage (sparse, wrapper subclass)
            return
        e = self.entries.get(ptr)
        if e is not None and e["nbytes"] == nbytes and any(r() is not None for r in e["refs"]):
            e["refs"].append(self.weakref.ref(t))  # a view of a live storage: keep its creator
            return
        self.entries[ptr] = {"ptr": ptr, "nbytes": nbytes, "shape": list(t.shape),
                             "dtype": str(t.dtype).replace("torch.", ""),
                             "op": getattr(func, "__name__", str(func)),
                             "refs": [self.weakref.ref(t)]}

    def check(self):
        a = torch.cuda.memory_allocated()
        if a <= self.best:
            return
        self.best = a
        if a < self.threshold:
            return
        roles = self.roles()
        tensors = []
        for ptr, e in self.entries.items():
            if any(r() is not None for r in e["refs"]):
                tensors.append({k: e[k] for k in ("ptr", "nbytes", "shape", "dtype", "op")})
                tensors[-1]["role"] = roles.get(ptr, "")
        for ptr, role in roles.items():  # parameters made before the mode started
            if ptr not in self.entries:
                tensors.append({"ptr": ptr, "nbytes": 0, "shape": [], "dtype": "", "op": "",
                                "role": role})
        self.capture = {"allocated": a, "tensors": tensors, "blocks": allocator_blocks()}


def allocator_blocks():
    """Live blocks of the caching allocator with their allocating frames ([] without history)."""
    try:
        snap = torch.cuda.memory._snapshot()
    except Exception:
        return []
    out = []
    for seg in snap.get("segments", ()):
        for b in seg.get("blocks", ()):
            if b.get("state") != "active_allocated":
                continue
            frames = [f"{f.get('filename', '?')}:{f.get('line', '?')} {f.get('name', '?')}"
                      for f in b.get("frames", ())]
            out.append({"address": b["address"], "size": b["size"], "frames": frames})
    return out


def tensor_roles(model, optimizer):
    """Storage address -> parameter / gradient / optimizer state, at the time of the call."""
    roles = {}

    def add(t, role):
        if isinstance(t, torch.Tensor) and t.is_cuda:
            t = t.to_local() if hasattr(t, "to_local") else t  # a DTensor's local shard
            roles.setdefault(t.untyped_storage().data_ptr(), role)

    for p in model.parameters():
        add(p, "parameter")
        if p.grad is not None:
            add(p.grad, "gradient")
    for state in getattr(optimizer, "state", {}).values():
        for v in state.values():
            add(v, "optimizer state")
    return roles


def forward_loss(model, batch, amp):
    ids, mask, labels = (None if t is None else t.cuda() for t in batch)
    with amp:
        return model(input_ids=ids, attention_mask=mask, labels=labels).loss


def run_loop(model, optimizer, scaler, amp, batches, peaks, snap):
    """Our own training loop: forward + loss, backward, step, zero_grad per batch."""
    step_s, losses, skipped = [], [], 0
    for step, batch in enumerate(batches, 1):
        last = step == len(batches)
        mode = snap.mode if (snap and last) else contextlib.nullcontext()
        peaks.begin()
        t0 = time.perf_counter()
        with mode:
            loss = forward_loss(model, batch, amp)
            losses.append(float(loss.detach().float()))
            peaks.close("loss")
            (scaler.scale(loss) if scaler else loss).backward()
            del loss
            peaks.close("backward")
            if scaler:
                before = scaler.get_scale()
                scaler.step(optimizer)
                scaler.update()
                skipped += scaler.get_scale() < before  # inf/nan gradients: step skipped
            else:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        peaks.close("optimizer")
        step_s.append(time.perf_counter() - t0)
    return step_s, losses, skipped


def trainer_optim(cfg):
    """TrainingArguments.optim for the configuration's optimizer."""
    feats = cfg.get("features", ())
    if cfg["optimizer"] == "sgd":
        return "sgd"
    if cfg["optimizer"] == "adamw8bit":
        return "paged_adamw_8bit" if "paged" in feats else "adamw_bnb_8bit"
    if "paged" in feats:
        return "paged_adamw_32bit"
    return "adamw_torch_fused" if "fused" in feats else "adamw_torch"


def run_trainer(model, cfg, batches, peaks, notes):
    """transformers.Trainer at the installed version: its optimizer, autocast and loss path.

    The batches are fed one micro-batch per step in order (a dataset of whole batches and a
    collator that unwraps them), so the lengths are those of the loop runner. Phases: the LM
    head hook closes forward, a hook on the model's forward closes the loss, the callback's
    on_pre_optimizer_step closes backward (transformers >= 4.45; older ones fold backward into
    the optimizer phase, noted), on_step_end closes the optimizer step and zero_grad.
    """
    import tempfile as _tempfile
    from transformers import Trainer, TrainerCallback, TrainingArguments
    step_s, t0 = [], [0.0]
    has_pre = hasattr(TrainerCallback, "on_pre_optimizer_step")

    class Phases(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            peaks.begin()
            t0[0] = time.perf_counter()

        def on_pre_optimizer_step(self, args, state, control, **kw):
            peaks.close("backward")

        def on_step_end(self, args, state, control, **kw):
            peaks.close("optimizer")
            step_s.append(time.perf_counter() - t0[0])

    class Batches(torch.utils.data.Dataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            ids, mask, labels = batches[i]
            d = {"input_ids": ids, "labels": labels}
            if mask is not None:
                d["attention_mask"] = mask
            return d

    prec = cfg["precision"]
    with _tempfile.TemporaryDirectory() as tmp:
        kwargs = dict(
            output_dir=tmp, per_device_train_batch_size=1, max_steps=len(batches),
            learning_rate=1e-5, lr_scheduler_type="constant", optim=trainer_optim(cfg),
            bf16=prec == "bf16", fp16=prec == "fp16", report_to="none", save_strategy="no",
            logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
            dataloader_pin_memory=False, remove_unused_columns=False, seed=0)
        # Only what this version's TrainingArguments still has (the harness meets versions it
        # was not written against); a dropped key is noted with the row.
        import dataclasses
        known = {f.name for f in dataclasses.fields(TrainingArguments)}
        dropped = sorted(k for k in kwargs if k not in known)
        if dropped:
            notes.append("trainer_args_dropped=" + "+".join(dropped))
        args = TrainingArguments(**{k: v for k, v in kwargs.items() if k in known})
        trainer = Trainer(model=model, args=args, train_dataset=Batches(),
                          data_collator=lambda items: items[0])
        trainer.add_callback(Phases())
        # the Trainer shuffles; a sequential sampler keeps the loop runner's order
        trainer._get_train_sampler = lambda *a, **k: torch.utils.data.SequentialSampler(
            range(len(batches)))
        trainer.train()
    notes.append(f"trainer_optim={trainer_optim(cfg)}")
    if not has_pre:
        notes.append("no on_pre_optimizer_step: backward is inside the optimizer phase")
    return step_s


def build_for_training(cfg, row, notes):
    """The model (built, quantized, checkpointed, LoRA-wrapped), trainable parameters, config."""
    hf_cfg, dropped = make_config(row)
    if dropped:
        notes.append("config_keys_dropped=" + "+".join(dropped))
    cpu_init = "cpu-init" in cfg.get("features", ())
    model = build_model(hf_cfg, cfg["attention"], weight_dtype(cfg), "cpu" if cpu_init else "cuda")
    tied = ensure_tied(model, hf_cfg)
    n_params = sum(p.numel() for p in model.parameters())
    notes.append(f"params={n_params} tied={int(tied)}")
    if row.get("params", 0) > 0 and abs(n_params - row["params"]) > 0.01 * row["params"]:
        notes.append(f"params_mismatch catalog={row['params']}")
    notes.append(f"attn_impl={getattr(model.config, '_attn_implementation', '?')}")
    ckpt = cfg["grad_ckpt"] == "on"
    if cfg["quant"] != "none":
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
        adapter_dtype = torch.bfloat16 if cfg["precision"] == "bf16-pure" else torch.float32
        model, names = apply_lora(model, row, cfg, adapter_dtype)
        notes.append("lora_modules=" + "+".join(names))
    model.train()
    return model, hf_cfg


def context_bytes(dev, res, notes):
    """CUDA context: NVML's used memory after the first allocation, less what the caching
    allocator holds for that tiny tensor and less what was in use before we started."""
    idle = dev.used()
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
    return idle


def run_job(job):
    cfg, row = job["config"], job["model_row"]
    notes = []
    res = {"status": "error:unknown", "notes": notes}
    phase = ["init"]
    dev = DeviceMemory()
    try:
        phase[0] = "cuda init"
        idle = context_bytes(dev, res, notes)
        torch.manual_seed(0)
        phase[0] = "build"
        model, hf_cfg = build_for_training(cfg, row, notes)
        head = model.get_output_embeddings()
        autocast_ok = True
        if cfg.get("method", "single") != "single":
            phase[0] = "parallelize"
            model, autocast_ok = parallelize(model, cfg, notes)
        trainable = [p for p in model.parameters() if p.requires_grad]
        notes.append(f"trainable={sum(p.numel() for p in trainable)}")

        scaler, amp = None, contextlib.nullcontext()
        if cfg["precision"] in ("fp16", "bf16") and autocast_ok:
            amp_dtype = torch.float16 if cfg["precision"] == "fp16" else torch.bfloat16
            amp = torch.autocast("cuda", dtype=amp_dtype)
            if cfg["precision"] == "fp16":
                scaler = torch.amp.GradScaler("cuda")  # HF Trainer's default init scale 2^16
        vocab = int(getattr(hf_cfg, "vocab_size", row["vocab"]))
        batches = make_batches(cfg, vocab, cfg.get("steps", 3))
        notes.append(f"data={cfg.get('data', 'packed')} tokens=" +
                     "/".join(str(int(b[0].numel())) for b in batches[:8]) +
                     ("/..." if len(batches) > 8 else ""))
        if cfg.get("data", "packed") == "variable":
            # every step's padded width, in order: what an allocator replay of this very run
            # needs (the reserved peak of a short variable-length run is the order's draw)
            notes.append("widths=" + "/".join(str(int(b[0].shape[1])) for b in batches))

        # Leftovers of construction (the dense copy a quantized layer replaced, init
        # temporaries) sit in the allocator's cache; a loaded model would not have them.
        # Under cpu-init they are what FSDP1's wrap left, as a real run keeps them.
        gc.collect()
        if "cpu-init" in cfg.get("features", ()):
            notes.append(f"cache_kept_gib={(torch.cuda.memory_reserved() - torch.cuda.memory_allocated()) / 2**30:.4f}")
        else:
            torch.cuda.empty_cache()
        torch.cuda.synchronize()
        notes.append(f"static_gib={torch.cuda.memory_allocated() / 2**30:.4f}")

        peaks = PhasePeaks(dev, idle)
        if head is not None:
            head.register_forward_hook(lambda *_: peaks.close("forward"))
        torch.cuda.reset_peak_memory_stats()
        if cfg.get("runner", "loop") == "trainer":
            phase[0] = "trainer"
            model.register_forward_hook(lambda *_: peaks.close("loss"))
            step_s = run_trainer(model, cfg, batches, peaks, notes)
            losses, skipped, optimizer = [], 0, None
        else:
            optimizer, opt_note = make_optimizer(cfg, trainable)
            notes.append(f"optim_impl={opt_note}")
            snap = None
            if cfg.get("snapshot"):
                phase[0] = "steps before the snapshot"
                step_s, losses, skipped = run_loop(model, optimizer, scaler, amp, batches[:-1],
                                                   peaks, None)
                # capture from 98 % of the peak so far: the last step's highest operator
                # boundary, without a capture at every operator on the way up
                threshold = 0.98 * max(peaks.peaks.values())
                torch.cuda.memory._record_memory_history(max_entries=200000)
                snap = LiveTensors(threshold, lambda: tensor_roles(model, optimizer))
                phase[0] = "snapshot step"
                s2, l2, k2 = run_loop(model, optimizer, scaler, amp, batches[-1:], peaks, snap)
                torch.cuda.memory._record_memory_history(enabled=None)
                step_s, losses, skipped = step_s + s2, losses + l2, skipped + k2
                res["snapshot"] = snapshot_text(snap, max(peaks.peaks.values()), cfg, job)
            elif cfg.get("segments"):
                phase[0] = "steps with the allocator's history"
                step_s, losses, skipped, res["snapshot"] = run_traced(
                    model, optimizer, scaler, amp, batches, peaks, cfg, job)
            else:
                phase[0] = "steps"
                step_s, losses, skipped = run_loop(model, optimizer, scaler, amp, batches,
                                                   peaks, None)

        res.update(status="ok", peak_allocated=max(peaks.peaks.values()),
                   peak_reserved=peaks.reserved, peak_device=peaks.device,
                   **{f"phase_{k}": v for k, v in peaks.peaks.items()})
        notes.append(pools_note())
        notes.append("step_s=" + "/".join(f"{s:.2f}" for s in step_s[:8]))
        notes.append(peaks.phase_note())
        tokens = [int(b[2].ne(-100).sum()) for b in batches]
        if len(step_s) > 1 and not cfg.get("snapshot"):
            # (a snapshot's last step runs under a TorchDispatchMode: no speed from it)
            tps = sum(tokens[1:len(step_s)]) / sum(step_s[1:])
            res["tokens_per_s"] = tps
            notes.append(f"tokens_per_s={tps:.0f}")
        if losses:
            notes.append("loss=" + "/".join(f"{x:.3f}" for x in losses[:4]))
        if peaks.overhead is not None:
            notes.append(f"nonalloc_gib={peaks.overhead / 2**30:.4f}")
        if scaler:
            notes.append(f"fp16_skipped_steps={skipped}")
        if optimizer is not None and cfg["optimizer"] != "sgd" and not getattr(optimizer, "state", None):
            notes.append("warning: optimizer state never created")
    except Exception as e:  # every failure becomes a row; the parent goes on
        if _is_oom(e):
            res["status"] = "oom"
            notes.append(f"oom in {phase[0]}")
            notes.append(f"allocated_at_oom_gib={torch.cuda.memory_allocated() / 2**30:.4f}")
        else:
            res["status"] = f"error:{type(e).__name__}"
            notes.append(f"in {phase[0]}: {str(e).splitlines()[0][:300] if str(e) else ''}")
            import traceback
            traceback.print_exc()  # goes to the log file
    return res


def snapshot_text(snap, max_allocated, cfg, job):
    """The summary file's text, or a line saying why there is none."""
    import snapshot_summary
    if snap.capture is None:
        return (f"# {job['id']}: no operator boundary of the last step reached "
                f"{snap.threshold / 2**30:.3f} GiB (98 % of the earlier steps' peak)\n")
    cap = dict(snap.capture, max_allocated=max_allocated)
    title = f"# {job['id']} {job['model_row']['model']} {json.dumps(cfg, sort_keys=True)}"
    return snapshot_summary.summarize(cap, title)
