#!/usr/bin/env python3
"""measure.py: run real fine-tuning steps on one GPU and record peak memory.

The parent process (this file) plans the grid, spawns one worker process per configuration and
writes the measured-CSV rows; the worker (measure_worker.py) is the only code that imports torch,
transformers, peft or bitsandbytes. Keeping every configuration in its own process means an OOM,
a CUDA error or allocator fragmentation from one point cannot change the next one, and it lets
the dry run and the self-test work on machines without torch.

    python3 datasets/measure/measure.py --grid h100-30min --out datasets/measured/h100-YYYYMMDD.csv
    python3 datasets/measure/measure.py --dry-run
"""

import argparse
import csv
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import catalog  # noqa: E402  (path set above so the script runs from any directory)
import grids    # noqa: E402

REPO_ROOT = HERE.parent.parent
DEFAULT_MODELS_CSV = REPO_ROOT / "datasets" / "models.csv"

# The project's measured-CSV format (DESIGN.md section 5): the 18 contract columns, then the
# extras this harness adds. Append new columns at the end only.
CSV_COLUMNS = (
    "model", "method", "gpus", "tp", "micro_batch", "seq_len", "precision", "finetune",
    "lora_r", "lora_targets", "quant", "grad_ckpt", "optimizer", "metric", "measured_gib",
    "gpu", "framework", "source",
    "id", "grade", "stack", "features", "attention", "seq_kind", "notes",
    "peak_forward_gib", "peak_backward_gib", "peak_optimizer_gib", "context_gib", "status",
    "peak_loss_gib", "data", "alloc_conf", "tokens_per_s_gpu", "widths",
)

# Columns that identify a configuration, for resuming a partly written output file.
KEY_COLUMNS = ("id", "model", "method", "gpus", "micro_batch", "seq_len", "precision",
               "finetune", "lora_r", "lora_targets", "quant", "grad_ckpt", "optimizer",
               "attention", "features", "data", "alloc_conf")

RESULT_MARKER = "@@MEASURE_RESULT@@ "
GIB = float(1 << 30)

# Rough wall-clock cost of one configuration on an H100, for --dry-run's estimate: process start,
# torch/transformers imports and CUDA + cuBLAS warm-up dominate; building random weights costs
# about a second per billion parameters and quantizing about as much again; three steps of
# these sizes take a few seconds.
EST_FIXED_S = 18.0
EST_PER_BPARAM_S = 1.2
EST_QUANT_PER_BPARAM_S = 1.5


# --- pure helpers (tested without torch) --------------------------------------------------

def gpu_short_name(raw, total_bytes=None):
    """torch.cuda.get_device_name() -> the datasets/gpus.csv name where we know it, else raw."""
    n = (raw or "").upper()
    if "H200" in n:
        return "H200-SXM-141GB"
    if "H100" in n:
        if "NVL" in n:
            return "H100-NVL-94GB"
        if "PCIE" in n:
            return "H100-PCIe-80GB"
        return "H100-SXM-80GB"
    if "A100" in n:
        big = "80GB" in n or (total_bytes or 0) > 60 * (1 << 30)
        form = "PCIe" if "PCIE" in n else "SXM"
        return f"A100-{form}-{'80GB' if big else '40GB'}"
    if "V100" in n:
        big = "32GB" in n or (total_bytes or 0) > 20 * (1 << 30)
        return f"V100-SXM2-{'32GB' if big else '16GB'}"
    # Order matters where one name contains another (L40S vs L4).
    for needle, name in (("L40S", "L40S-48GB"), ("A10G", "A10G-24GB"), ("L4", "L4-24GB"),
                         ("T4", "T4-16GB"), ("RTX 2060", "RTX2060-6GB"),
                         ("RTX 3090", "RTX3090-24GB"), ("RTX 4090", "RTX4090-24GB"),
                         ("A6000", "A6000-48GB")):
        if re.search(r"(?<![A-Z0-9])" + re.escape(needle) + r"(?![0-9])", n):
            return name
    return raw or "unknown"


def fmt_gib(nbytes):
    """Bytes -> GiB with 4 decimals; None -> empty cell."""
    return "" if nbytes is None else f"{nbytes / GIB:.4f}"


def config_id(grid_name, index):
    return f"{grid_name}-{index:02d}"


