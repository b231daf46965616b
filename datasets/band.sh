#!/bin/sh
# Regenerates the error-band table (README "Error band") from every measured CSV in the
# repo: datasets/band.sh [BINARY] [OUT]  (defaults: build/llmem-sweep, datasets/band.csv).
# Run it after any change of the memory model or of datasets/measured/; tests/cli/band.sh
# fails while the shipped table is stale.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/llmem-sweep}
out=${2:-$here/band.csv}
LC_ALL=C exec "$bin" validate --catalog "$here" --summary --write-band "$out" \
  $(LC_ALL=C ls "$here"/measured/*.csv | sed 's/^/--measured /') > /dev/null
