# Calibrating to one's own stack (README "Calibrating to your stack"): fit --with-model add
# on the Qwen-7B rows of public-2.csv, then apply the set: validate reproduces the fit's
# in-sample error, explain and the sweep use the set's own band.
source "$(dirname "$0")/../cli_lib.sh"
M="$TMP/qwen7b.csv"
{ head -1 "$PROJECT/datasets/measured/public-2.csv"
  grep ',Qwen/Qwen-7B-Chat,' "$PROJECT/datasets/measured/public-2.csv" || true
  grep '^Qwen/Qwen-7B-Chat,' "$PROJECT/datasets/measured/public-2.csv" || true; } > "$M"
[ "$(wc -l < "$M")" -ge 6 ] || fail "fewer than 5 Qwen-7B rows in public-2.csv"
expect_exit 0 "$BIN" fit --measured "$M" --match stack=hf-4.31 --with-model add --set mine --out "$TMP/mine.csv"
cp "$TMP/out" "$TMP/fit.txt"
cat "$TMP/fit.txt"
for key in 'mine,,with_model,add' 'mine,,band.lo,' 'mine,,band.hi,' 'mine,peak,1,' 'mine,peak,b*s*h*L,' \
           'mine,peak,fit.lomo_models,' 'mine,peak,fit.loo_mean_pct,'; do
  grep -qF "$key" "$TMP/mine.csv" || fail "the fitted set lacks '$key'"
done
grep -q 'lomo_models' "$TMP/fit.txt" || fail "fit does not report leave-one-model-out"
# applied by validate: the same in-sample error as the fit reported (mean |%|)
expect_exit 0 "$BIN" validate --measured "$M" --rules "$TMP/mine.csv" --summary
cp "$TMP/out" "$TMP/val.txt"
python3 - "$TMP/fit.txt" "$TMP/val.txt" "$TMP/mine.csv" <<'PY' || fail "fit and validate --rules disagree"
import sys
fit = next(l.split() for l in open(sys.argv[1]) if l.startswith("peak "))
rows = [l.split() for l in open(sys.argv[2]) if l.startswith("all ")]
mean_fit, mean_val = float(fit[2]), float(rows[0][5])
lo = float(next(l.split(",")[3] for l in open(sys.argv[3]) if ",band.lo," in l))
hi = float(next(l.split(",")[3] for l in open(sys.argv[3]) if ",band.hi," in l))
print(f"fit in-sample mean {mean_fit} %, validate --rules mean {mean_val} %, band x{lo}..x{hi}")
# the band line (rows, no band, inside, coverage, width): the set's own band, width hi - lo
band = rows[1]
ok = abs(mean_fit - mean_val) <= 0.06 and abs(float(band[5]) - 100 * (hi - lo)) <= 0.06
sys.exit(0 if ok and lo <= 1 <= hi else 1)
PY
# explain and the sweep: the calibrated peak carries the calibration's band
cfg=(--model Qwen/Qwen-7B-Chat --finetune lora --lora-r 8 --lora-targets attn --grad-ckpt on
     --precision bf16 --seq 2048 --gpu A100-SXM-80GB --stack hf-4.31 --rules "$TMP/mine.csv")
expect_exit 0 "$BIN" explain "${cfg[@]}" --micro-batch 1
grep -q '^band .*group calibration' "$TMP/out" || fail "explain does not show the calibration's band: $(grep '^band' "$TMP/out")"
grep -q '^peak .*by measured rule mine/peak' "$TMP/out" || fail "explain does not name the calibration"
expect_exit 0 "$BIN" "${cfg[@]}" --methods single --gpus 1 --batch 1 --out "$TMP/r.csv"
python3 - "$TMP/r.csv" "$TMP/mine.csv" <<'PY' || fail "peak_hi_gib is not the peak times the set's band.hi"
import csv, sys
hi = float(next(l.split(",")[3] for l in open(sys.argv[2]) if ",band.hi," in l))
r = next(csv.DictReader(open(sys.argv[1])))
want = int(r["peak_bytes"]) * hi / 2**30
sys.exit(0 if r["rule"] == "mine/peak" and abs(float(r["peak_hi_gib"]) - want) < 0.0015 else 1)
PY
# a band outside its range is an input error naming the line and column
sed 's/^mine,,band.hi,.*/mine,,band.hi,0.5,/' "$TMP/mine.csv" > "$TMP/bad.csv"
expect_exit 3 "$BIN" validate --measured "$M" --rules "$TMP/bad.csv"
expect_err "bad.csv:5: value: band.hi must be in [1, 1000]"
# rows measured below their own configuration's floor (validate's "inconsistent") stay out of a
# fit: with them, the litgpt calibration's leave-one-model-out error reached 138 %
expect_exit 0 "$BIN" fit --measured "$PROJECT/datasets/measured/public.csv" --match stack=litgpt \
  --with-model add --out "$TMP/lit.csv"
awk '$1 == "peak" && $11 + 0 > 30 { bad = 1 } END { exit bad }' "$TMP/out" ||
  fail "litgpt calibration: leave-one-model-out max above 30 %: $(grep '^peak' "$TMP/out")"
finish
