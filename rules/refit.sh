#!/bin/sh
# Regenerates rules/gemma-qlora-salisbury.csv from datasets/measured/salisbury-table1.csv
# (rules/README.md, "Shipped rules"). Usage: rules/fit-salisbury.sh [path/to/llmem-sweep]
# Run from the repository root; the output is the same bytes on every run.
set -eu
bin=${1:-build/llmem-sweep}
in=datasets/measured/salisbury-table1.csv
out=rules/gemma-qlora-salisbury.csv
seq="Salisbury Table I (Actual), allocated bytes; seq_len is not stated in the paper: 512 ASSUMED, so b*s terms are per 512-token sample and do not extrapolate in s"
safe="with_model yes: the rule can raise the memory model's peak (peaks the model misses) but never lower it, because the unknown seq_len makes its b*s terms unsafe to trust alone"
common="--match finetune=qlora --match quant=nf4-dq --match micro_batch.max=8 --with-model yes"

rm -f "$out"
"$bin" fit --measured "$in" --out "$out" --set gemma-2b-qlora \
    --match model=google/gemma-2b $common --match lora_r.max=128 --note "$seq" --note "$safe"
"$bin" fit --measured "$in" --out "$out" --append --set gemma-7b-qlora \
    --match model=google/gemma-7b $common --match lora_r.max=64 --note "$seq" --note "$safe"
"$bin" fit --measured "$in" --out "$out" --append --set gemma-qlora \
    --match family=gemma $common --match lora_r.max=128 \
    --features 'C=1,params,trainable,b*s*v' --features 'D=1,params,trainable,b*s*v' \
    --features 'G=1,params,trainable,b*s*i' --note "$seq" --note "$safe" \
    --note "one set for both Gemma sizes: params carries the weights, so 8 rows per candidate fit 4 coefficients; listed after the per-model sets, it applies to other Gemma-1 models given as config.json"
