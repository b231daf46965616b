# validate on the shipped measurements: the median absolute error stays under the bound the
# README states; every row is either predicted or listed with its reason.
source "$(dirname "$0")/../cli_lib.sh"
BOUND=${LLMEM_VALIDATE_BOUND:-10}
"$BIN" validate --measured "$PROJECT/datasets/measured/public.csv" --out "$TMP/v.csv" \
  --fail-above "$BOUND" > "$TMP/report.txt" || fail "median error above $BOUND % (see below)"
tail -17 "$TMP/report.txt"
rows=$(($(wc -l < "$PROJECT/datasets/measured/public.csv") - 1))
got=$(($(wc -l < "$TMP/v.csv") - 1))
[ "$rows" = "$got" ] || fail "validate wrote $got rows for $rows measured rows"
head -1 "$TMP/v.csv" | grep -qx 'file,line,source,model,metric,measured_gib,predicted_gib,error_pct,status,measured_tokens_s_gpu,predicted_tokens_s_gpu,predicted_lo_gib,predicted_hi_gib,sweep_gib' \
  || fail "validation CSV header (DESIGN.md's columns, then the throughput and sweep extensions)"
# the speed model against the throughput the torchtune tables print
grep -qx 'speed (tokens/s per GPU)' "$TMP/report.txt" || fail "no speed summary"
grep -Eq '^all +[0-9]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+ +[0-9]+ +[0-9.]+$' "$TMP/report.txt" \
  || fail "speed summary: rows, median, max, bias, pairs, ordering agreement"
grep -q '^TTF-01 .*sequence length is a cap' "$TMP/report.txt" \
  || fail "a capped length is listed, not compared"
# throughput-only rows (metric none): the speed model is compared, the memory model is not
"$BIN" validate --measured "$PROJECT/datasets/measured/throughput.csv" --out "$TMP/t.csv" \
  > "$TMP/t.txt" || fail "validate on throughput.csv"
grep -Eq '^LF +209 ' "$TMP/t.txt" || fail "209 llm-foundry rows compared"
grep -q '"LF","llm-foundry/mpt-7b",none,0.000,,,"skipped: throughput only (metric none)",[0-9]*,[0-9]*,[0-9.]*,[0-9.]*,$' \
  "$TMP/t.csv" || fail "a throughput-only row in the CSV"
grep -q '"TTF","meta-llama/Llama-3.2-3B-Instruct",allocated,60.000,.*,7075,[0-9][0-9]*,[0-9.]*,[0-9.]*,[0-9.]*$' "$TMP/v.csv" \
  || fail "TTF-02's throughput and its prediction in the CSV"
grep -q 'skipped: ' "$TMP/v.csv" || fail "no skipped rows listed with a reason"
# issue 4: no grade A/B row beyond 30 % (rows measured below their own configuration's
# floor are listed as inconsistent, with their prediction, and kept out of the statistics)
grep -qx 'grade A/B rows off by more than 30 %: none' "$TMP/report.txt" \
  || fail "a grade A/B row is off by more than 30 %: $(grep 'more than 30' "$TMP/report.txt")"
grep 'inconsistent: below' "$TMP/v.csv" | grep -q '"LGCH","meta-llama/Llama-3.2-3B",allocated,15.376,[0-9.]*,[0-9.]*,' \
  || fail "inconsistent rows keep their prediction and error in the CSV"
# public-2.csv (issue 12): every row is predicted or skipped with its reason, and the Qwen v1
# rows (SWB) are predicted.
"$BIN" validate --measured "$PROJECT/datasets/measured/public-2.csv" --out "$TMP/v2.csv" \
  > "$TMP/report2.txt" || fail "validate on public-2.csv failed"
grep -A 8 '^source ' "$TMP/report2.txt"
rows=$(($(wc -l < "$PROJECT/datasets/measured/public-2.csv") - 1))
got=$(($(wc -l < "$TMP/v2.csv") - 1))
[ "$rows" = "$got" ] || fail "validate wrote $got rows for $rows rows of public-2.csv"
grep -q '^SWB  *[0-9][0-9]*  *0 ' "$TMP/report2.txt" || fail "SWB rows skipped: the Qwen v1 rows must be predicted"
# issue 16: the float8 rows are --precision fp8 (tests/cli/fp8.sh); context parallelism
# (TT-08..10, TT-16..18) stays skipped
grep -q '^TT  *12  *6 ' "$TMP/report2.txt" || fail "the twelve torchtitan rows without context parallelism must be predicted"
# torchtitan >= bbb1b616e compiles its loss under --training.compile (feature compiled-loss):
# AOF8-08 (B200, torchtitan 6fc499f, bf16) within 5 % (it was +27.6 % on the hf path)
awk -F, '$3 == "\"AOF8\"" && $6 == "33.710" && $9 == "\"ok\"" { f = 1; if ($8 < -5 || $8 > 5) bad = 1 }
  END { exit !(f && !bad) }' "$TMP/v2.csv" || fail "AOF8-08 not predicted within 5 %"
