# Outputs (README "Contract extensions"): written whole or not at all by every writer, never
# through a planted temporary link, through symbolic links, FIFOs and character devices,
# and every write to stdout checked.
source "$(dirname "$0")/../cli_lib.sh"

M=(--model meta-llama/Llama-3.1-8B --gpus 1 --batch 1,2 --seq 512 --quiet)
MEASURED="$PROJECT/datasets/measured/public.csv"

# a planted <out>.tmp symbolic link is never followed, by any writer
echo secret > "$TMP/victim"
for out in v.csv band.csv r.csv s.csv; do ln -s "$TMP/victim" "$TMP/$out.tmp"; done
{ head -1 "$PROJECT/datasets/measured/public-2.csv"
  grep '^Qwen/Qwen-7B-Chat,' "$PROJECT/datasets/measured/public-2.csv" || true; } > "$TMP/qwen7b.csv"
expect_exit 0 "$BIN" fit --measured "$TMP/qwen7b.csv" --match stack=hf-4.31 --with-model add \
  --set mine --out "$TMP/r.csv"
expect_exit 0 "$BIN" validate --measured "$MEASURED" --out "$TMP/v.csv"
expect_exit 0 "$BIN" validate --measured "$MEASURED" --write-band "$TMP/band.csv"
expect_exit 0 "$BIN" "${M[@]}" --out "$TMP/s.csv"
[ "$(cat "$TMP/victim")" = secret ] || fail "a writer followed a planted <out>.tmp link"
head -1 "$TMP/v.csv" | grep -q '^file,line,' || fail "validate --out wrote no CSV"
head -1 "$TMP/r.csv" | grep -q '^set,candidate,' || fail "fit --out wrote no rules"
ls "$TMP" | grep -q '\.tmp\.' && fail "a temporary file was left behind: $(ls "$TMP")"

# a symbolic link is written through: the file it points to changes, the link stays
echo old > "$TMP/real.csv"
ln -s real.csv "$TMP/link.csv"
expect_exit 0 "$BIN" "${M[@]}" --out "$TMP/link.csv"
[ -L "$TMP/link.csv" ] || fail "the output link was replaced by a file"
head -1 "$TMP/real.csv" | grep -q '^rank,' || fail "the link's target was not written"
ln -s nowhere "$TMP/dangling.csv"
expect_exit 4 "$BIN" "${M[@]}" --out "$TMP/dangling.csv"
expect_err "dangling.csv: symbolic link to nothing"
[ ! -e "$TMP/nowhere" ] || fail "a dangling link was followed"

# a FIFO is written through and stays a FIFO; /dev/null works; /dev/full is exit 4
mkfifo "$TMP/fifo"
cat "$TMP/fifo" > "$TMP/from-fifo" &
expect_exit 0 "$BIN" "${M[@]}" --format csv --out "$TMP/fifo"
wait
[ -p "$TMP/fifo" ] || fail "the FIFO was replaced"
head -1 "$TMP/from-fifo" | grep -q '^rank,' || fail "nothing came through the FIFO"
expect_exit 0 "$BIN" "${M[@]}" --format csv --out /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a device"
if [ -w /dev/full ]; then
  expect_exit 4 "$BIN" "${M[@]}" --format csv --out /dev/full
  expect_err "/dev/full: write failed"
fi
# a directory is refused
mkdir "$TMP/dir.csv"
expect_exit 4 "$BIN" "${M[@]}" --out "$TMP/dir.csv"
expect_err "not a regular file"

# an output that cannot be written is found before the sweep, so no other output is written
# and no point is evaluated: no summary line on stderr
expect_exit 4 "$BIN" --model meta-llama/Llama-3.1-8B --gpus 1 --batch 1,2 --seq 512 --out "$TMP/first.csv" --out "$TMP/no-such-dir/r.html"
expect_err "no-such-dir/r.html: cannot create a temporary file beside it"
grep -q 'points,' "$TMP/err" && fail "the sweep ran before its output was found unwritable"
[ ! -e "$TMP/first.csv" ] || fail "an output was written beside one that cannot be"
expect_exit 4 "$BIN" validate --measured "$MEASURED" --out "$TMP/first.csv" \
  --write-band "$TMP/no-such-dir/band.csv"
