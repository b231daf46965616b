# The GPU measurement harness's own tests (standard library only; no torch needed).
source "$(dirname "$0")/../cli_lib.sh"
command -v python3 >/dev/null || exit 77
python3 "$PROJECT/datasets/measure/test_measure.py" || fail "harness self-test"
python3 "$PROJECT/datasets/measure/measure.py" --grid smoke --dry-run > "$TMP/dry.txt" || fail "dry run"
# the one prepared command a GPU session runs (issue 11), planned without a GPU
MEASURE_DRY=1 sh "$PROJECT/datasets/measure/device_check.sh" > "$TMP/device.txt" || fail "device_check.sh dry run"
grep -q "configurations in grid gpu-25min" "$TMP/device.txt" || fail "device_check.sh plans no gpu-25min"
MEASURE_SECONDS=100 sh "$PROJECT/datasets/measure/device_check.sh" 2> "$TMP/err.txt" && fail "100 s accepted"
grep -q "must exceed" "$TMP/err.txt" || fail "no message for too few seconds"
finish