def describe(cfg):
    """One human-readable line per configuration (dry run, progress, --only matching)."""
    parts = [cfg["model"], cfg["precision"], cfg["finetune"]]
    if cfg["finetune"] != "full":
        parts.append(f"r={cfg['lora_r']} {cfg['lora_targets']}")
    parts += [f"quant={cfg['quant']}", f"ckpt={cfg['grad_ckpt']}", cfg["optimizer"],
              f"mb={cfg['micro_batch']}", f"seq={cfg['seq_len']}", cfg["attention"]]
    if cfg.get("method", "single") != "single":
        parts.append(f"{cfg['method']}x{cfg['gpus']}(fake-pg)")
    if cfg.get("data", "packed") != "packed":
        parts.append(f"{cfg['data']}x{cfg.get('steps', 3)}steps")
    elif cfg.get("steps", 3) != 3:
        parts.append(f"packedx{cfg['steps']}steps")
    if cfg.get("alloc_conf", "default") != "default":
        parts.append(cfg["alloc_conf"])
    if cfg.get("runner", "loop") != "loop":
        parts.append(cfg["runner"])
    if cfg.get("snapshot"):
        parts.append("snapshot")
    if cfg.get("segments"):
        parts.append("segments")
    if cfg.get("wrap", "peft") != "peft":
        parts.append(f"wrap={cfg['wrap']}")
    if cfg.get("features"):
        parts.append("[" + "+".join(cfg["features"]) + "]")
    return " ".join(str(p) for p in parts)


def needs_bnb(cfg):
    """bitsandbytes provides the quantized layers, the 8-bit and the paged optimizers."""
    return (cfg["quant"] != "none" or cfg["optimizer"] == "adamw8bit"
            or "paged" in cfg.get("features", ()))


def validate_config(cfg):
    """Problems with one grid entry, as a list of messages (empty when fine)."""
    p = []
    if cfg.get("precision") not in grids.PRECISIONS:
        p.append(f"precision {cfg.get('precision')!r}")
    if cfg.get("finetune") not in grids.FINETUNES:
        p.append(f"finetune {cfg.get('finetune')!r}")
    if cfg.get("quant") not in grids.QUANTS:
        p.append(f"quant {cfg.get('quant')!r}")
    if cfg.get("optimizer") not in grids.OPTIMIZERS:
        p.append(f"optimizer {cfg.get('optimizer')!r}")
    if cfg.get("attention") not in grids.ATTENTIONS:
        p.append(f"attention {cfg.get('attention')!r}")
    if cfg.get("grad_ckpt") not in ("on", "off"):
        p.append(f"grad_ckpt {cfg.get('grad_ckpt')!r}")
    for f in cfg.get("features", ()):
        if f not in grids.FEATURES:
            p.append(f"feature {f!r}")
    for k in ("micro_batch", "seq_len", "steps"):
        if not isinstance(cfg.get(k), int) or cfg[k] <= 0:
            p.append(f"{k} must be a positive integer")
    if cfg.get("finetune") == "full":
        if cfg.get("quant") != "none":
            p.append("a full fine-tune cannot have a quantized base")
    else:
        if not isinstance(cfg.get("lora_r"), int) or cfg["lora_r"] <= 0:
            p.append("LoRA needs a positive lora_r")
        try:
            catalog.parse_targets(cfg.get("lora_targets"))
        except ValueError as e:
            p.append(str(e))
    p += validate_layout(cfg)
    if cfg.get("finetune") == "qlora" and cfg.get("quant") != "nf4":
        p.append("qlora means an nf4 base")
    if "cpu-init" in cfg.get("features", ()) and (cfg.get("method", "single") != "fsdp1" or
                                                  cfg.get("quant") != "none"):
        p.append("cpu-init is FSDP1's own move to the GPU (method fsdp1, no quantized base)")
    if "kbit-prep" in cfg.get("features", ()) and cfg.get("quant") == "none":
        p.append("kbit-prep applies to quantized bases only")
    if "fused" in cfg.get("features", ()) and (cfg.get("optimizer") != "adamw"
                                              or "paged" in cfg.get("features", ())):
        p.append("fused applies to torch AdamW only")
    return p


