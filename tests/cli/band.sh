# The error band (README "Error band"): the shipped table is what datasets/band.sh makes
# from the repo's measurements today, and on those measurements, leave-one-source-out,
# at least 90 % of the measured peaks fall inside their band.
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
# coverage from the CSV itself: rows with status ok and a band
python3 - "$TMP/v.csv" <<'PY' || fail "band coverage below 90 %"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["status"] == "ok" and r["predicted_hi_gib"]]
inside = sum(float(r["predicted_lo_gib"]) - 5e-4 <= float(r["measured_gib"]) <= float(r["predicted_hi_gib"]) + 5e-4 for r in rows)
print(f"coverage {inside}/{len(rows)} = {100 * inside / len(rows):.1f} %")
sys.exit(0 if len(rows) >= 50 and inside >= 0.9 * len(rows) else 1)
PY
grep -Eq '^all +[0-9]+ +0 +[0-9]+ +(9[0-9]|100)\.[0-9] ' "$TMP/report.txt" \
  || fail "validate's own coverage line (all rows with a band, >= 90 %)"
finish
