# CSV, JSON and table for a small sweep are pinned by golden files; CSV has exactly the
# DESIGN.md columns first.
source "$(dirname "$0")/../cli_lib.sh"
args=(--budget 24GiB --gpu A10G-24GB --model Qwen/Qwen2.5-0.5B --methods single,cdp --gpus 1,2
      --batch 1,2,4 --seq 512 --precision bf16 --finetune full,lora --grad-ckpt on
      --optimizer adamw --threads 2 --quiet --top 10)
# relative output names: the JSON's meta.command holds the command line as given
(cd "$TMP" && "$BIN" "${args[@]}" --out small.csv --out small.json)
"$BIN" "${args[@]}" > "$TMP/small.txt"
golden "$TMP/small.csv" small.csv
golden "$TMP/small.json" small.json
golden "$TMP/small.txt" small.txt
head -1 "$TMP/small.csv" | grep -q '^rank,model,method,gpus,tp,dp,micro_batch,global_batch,seq_len,precision,finetune,lora_r,lora_targets,quant,grad_ckpt,optimizer,peak_gib,budget_gib,headroom_gib,peak_phase,base_gib,params_gib,grads_gib,optimizer_gib,activations_gib,logits_gib,comm_buffers_gib,rule,step_time_s,samples_per_s,tokens_per_s,fits' \
  || fail "CSV header does not start with the DESIGN.md columns"
# JSON has the same rows as the CSV
python3 - "$TMP/small.csv" "$TMP/small.json" <<'PY' || fail "CSV and JSON rows differ"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
j = json.load(open(sys.argv[2]))["rows"]
assert len(rows) == len(j)
for a, b in zip(rows, j):
    assert a["model"] == b["model"] and int(a["micro_batch"]) == b["micro_batch"]
    assert abs(float(a["peak_gib"]) - b["peak_gib"]) < 1e-9
PY
finish
