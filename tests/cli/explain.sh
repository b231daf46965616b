# explain: golden text and JSON for the paper's equations and for the default model.
source "$(dirname "$0")/../cli_lib.sh"

"$BIN" explain --model facebook/opt-1.3b --paper --gpu V100-SXM2-16GB --base 1GiB \
  --micro-batch 4 --seq 512 > "$TMP/paper.txt"
golden "$TMP/paper.txt" explain-opt-1.3b-paper.txt
"$BIN" explain --model facebook/opt-1.3b --paper --gpu V100-SXM2-16GB --base 1GiB --method adp \
  --gpus 4 --micro-batch 8 --seq 512 --format json > "$TMP/adp.json"
golden "$TMP/adp.json" explain-opt-1.3b-adp.json
"$BIN" explain --model meta-llama/Llama-3.1-8B --finetune qlora --lora-r 16 --lora-targets all \
  --micro-batch 4 --seq 2048 --grad-ckpt on --gpu A10G-24GB --format json > "$TMP/qlora.json"
golden "$TMP/qlora.json" explain-llama-3.1-8b-qlora.json

# the JSON carries the contract fields
for key in peak_bytes '"terms"' m_base m_p16 m_p32 m_os m_out m_lm m_back '"inputs"' embed_p \
           other_p chunk_elems layers hidden vocab micro_batch seq_len gpus '"tp"' '"dp"'; do
  grep -q "$key" "$TMP/adp.json" || fail "explain JSON lacks $key"
done
# --paper reproduces ADP's equation: m_base + m_p16 + (m_p32 + m_os)/4 + m_out + m_lm
python3 - "$TMP/adp.json" <<'PY' || fail "paper ADP total is not the sum of its terms"
import json, sys
j = json.load(open(sys.argv[1])); t = j["terms"]
want = t["m_base"] + t["m_p16"] + (t["m_p32"] + t["m_os"]) // 4 + t["m_out"] + t["m_lm"]
sys.exit(0 if abs(j["peak_bytes"] - want) <= 1 else 1)
PY
# --grad-ckpt selective (torchtitan's op-level SAC): memory between off and on, and a step
# between them too (it recomputes the pointwise work and every second matmul only)
for k in off selective on; do
  "$BIN" explain --model meta-llama/Llama-3.1-8B --method adp --gpus 8 --micro-batch 2 --seq 8192 \
    --finetune full --precision bf16 --grad-ckpt "$k" --gpu H100-SXM-80GB --format json \
    > "$TMP/ckpt-$k.json" || fail "explain --grad-ckpt $k"
done
grep -q '"grad_ckpt_mode": "selective"' "$TMP/ckpt-selective.json" || fail "selective not in the JSON"
python3 - "$TMP" <<'PY' || fail "selective is not between off and on in memory and speed"
import json, sys
j = {k: json.load(open(f"{sys.argv[1]}/ckpt-{k}.json")) for k in ("off", "selective", "on")}
peak = [j[k]["peak_bytes"] for k in ("on", "selective", "off")]
tok = [j[k]["speed"]["tokens_per_s"] for k in ("on", "selective", "off")]
sys.exit(0 if peak[0] < peak[1] < peak[2] and tok[0] < tok[1] < tok[2] else 1)
PY
# --gpus-per-node: FSDP over 16 GPUs in one node is faster than over two nodes of 8
for n in 8 16; do
  "$BIN" explain --model meta-llama/Llama-3.1-8B --method adp --gpus 16 --micro-batch 1 --seq 1024 \
    --finetune full --precision bf16 --gpu A100-SXM-80GB --gpus-per-node "$n" --format json \
    > "$TMP/node-$n.json" || fail "explain --gpus-per-node $n"
done
python3 - "$TMP" <<'PY' || fail "two nodes are not slower than one"
import json, sys
t = [json.load(open(f"{sys.argv[1]}/node-{n}.json"))["speed"]["step_time_s"] for n in (8, 16)]
sys.exit(0 if t[0] > t[1] else 1)
PY
# methods beyond LLMem: a pipeline reports its stages, micro-batches and bubble; offload its host
# memory; ZeRO-1 < DDP < and ZeRO-2 <= ZeRO-1 in peak (the same 8B full fine-tuning on 8 GPUs)
m8=(--model meta-llama/Llama-3.1-8B --gpus 8 --micro-batch 2 --seq 4096 --precision bf16 --format json)
for m in cdp zero1 zero2 adp offload; do
  "$BIN" explain "${m8[@]}" --method "$m" > "$TMP/m-$m.json" || fail "explain --method $m failed"