def validate_layout(cfg):
    """Problems with the keys of how a configuration runs (method, data, runner, snapshot)."""
    p = []
    method, gpus = cfg.get("method", "single"), cfg.get("gpus", 1)
    if method not in grids.METHODS:
        p.append(f"method {method!r}")
    elif method == "single" and gpus != 1:
        p.append("method single runs on 1 GPU")
    elif method != "single" and (not isinstance(gpus, int) or not 2 <= gpus <= 64):
        p.append("a fake process group needs gpus between 2 and 64")
    if method == "tp" and cfg.get("finetune") != "full":
        p.append("tp is measured for full fine-tuning only (PEFT adapters on DTensor shards)")
    if cfg.get("data", "packed") not in grids.DATA:
        p.append(f"data {cfg.get('data')!r}")
    if cfg.get("alloc_conf", "default") not in grids.ALLOC_CONFS:
        p.append(f"alloc_conf {cfg.get('alloc_conf')!r}")
    if cfg.get("wrap", "peft") not in grids.WRAPS:
        p.append(f"wrap {cfg.get('wrap')!r}")
    elif cfg.get("wrap", "peft") != "peft" and (method != "fsdp1" or cfg.get("finetune") == "full"):
        p.append("wrap picks how method fsdp1 wraps a LoRA model")
    runner = cfg.get("runner", "loop")
    if runner not in grids.RUNNERS:
        p.append(f"runner {runner!r}")
    if runner == "trainer" and method != "single":
        p.append("the Trainer runner runs on one GPU only (no fake process group)")
    if cfg.get("snapshot") and (runner != "loop" or method == "tp"):
        p.append("snapshots are taken in the loop runner, without tensor parallelism")
    if cfg.get("segments") and (runner != "loop" or cfg.get("snapshot")):
        p.append("segments are traced in the loop runner, without a snapshot")
    if cfg.get("snapshot") and cfg.get("steps", 3) < 2:
        p.append("a snapshot needs 2 or more steps (the earlier ones set its threshold)")
    return p


def check_against_catalog(cfg, row):
    """Problems that need the model's dimensions (LoRA names, position table length)."""
    p = []
    if row["model_type"] not in catalog.SUPPORTED_TYPES:
        p.append(f"model_type {row['model_type']!r} not supported")
        return p
    if cfg["finetune"] != "full":
        try:
            catalog.lora_target_modules(row["model_type"], cfg["lora_targets"])
        except ValueError as e:
            p.append(str(e))
    if cfg.get("method") == "tp":
        w = cfg.get("gpus", 1)
        if row["model_type"] not in grids.TP_TYPES:
            p.append(f"tp plan written for {', '.join(grids.TP_TYPES)} only")
        elif row["heads"] % w or (row["kv_heads"] or row["heads"]) % w:
            p.append(f"tp {w} must divide the attention heads and the KV heads")
    if row["pos_emb"] == "learned" and 0 < row["max_pos"] < cfg["seq_len"]:
        p.append(f"seq_len {cfg['seq_len']} exceeds the learned position table ({row['max_pos']})")
    return p


def estimate_seconds(cfg, params_b):
    s = EST_FIXED_S + EST_PER_BPARAM_S * params_b
    if cfg["quant"] != "none":
        s += EST_QUANT_PER_BPARAM_S * params_b
    return s


def framework_string(v):
    return (f"torch {v.get('torch', '?')} / transformers {v.get('transformers', '?')} / "
            f"peft {v.get('peft', '?')} / bnb {v.get('bnb') or 'none'} / CUDA {v.get('cuda', '?')}")


