# The HTML report: a small sweep pinned byte for byte by tests/golden/small.html, the
# same bytes for any thread count, the self-containment rules (CSP with the script's
# hash, no URL, no external resource), escaping of a hostile model name (XSS fixture),
# and the merged report that has no live sweep data.
#
# The golden holds the engine's numbers, so it changes whenever the memory or speed model
# does. Then review the diff and regenerate it:
#   LLMEM_BLESS=1 ctest -R cli_html_golden
# (or LLMEM_BLESS=1 bash tests/cli/html_golden.sh BUILD/llmem-sweep tests .)
source "$(dirname "$0")/../cli_lib.sh"
cd "$PROJECT"

args=(--model Qwen/Qwen2.5-0.5B --gpu A10G-24GB --methods single,cdp --gpus 1,2 --batch 1,2,4
      --seq 512 --precision bf16 --finetune full,lora --grad-ckpt on --optimizer adamw --quiet)
mkdir -p "$TMP/t1" "$TMP/t2"
"$BIN" "${args[@]}" --threads 2 --out "$TMP/t2/small.html"
golden "$TMP/t2/small.html" small.html
html=$TMP/t2/small.html

# same bytes with one thread (the folder differs, the page names only the base name)
"$BIN" "${args[@]}" --threads 1 --out "$TMP/t1/small.html"
cmp -s "$TMP/t1/small.html" "$html" || fail "--threads 1 and 2 give different HTML"

# self-contained: a CSP that forbids every fetch, no URL, nothing loaded from anywhere
grep -qF "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';" "$html" \
  || fail "no CSP meta"
grep -qE 'https?://' "$html" && fail "the report contains a URL"
grep -qiE '<(img|iframe|object|embed|audio|video|source)[ >]| src=' "$html" \
  && fail "the report loads a resource"
grep -oE '<link [^>]*>' "$html" | grep -vqF '<link rel="icon" href="data:,">' \
  && fail "a <link> other than the empty icon"
[ "$(grep -c '<script' "$html")" = 2 ] || fail "expected exactly two script elements"
[ "$(grep -c '<svg class="chart"' "$html")" -ge 3 ] || fail "expected at least three charts"
[ "$(grep -c '<tr data-rank=' "$html")" = 12 ] || fail "expected 12 ranked rows (all fit under --margin auto too)"
grep -q 'Generated ' "$html" && fail "a timestamp without --stamp"

# the CSP names the sorting script by its SHA-256: the two must agree (see html_out.c)
if command -v python3 >/dev/null; then
  python3 - "$html" <<'PY' || fail "the CSP hash does not match the inline script"
import base64, hashlib, re, sys
s = open(sys.argv[1], encoding="utf-8").read()
body = re.search(r"<script>(.*?)</script>", s, re.S).group(1).encode()
want = "'sha256-%s'" % base64.b64encode(hashlib.sha256(body).digest()).decode()
assert want in s, "script is %s" % want
assert len(body.decode().splitlines()) <= 40, "the script grew past 40 lines"
PY
fi

# the command line the page shows asks the same question: run it, get the same page
if command -v python3 >/dev/null; then
  mapfile -d '' again < <(python3 - "$html" <<'PY'
import html, re, shlex, sys
page = open(sys.argv[1], encoding="utf-8").read()
cmd = html.unescape(re.search(r'<pre class="cmd">(.*?)</pre>', page, re.S).group(1))
args = shlex.split(cmd)
# it names the file this run wrote (the base name: the page does not know where it lies)
assert args[0] == "llmem-sweep" and args[-2:] == ["--out", "small.html"], args
sys.stdout.write("".join(a + "\0" for a in args[1:-2]))
PY
  )
  mkdir -p "$TMP/again"
  "$BIN" "${again[@]}" --quiet --out "$TMP/again/small.html" \
    && cmp -s "$TMP/again/small.html" "$html" \
    || fail "the page's command line does not reproduce the page"
fi

# --stamp prints the time once
"$BIN" "${args[@]}" --stamp --out "$TMP/stamp.html"
[ "$(grep -o 'Generated [0-9-]* [0-9:]* UTC' "$TMP/stamp.html" | wc -l)" = 1 ] \
  || fail "--stamp should print one UTC time"

# a model name from a downloaded config.json is input: escaped in every context
"$BIN" --model tests/data/xss/config.json --gpus 1 --methods single --batch 1,2 --seq 512 \
  --precision bf16 --finetune lora --grad-ckpt on --optimizer adamw --quiet --out "$TMP/r.html"
grep -qF '<script>alert(1)' "$TMP/r.html" && fail "the hostile model name is not escaped"
grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;' "$TMP/r.html" \
  || fail "the escaped model name is missing"
grep -qF '"\u003cscript\u003ealert(1)\u003c/script\u003e"' "$TMP/r.html" \
  || fail "the model name in the JSON data block is not escaped"
[ "$(grep -c '<script' "$TMP/r.html")" = 2 ] || fail "the XSS report has an extra script element"

# merged from shards: no live data, the page says so and still has the rows and charts
"$BIN" "${args[@]}" --shard 1/2 --out "$TMP/s1.csv"
"$BIN" "${args[@]}" --shard 2/2 --out "$TMP/s2.csv"
"$BIN" merge "$TMP/s1.csv" "$TMP/s2.csv" --out "$TMP/merged.html"
grep -qF 'merged from shard CSVs' "$TMP/merged.html" || fail "merged report lacks its note"
[ "$(grep -c '<tr data-rank=' "$TMP/merged.html")" = 12 ] || fail "merged report lacks rows"
grep -qF 'Methods compared' "$TMP/merged.html" && fail "merged report claims live sections"
finish
