"""catalog.py: datasets/models.csv rows -> HF config keyword arguments and LoRA module names.

Pure functions over plain dicts and strings. Nothing here imports torch or transformers, so the
dry run and the self-test work on machines without them; measure_worker.py turns the keyword
arguments into a real config object on the GPU machine.
"""

import csv
import re

# Columns of datasets/models.csv that this harness reads (the file may carry more).
MODEL_COLUMNS = (
    "model", "model_type", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate",
    "vocab", "max_pos", "pos_offset", "emb_dim", "norms_per_layer", "norm", "mlp", "pos_emb",
    "tied", "qkv_bias", "o_bias", "mlp_bias", "lm_head_bias", "emb_norm", "fused_qkv",
    "fused_gate_up", "logits_fp32", "params", "source",
)

_INT_COLUMNS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                "max_pos", "pos_offset", "emb_dim", "norms_per_layer", "params")
_BOOL_COLUMNS = ("tied", "qkv_bias", "o_bias", "mlp_bias", "lm_head_bias", "emb_norm",
                 "fused_qkv", "fused_gate_up", "logits_fp32")

# model_types whose config mapping below has been written against the HF config class.
SUPPORTED_TYPES = ("llama", "mistral", "qwen2", "gemma", "gemma2", "phi3", "phi", "opt", "bloom",
                   "gpt_neox", "falcon", "gpt2", "gpt_neo", "codegen", "gpt_bigcode", "biogpt",
                   "stablelm")


class CatalogError(ValueError):
    """A models.csv row, or a model name, that the harness cannot use."""


def _parse_bool(text, column, model):
    t = (text or "").strip().lower()
    if t in ("1", "true", "yes", "y", "on"):
        return True
    if t in ("0", "false", "no", "n", "off", ""):
        return False
    raise CatalogError(f"{model}: column {column}: not a boolean: {text!r}")


def _parse_int(text, column, model):
    t = (text or "").strip()
    if t == "":
        return 0  # 0 means "not given"; parse_row fills the derived default
    try:
        # params may be written as 1.24e9 in a hand-edited catalog
        return int(t) if re.fullmatch(r"[+-]?\d+", t) else int(float(t))
    except ValueError:
        raise CatalogError(f"{model}: column {column}: not an integer: {text!r}") from None


def parse_row(raw):
    """One csv.DictReader row -> a dict with ints, bools and derived defaults filled in."""
    model = (raw.get("model") or "").strip()
    if not model:
        raise CatalogError("row without a model name")
    row = {"model": model, "model_type": (raw.get("model_type") or "").strip().lower()}
    for c in _INT_COLUMNS:
        row[c] = _parse_int(raw.get(c), c, model)
    for c in _BOOL_COLUMNS:
        row[c] = _parse_bool(raw.get(c), c, model)
    for c in ("norm", "mlp", "pos_emb", "source"):
        row[c] = (raw.get(c) or "").strip().lower() if c != "source" else (raw.get(c) or "").strip()
    for c in ("layers", "hidden", "heads", "vocab"):
        if row[c] <= 0:
            raise CatalogError(f"{model}: column {c} must be positive")
    if row["kv_heads"] <= 0:
        row["kv_heads"] = row["heads"]
    if row["head_dim"] <= 0:
        row["head_dim"] = row["hidden"] // row["heads"]
    if row["emb_dim"] <= 0:
        row["emb_dim"] = row["hidden"]
    if row["intermediate"] <= 0:
        row["intermediate"] = 4 * row["hidden"]
    if row["norms_per_layer"] <= 0:
        row["norms_per_layer"] = 2
    return row


def load_models(path):
    """models.csv -> {name: parsed row}. Raises OSError when the file is missing."""
    models = {}
    with open(path, newline="", encoding="utf-8") as f:
        for raw in csv.DictReader(f):
            if not any((v or "").strip() for v in raw.values()):
                continue
            row = parse_row(raw)
            models[row["model"]] = row
    return models


def find_model(models, name):
    """Looks a grid model name up in the catalog.

    Exact HF id first; then case-insensitive; then by the part after the organisation, so a
    grid that says "Llama-3.2-1B" finds "meta-llama/Llama-3.2-1B". Ambiguous short names are
    an error rather than a guess. Returns the row or None.
    """
    if name in models:
        return models[name]
    low = name.lower()
    hits = [r for k, r in models.items() if k.lower() == low]
    if not hits:
        base = low.rsplit("/", 1)[-1]
        hits = [r for k, r in models.items() if k.lower().rsplit("/", 1)[-1] == base]
    if len(hits) > 1:
        raise CatalogError(f"{name}: ambiguous, matches " + ", ".join(r["model"] for r in hits))
    return hits[0] if hits else None


