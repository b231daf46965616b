# validate on the shipped measurements: the median absolute error stays under the bound the
# README states; every row is either predicted or listed with its reason.
source "$(dirname "$0")/../cli_lib.sh"
BOUND=${LLMEM_VALIDATE_BOUND:-10}
"$BIN" validate --measured "$PROJECT/datasets/measured/public.csv" --out "$TMP/v.csv" \
  --fail-above "$BOUND" > "$TMP/report.txt" || fail "median error above $BOUND % (see below)"
tail -12 "$TMP/report.txt"
rows=$(($(wc -l < "$PROJECT/datasets/measured/public.csv") - 1))
got=$(($(wc -l < "$TMP/v.csv") - 1))
[ "$rows" = "$got" ] || fail "validate wrote $got rows for $rows measured rows"
head -1 "$TMP/v.csv" | grep -qx 'file,line,source,model,metric,measured_gib,predicted_gib,error_pct,status' \
  || fail "validation CSV header"
grep -q 'skipped: ' "$TMP/v.csv" || fail "no skipped rows listed with a reason"
finish