def row_features(cfg):
    """The features column: the grid's features, and how the run was made (fake-pg: a fake
    process group stood in for the other ranks; hf-trainer: transformers.Trainer ran it)."""
    f = list(cfg.get("features", ()))
    # torch.optim.AdamW without fused=True runs foreach (measure_worker.make_optimizer, and
    # Trainer's optim="adamw_torch"), where llmem-sweep's stack hf assumes HF Trainer's fused
    # default of torch >= 2.8
    if cfg.get("optimizer") == "adamw" and not {"fused", "paged"} & set(f):
        f.append("unfused-adamw")
    # a k-bit base the worker does not prepare, where llmem-sweep's stack hf assumes PEFT's
    # prepare_model_for_kbit_training (README "A k-bit base prepared for training")
    if cfg.get("quant", "none") != "none" and "kbit-prep" not in f:
        f.append("no-kbit-prep")
    # bf16-pure adapters stay bf16 (measure_worker.apply_lora casts them), where the hf
    # stacks assume PEFT's autocast_adapter_dtype upcast to fp32 (from stop 33; the rows
    # before were relabelled, datasets/measured/README.md)
    if cfg.get("finetune", "full") != "full" and cfg.get("precision") == "bf16-pure":
        f.append("adapter-bf16")
    if cfg.get("method") == "fsdp1":
        # FullyShardedDataParallel (flat parameters), the FSDP llmem-sweep's stack hf assumes;
        # named so that a reader never takes the row for FSDP2
        f.append("fsdp1")
        if cfg.get("wrap", "peft") == "blocks" and cfg.get("finetune", "full") != "full":
            # the adapters share the block units (llmem-sweep train.h train_mixed_units)
            f.append("fsdp1-mixed-units")
    if cfg.get("method") == "adp" and cfg.get("precision") in ("bf16", "fp16"):
        # fully_shard with MixedPrecisionPolicy(param_dtype, reduce_dtype=fp32) and no
        # autocast (measure_worker.parallelize)
        f += ["fsdp-mp", "fsdp-fp32-reduce"]
    elif cfg.get("method") == "adp":
        # fully_shard without a policy: nothing above says FSDP2, and the hf stacks' default
        # is FSDP1 (from stop 32; the rows before had no such adp configuration)
        f.append("fsdp2")
    if cfg.get("method", "single") != "single":
        f.append("fake-pg")
    if cfg.get("runner", "loop") == "trainer":
        f.append("hf-trainer")
    return "+".join(f)


def base_row(cfg, cid, result, env):
    """The columns shared by every row of one configuration's result."""
    method, gpus = cfg.get("method", "single"), cfg.get("gpus", 1)
    tps = result.get("tokens_per_s")
    # a fake process group does no communication: its step time says nothing about speed
    tps = "" if tps is None or method != "single" else f"{tps:.0f}"
    variable = cfg.get("data", "packed") == "variable"
    return {
        # FSDP1 and FSDP2 are both the method adp (DESIGN.md); the features say which
        "model": cfg["model"], "method": "adp" if method == "fsdp1" else method, "gpus": gpus,
        "tp": gpus if method == "tp" else 1,
        "micro_batch": cfg["micro_batch"], "seq_len": cfg["seq_len"],
        "precision": cfg["precision"], "finetune": cfg["finetune"],
        "lora_r": cfg["lora_r"] if cfg["finetune"] != "full" else "",
        "lora_targets": cfg["lora_targets"] if cfg["finetune"] != "full" else "",
        "quant": cfg["quant"], "grad_ckpt": cfg["grad_ckpt"], "optimizer": cfg["optimizer"],
        "gpu": env.get("gpu", ""), "framework": env.get("framework", ""),
        "source": env.get("source", ""), "id": cid, "grade": "A", "stack": "hf",
        "features": row_features(cfg), "attention": cfg["attention"],
        "seq_kind": "cap" if variable else "exact", "notes": "; ".join(result.get("notes", ())),
        "peak_loss_gib": fmt_gib(result.get("phase_loss")),
        "data": cfg.get("data", "packed"), "alloc_conf": cfg.get("alloc_conf", "default"),
        "tokens_per_s_gpu": tps,
        # every step's padded width, in order: validate replays the loss path's allocations
        # over this very run (datasets/measured/README.md `widths`)
        "widths": next((n[len("widths="):] for n in result.get("notes", ())
                        if n.startswith("widths=")), ""),
        "peak_forward_gib": fmt_gib(result.get("phase_forward")),
        "peak_backward_gib": fmt_gib(result.get("phase_backward")),
        "peak_optimizer_gib": fmt_gib(result.get("phase_optimizer")),
        "context_gib": fmt_gib(result.get("context")),
        "status": result.get("status", "error:unknown"),
    }


def rows_for_result(cfg, cid, result, env):
    """The CSV rows for one configuration's result.

    ok: three rows (allocated, reserved, device). Anything else (oom, error:..., skipped: ...):
    one row with metric device and an empty measured_gib, so a reader that sums rows per
    configuration still sees every configuration once.
    """
    base = base_row(cfg, cid, result, env)
    if base["status"] != "ok":
        return [dict(base, metric="device", measured_gib="")]
    rows = []
    for metric, key in (("allocated", "peak_allocated"), ("reserved", "peak_reserved"),
                        ("device", "peak_device")):
        if result.get(key) is None:
            continue  # no NVML and no nvidia-smi: no device row rather than a wrong one
        rows.append(dict(base, metric=metric, measured_gib=fmt_gib(result[key])))
    for r in rows[1:]:
        r["tokens_per_s_gpu"] = ""  # one speed per configuration (validate counts rows)
    return rows


