# The GPU measurement harness's own tests (standard library only; no torch needed).
source "$(dirname "$0")/../cli_lib.sh"
command -v python3 >/dev/null || exit 77
python3 "$PROJECT/datasets/measure/test_measure.py" || fail "harness self-test"
python3 "$PROJECT/datasets/measure/measure.py" --grid smoke --dry-run > "$TMP/dry.txt" || fail "dry run"
finish