done
"$BIN" explain "${m8[@]}" --method pp --pp 4 --tp 2 > "$TMP/m-pp.json" || fail "explain --method pp failed"
python3 - "$TMP" <<'PY' || fail "beyond-LLMem methods: peaks, pipeline or host fields wrong"
import json, sys
j = {m: json.load(open(f"{sys.argv[1]}/m-{m}.json")) for m in ("cdp", "zero1", "zero2", "adp", "offload", "pp")}
p = {m: v["peak_bytes"] for m, v in j.items()}
ok = p["zero2"] <= p["zero1"] < p["cdp"] and p["offload"] < p["adp"]
ok &= j["pp"]["inputs"]["pp"] == 4 and j["pp"]["inputs"]["pp_microbatches"] == 16
ok &= j["pp"]["inputs"]["dp"] == 1 and j["pp"]["speed"]["bubble_s"] > 0
ok &= j["offload"]["host_bytes"] > 0 and j["offload"]["inputs"]["offload"] == "optimizer"
sys.exit(0 if ok else 1)
PY
"$BIN" explain "${m8[@]}" --method pp --pp 4 --format text | grep -q "x pp 4, 16 micro-batches a step" \
  || fail "explain text lacks the pipeline layout"
# byte counts past 2^63 saturate at 2^62 (units.h BYTES_SAT): nothing wraps or prints negative
expect_exit 0 "$BIN" explain --model meta-llama/Llama-3.1-405B --micro-batch 65536 --seq 1048576 \
  --grad-ckpt off --precision fp32 --format json
grep -q '"peak_bytes": 4611686018427387904,' "$TMP/out" || fail "405B at 2^36 tokens: $(head -3 "$TMP/out")"
grep -q -- ': -[0-9]' "$TMP/out" && fail "a negative number in explain's JSON: $(grep -- ': -' "$TMP/out" | head -3)"
expect_exit 0 "$BIN" explain --model meta-llama/Llama-3.1-405B --micro-batch 65536 --seq 1048576 \
  --method tp --gpus 8 --paper --format json
grep -q -- ': -[0-9]' "$TMP/out" && fail "a negative number in --paper JSON: $(grep -- ': -' "$TMP/out" | head -3)"
# --detail: the tensors behind each term (text and JSON goldens); in the JSON each term's
# tensors add up to the term, which is the peak phase's value in "phases"
"$BIN" explain --model meta-llama/Llama-3.1-8B --finetune qlora --micro-batch 4 --seq 2048 \
  --gpu A10G-24GB --detail > "$TMP/detail.txt"
golden "$TMP/detail.txt" explain-llama-3.1-8b-qlora-detail.txt
"$BIN" explain --model mistralai/Mixtral-8x7B-v0.1 --method adp --gpus 8 --finetune lora \
  --micro-batch 2 --seq 2048 --gpu H100-SXM-80GB --detail --format json > "$TMP/detail.json"
golden "$TMP/detail.json" explain-mixtral-adp-lora-detail.json
"$BIN" explain --model facebook/opt-1.3b --paper --gpu V100-SXM2-16GB --base 1GiB --method adp \
  --gpus 4 --micro-batch 8 --seq 512 --detail > "$TMP/paper-detail.txt"
golden "$TMP/paper-detail.txt" explain-opt-1.3b-paper-detail.txt
for args in "--method zero2 --gpus 8 --finetune full" "--method tp --gpus 4 --finetune full" "--method pp --gpus 8 --pp 4 --tp 2" \
            "--method offload --gpus 4 --finetune full" "--finetune lora --stack litgpt --grad-ckpt off"; do
  # shellcheck disable=SC2086
  "$BIN" explain --model meta-llama/Llama-3.1-8B $args --micro-batch 2 --seq 4096 --detail --format json \
    > "$TMP/d.json" || fail "explain --detail $args"
  python3 - "$TMP/d.json" <<'PY' || fail "explain --detail $args: the tensors do not add up to the terms"
