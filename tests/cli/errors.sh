# Bad input never crashes: documented exit codes, a message naming file/line/key, no output.
source "$(dirname "$0")/../cli_lib.sh"

expect_exit 2 "$BIN" --budget 80 --out "$TMP/a.csv"
expect_err "invalid value '80' for --budget"
# a bad number names its range; lists only where the command takes them
expect_exit 2 "$BIN" --seq 0
expect_err "invalid value '0' for --seq (whole numbers from 2 to 1048576: a comma list, ranges like 1..64)"
expect_exit 2 "$BIN" explain --model meta-llama/Llama-3.1-8B --micro-batch 0
expect_err "invalid value '0' for --micro-batch (a whole number from 1 to 65536)"
expect_exit 2 "$BIN" --threads 0
expect_err "invalid value '0' for --threads (a whole number from 1 to 4096)"
expect_exit 2 "$BIN" --budget 80GiB --model no/such-model
expect_err "unknown model 'no/such-model'"
expect_exit 2 "$BIN" --budget 80GiB --frobnicate
expect_err "unknown option '--frobnicate' (see --help)"
expect_exit 2 "$BIN" --budget 80GiB --modle gpt2
expect_err "unknown option '--modle'; did you mean --model?"
expect_exit 2 "$BIN" explain --model gpt2 --shard 1/2
expect_err "explain: takes no --shard (an option of the sweep)"
expect_exit 2 "$BIN" gpus --format=json
expect_err "gpus: takes no --format (an option of the sweep, explain, merge and devices)"
expect_exit 2 "$BIN" --budget 80GiB --batch 4..1
expect_exit 2 "$BIN" explain --model gpt2 --batch 1,2
expect_exit 2 "$BIN" --budget 80GiB --out "$TMP/report.xyz"
[ ! -e "$TMP/report.xyz" ] || fail "a report was written despite a usage error"

# a malformed config.json: exit 3, file and key named, nothing written
printf '{"model_type": "llama", "hidden_size": 4096, "vocab_size": 32000,\n "intermediate_size": 11008, "num_attention_heads": 32,\n "num_hidden_layers": "32"}\n' > "$TMP/config.json"
expect_exit 3 "$BIN" --budget 80GiB --model "$TMP/config.json" --out "$TMP/b.csv"
expect_err "config.json"
expect_err "num_hidden_layers"
[ ! -e "$TMP/b.csv" ] || fail "partial output after bad input"
printf '{"model_type": "t5", "d_model": 512}' > "$TMP/config.json"
expect_exit 3 "$BIN" explain --model "$TMP/config.json"
expect_err "model_type"
printf '{"model_type": "llama",' > "$TMP/config.json"
expect_exit 3 "$BIN" explain --model "$TMP/config.json"

# a malformed catalog: file, line and column
mkdir -p "$TMP/data"
cp "$PROJECT/datasets/gpus.csv" "$TMP/data/"
head -3 "$PROJECT/datasets/models.csv" > "$TMP/data/models.csv"
sed -i '2s/,12,768,/,12,lots,/' "$TMP/data/models.csv"
expect_exit 3 "$BIN" models --data "$TMP/data"
expect_err "models.csv:2: hidden"
printf 'model,method\n"unterminated\n' > "$TMP/m.csv"
expect_exit 3 "$BIN" validate --measured "$TMP/m.csv"
expect_err "m.csv"
# a malformed throughput: file, line and field, no validation CSV
{ head -1 "$PROJECT/datasets/measured/public.csv"
  grep ',TTF-02,' "$PROJECT/datasets/measured/public.csv" | sed 's/,7075,/,fast,/'; } > "$TMP/m.csv"
expect_exit 3 "$BIN" validate --measured "$TMP/m.csv" --out "$TMP/v.csv"
expect_err "m.csv:2: tokens_per_s_gpu: 'fast' is not a number"
[ ! -e "$TMP/v.csv" ] || fail "a validation CSV was written despite bad input"
# a bad data shape in a measured row (public-2.csv's `data` column): exit 3, file, line and
# column named, no validation CSV
{ head -1 "$PROJECT/datasets/measured/public-2.csv"
  grep ',SWB-08,' "$PROJECT/datasets/measured/public-2.csv" | sed 's/,variable,default,/,padded,default,/'; } > "$TMP/m.csv"
expect_exit 3 "$BIN" validate --measured "$TMP/m.csv" --out "$TMP/v.csv"
expect_err "m.csv:2: data: unknown value 'padded'"
[ ! -e "$TMP/v.csv" ] || fail "a validation CSV was written despite a bad data value"

# I/O errors: exit 4
expect_exit 4 "$BIN" --budget 80GiB --model gpt2 --out /nonexistent-dir/r.csv
expect_exit 4 "$BIN" validate --measured "$TMP/none.csv"

# nothing fits: exit 1, the closest miss and what binds it
expect_exit 1 "$BIN" --budget 1GiB --model meta-llama/Llama-3.1-70B --methods single --out "$TMP/none.csv"
expect_err "closest:"
expect_err "bound by"
[ -e "$TMP/none.csv" ] || fail "no report written when nothing fits"

# absurd sizes do not wrap: 405B at 128k tokens
"$BIN" explain --model meta-llama/Llama-3.1-405B --seq 131072 --micro-batch 64 --grad-ckpt off \
  --format json > "$TMP/big.json" || true
python3 -c "import json,sys; j=json.load(open('$TMP/big.json')); sys.exit(0 if j['peak_bytes'] > 2**40 else 1)" \
  || fail "405B at 128k tokens does not give a huge peak"
# an empty space says why
expect_exit 1 "$BIN" --budget 80GiB --model meta-llama/Llama-3.1-8B --gpus 16 --methods tp --quiet
expect_err "the space is empty: tp on 16 GPU(s): tp must divide the attention heads and the KV heads"
expect_exit 2 "$BIN" explain --model gpt2 --method pp --paper
expect_err "LLMem's equations (--paper, --stack colossal) cover single, cdp, adp, tp and dp+tp"
finish
