# The shipped measured CSVs are what their converters make of the shared collections today
# (datasets/measured/README.md): regenerate both and compare byte for byte. Skipped (77)
# where the shared collections or python3 are not present.
source "$(dirname "$0")/../cli_lib.sh"
SHARED=${LLMEM_SHARED_DATASETS:-$PROJECT/../shared/datasets}
if ! command -v python3 > /dev/null || [ ! -r "$SHARED/public-measured.csv" ] ||
   [ ! -r "$SHARED/public-measured-2.csv" ] || [ ! -r "$SHARED/public-throughput.csv" ]; then
  echo "skipped: no python3 or no $SHARED/public-{measured,measured-2,throughput}.csv"
  exit 77
fi
for pair in "convert_public.py public-measured.csv public.csv" \
            "convert_public2.py public-measured-2.csv public-2.csv" \
            "convert_throughput.py public-throughput.csv throughput.csv"; do
  set -- $pair
  PYTHONDONTWRITEBYTECODE=1 python3 "$PROJECT/datasets/measured/$1" "$SHARED/$2" "$TMP/$3" \
    2> "$TMP/err" || fail "$1 failed: $(cat "$TMP/err")"
  cmp -s "$TMP/$3" "$PROJECT/datasets/measured/$3" \
    || fail "datasets/measured/$3 is stale: rerun python3 datasets/measured/$1 $SHARED/$2 datasets/measured/$3"
done
finish