# issue 12 item 4, over every measured memory row in the repo: the median |error| (6.4 % on
# 2026-11-24; the issue asks 5 %), the grade A/B median and the grade A/B rows predicted more
# than 10 % below their measurement (20 then; the issue asks none) may not grow. The dequantize
# cast, softcapped attention and repeated K/V terms took them to 5.5 %, 4.4 % and 8 over the
# 133 rows of then; issue 16 added the 14 float8 rows of public-2.csv (--precision fp8), the
# TP and pipeline ones 10-26 % below; the loss_parallel path, the pipeline's kept outputs and
# its receive buffers (third pass) left the grade A/B median at 5.1 (bound 5.2) and took those
# rows from 15 to 14. FSDP1's root gradient (resident.c root_grads: LGCH-03 -21.0 -> -3.0 %),
# the Salisbury rows' fp32 embedding (no autocast), FSDP2's all-gather copy-in stream pool
# (streampool.c), torchtitan's own end units from 83e69410 (feature fsdp-end-units) and the
# whole-step allocator replay of PEFT MetaMathQA's empty_cache windows (stepreplay.c) took
# the median to 4.9 % (the issue's 5 % is the bound now), the grade A/B median to 4.1 % and
# those rows to 6. torchtitan's own block split (memmodel.c pp_stage_layers: 15 blocks on
# each end stage of the 405B's 8, where the uniform ceil(126 / 8) counted 16) took TT-13/14
# to -26.2/-16.2 % and TT-15 from -6.3 to -10.1 %: 7 such rows, the bound since stop 24 (the
# physics of the split, not a relaxed target; the rows' missing memory is not found).
# litgpt under Fabric (convert_output's fp32 logits, kept by fit() into the next step), the
# bitsandbytes 0.42 inputs its kept graph holds and the physical LoRA count in place of the
# inferred copy took the median to 3.9 %, the grade A/B median to 3.1 % (LGCH 3.6 -> 0.4 %).
# litgpt's mixed FSDP units (resident.c mixed_unit_grads: every Block's whole gradient under
# no_sync, in place of the row-inferred full-init copy) took the median to 3.6 %, the grade A/B
# median to 2.6 % (LGRT-18..20 +9.9/+16.5/+18.3 -> -1.2/+1.4/-2.1 %); bounds 3.7 and 2.7.
# The pipeline's merged result at the step's end (memmodel.c pp_merge: torch.cat of the last
# stage's outputs, larger than any earlier request, in a segment of its own) took TT-14/15
# from -16.2/-10.1 to -5.5/+0.3 % and TT-13 to -16.7 %: 5 such rows, the bound now (TT-14's own
# interleaved schedule then took it to +8.3 %).
# Stop 40 added Answer.AI's 2 x RTX 3090 rows (answerai-3090.csv, source AAI: FSDP1 LoRA and
# QLoRA, the kind of collection issue 12 names), held out of the repo while they were 5, then
# 1, grade B rows more than 10 % below; transformers <= 4.39's rotary tables (features
# rope-tables, rope-tables-fp32) took the last one, AAI-01, from -10.8 to -6.5 %.
# README "Validation" lists the numbers behind the bounds.
ALL_BOUND=${LLMEM_VALIDATE_ALL_BOUND:-3.7}
"$BIN" validate --measured "$PROJECT/datasets/measured/public.csv" \
  --measured "$PROJECT/datasets/measured/salisbury-table1.csv" \
  --measured "$PROJECT/datasets/measured/public-2.csv" \
  --measured "$PROJECT/datasets/measured/answerai-3090.csv" --summary --fail-above "$ALL_BOUND" \
  > "$TMP/all.txt" || fail "median error over every measured row above $ALL_BOUND %"
grep -Eq '^all +159 ' "$TMP/all.txt" || fail "159 measured rows predicted: $(grep '^all ' "$TMP/all.txt")"
# Answer.AI's rows: all twelve predicted, median |error| at most 2 % (1.3 at stop 40)
grep -Eq '^AAI +12 +0 +0 +(0|1)\.[0-9] ' "$TMP/all.txt" || fail "AAI: $(grep '^AAI ' "$TMP/all.txt")"
# one line per metric after `all`, whose rows add up to it (README "Validation")
awk '$1 == "all" && !a { a = $2 } $1 == "metric" { m += $3 } END { exit !(a && m == a) }' "$TMP/all.txt" \
  || fail "per-metric lines do not add up to all: $(grep -E '^(all|metric) ' "$TMP/all.txt")"