import json, sys
j = json.load(open(sys.argv[1])); d = j["detail"]
peak = [p for p in j["phases"] if p["phase"] == d["phase"]][0]
ok = d["phase"] == j["peak_phase"] and not d["truncated"] and len(d["terms"]) > 0
for t in d["terms"]:
    ok &= t["bytes"] == peak[t["term"]] == sum(r["bytes"] for r in t["tensors"])
    ok &= all(r["name"] and r["source"] and r["bytes"] > 0 for r in t["tensors"])
sys.exit(0 if ok else 1)
PY
done
grep -q '"detail"' "$TMP/qlora.json" && fail "explain JSON has a detail without --detail"
# the paper's terms only with --paper (issue 15): text and JSON without it name no m_p16
grep -q "m_p16" "$TMP/detail.txt" && fail "explain text shows the LLMem terms without --paper"
grep -q "LLMem terms" "$TMP/paper.txt" || fail "explain --paper text lacks the LLMem terms"
expect_exit 2 "$BIN" --detail --model gpt2
expect_err "takes no --detail"

# --- explain --measured FILE --id ID: a measured row's configuration, as validate reads it ---
M="$PROJECT/datasets/measured"
"$BIN" validate --measured "$M/public.csv" --measured "$M/public-2.csv" --out "$TMP/v.csv" > /dev/null
for id in TTM-05 LGCH-02 PEFT-MM-01 TT-13 SWB-10; do
  case $id in TT-*|SWB-*) f="$M/public-2.csv" ;; *) f="$M/public.csv" ;; esac
  "$BIN" explain --measured "$f" --id "$id" --format json > "$TMP/m.json" || fail "explain --measured $id"
  python3 - "$TMP/m.json" "$TMP/v.csv" "$id" <<'PY' || fail "explain --measured $id differs from validate"
import csv, json, sys
j = json.load(open(sys.argv[1])); m = j["measured"]
(v,) = [r for r in csv.DictReader(open(sys.argv[2])) if r["source"] + "-" in sys.argv[3] + "-"
        and r["line"] == str(m["line"]) and r["file"].endswith(m["file"].split("/")[-1])]
assert m["id"] == sys.argv[3] and abs(m["gib"] - float(v["measured_gib"])) < 1e-3, (m, v)
assert abs(m["predicted_gib"] - float(v["predicted_gib"])) < 1e-3, (m, v)
PY
done
# a row with its run's step widths (our own, column widths): explain predicts it at the longest
# step with the run's own allocator replay, as validate does; its reserved row says the same
"$BIN" validate --measured "$M/h200-20261127.csv" --out "$TMP/v2.csv" > /dev/null
"$BIN" explain --measured "$M/h200-20261127.csv" --id gpu-25min-48 > "$TMP/w.txt" || fail "explain gpu-25min-48"
python3 - "$TMP/w.txt" "$TMP/v2.csv" <<'PY' || fail "explain --measured gpu-25min-48 differs from validate: $(cat "$TMP/w.txt")"
import csv, re, sys
text = open(sys.argv[1]).read()
rows = {r["metric"]: r for r in csv.DictReader(open(sys.argv[2])) if r["source"] == "gpu-25min"
        and r["line"] in ("86", "87")}
res, alloc = re.search(r"^peak .*\(([0-9.]+) reserved, ([0-9.]+) allocated\)", text, re.M).groups()
assert "seq 8070" in text, "not at the run's longest step"
assert abs(float(res) - float(rows["reserved"]["predicted_gib"])) < 1e-3, (res, rows["reserved"])
assert abs(float(alloc) - float(rows["allocated"]["predicted_gib"])) < 1e-3, (alloc, rows["allocated"])
PY
# a packed full fine-tune under autocast: explain's reserved is the whole-step replay's, as
# validate's (stepreplay.c; the phases alone said 23.607 GiB, measured 24.365)
"$BIN" explain --measured "$M/h200-20261127.csv" --id gpu-25min-26 > "$TMP/r.txt" || fail "explain gpu-25min-26"
python3 - "$TMP/r.txt" "$TMP/v2.csv" <<'PY' || fail "explain --measured gpu-25min-26 differs from validate: $(cat "$TMP/r.txt")"
import csv, re, sys
text = open(sys.argv[1]).read()
(row,) = [r for r in csv.DictReader(open(sys.argv[2])) if r["line"] == "21"]
res = re.search(r"^peak .*\(([0-9.]+) reserved, ", text, re.M).group(1)
assert row["metric"] == "reserved" and abs(float(res) - float(row["predicted_gib"])) < 1e-3, (res, row)
assert float(res) > 24.0, res
assert re.search(r"^replayed   reserved from 3 whole steps .* the phases alone, as the sweep's reports "
                 r"show it: 23\.607 GiB$", text, re.M), text
