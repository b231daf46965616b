# merge (README "Contract extensions"): every shard the sweep writes is read, none twice,
# none of another run (GPU, budget, stack), and no file is dropped however many are given.
source "$(dirname "$0")/../cli_lib.sh"

M=(--model meta-llama/Llama-3.1-8B --gpus 1,2 --batch 1,2,4 --seq 512,1024 --quiet --top 5)
for k in 1 2 3; do "$BIN" "${M[@]}" --shard "$k/3" --out "$TMP/s$k.csv"; done
"$BIN" "${M[@]}" --out "$TMP/single.csv"
expect_exit 0 "$BIN" merge "$TMP/s1.csv" "$TMP/s2.csv" "$TMP/s3.csv" --top 5 --out "$TMP/m.csv"
cmp -s "$TMP/m.csv" "$TMP/single.csv" || fail "3 shards + merge differ from one run"

# the same shard twice, under its own name or a copy's: exit 3, nothing written
expect_exit 3 "$BIN" merge "$TMP/s1.csv" "$TMP/s2.csv" "$TMP/s1.csv" --out "$TMP/x.csv"
expect_err "config_id: configuration"
cp "$TMP/s2.csv" "$TMP/copy.csv"
expect_exit 3 "$BIN" merge "$TMP/s1.csv" "$TMP/s2.csv" "$TMP/copy.csv" --out "$TMP/x.csv"
expect_err "the same shard twice"
# shards of another GPU, budget or stack
"$BIN" "${M[@]}" --shard 2/3 --gpu A100-SXM-80GB --out "$TMP/gpu.csv"
expect_exit 3 "$BIN" merge "$TMP/s1.csv" "$TMP/gpu.csv" --out "$TMP/x.csv"
expect_err "gpu.csv:2: gpu: 'A100-SXM-80GB' differs from 'H100-SXM-80GB'"
"$BIN" "${M[@]}" --shard 2/3 --budget 40GiB --out "$TMP/budget.csv"
expect_exit 3 "$BIN" merge "$TMP/s1.csv" "$TMP/budget.csv" --out "$TMP/x.csv"
expect_err "budget.csv:2: budget_gib: '40.000' differs"
"$BIN" "${M[@]}" --shard 2/3 --stack litgpt --out "$TMP/stack.csv"
expect_exit 3 "$BIN" merge "$TMP/s1.csv" "$TMP/stack.csv" --out "$TMP/x.csv"
expect_err "stack.csv:2: stack: 'litgpt' differs from 'hf'"
[ ! -e "$TMP/x.csv" ] || fail "merge wrote a report from refused shards"

# no file dropped: 1,100 shards, the rows in the last one
mkdir "$TMP/many"
head -1 "$TMP/s1.csv" > "$TMP/many/empty.csv"
for i in $(seq 1 1099); do ln "$TMP/many/empty.csv" "$TMP/many/e$i.csv"; done
expect_exit 0 "$BIN" merge "$TMP"/many/e*.csv "$TMP/s2.csv" --out "$TMP/many.csv"
[ "$(wc -l < "$TMP/many.csv")" = "$(wc -l < "$TMP/s2.csv")" ] || fail "the 1,100th shard was dropped"

# every CSV the sweep writes merges back: --all, a saturated 405B point, --rules
"$BIN" --model meta-llama/Llama-3.1-8B --gpus 1,2 --batch 1,64 --seq 512,4096 --all --quiet \
  --budget 24GiB --out "$TMP/all.csv"
expect_exit 0 "$BIN" merge "$TMP/all.csv" --top 0 --out "$TMP/all-m.csv"
cmp -s "$TMP/all.csv" "$TMP/all-m.csv" || fail "--all CSV changed through merge"
expect_exit 1 "$BIN" --model meta-llama/Llama-3.1-405B --gpus 1 --batch 65536 --seq 1048576 --all \
  --grad-ckpt off --precision fp32 --quiet --out "$TMP/big.csv"
expect_exit 0 "$BIN" merge "$TMP/big.csv" --top 0 --out "$TMP/big-m.csv"
cmp -s "$TMP/big.csv" "$TMP/big-m.csv" || fail "saturated CSV changed through merge"
"$BIN" --model google/gemma-2b --finetune qlora --gpus 1 --batch 1,2 --seq 512 --quiet \
  --rules "$PROJECT/rules" --out "$TMP/rules.csv"
expect_exit 0 "$BIN" merge "$TMP/rules.csv" --out "$TMP/rules-m.csv"
cmp -s "$TMP/rules.csv" "$TMP/rules-m.csv" || fail "--rules CSV changed through merge"
finish