below=$(sed -n 's/^grade A\/B rows more than 10 % below, count: //p' "$TMP/all.txt")
[ -n "$below" ] && [ "$below" -le 5 ] || fail "grade A/B rows more than 10 % below: $below (at most 5)"
awk '$1 == "grade" && $2 == "A/B" && $3 ~ /^[0-9]+$/ { f = 1; if ($6 > 2.7) bad = 1 } END { exit !(f && !bad) }' \
  "$TMP/all.txt" || fail "grade A/B median above 2.7 %: $(grep '^grade A/B  ' "$TMP/all.txt")"
grep -q '^SWB  *14  *0  *0  *[0-5]\.' "$TMP/all.txt" || fail "SWB median above 6 %: $(grep '^SWB ' "$TMP/all.txt")"
# TTS-06 (torchtune 70B full, FSDP2 with CPU offload): llama3_1/70B_full.yaml @30b8519e
# shards tok_embeddings and output as units of their own (feature fsdp-end-units): +25.1 %
# with the root unit keeping them gathered, -3.1 % without; within 5 %
awk -F, '$3 == "\"TTS\"" && $2 == 91 && $9 == "\"ok\"" { f = 1; if ($8 < -5 || $8 > 5) bad = 1 }
         END { exit !(f && !bad) }' "$TMP/v.csv" || fail "TTS-06 off by more than 5 %: $(grep '^"[^"]*",91,"TTS"' "$TMP/v.csv")"
# Our own rows (datasets/measured/h100-20261127.csv, h200-20261127.csv, README "Ground truth
# of our own"): every knob known, so the allocated peak is the model's physics alone. Each
# file's allocated rows are within 3 % (median at most 0.5 %): 27 on the H100 (stop 28's
# autocast terms), 30 on the H200 (stop 29's TP embedding, autocast cache and FSDP2 LoRA
# terms); these bounds keep it so. Their reserved peaks too, median at most 4 % (3.8 % and
# 3.4 %): since stop 29 a variable-length row's own step widths are replayed (column
# `widths`), not the 1000-step run the model stands for. Since stop 30 whole steps of full
# fine-tuning and LoRA on one GPU are replayed through the allocator model (stepreplay.c):
# the reserved peaks the phases could not see (foreach temporaries after checkpointing,
# smoke-00's embedding-sized temporaries, a variable run's steps) are each within 3 % (they
# were -18.5 .. +13.2 %); the files' reserved medians went 3.8 -> 0.4 % and 3.4 -> 1.0 %, so
# the bound on them is 1.5 % now (it was 4 %). Since stop 31 FSDP2's steps are replayed too
# (stepfsdp.c: the reduce-scatter stream's pool, the units' gathers and reduce-scatter
# inputs): gpu-25min-12/-41/-42/-47's reserved peaks (-7.0 .. -19.7 % before) are each within
# 3 %, smoke-08's (-24.4 % before; -7.6 % after) within 8 %; DDP's replica step with its
# buckets beside it, gpu-25min-13/-43 (-3.6 % before), within 3 %. The files' reserved medians
# are 0.4 and 0.7 % now (0.4 and 1.0 before): the bound is 1.0 % (it was 1.5). Since stop 33
# the replay takes o_proj's input under SDPA for the view of SDPA's output it is (it counted a
# copy): 0.43 -> 0.14 and 0.74 -> 0.17 %, the bound 0.5 %; FSDP2's LoRA is replayed too,
# gpu-25min-46 (-1.2 % before, +0.1 %) within 3 %.
for own in h100-20261127:27 h200-20261127:30; do
  name=${own%:*}
  "$BIN" validate --measured "$PROJECT/datasets/measured/$name.csv" --out "$TMP/$name.csv" \
    > /dev/null || fail "validate on $name.csv"
  python3 - "$TMP/$name.csv" "$name" "${own#*:}" "$PROJECT/datasets/measured/$name.csv" <<'PY' || fail "our own rows ($name): allocated off the model"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ids = {i + 2: r["id"] for i, r in enumerate(csv.DictReader(open(sys.argv[4])))}
replayed = {"smoke-00", "gpu-25min-00", "gpu-25min-01", "gpu-25min-17", "gpu-25min-18",
            "gpu-25min-23", "gpu-25min-26", "gpu-25min-27", "gpu-25min-28", "gpu-25min-49"}
