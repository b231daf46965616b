# Recipes and layouts (DESIGN.md section 1, README "Recipes and layouts"): rank restarts
# per recipe and rows come in recipe order; per-recipe summaries in JSON (min_gpus, by_gpus,
# --objective, --tokens); stable ids (adding a model leaves the other model's CSV lines
# byte-identical; config_id does not depend on the axes); `diff` for nightly jobs; what to
# change when nothing fits; the budget warning; the subcommands in --help.
source "$(dirname "$0")/../cli_lib.sh"
cd "$TMP"
small=(--gpu A100-SXM-40GB --methods single,cdp,adp,tp,dp+tp --gpus 1,2,4,8 --batch 1,2,4,8 --seq 1024,2048 --quiet)

# --- rank restarts per recipe, recipe order, ids ---------------------------------------
"$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --top 5 --out one.csv --out one.json
python3 - one.csv <<'PY' || fail "rows are not ranked per recipe in recipe order"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r: (r["model"], ["full", "lora", "qlora"].index(r["finetune"]), int(r["lora_r"]),
                 r["lora_targets"], r["quant"], r["precision"], r["optimizer"], int(r["seq_len"]))
assert rows, "no rows"
prev = None
for r in rows:
    k = key(r)
    if k != prev:
        assert prev is None or k > prev, ("recipes out of order", prev, k)
        assert r["rank"] == "1", ("rank does not restart", r)
        want = 1
    assert int(r["rank"]) == want and want <= 5, (r["rank"], want)
    want += 1
    prev = k
    assert len(r["recipe_id"]) == 16 and len(r["config_id"]) == 16
    assert abs(float(r["tokens_per_s_gpu"]) * int(r["gpus"]) - float(r["tokens_per_s"])) <= 0.1 * int(r["gpus"])
ids = {}
for r in rows:  # one recipe_id per recipe key, distinct config_ids
    ids.setdefault(key(r), set()).add(r["recipe_id"])
assert all(len(v) == 1 for v in ids.values())
assert len({r["config_id"] for r in rows}) == len(rows)
# default recipes: bf16 + AdamW for full, LoRA and QLoRA
assert {(r["finetune"], r["precision"], r["optimizer"]) for r in rows} == {
    ("full", "bf16", "adamw"), ("lora", "bf16", "adamw"), ("qlora", "bf16", "adamw")}
PY

# adding a model leaves every line of the other model byte-identical
"$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --model facebook/opt-350m --top 5 --out two.csv
"$BIN" "${small[@]}" --model facebook/opt-350m --model Qwen/Qwen2.5-0.5B --top 5 --out rev.csv
cmp -s two.csv rev.csv || fail "the CSV depends on the order of --model"
grep -F '"Qwen/Qwen2.5-0.5B"' two.csv > q2.txt
grep -F '"Qwen/Qwen2.5-0.5B"' one.csv > q1.txt
cmp -s q1.txt q2.txt || fail "adding a model changed another model's CSV lines"

# config_id depends on the configuration's knobs only, not on the axes around it
"$BIN" --gpu A100-SXM-40GB --batch 2 --seq 2048 --gpus 2 --methods adp --finetune lora \
  --grad-ckpt on --model Qwen/Qwen2.5-0.5B --quiet --out lone.csv
id=$(python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["config_id"])' lone.csv)
"$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --top 0 --out all.csv
grep -q ",$id," all.csv || fail "config_id $id differs between two runs of the same configuration"

# --- JSON: meta, recipes, objective, tokens ------------------------------------------------
python3 - one.json <<'PY' || fail "JSON meta/recipes"
import json, sys
j = json.load(open(sys.argv[1]))
m = j["meta"]
for k in ("tool", "version", "command", "models", "gpu", "budget_gib", "stack", "margin", "objective", "tokens"):
    assert k in m, k
assert m["command"].startswith("llmem-sweep ") and "--out one.json" in m["command"]
assert m["models"] == ["Qwen/Qwen2.5-0.5B"] and m["objective"] == "throughput" and m["tokens"] == 1e9
assert len(j["recipes"]) == 6  # full, lora, qlora x seq 1024, 2048
for r in j["recipes"]:
    assert set(r["knobs"]) >= {"model", "finetune", "precision", "optimizer", "seq_len"}
    by = r["by_gpus"]
    assert r["min_gpus"] == min(int(g) for g in by)
    best = r["best"]
    assert best["tokens_per_s"] == max(v["tokens_per_s"] for v in by.values())
    assert abs(best["hours"] - 1e9 / best["tokens_per_s"] / 3600) < 1e-3 * best["hours"] + 1e-3
    assert abs(best["gpu_hours"] - best["hours"] * best["gpus"]) < 1e-2 * best["gpu_hours"] + 1e-2
    # rank 1 of the recipe's rows is its fastest layout
    rows = [x for x in j["rows"] if x["recipe_id"] == r["recipe_id"]]
    assert rows[0]["rank"] == 1 and rows[0]["tokens_per_s"] == best["tokens_per_s"]
PY
"$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --objective min-gpus --tokens 2e6 --out min.json
"$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --objective per-gpu --out pg.json
python3 - min.json pg.json <<'PY' || fail "--objective / --tokens"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["meta"]["objective"] == "min-gpus" and a["meta"]["tokens"] == 2e6
for r in a["recipes"]:
    assert r["best"]["gpus"] == r["min_gpus"]
    assert abs(r["best"]["hours"] - 2e6 / r["best"]["tokens_per_s"] / 3600) < 1e-3
for r in b["recipes"]:
    assert r["best"]["tokens_per_s_gpu"] == max(v["tokens_per_s_gpu"] for v in r["by_gpus"].values())
PY
expect_exit 2 "$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --objective fastest
expect_exit 2 "$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --tokens 0

