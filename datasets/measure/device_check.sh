#!/bin/sh
# device_check.sh: the whole measurement campaign as one call of the device tool (issue 11).
#
# A session lent a GPU has 15 minutes of device time in all, the machine's start included, and
# one command may run 10 minutes; what the command writes under $OUT comes back, at most 8
# files. So this script is the one prepared command such a session runs, from the repository
# root:
#
#     bash datasets/measure/device_check.sh            (run's timeout_s: 590)
#
# 1. versions.txt: python, torch, transformers, peft, accelerate, bitsandbytes, nvidia-smi.
# 2. The smoke grid first (every code path in a few small configurations, 3 minutes at most):
#    an API change of the installed libraries shows there, before the big grid spends the lease.
# 3. If smoke measured at least one row, gpu-25min in its order (the HF Trainer rows first) for
#    what is left of MEASURE_MINUTES (default 8). Re-running the same command resumes: rows
#    already ok or oom in $OUT/measured.csv are kept only if that file is carried back in, so
#    a second call copies the first call's measured.csv to $OUT first (MEASURE_RESUME=FILE).
# 4. $OUT gets measured.csv, measure.log (the workers' warnings and tracebacks), versions.txt
#    and snapshots.tar (the snapshot summaries, one text file each): four files.
#
# MEASURE_DRY=1 plans without a GPU (measure.py --dry-run): the ctest `measure_device_dry`
# runs it that way. Exit status: 0 when smoke measured a row, 1 when it measured none (see
# measure.log), 2 on a usage error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-${TMPDIR:-/tmp}/measure-out}
minutes=${MEASURE_MINUTES:-8}
smoke_minutes=3
case $minutes in
'' | *[!0-9]*) echo "device_check.sh: MEASURE_MINUTES must be whole minutes, got '$minutes'" >&2; exit 2 ;;
esac
if [ "$minutes" -le "$smoke_minutes" ]; then
    echo "device_check.sh: MEASURE_MINUTES must exceed the smoke grid's $smoke_minutes" >&2
    exit 2
fi
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

if [ "${MEASURE_DRY:-0}" = 1 ]; then
    "$py" "$here/measure.py" --grid smoke --dry-run || exit 2
    "$py" "$here/measure.py" --grid gpu-25min --dry-run || exit 2
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

start=$(date +%s)
"$py" "$here/measure.py" --grid smoke --out "$csv" --log "$out/measure.log" \
    --budget-minutes "$smoke_minutes" --timeout 120
ok_rows=$("$py" -c 'import csv, sys
try:
    print(sum(r.get("status") == "ok" for r in csv.DictReader(open(sys.argv[1], newline=""))))
except OSError:
    print(0)' "$csv")
if [ "$ok_rows" = 0 ]; then
    echo "device_check.sh: smoke measured no row; the big grid is not started (see measure.log)"
    status=1
else
    used=$(( ($(date +%s) - start) / 60 ))
    left=$(( minutes - used ))
    if [ "$left" -gt 0 ]; then
        "$py" "$here/measure.py" --grid gpu-25min --out "$csv" --log "$out/measure.log" \
            --budget-minutes "$left" --timeout 240
    fi
    status=0
fi

snaps=$out/measured-snapshots
if [ -d "$snaps" ]; then
    tar -C "$out" -cf "$out/snapshots.tar" measured-snapshots && rm -rf "$snaps"
fi
exit $status