off = [(ids[int(r["line"])], r["error_pct"]) for r in rows if r["metric"] == "reserved"
       and ids[int(r["line"])] in replayed and abs(float(r["error_pct"])) > 3.0]
fsdp2 = {"gpu-25min-12": 3.0, "gpu-25min-41": 3.0, "gpu-25min-42": 3.0, "gpu-25min-47": 3.0,
         "smoke-08": 8.0, "gpu-25min-13": 3.0, "gpu-25min-43": 3.0, "gpu-25min-46": 3.0}
off += [(ids[int(r["line"])], r["error_pct"]) for r in rows if r["metric"] == "reserved"
        and ids[int(r["line"])] in fsdp2 and abs(float(r["error_pct"])) > fsdp2[ids[int(r["line"])]]]
if off:
    print(f"{sys.argv[2]}: whole-step replay rows off by more than their bound: {off}")
    sys.exit(1)
def errors(metric):
    return [abs(float(r["error_pct"])) for r in rows if r["metric"] == metric and r["status"] == "ok"]
e, res = errors("allocated"), errors("reserved")
print(f"{sys.argv[2]} allocated: {len(e)} rows, median {statistics.median(e):.2f} %, max {max(e):.2f} %;"
      f" reserved: median {statistics.median(res):.2f} %")
sys.exit(0 if len(e) == int(sys.argv[3]) and statistics.median(e) <= 0.5 and max(e) <= 3.0
         and statistics.median(res) <= 0.5 else 1)
PY
done
# Our own FSDP1 rows (stop 32; h200-20261127-fsdp1*.csv: FullyShardedDataParallel as HF Trainer
# runs it through accelerate, on the fake process group). Allocated: accelerate's
# MixedPrecision gathers each unit in bf16 (train.h FEAT_FSDP1_MP), so the peaks are within
# 3.5 % (they were +8 .. +31 % with autocast's casts counted; the largest then, Llama-2-7B
# checkpointed on 4 ranks, +3.41 %), median at most 0.5 %; gpu-fsdp1-09 too since stop 33
# (-9.4 %, then -20.2 % relabelled adapter-bf16, +0.3 % with its units' mix of adapters and
# frozen weights modelled: train.h train_mixed_units). Reserved: FSDP1's side-stream pools
# (streampool.h) and its whole steps replayed over those pools (stepfsdp.c; LoRA too since
# stop 33) put the rows within 5 % (they were -35 .. +13 %; gpu-fsdp1-09 -19.6 and
# gpu-fsdp1-pools-07 -7.0 % before stop 33), median at most 1.5 %; FSDP2 without a
# MixedPrecisionPolicy over bf16 weights (gpu-fsdp1-pools-09: -11.4 % with neither its side
# pools nor its steps, +0.0 % with both, train.h train_fsdp2_plain16) the same.
# Stop 36's lease (h200-20261127-residue.csv: FSDP1 with the wrap's cache kept, cpu-init) too;
# its gpu-residue-00 showed that the root's gradient shard does not exist at the root's cat
# (resident.c root_grads: +3.8 -> -0.1 %; Llama-3.1-8B +2.4 -> -0.0 %, Llama-2-7B on 4 ranks
# +3.41 -> +2.64 %): every allocated row is within 3 % now (the bound was 3.5).
for name in h200-20261127-fsdp1 h200-20261127-fsdp1-pools h200-20261127-fsdp1-segments h200-20261127-residue; do
  "$BIN" validate --measured "$PROJECT/datasets/measured/$name.csv" --out "$TMP/$name.csv" \
    > /dev/null || fail "validate on $name.csv"
  python3 - "$TMP/$name.csv" "$PROJECT/datasets/measured/$name.csv" <<'PY' || fail "our FSDP1 rows ($name): off the model"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ids = {i + 2: r["id"] for i, r in enumerate(csv.DictReader(open(sys.argv[2])))}
def errors(metric):
    return {ids[int(r["line"])]: abs(float(r["error_pct"])) for r in rows if r["metric"] == metric}
a, res = errors("allocated"), errors("reserved")
off = {k: v for k, v in a.items() if v > 3.0}
off.update({k + " reserved": v for k, v in res.items() if v > 5.0})
print(f"allocated: {len(a)} rows, median {statistics.median(a.values()):.2f} %; reserved: median"
      f" {statistics.median(res.values()):.2f} %; off: {off}")
sys.exit(0 if len(a) >= 4 and not off and statistics.median(a.values()) <= 0.5
         and statistics.median(res.values()) <= 1.5 else 1)
PY
done
finish