# --- nothing fits: suggestions in JSON, text and the exit-1 message -------------------------
expect_exit 1 "$BIN" --model meta-llama/Llama-3.1-8B --gpu A10G-24GB --gpus 1 --methods single \
  --finetune full --seq 2048 --batch 1 --quiet --out none.json
expect_err "to make it fit: "
python3 - none.json <<'PY' || fail "suggestions for a recipe that fits nowhere"
import json, sys
j = json.load(open(sys.argv[1]))
(r,) = j["recipes"]
assert r["min_gpus"] is None and r["best"] is None and r["closest"]["peak_gib"] > j["meta"]["budget_gib"]
s = r["suggestions"]
assert s, "no suggestions"
assert all(x["fit_peak_gib"] <= j["meta"]["budget_gib"] for x in s)
assert any(x["change"].startswith("QLoRA") for x in s)
PY
"$BIN" explain --model meta-llama/Llama-3.1-8B --gpu A10G-24GB --seq 2048 > ex.txt
grep -q '^changes    each of these makes it fit' ex.txt || fail "explain lists no changes"
# the methods beyond LLMem are changes too: CPU offload on the same GPUs, with the host memory
# it fills, the optimizer before the parameters (less traffic); a pipeline on more GPUs
"$BIN" explain --model meta-llama/Llama-3.1-70B --finetune full --method adp --gpus 8 --seq 2048 \
  --micro-batch 1 > ex70.txt
grep -q '^           peak .*  offload on 8 GPUs, [0-9]* GiB host memory a GPU$' ex70.txt \
  || fail "explain does not suggest offloading the optimizer: $(cat ex70.txt)"
grep -q '  offload (also parameters) on 8 GPUs, ' ex70.txt || fail "explain does not suggest offloading the parameters"
[ "$(grep -n '  offload on 8 GPUs' ex70.txt | cut -d: -f1)" -lt "$(grep -n '  offload (also' ex70.txt | cut -d: -f1)" ] \
  || fail "offloading the parameters listed before the optimizer alone"
grep -q '  pp on [0-9]* GPUs$' ex70.txt || fail "explain does not suggest a pipeline"
"$BIN" explain --model meta-llama/Llama-3.1-8B --gpu A10G-24GB --seq 2048 --format json > ex.json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert not j["fits"] and j["suggestions"]' ex.json \
  || fail "explain JSON lists no suggestions"

# the LLMem paper's terms (another model) appear only with --paper
grep -q '^LLMem terms' ex.txt && fail "explain prints the paper's terms without --paper"
"$BIN" explain --model facebook/opt-1.3b --paper --seq 512 | grep -q '^LLMem terms (MiB)' \
  || fail "explain --paper lacks the paper's terms"

# --- a budget above the GPU's memory warns ---------------------------------------------------
expect_exit 0 "$BIN" --model facebook/opt-125m --gpus 1 --methods single --batch 1 --seq 512 \
  --budget 80GiB --quiet --out w.json
expect_err "warning: the budget (80.00 GiB) is above the memory of the H100-SXM-80GB (79.65 GiB)"
python3 -c 'import json,sys; assert "above the memory" in json.load(open(sys.argv[1]))["meta"]["warnings"][0]' w.json \
  || fail "the warning is not in the report"
expect_exit 0 "$BIN" --model facebook/opt-125m --gpus 1 --methods single --batch 1 --seq 512 \
  --budget 79GiB --quiet --out w2.json
grep -q warning "$TMP/err" && fail "a warning for a budget below the GPU's memory"

# --- diff ---------------------------------------------------------------------------------
expect_exit 0 "$BIN" diff one.csv one.csv
[ -s "$TMP/out" ] && fail "diff of a file with itself printed: $(head -c 200 "$TMP/out")"
expect_exit 1 "$BIN" diff one.csv two.csv
grep -q '^recipe [0-9a-f]\{16\} has ranked rows now (fits now, or joined the run): facebook/opt-350m' "$TMP/out" \
  || fail "diff does not report the added model's recipes: $(head -c 300 "$TMP/out")"
grep -q 'Qwen' "$TMP/out" && fail "diff reports the unchanged model"
# a budget between the seq-2048 recipe's band upper ends on 2 GPUs and on 1 (11.77 and 15.97 GiB
# with stop 36's band table; `explain --model Qwen/Qwen2.5-0.5B --gpu A100-SXM-40GB --seq 2048`,
# and with `--gpus 2 --method adp`)
"$BIN" "${small[@]}" --model Qwen/Qwen2.5-0.5B --top 5 --budget 14GiB --out tight.csv
expect_exit 1 "$BIN" diff one.csv tight.csv --threshold 5
grep -q '^recipe [0-9a-f]\{16\} fewest GPUs 1 -> 2: Qwen/Qwen2.5-0.5B full, bf16, adamw, seq 2048' "$TMP/out" \
  || fail "diff misses a fewest-GPUs change: $(head -c 400 "$TMP/out")"
expect_exit 2 "$BIN" diff one.csv
expect_exit 2 "$BIN" diff one.csv two.csv --threshold x
printf 'not,a,ranked,csv\n' > bad.csv
expect_exit 3 "$BIN" diff one.csv bad.csv
expect_err "bad.csv:1"
expect_exit 4 "$BIN" diff one.csv missing.csv  # cannot open: an I/O error, as for merge

# --- help ---------------------------------------------------------------------------------
"$BIN" --help > help.txt
for c in explain validate fit models gpus devices merge diff; do
  grep -qE "^  $c( |$)|^  models \| gpus" help.txt || fail "--help does not list '$c'"
done
grep -q -- '--tokens N' help.txt && grep -q 'default 1e9' help.txt || fail "--help lacks the --tokens default"
finish