def hf_config_kwargs(row):
    """Keyword arguments for the HF config class of row["model_type"].

    Only the dimensions and the switches that change which tensors exist are set; everything
    else (activation, rope, dropout, softcapping, ...) keeps the config class default, which is
    the family's published behaviour. use_cache is off because training never reads the KV
    cache and the cache would otherwise be allocated in forward.
    """
    t = row["model_type"]
    L, h, nh, kv = row["layers"], row["hidden"], row["heads"], row["kv_heads"]
    hd, ff, V, P = row["head_dim"], row["intermediate"], row["vocab"], row["max_pos"]
    tied = row["tied"]
    kw = {"vocab_size": V, "use_cache": False, "tie_word_embeddings": tied}
    if P > 0:
        kw["max_position_embeddings"] = P

    if t in ("llama", "mistral", "qwen2", "gemma", "gemma2", "stablelm", "phi3", "phi"):
        kw.update(hidden_size=h, intermediate_size=ff, num_hidden_layers=L,
                  num_attention_heads=nh, num_key_value_heads=kv)
        if t in ("llama", "mistral", "qwen2", "gemma", "gemma2"):
            # Gemma's head_dim (256) is not hidden/heads; the others accept it too.
            kw["head_dim"] = hd
        if t == "llama":
            kw["attention_bias"] = row["qkv_bias"] or row["o_bias"]
            kw["mlp_bias"] = row["mlp_bias"]
        elif t == "gemma2":
            kw["query_pre_attn_scalar"] = hd
        elif t == "stablelm":
            kw["use_qkv_bias"] = row["qkv_bias"]
        elif t == "phi3" and P > 0:
            # Without rope scaling the "original" length is the trained one.
            kw["original_max_position_embeddings"] = P
    elif t == "opt":
        kw.update(hidden_size=h, ffn_dim=ff, num_hidden_layers=L, num_attention_heads=nh,
                  word_embed_proj_dim=row["emb_dim"],
                  # OPT-350m, the only OPT with a projected embedding, is also the only
                  # post-norm one; the two always go together in the published checkpoints.
                  do_layer_norm_before=row["emb_dim"] == h,
                  enable_bias=row["qkv_bias"])
    elif t == "bloom":
        kw.update(hidden_size=h, n_layer=L, n_head=nh)  # the MLP is 4*hidden by construction
        kw.pop("max_position_embeddings", None)  # ALiBi: no position table
    elif t == "gpt_neox":
        kw.update(hidden_size=h, intermediate_size=ff, num_hidden_layers=L,
                  num_attention_heads=nh, attention_bias=row["qkv_bias"])
    elif t == "falcon":
        kw.update(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                  num_kv_heads=kv, alibi=row["pos_emb"] == "alibi", bias=row["qkv_bias"],
                  ffn_hidden_size=ff)
        if kv == 1:                      # Falcon-7B: multi-query, one shared pre-norm
            kw.update(multi_query=True, new_decoder_architecture=False,
                      parallel_attn=row["norms_per_layer"] == 1)
        elif kv == nh:                   # Falcon-RW: plain MHA, sequential blocks
            kw.update(multi_query=False, new_decoder_architecture=False,
                      parallel_attn=row["norms_per_layer"] == 1)
        else:                            # Falcon-40B/180B/11B: grouped KV ("new" decoder)
            kw.update(multi_query=False, new_decoder_architecture=True,
                      parallel_attn=True, num_ln_in_parallel_attn=row["norms_per_layer"])
        if kw["alibi"]:
            kw.pop("max_position_embeddings", None)
    elif t in ("gpt2", "gpt_bigcode", "codegen"):
        kw.update(n_embd=h, n_layer=L, n_head=nh, n_inner=ff)
        if "max_position_embeddings" in kw:
            kw["n_positions"] = kw.pop("max_position_embeddings")
        if t == "gpt_bigcode":
            kw["multi_query"] = kv == 1
        if t == "codegen":
            kw["rotary_dim"] = min(64, hd)
            if "n_positions" in kw:
                kw["n_ctx"] = kw["n_positions"]
    elif t == "gpt_neo":
        # attention_types must describe exactly num_layers layers (global/local alternate).
        types = [[["global", "local"], L // 2]] if L % 2 == 0 else [[["global"], L]]
        kw.update(hidden_size=h, num_layers=L, num_heads=nh, intermediate_size=ff,
                  attention_types=types)
    elif t == "biogpt":
        kw.update(hidden_size=h, intermediate_size=ff, num_hidden_layers=L,
                  num_attention_heads=nh)
    else:
        raise CatalogError(f"{row['model']}: model_type {t!r} is not supported by the harness")
    return kw


# --- LoRA targets -------------------------------------------------------------------------

ROLES = ("q", "k", "v", "o", "gate", "up", "down")
GROUPS = {"attn": ("q", "k", "v", "o"), "mlp": ("gate", "up", "down"), "all": ROLES}

_LLAMA_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
                "gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
_NEOX_NAMES = {"q": "query_key_value", "k": "query_key_value", "v": "query_key_value",
               "o": "dense", "up": "dense_h_to_4h", "down": "dense_4h_to_h"}

# Our role -> the module-name suffix peft matches (it accepts `key == t or key.endswith("." + t)`).
# A fused projection appears for each of its parts; adapting it adapts the whole fused matrix.
# Two-part suffixes ("mlp.c_proj") separate modules that share a leaf name.
MODULE_NAMES = {
    "llama": _LLAMA_NAMES, "mistral": _LLAMA_NAMES, "qwen2": _LLAMA_NAMES,
    "gemma": _LLAMA_NAMES, "gemma2": _LLAMA_NAMES, "stablelm": _LLAMA_NAMES,
    "phi3": {"q": "qkv_proj", "k": "qkv_proj", "v": "qkv_proj", "o": "o_proj",
             "gate": "gate_up_proj", "up": "gate_up_proj", "down": "down_proj"},
    "phi": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "dense", "up": "fc1",
            "down": "fc2"},
    "opt": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj", "up": "fc1",
            "down": "fc2"},
    "biogpt": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj", "up": "fc1",
               "down": "fc2"},
    "bloom": _NEOX_NAMES, "gpt_neox": _NEOX_NAMES, "falcon": _NEOX_NAMES,
    "gpt2": {"q": "c_attn", "k": "c_attn", "v": "c_attn", "o": "attn.c_proj",
             "up": "mlp.c_fc", "down": "mlp.c_proj"},
    "gpt_bigcode": {"q": "c_attn", "k": "c_attn", "v": "c_attn", "o": "attn.c_proj",
                    "up": "mlp.c_fc", "down": "mlp.c_proj"},
    "gpt_neo": {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "out_proj",
                "up": "mlp.c_fc", "down": "mlp.c_proj"},
    "codegen": {"q": "qkv_proj", "k": "qkv_proj", "v": "qkv_proj", "o": "out_proj",
                "up": "fc_in", "down": "fc_out"},
}