expect_err "no-such-dir/band.csv: cannot create a temporary file beside it"
[ ! -s "$TMP/out" ] || fail "validate printed before its output was found unwritable"
[ ! -e "$TMP/first.csv" ] || fail "validate wrote --out beside a --write-band that cannot be"
expect_exit 4 "$BIN" fit --measured "$TMP/qwen7b.csv" --with-model add --set x \
  --out "$TMP/no-such-dir/rules.csv"
expect_err "no-such-dir/rules.csv: cannot create a temporary file beside it"
[ ! -s "$TMP/out" ] || fail "fit printed before its output was found unwritable"
ls "$TMP" | grep -q '\.tmp\.' && fail "the output check left a temporary file: $(ls "$TMP")"

# --out - is stdout: the table unless --format says otherwise, beside file outputs
"$BIN" "${M[@]}" --out - > "$TMP/dash.txt" || fail "--out - failed"
head -1 "$TMP/dash.txt" | grep -q '^GPU ' || fail "--out - did not print the table: $(head -1 "$TMP/dash.txt")"
"$BIN" "${M[@]}" --format csv --out - --out "$TMP/dash.json" > "$TMP/dash.csv" || fail "--out - --out x.json failed"
head -1 "$TMP/dash.csv" | grep -q '^rank,' || fail "--format csv --out - did not print CSV"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/dash.json" || fail "x.json beside --out - is no JSON"

# validate --out - keeps stdout to the CSV: its table goes to stderr
"$BIN" validate --measured "$MEASURED" --out - > "$TMP/vdash.csv" 2> "$TMP/vdash.err" ||
  fail "validate --out - failed"
head -1 "$TMP/vdash.csv" | grep -q '^file,line,' || fail "validate --out - printed no CSV first"
grep -q '^id ' "$TMP/vdash.csv" && fail "validate --out - mixed its table into the CSV"
grep -q '^id ' "$TMP/vdash.err" || fail "validate --out - lost its table"

# a replaced regular file keeps its permissions
printf 'x\n' > "$TMP/perm.csv"; chmod 640 "$TMP/perm.csv"
expect_exit 0 "$BIN" "${M[@]}" --out "$TMP/perm.csv"
[ "$(stat -c %a "$TMP/perm.csv")" = 640 ] || fail "mode changed: $(stat -c %a "$TMP/perm.csv")"

# every command's stdout is checked: exit 4 with a message on a full disk
if [ -w /dev/full ]; then
  for cmd in "gpus" "models" "explain --model meta-llama/Llama-3.1-8B" \
             "explain --model meta-llama/Llama-3.1-8B --format json" \
             "validate --measured $MEASURED" "--help" "${M[*]}"; do
    got=0
    # shellcheck disable=SC2086
    "$BIN" $cmd > /dev/full 2> "$TMP/err" || got=$?
    [ "$got" = 4 ] || fail "'$cmd > /dev/full' exit $got (want 4)"
    expect_err "stdout: write failed"
  done
fi
# one number formatter (reports/numfmt.h): every fixed-decimal field of the JSON is the CSV's
"$BIN" "${M[@]}" --out "$TMP/n.csv" --out "$TMP/n.json"
python3 - "$TMP/n.csv" "$TMP/n.json" <<'PY' || fail "CSV and JSON round differently"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
js = json.load(open(sys.argv[2]))["rows"]
assert len(rows) == len(js) > 0
for c, j in zip(rows, js):
    for k, v in c.items():
        if k.endswith(("_gib", "_s")) and "." in v:
            assert float(v) == j[k], (k, v, j[k])
PY
finish
