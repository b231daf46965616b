# --lengths FILE: the loss path's cached segments replayed on the user's own sample lengths
# (README "Variable-length batches"), and the errors of the file.
source "$(dirname "$0")/../cli_lib.sh"

Q="explain --model Qwen/Qwen-7B-Chat --finetune lora --lora-targets q+k+v --seq 2048 --gpu A100-SXM-80GB"
# every sample longer than --seq: every step is cut to the cap, the packed steady state
printf 'tokens,text\n9000,a\n2049,b\n12000,c\n' > "$TMP/long.csv"
"$BIN" $Q --lengths "$TMP/long.csv" > "$TMP/long.txt"
"$BIN" $Q --data packed > "$TMP/packed.txt"
"$BIN" $Q > "$TMP/uniform.txt"
[ "$(grep '^peak' "$TMP/long.txt")" = "$(grep '^peak' "$TMP/packed.txt")" ] \
  || fail "samples all over --seq: not the packed peak: $(grep '^peak' "$TMP/long.txt")"
grep -q '^loss path  qwen-v1: 12.00 allocated, 14.00 reserved, 12.00 held at the peak (bytes per token and vocab entry; reserved and held on the --lengths data)$' \
  "$TMP/long.txt" || fail "loss path on the --lengths data: $(grep '^loss path' "$TMP/long.txt")"
grep -q '^loss path  qwen-v1: 12.00 allocated, 48.92 reserved' "$TMP/uniform.txt" \
  || fail "without --lengths: lengths uniform up to the cap"
"$BIN" $Q --lengths "$TMP/long.csv" --format json > "$TMP/long.json"
python3 - "$TMP/long.json" <<'PY' || fail "explain JSON: loss_path on the --lengths data, shown_bytes"
import json, sys
j = json.load(open(sys.argv[1])); lp = j["loss_path"]
ok = (lp["name"], lp["reserved"], lp["held"], lp["on_lengths"]) == ("qwen-v1", 14.0, 12.0, True)
sys.exit(0 if ok and j["shown_bytes"] >= j["reserved_bytes"] else 1)
PY
# explain says why device sits below reserved: the cached segments wholly free when memory
# runs short; device + them is what nvidia-smi shows (reserved + the context, under 1 GiB)
awk '/^peak/ { d = $2; r = substr($5, 2) } /^cache/ { c = $2 }
  END { exit !(c > 0 && d + c >= r && d + c - r < 1) }' "$TMP/uniform.txt" \
  || fail "explain's cache line: $(grep -E '^(peak|cache)' "$TMP/uniform.txt")"
# samples far below --seq: a warning, and steps of --seq still counted
printf 'tokens\n100\n300\n' > "$TMP/short.csv"
expect_exit 0 "$BIN" $Q --lengths "$TMP/short.csv"
expect_err "warning: --lengths: the longest sample has 300 tokens, fewer than --seq 2048"

# the sweep: same bytes for any thread count
S="--model Qwen/Qwen-7B-Chat --gpu A100-SXM-80GB --finetune lora --seq 1024,2048 --quiet"
printf 'tokens\n' > "$TMP/mix.csv"
for i in $(seq 1 200); do echo $(( (i * 37) % 3000 + 1 )) >> "$TMP/mix.csv"; done
"$BIN" $S --lengths "$TMP/mix.csv" --threads 1 --out "$TMP/t1.csv"
"$BIN" $S --lengths "$TMP/mix.csv" --threads 2 --out "$TMP/t2.csv"
cmp -s "$TMP/t1.csv" "$TMP/t2.csv" || fail "--lengths sweep differs between 1 and 2 threads"
"$BIN" $S --out "$TMP/t0.csv"
cmp -s "$TMP/t0.csv" "$TMP/t1.csv" && fail "--lengths did not change the sweep"
# the reports say which data the answer assumed: JSON inputs, and the HTML's command
"$BIN" $S --lengths "$TMP/mix.csv" --data variable --alloc-conf expandable --out "$TMP/r.json" --out "$TMP/r.html"
python3 - "$TMP/r.json" "$TMP/mix.csv" <<'PY' || fail "JSON inputs: data, alloc_conf, lengths"
import json, sys
m = json.load(open(sys.argv[1]))["inputs"]
sys.exit(0 if (m["data"], m["alloc_conf"], m["lengths"]) == ("variable", "expandable", sys.argv[2]) else 1)
PY
grep -q -- "--alloc-conf expandable --lengths $TMP/mix.csv" "$TMP/r.html" || fail "the HTML command lacks --lengths"
grep -q "<dt>Data</dt><dd>variable-length batches, each padded to its longest sample; samples drawn from <code>$TMP/mix.csv</code>, cut to the sequence length; caching allocator with expandable segments</dd>" \
  "$TMP/r.html" || fail "the HTML's Data entry"
"$BIN" $S --data packed --out "$TMP/p.json" --out "$TMP/p.html"
grep -q -- "--data packed" "$TMP/p.html" || fail "the HTML command lacks --data packed"
grep -q "<dt>Data</dt><dd>packed batches" "$TMP/p.html" || fail "the HTML's Data entry of a packed sweep"
python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["inputs"]; sys.exit(0 if m["data"] == "packed" and m["lengths"] is None else 1)' \
  "$TMP/p.json" || fail "JSON inputs of a packed sweep"

# errors: file, line and column; exit codes of DESIGN.md section 4
while IFS='|' read -r name body want; do
  printf "$body" > "$TMP/$name.csv"
  expect_exit 3 "$BIN" $Q --lengths "$TMP/$name.csv"
  expect_err "$want"
done <<'CASES'
zero|tokens\n512\n0\n|zero.csv:3: tokens: 0 is out of range
nocol|length\n512\n|nocol.csv:1: tokens: missing column
empty|tokens\n|empty.csv:1: tokens: no samples
text|tokens\n12x\n|text.csv:2: tokens:
CASES
expect_exit 4 "$BIN" $Q --lengths "$TMP/none.csv"
expect_exit 2 "$BIN" $Q --lengths "$TMP/long.csv" --data packed
expect_err "--lengths describes variable-length batches"
expect_exit 2 "$BIN" explain --model facebook/opt-1.3b --paper --lengths "$TMP/long.csv"
expect_exit 2 "$BIN" explain --model facebook/opt-1.3b --stack colossal --lengths "$TMP/long.csv"
expect_err "--stack colossal"
expect_exit 2 "$BIN" explain --measured "$PROJECT/datasets/measured/public-2.csv" --id SWB-10 \
  --lengths "$TMP/long.csv"
expect_err "--lengths"
finish
