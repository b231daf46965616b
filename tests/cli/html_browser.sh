# The HTML report in a real browser: headless Chromium loads a small report under its
# Content-Security-Policy; the DOM must hold the charts and the ranked rows, the sorting
# script must have run (a CSP hash mismatch or a JS error would stop it) and sorted by the
# URL's #sort=-peak_gib numerically, and the console must stay silent (no errors, no
# refused loads). A screenshot is kept as the test artifact: html_report.png in
# $LLMEM_TEST_ARTIFACTS, else in the working directory (ctest's: the build's tests/).
# Skipped (77) without Chromium; CI installs it with `apt-get install -y chromium`.
source "$(dirname "$0")/../cli_lib.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "SKIP: $CHROMIUM not found (apt-get install -y chromium)"
  exit 77
fi
ART=${LLMEM_TEST_ARTIFACTS:-$PWD}
mkdir -p "$ART"
cd "$PROJECT"

# no network, no profile, no background services: the page must stand alone
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --enable-logging=stderr --v=0)
browse() { # browse STDERR_FILE ARGS...: one Chromium run with a fresh profile
  local err=$1; shift
  timeout 120 "$CHROMIUM" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$TMP")" "$@" 2>"$err"
}
console_clean() { # console_clean STDERR_FILE WHAT
  if grep -E 'CONSOLE|Uncaught|Refused|Content Security Policy' "$1" >"$TMP/console"; then
    fail "$2: browser console: $(head -c 600 "$TMP/console")"
  fi
}

"$BIN" --model Qwen/Qwen2.5-0.5B --gpu A10G-24GB --methods single,cdp --gpus 1,2 --batch 1,2,4 \
  --seq 512 --precision bf16 --finetune full,lora --grad-ckpt on --optimizer adamw --margin 0 --quiet \
  --out "$TMP/report.html"

browse "$TMP/dom.err" --dump-dom "file://$TMP/report.html#sort=-peak_gib" >"$TMP/dom.html" \
  || fail "chromium --dump-dom failed: $(tail -c 400 "$TMP/dom.err")"
console_clean "$TMP/dom.err" "report"
[ "$(grep -o '<svg class="chart"' "$TMP/dom.html" | wc -l)" -ge 3 ] || fail "charts missing"
[ "$(grep -o '<tr data-rank=' "$TMP/dom.html" | wc -l)" = 12 ] || fail "table rows missing"
grep -qF 'class="data sortable js-sortable"' "$TMP/dom.html" || fail "the sort script did not run"
if command -v python3 >/dev/null; then # the #sort= sorted the rows by peak, descending
  python3 - "$TMP/dom.html" <<'PY' || fail "rows are not sorted by peak_gib descending"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
table = dom[dom.index('id="ranked-table"'):]
heads = re.findall(r"<th[^>]*data-key=\"([a-z_]+)\"[^>]*>", table)
col = heads.index("peak_gib")
assert 'data-key="peak_gib" aria-sort="descending"' in table
peaks = []
for row in re.findall(r"<tr data-rank=\"\d+\"[^>]*>(.*?)</tr>", table, re.S):
    cells = re.findall(r"<td([^>]*)>", row)
    peaks.append(float(re.search(r"data-v=\"([^\"]*)\"", cells[col]).group(1)))
assert len(peaks) == 12 and peaks == sorted(peaks, reverse=True), peaks
PY
fi

# the per-recipe headline: one row per recipe (full and LoRA at seq 512), with its fewest
# GPUs; the method comparison names its recipe
[ "$(sed -n '/id="recipe-table"/,/<\/table>/p' "$TMP/dom.html" | grep -c '<tr><td>Qwen/Qwen2.5-0.5B</td>')" = 2 ] \
  || fail "the recipe table does not hold one row per recipe"
grep -q '<h4>Methods compared for one recipe: full, bf16, adamw, seq 512</h4>' "$TMP/dom.html" \
  || fail "the method comparison does not say which recipe it covers"
grep -q 'class="kpi"' "$TMP/dom.html" || fail "no stat cards"
# the stat cards do not clip their numbers, even on a narrow window (the page's script
# marks a clipped card data-clipped; a stale script hash would leave the sort unmarked)
for width in 360 1400; do
  browse "$TMP/narrow.err" --window-size=$width,1200 --dump-dom "file://$TMP/report.html" \
    >"$TMP/narrow.html" || fail "chromium failed at width $width"
  grep -qF 'js-sortable' "$TMP/narrow.html" || fail "the page script did not run at width $width"
  grep -q '<b data-clipped' "$TMP/narrow.html" && fail "a stat card clips its number at width $width"
done
# a large space: the counts are 8+ digits
"$BIN" --model Qwen/Qwen2.5-0.5B --model meta-llama/Llama-3.1-8B --gpu A10G-24GB --batch 1..64 \
  --recipes all --quiet --out "$TMP/big.html" || true
browse "$TMP/big.err" --window-size=360,1200 --dump-dom "file://$TMP/big.html" >"$TMP/big.dom" \
  || fail "chromium failed on the large report"
grep -q '<b data-clipped' "$TMP/big.dom" && fail "a stat card clips its number in the large report"
# the scatter draws at most 2,000 of its ranked layouts and says which (html_charts.c)
python3 - "$TMP/big.html" <<'PY' || fail "the throughput/memory scatter is not capped as it says"
import re, sys
s = open(sys.argv[1]).read()
sec = s[s.index('id="tradeoff"'):s.index('</section>', s.index('id="tradeoff"'))]
n = sec.count('<circle')
m = re.search(r'(\d+) of the (\d+) ranked layouts: the Pareto front and the best (\d+) of each recipe', sec)
assert m and int(m.group(1)) == n <= 2000 < int(m.group(2)), (n, m and m.groups())
PY

# the screenshot, for people to look at
shot="$ART/html_report.png"
rm -f "$shot"
browse "$TMP/shot.err" --screenshot="$shot" --window-size=1400,2400 "file://$TMP/report.html" \
  >/dev/null || fail "chromium --screenshot failed"
console_clean "$TMP/shot.err" "screenshot"
[ "$(head -c 4 "$shot" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ] \
  || fail "no PNG screenshot at $shot"

# the hostile model name stays text in the DOM: no script element comes from it
"$BIN" --model tests/data/xss/config.json --gpus 1 --methods single --batch 1,2 --seq 512 \
  --precision bf16 --finetune lora --grad-ckpt on --optimizer adamw --quiet --out "$TMP/r.html"
browse "$TMP/xss.err" --dump-dom "file://$TMP/r.html" >"$TMP/xss.html" || fail "chromium failed"
console_clean "$TMP/xss.err" "XSS report"
grep -qF '<script>alert(1)' "$TMP/xss.html" && fail "the hostile name became markup"
grep -qF '&lt;script&gt;alert(1)' "$TMP/xss.html" || fail "the hostile name is not shown as text"
echo "screenshot: $shot"
finish