PY
"$BIN" explain --measured "$M/h200-20261127.csv" --id gpu-25min-26 --format json > "$TMP/r.json" \
  || fail "explain gpu-25min-26 json"
python3 - "$TMP/r.json" <<'PY' || fail "explain json of a replayed point: $(head -c 400 "$TMP/r.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["replayed_steps"] == 3 and j["phases_reserved_bytes"] < j["reserved_bytes"], j
PY
# DDP: a replica's replayed step, its buckets beside it. Worked by hand: Llama-3.2-1B's
# 1,235,814,400 trained fp32 gradients copied once, 4,943,257,600 B, rounded up to the
# allocator's 2 MiB (2358 x 2,097,152 = 4,945,084,416 B) above the one-GPU run of the same step
for id in gpu-25min-00 gpu-25min-13; do
  "$BIN" explain --measured "$M/h200-20261127.csv" --id "$id" --format json > "$TMP/$id.json" \
    || fail "explain $id json"
done
python3 - "$TMP/gpu-25min-00.json" "$TMP/gpu-25min-13.json" <<'PY' || fail "DDP's replay is not one GPU's plus its buckets"
import json, sys
one, ddp = (json.load(open(f)) for f in sys.argv[1:3])
assert one["replayed_steps"] == 3 and ddp["replayed_steps"] == 3, (one, ddp)
assert ddp["reserved_bytes"] - one["reserved_bytes"] == 4945084416, ddp["reserved_bytes"] - one["reserved_bytes"]
PY
# a point the replay does not cover (variable data, no widths) says nothing of it
"$BIN" explain --model meta-llama/Llama-3.2-1B --finetune full --micro-batch 4 --seq 1024 \
  --format json > "$TMP/nr.json" || fail "explain json, variable data"
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert "replayed_steps" not in j, j' \
  "$TMP/nr.json" || fail "explain json of an unreplayed point names replayed steps"
"$BIN" explain --measured "$M/public.csv" --id TTM-05 > "$TMP/m.txt"
grep -q '^measured   22.445 GiB allocated (TTM-05, .*public.csv:[0-9]*); the model: [0-9.]* GiB allocated, -[0-9.]* %$' \
  "$TMP/m.txt" || fail "explain --measured prints no measured line: $(cat "$TMP/m.txt")"
# --liger: Liger's fused loss replaces the hf path (no N x V tensor), and the peak leaves the loss
l8=(--model meta-llama/Llama-3.1-8B --finetune full --method adp --gpus 8 --micro-batch 4 --seq 4096
    --grad-ckpt on --gpu H100-SXM-80GB)
"$BIN" explain "${l8[@]}" --liger > "$TMP/liger.txt" || fail "explain --liger"
grep -q 'stack hf+liger' "$TMP/liger.txt" && grep -q '^loss path  liger-flce: 0.00 allocated' "$TMP/liger.txt" \
  && grep -q '<- peak' "$TMP/liger.txt" && ! grep -q '^lm_head+loss .*<- peak' "$TMP/liger.txt" \
  || fail "explain --liger: $(cat "$TMP/liger.txt")"