def row_key(row):
    return tuple(str(row.get(k, "")) for k in KEY_COLUMNS)


def config_key(cfg, cid):
    """row_key of any row that configuration cid would produce."""
    return row_key(base_row(cfg, cid, {}, {}))


def select(grid_name, configs, only):
    """(id, cfg) pairs of the grid, filtered by --only against the id and the description."""
    pat = re.compile(only) if only else None
    out = []
    for i, cfg in enumerate(configs):
        cid = config_id(grid_name, i)
        if pat is None or pat.search(f"{cid} {describe(cfg)}"):
            out.append((cid, cfg))
    return out


def load_catalog(path):
    """models.csv -> dict, or (None, reason) when it cannot be read."""
    try:
        return catalog.load_models(path), None
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"
    except catalog.CatalogError as e:
        return None, f"{path}: {e}"


# --- dry run ------------------------------------------------------------------------------

def dry_run(grid_name, selected, models, models_note, out=sys.stdout):
    total_s = 0.0
    missing = 0
    for cid, cfg in selected:
        flags = []
        params_b = None
        if models is not None:
            try:
                row = catalog.find_model(models, cfg["model"])
            except catalog.CatalogError as e:
                row, flags = None, [str(e)]
            if row is None:
                if not flags:
                    flags.append("not in models.csv")
                missing += 1
            else:
                flags += check_against_catalog(cfg, row)
                if row["params"] > 0:
                    params_b = row["params"] / 1e9
        if params_b is None:
            params_b = catalog.params_from_name(cfg["model"])
        if needs_bnb(cfg):
            flags.append("needs bitsandbytes")
        total_s += estimate_seconds(cfg, params_b)
        tail = ("  # " + "; ".join(flags)) if flags else ""
        print(f"{cid}  {describe(cfg)}{tail}", file=out)
    print(f"{len(selected)} configurations in grid {grid_name}; "
          f"estimated {total_s / 60:.0f} min on one H100 (rough)", file=out)
    if models_note:
        print(f"note: {models_note}", file=out)
    elif missing:
        print(f"note: {missing} configurations name a model missing from models.csv", file=out)


# --- the real run -------------------------------------------------------------------------

def child_env(cfg=None):
    env = dict(os.environ)
    # The allocator's configuration is the grid's: expandable segments or PyTorch's default.
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if cfg and cfg.get("alloc_conf") == "expandable":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    env.pop("CUDA_LAUNCH_BLOCKING", None)
    if cfg and "launch-blocking" in cfg.get("features", ()):
        env["CUDA_LAUNCH_BLOCKING"] = "1"
    # NVML numbers GPUs in PCI order; make CUDA agree so the worker samples the right device.
    env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    # Random weights only: nothing may be fetched from a hub.
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_child(args_list, timeout, log, cfg=None):
    """Runs this script in worker mode; returns (result dict or None, exit code, output)."""
    cmd = [sys.executable, str(Path(__file__).resolve())] + args_list
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=child_env(cfg), errors="replace")
        output, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        output = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(errors="replace")
        rc = None
    if log is not None:
        log.write(output)
        log.flush()
    result = None
    for line in output.splitlines():
        at = line.find(RESULT_MARKER)  # stderr shares the pipe and may precede it on a line
        if at >= 0:
            result = json.loads(line[at + len(RESULT_MARKER):])
    return result, rc, output


def last_error_line(output):
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def probe(args, log):
    """GPU name and library versions, from a short worker run before the grid starts."""
    if args.in_process:
        import measure_worker
        return measure_worker.probe()
    res, rc, output = run_child(["--probe"], timeout=300, log=log)
    if res is None:
        raise SystemExit(f"measure.py: the probe worker failed (exit {rc}): {last_error_line(output)}")
    return res


def measure_one(args, cid, cfg, row, log, timeout):
    job = {"id": cid, "config": cfg, "model_row": row}
    if args.in_process:
        import measure_worker
        return measure_worker.run_job(job)
    result, rc, output = run_child(["--worker", json.dumps(job)], timeout, log, cfg)
    if result is not None:
        return result
    if rc is None:
        return {"status": "error:timeout", "notes": [f"no result within {timeout:.0f} s"]}
    # A crash that Python could not catch (segfault, CUDA abort): say how it ended.
    return {"status": f"error:crash-{rc}", "notes": [last_error_line(output)]}


