#!/bin/sh
# device_check.sh: the whole measurement campaign as one call of the device tool (issue 11).
#
# A session lent a GPU has 15 minutes of device time in all, the machine's start included, and
# one command may run 10 minutes; what the command writes under $OUT comes back, at most 8
# files. So this script is the one prepared command such a session runs, from the repository
# root:
#
#     bash datasets/measure/device_check.sh            (run's timeout_s: 600)
#
# 1. versions.txt: python, torch, transformers, peft, accelerate, bitsandbytes, nvidia-smi.
# 2. The smoke gate: three configurations of the smoke grid (our loop, the HF Trainer, FSDP on
#    the fake process group; 2 minutes at most); for another MEASURE_GRID, its first one. An API change of the installed libraries
#    shows there, before the big grid spends the lease.
# 3. If the gate measured at least one row, MEASURE_GRID (default gpu-25min) in its order (its
#    order is its priority) until MEASURE_SECONDS (default 560) after the start: no configuration starts
#    in the last 40 s, and one still running at the deadline is stopped, so the files below are
#    always written. Re-running resumes: rows already ok or oom are kept only if the first
#    call's measured.csv is carried back in (MEASURE_RESUME=FILE, a path in the repository).
# 4. $OUT gets measured.csv, measure.log (the workers' warnings and tracebacks), versions.txt
#    and snapshots.tar (the snapshot summaries, one text file each): four files.
#
# MEASURE_DRY=1 plans without a GPU (measure.py --dry-run): the ctest `measure_device_dry`
# runs it that way. Exit status: 0 when the gate measured a row, 1 when it measured none (see
# measure.log), 2 on a usage error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-${TMPDIR:-/tmp}/measure-out}
seconds=${MEASURE_SECONDS:-560}
grid=${MEASURE_GRID:-gpu-25min}
gate_seconds=120
case $seconds in
'' | *[!0-9]*) echo "device_check.sh: MEASURE_SECONDS must be whole seconds, got '$seconds'" >&2; exit 2 ;;
esac
if [ "$seconds" -le "$gate_seconds" ]; then
    echo "device_check.sh: MEASURE_SECONDS must exceed the smoke gate's $gate_seconds" >&2
    exit 2
fi
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

if [ "${MEASURE_DRY:-0}" = 1 ]; then
    "$py" "$here/measure.py" --grid smoke --dry-run || exit 2
    "$py" "$here/measure.py" --grid "$grid" --dry-run || exit 2
    exit 0
fi

mkdir -p "$out" || exit 2
csv=$out/measured.csv
if [ -n "${MEASURE_RESUME:-}" ]; then
    cp "$MEASURE_RESUME" "$csv" || exit 2
fi

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    "$py" - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "pynvml"):
    try:
        print(name, getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as e:  # a missing package is a fact to record, not an error
        print(name, "missing:", type(e).__name__)
try:
    import torch
    print("cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
except Exception as e:
    print("cuda ?", e)
EOF
    nvidia-smi 2>&1 | head -20
} >"$out/versions.txt" 2>&1

# measure GRID ONLY SECONDS: measure.py on GRID's configurations matching ONLY for at most
# SECONDS: it starts none in the last 40 (a configuration of this grid takes 15 to 60 s) and
# kills one still running at the end. `timeout` is the last resort, should the probe hang.
measure() {
    [ "$3" -gt 45 ] || return 0
    timeout -s KILL $(( $3 + 15 )) "$py" "$here/measure.py" --grid "$1" --only "$2" \
        --out "$csv" --log "$out/measure.log" --timeout 240 \
        --budget-minutes "$(minutes $(( $3 - 40 )))" --stop-minutes "$(minutes "$3")"
}
minutes() { awk -v s="$1" 'BEGIN { printf "%.2f", s / 60 }'; }

# Another grid is its own gate: its first configuration (the new code path, in seconds).
gate_grid=smoke gate_only='smoke-(00|05|08)'
if [ "$grid" != gpu-25min ]; then
    gate_grid=$grid gate_only="^$grid-00 "
fi
start=$(date +%s)
measure "$gate_grid" "$gate_only" "$gate_seconds"
ok_rows=$("$py" -c 'import csv, sys
try:
    print(sum(r.get("status") == "ok" for r in csv.DictReader(open(sys.argv[1], newline=""))))
except OSError:
    print(0)' "$csv")
if [ "$ok_rows" = 0 ]; then
    echo "device_check.sh: the smoke gate measured no row; the big grid is not started (see measure.log)"
    status=1
else
    measure "$grid" . $(( start + seconds - $(date +%s) ))
    status=0
fi

snaps=$out/measured-snapshots
if [ -d "$snaps" ]; then
    tar -C "$out" -cf "$out/snapshots.tar" measured-snapshots && rm -rf "$snaps"
fi
exit $status
