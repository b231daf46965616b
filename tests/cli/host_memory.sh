# --host-memory: offload layouts whose states overfill a node's host memory do not fit.
source "$(dirname "$0")/../cli_lib.sh"

M=meta-llama/Llama-3.1-70B
# 70B full fine-tuning offloads 16 bytes a parameter: about 131 GiB a GPU, 1051 GiB a node of 8
ex() { "$BIN" explain --model $M --method offload --gpus 8 --micro-batch 1 --seq 2048 "$@"; }
ex --format json > "$TMP/free.json" || fail "explain without --host-memory"
ex --host-memory 512GiB --format json > "$TMP/small.json" || fail "explain --host-memory 512GiB"
ex --host-memory 2TiB --format json > "$TMP/large.json" || fail "explain --host-memory 2TiB"
python3 - "$TMP" <<'PY' || fail "explain's fits does not follow --host-memory"
import json, sys
j = {k: json.load(open(f"{sys.argv[1]}/{k}.json")) for k in ("free", "small", "large")}
node = j["free"]["host_node_bytes"]
assert node == 8 * j["free"]["host_bytes"], node
assert "host_budget_bytes" not in j["free"]
assert j["free"]["fits"] and j["large"]["fits"] and not j["small"]["fits"]
assert j["small"]["host_budget_bytes"] == 512 << 30 < node < j["large"]["host_budget_bytes"]
assert j["small"]["peak_bytes"] == j["free"]["peak_bytes"]  # the GPU's peak is unchanged
PY
ex --host-memory 512GiB > "$TMP/small.txt" || fail "explain text"
grep -q "DOES NOT FIT: the offload fills 1051.33 GiB of host memory a node, above --host-memory 512.00 GiB" \
  "$TMP/small.txt" || fail "explain's verdict does not name the host memory"

# the sweep: every offload layout of full fine-tuning on 8 GPUs overfills 512 GiB
expect_exit 1 "$BIN" --model $M --methods offload --finetune full --gpus 8 --seq 2048 \
  --host-memory 512GiB --quiet --out "$TMP/none.csv"
expect_err "points left out: their offload fills more than --host-memory 512.00 GiB of a node"
expect_err "no configuration fits 79.65 GiB and --host-memory"

# with more GPUs some fit; no fitting layout's node holds more than the limit, and without
# the limit some would (the check is what removes them); counts the same on 1 and 2 threads
sw() { "$BIN" --model $M --methods offload --gpus 8,16,32 --seq 2048 --top 0 "$@"; }
sw --out "$TMP/free.csv" --quiet || fail "sweep without --host-memory"
for t in 1 2; do
  sw --host-memory 512GiB --threads $t --out "$TMP/lim$t.csv" --out "$TMP/lim$t.json" \
    2> "$TMP/sum$t.txt" || fail "sweep --host-memory on $t thread(s)"
done
sw --host-memory 512GiB --quiet --out "$TMP/lim.html" || fail "sweep --host-memory to HTML"
grep -q "<dt>Host memory</dt><dd>512.00 GiB a node" "$TMP/lim.html" || fail "the HTML inputs lack the host memory"
cmp -s "$TMP/lim1.csv" "$TMP/lim2.csv" || fail "the result depends on the thread count"
cmp -s "$TMP/sum1.txt" "$TMP/sum2.txt" || fail "the counts depend on the thread count"
grep -q "of them over --host-memory" "$TMP/sum1.txt" || fail "the summary does not count them"
python3 - "$TMP" <<'PY' || fail "a fitting layout overfills --host-memory, or none would"
import csv, json, sys
def node_gib(r):
    return float(r["host_gib"]) * min(int(r["gpus"]), 8)
free = list(csv.DictReader(open(f"{sys.argv[1]}/free.csv")))
lim = list(csv.DictReader(open(f"{sys.argv[1]}/lim1.csv")))
assert lim and all(node_gib(r) <= 512 for r in lim), max(node_gib(r) for r in lim)
assert any(node_gib(r) > 512 for r in free)
assert json.load(open(f"{sys.argv[1]}/lim1.json"))["inputs"]["host_memory_gib"] == 512
PY

expect_exit 2 "$BIN" --model $M --host-memory 12XB
expect_err "invalid value '12XB' for --host-memory"
finish
