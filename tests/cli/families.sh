# Today's families and MoE from the command line: config.json fixtures read, the --ep axis
# swept and written (CSV column ep), expert-parallel layouts that cannot exist refused,
# and TP as each stack does it (LLMem's BioGPT-Large 4TP and santacoder 2DP+2TP).
source "$(dirname "$0")/../cli_lib.sh"
HF="$TESTS/data/hf"
for f in qwen3-8b gemma-3-1b gemma-3-4b olmo-2-13b mixtral-8x7b qwen3-30b-a3b deepseek-v2-lite; do
  expect_exit 0 "$BIN" explain --model "$HF/$f.json" --finetune lora --seq 1024 --format json
done
# the ep axis: a MoE model gets one layout per valid degree, a dense model only ep 1
args=(--budget 80GiB --methods cdp,adp --gpus 4 --ep 1,2,4 --finetune lora --seq 1024 --batch 1
      --precision bf16 --grad-ckpt on --optimizer adamw --top 0 --all --quiet --threads 2)
expect_exit 0 "$BIN" "${args[@]}" --model Qwen/Qwen3-30B-A3B --model Qwen/Qwen3-8B --out "$TMP/ep.csv"
python3 - "$TMP/ep.csv" <<'PY' || fail "ep column wrong"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
moe = sorted({(r["method"], r["ep"]) for r in rows if r["model"] == "Qwen/Qwen3-30B-A3B"})
dense = {r["ep"] for r in rows if r["model"] == "Qwen/Qwen3-8B"}
assert moe == [(m, e) for m in ("adp", "cdp") for e in ("1", "2", "4")], moe
assert dense == {"1"}, dense
# fewer experts per rank: less memory under DDP
cdp = {r["ep"]: float(r["peak_gib"]) for r in rows
       if r["model"] == "Qwen/Qwen3-30B-A3B" and r["method"] == "cdp"}
assert cdp["4"] < cdp["2"] < cdp["1"], cdp
PY
# the terminal table names the EP degree, so layouts that differ only there do not read alike
"$BIN" "${args[@]}" --model Qwen/Qwen3-30B-A3B > "$TMP/ep.txt" 2>/dev/null || fail "ep table"
grep -q '^ *[0-9]*  Qwen/Qwen3-30B-A3B *adp ep4 ' "$TMP/ep.txt" || fail "the table does not name ep4"
# merge reads the column back
expect_exit 0 "$BIN" merge "$TMP/ep.csv" --top 0 --out "$TMP/merged.csv"
cmp -s "$TMP/ep.csv" "$TMP/merged.csv" || fail "merge changed the ep rows"
expect_exit 2 "$BIN" explain --model Qwen/Qwen3-8B --method cdp --gpus 2 --ep 2
expect_err "ep needs a MoE model"
expect_exit 2 "$BIN" explain --model Qwen/Qwen3-30B-A3B --method cdp --gpus 6 --ep 3
expect_err "must divide dp and the experts"
# TP per stack: LLMem's runs are valid under its own stack, refused Megatron-style
expect_exit 0 "$BIN" explain --model microsoft/BioGPT-Large --paper --method tp --gpus 4
expect_exit 0 "$BIN" explain --model bigcode/gpt_bigcode-santacoder --paper --method dp+tp --gpus 4 --tp 2
expect_exit 0 "$BIN" explain --model microsoft/BioGPT-Large --stack colossal --method dp+tp --gpus 4 --tp 2
expect_exit 2 "$BIN" explain --model microsoft/BioGPT-Large --method tp --gpus 4
expect_err "tp must divide the attention heads and the KV heads (Megatron-style TP"
finish
