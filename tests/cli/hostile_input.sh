# Hostile measured CSVs and configs (issue 14): a broken config.json beside the CSV is exit 3
# naming its line, control characters of cells never reach the terminal raw, line numbers
# hold for CR-only files, and --fail-above takes only a finite number.
source "$(dirname "$0")/../cli_lib.sh"

H="model,method,gpus,tp,micro_batch,seq_len,precision,finetune,lora_r,lora_targets,quant,grad_ckpt,optimizer,metric,measured_gib,gpu,framework,source"
ROW="single,1,1,1,512,bf16,full,0,,none,on,adamw,allocated,20.0,A100-SXM-80GB,hf,test"

# a config.json beside the CSV that does not read: exit 3 with its line, not a skipped row
mkdir -p "$TMP/m/tiny"
printf '{"model_type": "llama", "hidden_size": 64,\n "vocab_size": 1000,\n "num_hidden_layers": "2",\n "num_attention_heads": 4, "intermediate_size": 128}\n' \
  > "$TMP/m/tiny/config.json"
printf '%s\ntiny,%s\n' "$H" "$ROW" > "$TMP/m/rows.csv"
expect_exit 3 "$BIN" validate --measured "$TMP/m/rows.csv" --out "$TMP/v.csv"
expect_err "tiny/config.json:3: num_hidden_layers:"
[ ! -e "$TMP/v.csv" ] || fail "validate wrote a CSV despite a broken config.json"
expect_exit 3 "$BIN" fit --measured "$TMP/m/rows.csv" --out "$TMP/r.csv"
expect_err "tiny/config.json:3: num_hidden_layers:"
# a JSON syntax error: its line (and column in the message)
printf '{"model_type": "llama",\n "hidden_size": 64,,\n}\n' > "$TMP/m/tiny/config.json"
expect_exit 3 "$BIN" validate --measured "$TMP/m/rows.csv"
expect_err "tiny/config.json:2: invalid JSON at column"
# a model that is neither in the catalog nor beside the CSV stays a skipped row
printf '%s\nno-such/model,%s\n' "$H" "$ROW" > "$TMP/m/rows.csv"
expect_exit 0 "$BIN" validate --measured "$TMP/m/rows.csv"
grep -q "skipped: model not in the catalog" "$TMP/out" || fail "unknown model not skipped"

# control characters of cells are escaped on the terminal (rows, summary, messages)
esc=$(printf '\033')
printf '%s\n"evil\033[2J/model",single,1,1,1,512,bf16,full,0,,none,on,adamw,allocated,20.0,A100-SXM-80GB,hf,"src\033]0;title\007"\n' \
  "$H" > "$TMP/ctl.csv"
expect_exit 0 "$BIN" validate --measured "$TMP/ctl.csv"
grep -q "$esc" "$TMP/out" && fail "a raw ESC reached stdout"
grep -qF 'evil\x1b[2J/model' "$TMP/out" || fail "the model's ESC is not shown as \\x1b: $(head -3 "$TMP/out")"
grep -qF 'src\x1b]0;title\x07' "$TMP/out" || fail "the source's controls are not escaped"
printf '%s\nmeta-llama/Llama-3.1-8B,single,1,1,1,512,bf16,full,0,,none,on,adamw,allocated,"1\033[31m",A100-SXM-80GB,hf,x\n' \
  "$H" > "$TMP/ctl2.csv"
expect_exit 3 "$BIN" validate --measured "$TMP/ctl2.csv"
grep -q "$esc" "$TMP/err" && fail "a raw ESC reached stderr"
expect_err '\x1b[31m'

# CR-only line ends: the bad cell's line is counted right
printf '%s\rmeta-llama/Llama-3.1-8B,%s\r\rmeta-llama/Llama-3.1-8B,single,1,1,1,512,bf16,full,0,,none,on,adamw,allocated,lots,A100-SXM-80GB,hf,x\r' \
  "$H" "$ROW" > "$TMP/cr.csv"
expect_exit 3 "$BIN" validate --measured "$TMP/cr.csv"
expect_err "cr.csv:4: measured_gib:"

# --fail-above takes a finite number >= 0
for bad in nan inf -inf '' ' ' 1e999 -1 5x; do
  expect_exit 2 "$BIN" validate --measured "$TMP/m/rows.csv" --fail-above "$bad"
  expect_err "invalid value '$bad' for --fail-above"
done
finish