"$BIN" explain "${l8[@]}" > "$TMP/noliger.txt"
grep -q '^lm_head+loss .*<- peak' "$TMP/noliger.txt" || fail "without --liger the loss should peak here"
# --paged: bitsandbytes' paged AdamW keeps its fp32 states (3.2e9 x 8 bytes on Llama-3.2-3B)
# in managed memory; only the largest parameter's must fit, so full fine-tuning on a 24 GB
# card fits with it and not without, and what has no room beside the reserved pool crosses
# PCIe each step. On the point prediction (--margin 0): since stop 36 the hf stack's full
# fine-tuning takes the hf/*/* band (upper end x1.60), whose upper end fits neither way.
p3=(--model meta-llama/Llama-3.2-3B --gpu RTX4090-24GB --finetune full --precision bf16-pure
    --optimizer adamw --micro-batch 2 --seq 2048 --margin 0)
"$BIN" explain "${p3[@]}" --paged --format json > "$TMP/paged.json" || fail "explain --paged"
"$BIN" explain "${p3[@]}" --format json > "$TMP/unpaged.json" || fail "explain without --paged"
python3 - "$TMP/paged.json" "$TMP/unpaged.json" <<'PY' || fail "explain --paged: wrong paged terms"
import json, sys
j, u = (json.load(open(f)) for f in sys.argv[1:3])
paged, moved, one = j["paged_bytes"], j["paged_moved_bytes"], j["paged_largest_bytes"]
assert j["fits"] and not u["fits"] and "paged_bytes" not in u, (j, u)
# fp32 states of all but the norms, the largest the tied embedding's 394002432 elements
assert 23 * 2**30 < paged < 24 * 2**30 and 0 < moved < paged and one == 394002432 * 8, j
assert j["speed"]["step_time_s"] > u["speed"]["step_time_s"], (j["speed"], u["speed"])
PY
"$BIN" explain "${p3[@]}" --paged | grep -q 'adamw (paged)' || fail "explain --paged names no paged optimizer"
"$BIN" --model meta-llama/Llama-3.2-3B --gpu RTX4090-24GB --methods single --finetune full \
  --precision bf16-pure --optimizer adamw --seq 2048 --paged --margin 0 --format json --out "$TMP/paged-sweep.json" \
  2> /dev/null || fail "sweep --paged finds no fit"
grep -q '"stack": *"hf+paged"' "$TMP/paged-sweep.json" || fail "sweep --paged: stack label"
# --rope-tables (transformers 4.31-4.39's per-layer rotary cos/sin buffers): Llama-2-7B's 32
# layers x 2 tables x 4096 positions x 128, whole on the one GPU: 64 MiB in the bf16 weights'
# dtype, 128 MiB in fp32, on top of the allocated peak; the sweep's stack label says so
rt=(explain --model meta-llama/Llama-2-7b-hf --finetune lora --micro-batch 1 --seq 512 --stack hf-4.31 --format json)
for r in none weights fp32; do "$BIN" "${rt[@]}" --rope-tables "$r" > "$TMP/rope-$r.json"; done
python3 - "$TMP"/rope-none.json "$TMP"/rope-weights.json "$TMP"/rope-fp32.json <<'PY' || fail "--rope-tables: not the tables' bytes"
import json, sys
a = [json.load(open(f))["allocated_bytes"] for f in sys.argv[1:]]
assert (a[1] - a[0], a[2] - a[0]) == (32 * 2 * 4096 * 128 * 2, 32 * 2 * 4096 * 128 * 4), a
i = [json.load(open(f))["inputs"].get("rope_tables") for f in sys.argv[1:]]
assert i == [None, "weights", "fp32"], i
PY
"$BIN" "${rt[@]:0:11}" --rope-tables fp32 | grep -q 'stack hf-4.31+rope-tables-fp32$' || fail "explain: no rope tables in the stack line"
expect_exit 2 "$BIN" "${rt[@]}" --rope-tables yes
expect_err "invalid value 'yes' for --rope-tables (none, weights or fp32)"
"$BIN" --model meta-llama/Llama-2-7b-hf --gpu RTX4090-24GB --methods single --finetune lora --seq 512 \
  --stack hf-4.31 --rope-tables weights --margin 0 --format json --out "$TMP/rope-sweep.json" 2> /dev/null \
  || fail "sweep --rope-tables finds no fit"
