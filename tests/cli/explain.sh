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
finish
