# The error band (README "Error band"): the shipped table is what datasets/band.sh makes
# from the repo's measurements today, and on those measurements, leave-one-source-out,
# at least 90 % of the measured peaks fall inside their band (issue 13).
source "$(dirname "$0")/../cli_lib.sh"
sh "$PROJECT/datasets/band.sh" "$BIN" "$TMP/band.csv" || fail "datasets/band.sh failed"
cmp -s "$TMP/band.csv" "$PROJECT/datasets/band.csv" || {
  diff "$PROJECT/datasets/band.csv" "$TMP/band.csv"
  fail "datasets/band.csv is stale: run datasets/band.sh"
}
args=()
for f in "$PROJECT"/datasets/measured/*.csv; do args+=(--measured "$f"); done
"$BIN" validate "${args[@]}" --summary --out "$TMP/v.csv" > "$TMP/report.txt" || fail "validate failed"
sed -n '/^error band/,$p' "$TMP/report.txt"
# coverage from the CSV itself (rows with status ok and a band) agrees with validate's line
python3 - "$TMP/v.csv" "$TMP/report.txt" <<'PY' || fail "band coverage in the CSV and in validate's summary disagree"
import csv, re, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ok" and r["predicted_hi_gib"]]
inside = sum(float(r["predicted_lo_gib"]) - 5e-4 <= float(r["measured_gib"]) <= float(r["predicted_hi_gib"]) + 5e-4 for r in rows)
line = [l for l in open(sys.argv[2]) if l.startswith("all ")][-1].split()
print(f"coverage {inside}/{len(rows)} = {100 * inside / len(rows):.1f} %; validate: {line}")
sys.exit(0 if int(line[1]) == len(rows) and int(line[3]) == inside else 1)
PY
# coverage over all rows with a band, leave-one-source-out: issue 13 asked for 90 %. Stop 22
# had 91.8 % (135 of 147); stop 23's model passes narrowed the bands of the groups they
# improved and left 132 of 147 (89.8 %, a bound of 89 % then); stop 24's physical LoRA count
# with litgpt's Fabric logits and bitsandbytes 0.42's kept inputs (README "LoRA's saved
# inputs") brought it to 133 of 147, 90.5 %: the bound is issue 13's 90 % again. Stop 36: 395
# of 423 (93.4 %) once our own grids count as one source (validate_band.c band_sources); 380
# (89.8 %) with them as six, after the FSDP1 root-shard term made six of their rows exact.
python3 - "$TMP/report.txt" <<'PY' || fail "band coverage fell below 90 %"
import sys
line = [l for l in open(sys.argv[1]) if l.startswith("all ")][-1].split()
sys.exit(0 if int(line[1]) >= 50 and int(line[3]) >= 0.90 * int(line[1]) else 1)
PY
# --margin: one configuration, a budget between its point prediction and its band's upper
# end (from explain): only --margin 0 fits it, and exit 1 says so
cfg=(--model facebook/opt-125m --batch 1 --seq 512 --precision bf16 --finetune full
     --optimizer adamw --grad-ckpt on --gpu A10G-24GB)
"$BIN" explain "${cfg[@]}" --method single --format json > "$TMP/x.json"
read -r peak hi budget < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p, h = d["peak_bytes"], d["band"]["hi_bytes"]
print(p, h, (p + h) // 2 // 2**20)' "$TMP/x.json")
[ "$hi" -gt "$peak" ] || fail "the band's upper end ($hi) is not above the peak ($peak)"
gib() { python3 -c "print('%.2f' % ($1 / 2**30))"; }
one=("${cfg[@]}" --methods single --gpus 1 --budget "${budget}MiB")
expect_exit 1 "$BIN" "${one[@]}" --out "$TMP/auto.csv"
expect_err "it fits on the point prediction alone ($(gib "$peak") GiB), not with the margin ($(gib "$hi") GiB, the error band's upper end); --margin 0 accepts it"
expect_exit 0 "$BIN" "${one[@]}" --margin 0 --out "$TMP/zero.csv"
python3 - "$TMP/zero.csv" "$hi" <<'PY' || fail "peak_hi_gib is not the band's upper end: $(tail -1 "$TMP/zero.csv")"
import csv, sys
row = list(csv.DictReader(open(sys.argv[1])))[-1]
assert row["peak_hi_gib"] == "%.3f" % (int(sys.argv[2]) / 2**30), row["peak_hi_gib"]
PY
# a fixed margin: peak + PCT % must fit
pct=$(python3 -c "print(int(200 * ($budget * 2**20 - $peak) / $peak) / 2 + 1)")
expect_exit 1 "$BIN" "${one[@]}" --margin "$pct"
expect_err "not with the margin ("
expect_exit 0 "$BIN" "${one[@]}" --margin "$(python3 -c "print(max(0, $pct - 1.5))")" --out "$TMP/pct.csv"
expect_exit 2 "$BIN" "${one[@]}" --margin lots
expect_exit 2 "$BIN" "${one[@]}" --margin -5
# a damaged table is an input error naming file, line and column
mkdir -p "$TMP/data" && cp "$PROJECT"/datasets/models.csv "$PROJECT"/datasets/gpus.csv "$TMP/data/"
printf 'stack,finetune,data,rows,sources,lo,hi\nhf,*,packed,19,3,0.9,1.1\n' > "$TMP/data/band.csv"
expect_exit 3 "$BIN" "${one[@]}" --catalog "$TMP/data"
expect_err "band.csv:2: stack: a group leaves open the fields after the first '*'"
printf 'stack,finetune,data,rows,sources,lo,hi\nhf,*,*,19,3,1.2,1.1\n' > "$TMP/data/band.csv"
expect_exit 3 "$BIN" "${one[@]}" --catalog "$TMP/data"
expect_err "band.csv:2: lo"
# a data folder without band.csv has no band: --margin auto is the point prediction
rm "$TMP/data/band.csv"
expect_exit 0 "$BIN" "${one[@]}" --catalog "$TMP/data" --out "$TMP/none.csv"
finish
