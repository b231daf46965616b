# Shared helpers of the CLI tests: each test is `bash test.sh BIN TESTS_DIR PROJECT_DIR`.
set -euo pipefail
BIN=$1
TESTS=$2
PROJECT=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_exit CODE CMD...: runs CMD, checks its exit code, keeps stderr in $TMP/err
expect_exit() {
  local want=$1; shift
  local got=0
  "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
  [ "$got" = "$want" ] || fail "exit $got (want $want): $*; stderr: $(head -c 300 "$TMP/err")"
}

# expect_err TEXT: the last stderr contains TEXT
expect_err() {
  grep -qF -- "$1" "$TMP/err" || fail "stderr lacks '$1': $(head -c 300 "$TMP/err")"
}

# golden FILE NAME: compare with tests/golden/NAME; LLMEM_BLESS=1 rewrites the golden
golden() {
  if [ "${LLMEM_BLESS:-}" = 1 ]; then
    cp "$1" "$TESTS/golden/$2"
    echo "blessed $2"
  elif ! cmp -s "$1" "$TESTS/golden/$2"; then
    fail "$2 differs from the golden file:"
    diff "$TESTS/golden/$2" "$1" | head -20
  fi
}

finish() {
  if [ "$fails" -gt 0 ]; then
    echo "$fails check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}
