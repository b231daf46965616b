# Same inputs, same bytes: any thread count, any shard split followed by merge; pruning
# loses no fitting configuration.
source "$(dirname "$0")/../cli_lib.sh"
args=(--budget 24GiB --gpu A10G-24GB --model Qwen/Qwen2.5-0.5B --model meta-llama/Llama-3.2-1B
      --model microsoft/phi-2 --gpus 1,4,16 --methods single,adp,zero1,pp,offload --pp 2,4
      --precision bf16,fp32 --batch 1..24 --seq 512,1024,2048 --top 0 --quiet)

"$BIN" "${args[@]}" --threads 1 --out "$TMP/t1.csv"
"$BIN" "${args[@]}" --threads 2 --out "$TMP/t2.csv"
cmp -s "$TMP/t1.csv" "$TMP/t2.csv" || fail "--threads 1 and 2 differ"
"$BIN" "${args[@]}" --threads 2 --no-prune --out "$TMP/np.csv"
cmp -s "$TMP/t1.csv" "$TMP/np.csv" || fail "--no-prune changes the fitting set"
for k in 1 2 3; do
  "$BIN" "${args[@]}" --threads 2 --shard "$k/3" --out "$TMP/s$k.csv"
done
"$BIN" merge "$TMP/s1.csv" "$TMP/s2.csv" "$TMP/s3.csv" --out "$TMP/merged.csv"
cmp -s "$TMP/t1.csv" "$TMP/merged.csv" || fail "shards + merge differ from one run"

# the same with a top-k cut: shards keep their own top 20, the merge keeps the global 20
"$BIN" "${args[@]}" --top 20 --out "$TMP/top.csv"
for k in 1 2; do "$BIN" "${args[@]}" --top 20 --shard "$k/2" --out "$TMP/p$k.csv"; done
"$BIN" merge "$TMP/p1.csv" "$TMP/p2.csv" --top 20 --out "$TMP/ptop.csv"
cmp -s "$TMP/top.csv" "$TMP/ptop.csv" || fail "top-20 shards + merge differ from one run"

# the LoRA rank axis is pruned too, and loses nothing
rank=(--budget 24GiB --gpu A10G-24GB --model meta-llama/Llama-3.1-8B --finetune lora,qlora
      --lora-r 8,64,512,2048 --gpus 1,4,16 --methods single,cdp,zero2,pp,offload --pp 4 --top 0 --quiet)
"$BIN" "${rank[@]}" --out "$TMP/r1.csv"
"$BIN" "${rank[@]}" --no-prune --out "$TMP/r2.csv"
cmp -s "$TMP/r1.csv" "$TMP/r2.csv" || fail "rank pruning changes the fitting set"

# the pruned run evaluates fewer points and reports it
out=$("$BIN" --budget 24GiB --gpu A10G-24GB --model microsoft/phi-2 --batch 1..24 \
      --out "$TMP/x.csv" 2>&1 >/dev/null)
echo "$out" | grep -q "pruned" || fail "summary lacks the pruned count: $out"
finish