def read_existing(path):
    """Rows of an earlier run of the same --out file, or [] when it does not exist."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.DictReader(f)
        cols = tuple(r.fieldnames or ())
        # an older harness's file has a prefix of the columns (they grow at the end only)
        if not cols or cols != CSV_COLUMNS[:len(cols)]:
            raise SystemExit(f"measure.py: {path} exists with other columns; use another --out")
        return [dict({k: "" for k in CSV_COLUMNS}, **row) for row in r]


def open_output(path, redo):
    """Opens --out for appending; returns (file, writer, keys already measured).

    Re-running the same command resumes: configurations whose rows say ok or oom are kept and
    not measured again; rows of skipped or failed ones are dropped and those are retried. The
    rewrite goes through a temporary file in the same folder and a rename, so an interrupted
    rewrite never loses earlier measurements.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    old = read_existing(path)
    keep = [r for r in old if r["status"] in ("ok", "oom")] if not redo else old
    done = {row_key(r) for r in keep} if not redo else set()
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(keep)
    os.replace(tmp, path)
    f = open(path, "a", newline="", encoding="utf-8")
    return f, csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n"), done


def snapshot_path(out_path, cid):
    """Where a configuration's snapshot summary goes: OUT-snapshots/ID.txt beside --out."""
    return out_path.with_name(out_path.stem + "-snapshots") / f"{cid}.txt"


def write_snapshot(out_path, cid, result):
    text = result.get("snapshot")
    if not text:
        return
    p = snapshot_path(out_path, cid)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def real_run(args, grid_name, selected, models):
    if not args.out:
        raise SystemExit("measure.py: --out FILE is required (or use --dry-run)")
    out_path = Path(args.out)
    log_path = Path(args.log) if args.log else out_path.with_name(out_path.name + ".log")
    for d in (out_path.parent, log_path.parent):
        d.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "a", encoding="utf-8", errors="replace")
    start = time.time()
    log.write(f"=== measure.py {grid_name} {datetime.datetime.now().isoformat()} ===\n")

    info = probe(args, log)
    gpu = gpu_short_name(info.get("gpu_name"), info.get("total_bytes"))
    # One `source` for every run of the harness: validate's error band counts rows that share
    # a source cell as one source (README "Error band", stop 36), and every grid of this
    # harness is one harness and one way of reading the peak. The GPU is in `gpu`, the
    # versions in `framework`, the date in the output's name and versions.txt.
    env = {"gpu": gpu, "framework": framework_string(info.get("versions", {})),
           "source": "datasets/measure"}
    have_bnb = bool(info.get("versions", {}).get("bnb"))
    print(f"GPU {info.get('gpu_name')} -> {gpu}; {env['framework']}", flush=True)

    f, writer, done = open_output(out_path, args.redo)
    counts = {}
    try:
        for n, (cid, cfg) in enumerate(selected, 1):
            if args.budget_minutes and time.time() - start > args.budget_minutes * 60:
                print(f"time budget of {args.budget_minutes} min spent; re-run the same "
                      "command to go on", flush=True)
                break
            if config_key(cfg, cid) in done:
                counts["already done"] = counts.get("already done", 0) + 1
                continue
            timeout = args.timeout
            if args.stop_minutes:
                # No worker outlives the hard stop: one still running is killed and its row
                # says error:timeout, which a re-run measures again.
                timeout = min(timeout, start + args.stop_minutes * 60 - time.time())
                if timeout < 5:
                    print(f"hard stop of {args.stop_minutes} min reached; re-run the same "
                          "command to go on", flush=True)
                    break
            t0 = time.time()
            try:
                row = catalog.find_model(models, cfg["model"])
            except catalog.CatalogError as e:
                row, why = None, str(e)
            else:
                why = "not in models.csv"
            problems = validate_config(cfg) + (check_against_catalog(cfg, row) if row else [])
            if row is None:
                result = {"status": "skipped: " + why, "notes": []}
            elif problems:
                result = {"status": "skipped: invalid configuration", "notes": problems}
            elif needs_bnb(cfg) and not have_bnb:
                result = {"status": "skipped: bitsandbytes missing", "notes": []}
            else:
                log.write(f"--- {cid} {describe(cfg)}\n")
                result = measure_one(args, cid, cfg, row, log, timeout)
            for r in rows_for_result(cfg, cid, result, env):
                writer.writerow(r)
            f.flush()
            write_snapshot(out_path, cid, result)
            st = result.get("status", "?")
            counts[st.split(":")[0]] = counts.get(st.split(":")[0], 0) + 1
            peak = fmt_gib(result.get("peak_device") or result.get("peak_reserved"))
            print(f"[{n}/{len(selected)}] {cid} {describe(cfg)} -> {st}"
                  f"{' ' + peak + ' GiB' if peak else ''} ({time.time() - t0:.0f} s)", flush=True)
    finally:
        f.close()
        log.close()
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"done in {(time.time() - start) / 60:.1f} min: {summary}; rows in {out_path}")
    return 0