grep -q '"stack": *"hf-4.31+rope-tables"' "$TMP/rope-sweep.json" || fail "sweep --rope-tables: stack label"
# --fsdp-end-units (FSDP2: torchtitan from 83e69410, torchtune's custom_sharded_layers):
# Llama-3.1-70B full on 8 GPUs. The root unit kept the embedding and the lm_head (128256 x
# 8192 each, bf16) gathered beside a block (its 80th of the rest less the final norm);
# with end units forward holds the lm_head alone, the last block's backward two blocks, the
# first block's a block and the prefetched embedding (resident.c zero3_end_units)
eu=(explain --model meta-llama/Llama-3.1-70B-Instruct --method adp --gpus 8 --micro-batch 2 --seq 2048
    --precision bf16-pure --finetune full --stack torchtune --format json)
"$BIN" "${eu[@]}" > "$TMP/eu-root.json" && "$BIN" "${eu[@]}" --fsdp-end-units > "$TMP/eu-ends.json" \
  || fail "explain --fsdp-end-units"
python3 - "$TMP/eu-root.json" "$TMP/eu-ends.json" <<'PY' || fail "--fsdp-end-units: not the root unit's bytes"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
mat, block = 128256 * 8192 * 2, (70553706496 - 2 * 128256 * 8192 - 8192) // 80 * 2
d = {x["phase"]: x["comm_buffers"] - y["comm_buffers"] for x, y in zip(a["phases"], b["phases"])}
assert d == {"forward": mat + block, "lm_head+loss": mat + block, "backward last layer": 2 * mat,
             "backward first layer": mat + block, "optimizer step": 0}, d
assert (a["inputs"].get("fsdp_end_units"), b["inputs"].get("fsdp_end_units")) == (None, True)
PY
"$BIN" "${eu[@]:0:17}" --fsdp-end-units | grep -q 'stack torchtune+end-units$' || fail "explain: no end units in the stack line"
expect_exit 2 "$BIN" "${eu[@]:0:15}" --fsdp-end-units
expect_err "--fsdp-end-units needs --stack torchtitan or torchtune (FSDP2's units)"
"$BIN" --model meta-llama/Llama-3.1-8B --methods adp --gpus 8 --finetune full --seq 2048 --stack torchtitan \
  --fsdp-end-units --margin 0 --format json --out "$TMP/eu-sweep.json" 2> /dev/null || fail "sweep --fsdp-end-units finds no fit"
grep -q '"stack": *"torchtitan+end-units"' "$TMP/eu-sweep.json" || fail "sweep --fsdp-end-units: stack label"
# a torchtitan pipeline's merged result: its own segment on top of the phases' reserved
"$BIN" explain --measured "$M/public-2.csv" --id TT-13 --format json > "$TMP/tt13.json"
python3 - "$TMP/tt13.json" <<'PY' || fail "TT-13's step-end segment is not reserved beyond its phases"
import json, sys
j = json.load(open(sys.argv[1]))
phases = max(p["reserved_bytes"] for p in j["phases"])
assert j["step_end_reserved_bytes"] > 0 and j["reserved_bytes"] == phases + j["step_end_reserved_bytes"], j
PY
"$BIN" explain --measured "$M/public-2.csv" --id TT-13 | grep -q '^step end   [0-9.]* GiB reserved after the phases' \
  || fail "explain prints no step end line for TT-13"
expect_exit 2 "$BIN" explain --measured "$M/public.csv"
expect_err "--measured FILE and --id ID go together"
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id NO-SUCH-ROW
expect_err "has no row with id 'NO-SUCH-ROW'"
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id TTM-05 --model gpt2
expect_err "drop --model"
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id TTM-05 --stack torchtune
expect_err "drop --stack, --attention, --liger, --paged, --rope-tables, --fsdp-end-units, --data and --alloc-conf"
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id TTM-05 --rope-tables fp32
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id TTM-05 --fsdp-end-units
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id TTM-05 --data packed
expect_exit 2 "$BIN" explain --measured "$M/public.csv" --id TTM-05 --seq 1024
expect_exit 3 "$BIN" explain --measured "$M/public-2.csv" --id TT-08
expect_err "public-2.csv:9: row TT-08 cannot be explained: context parallelism is not modelled"
expect_exit 4 "$BIN" explain --measured "$TMP/none.csv" --id X
finish