# GPT-2 stores its projections as Conv1D (weight transposed); peft needs to be told.
CONV1D_TYPES = ("gpt2",)


def parse_targets(spec):
    """'attn', 'mlp', 'all' or roles joined by '+' (commas tolerated) -> (roles, explicit).

    explicit is False for the group names: a group quietly skips roles that a model lacks
    (a plain MLP has no gate), an explicit list does not.
    """
    s = (spec or "").strip().lower()
    if s in GROUPS:
        return list(GROUPS[s]), False
    parts = [p for p in re.split(r"[+,]", s) if p]
    if not parts:
        raise ValueError("empty LoRA target list")
    for p in parts:
        if p not in ROLES:
            raise ValueError(f"unknown LoRA target {p!r} (use {'+'.join(ROLES)}, attn, mlp, all)")
    return parts, True


def lora_target_modules(model_type, spec):
    """Module-name suffixes for peft's target_modules, deduplicated, in role order."""
    if model_type not in MODULE_NAMES:
        raise ValueError(f"no LoRA module names known for model_type {model_type!r}")
    names = MODULE_NAMES[model_type]
    roles, explicit = parse_targets(spec)
    out = []
    for r in roles:
        if r not in names:
            if explicit:
                raise ValueError(f"model_type {model_type} has no {r} projection")
            continue
        if names[r] not in out:
            out.append(names[r])
    return out


def params_from_name(name):
    """Rough parameter count (in billions) from a model name like 'opt-1.3b' or 'bloom-560m'.

    Used only for runtime estimates when the catalog is absent.
    """
    base = name.rsplit("/", 1)[-1].lower()
    m = re.search(r"(\d+(?:\.\d+)?)([bm])(?![a-z])", base)
    if not m:
        return 1.0
    v = float(m.group(1))
    return v if m.group(2) == "b" else v / 1000.0