# --- command line -------------------------------------------------------------------------

def build_parser():
    p = argparse.ArgumentParser(
        description="Measure peak GPU memory of real fine-tuning steps (PyTorch + transformers "
                    "+ peft, random weights) over a named grid of configurations.")
    p.add_argument("--grid", default=grids.DEFAULT_GRID, help="grid name (see --list-grids)")
    p.add_argument("--out", help="measured CSV to write (appended; re-running resumes)")
    p.add_argument("--log", help="worker output log (default: OUT.log)")
    p.add_argument("--only", metavar="REGEX",
                   help="run the configurations whose id or description matches")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="seconds per configuration before the worker is killed (default 600)")
    p.add_argument("--budget-minutes", type=float, default=0.0, metavar="M",
                   help="start no new configuration after M minutes (0 = no limit)")
    p.add_argument("--stop-minutes", type=float, default=0.0, metavar="M",
                   help="kill a configuration still running M minutes after the start, and "
                        "start none after (0 = no limit); with --budget-minutes, for leases "
                        "that end at a fixed time")
    p.add_argument("--models-csv", default=str(DEFAULT_MODELS_CSV),
                   help="model catalog (default datasets/models.csv)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the grid and the number of configurations; needs no GPU or torch")
    p.add_argument("--list-grids", action="store_true", help="print the grid names and sizes")
    p.add_argument("--in-process", action="store_true",
                   help="measure in this process instead of one worker per configuration "
                        "(debugging: an OOM then affects the rest)")
    p.add_argument("--redo", action="store_true",
                   help="measure every selected configuration even if --out already has it")
    # Internal: the worker side of the parent/worker protocol.
    p.add_argument("--worker", metavar="JOB_JSON", help=argparse.SUPPRESS)
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)

    if args.worker or args.probe:
        # The only import of torch and friends. The self-test swaps in a fake worker module
        # through LLMEM_MEASURE_WORKER to exercise the parent side without a GPU.
        import importlib
        worker = importlib.import_module(os.environ.get("LLMEM_MEASURE_WORKER", "measure_worker"))
        res = worker.probe() if args.probe else worker.run_job(json.loads(args.worker))
        sys.stderr.flush()
        # On a line of its own even if a library left a partial line on stdout.
        print("\n" + RESULT_MARKER + json.dumps(res), flush=True)
        return 0

    if args.list_grids:
        for name, configs in grids.GRIDS.items():
            print(f"{name}\t{len(configs)} configurations")
        return 0

    if args.grid not in grids.GRIDS:
        print(f"measure.py: unknown grid {args.grid!r}; known: {', '.join(grids.GRIDS)}",
              file=sys.stderr)
        return 2
    configs = grids.GRIDS[args.grid]
    bad = [(config_id(args.grid, i), validate_config(c)) for i, c in enumerate(configs)]
    bad = [(cid, p) for cid, p in bad if p]
    for cid, p in bad:
        print(f"measure.py: {cid}: {'; '.join(p)}", file=sys.stderr)
    if bad:
        return 2
    try:
        selected = select(args.grid, configs, args.only)
    except re.error as e:
        print(f"measure.py: --only: {e}", file=sys.stderr)
        return 2

    models, note = load_catalog(args.models_csv)
    if args.dry_run:
        dry_run(args.grid, selected, models, note)
        return 0
    if models is None:
        print(f"measure.py: {note}", file=sys.stderr)
        return 3
    return real_run(args, args.grid, selected, models)


if __name__ == "__main__":
    sys.exit(main())
