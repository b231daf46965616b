#!/usr/bin/env python3
"""Error-band methods compared, leave-one-source-out (README "Error band"; not run by ctest).

Re-implements the band of engine/inputs/band.c over the rows `validate --out` writes (with the
stack, fine-tuning mode and data shape read back from each row's measured CSV) and prints the
coverage and median width of the shipped method next to the alternatives the README weighs:
unweighted order statistics (the method before the sources were weighted), a key with the
metric first, and one symmetric score |log ratio|. The first line must agree with the `all`
line of `validate --summary`: the script checks that, so it cannot drift from the C code
silently.

Usage: python3 tests/research/band_methods.py [BINARY]   (default build/llmem-sweep; run in the
repo root; reads every datasets/measured/*.csv)
"""
import collections
import csv
import glob
import math
import os
import statistics
import subprocess
import sys
import tempfile

ALPHA = 0.10  # band.h BAND_COVER = 1 - ALPHA/2
MIN_ROWS, MIN_SOURCES = 19, 3  # band.h


def rows_of(binary):
    files = sorted(glob.glob("datasets/measured/*.csv"))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "v.csv")
        args = [binary, "validate", "--summary", "--out", out]
        for f in files:
            args += ["--measured", f]
        summary = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        rows = list(csv.DictReader(open(out)))
    measured = {f: list(csv.DictReader(open(f))) for f in files}
    res = []
    for r in rows:
        if r["status"] != "ok":
            continue
        m = measured[r["file"]][int(r["line"]) - 2]
        fixed = "packed" in (m.get("features") or "").split("+") or m.get("seq_kind") == "exact"
        res.append(dict(src=r["source"], cell=m.get("source") or "", stack=m.get("stack") or "hf",
                        ft=m["finetune"],
                        data=m.get("data") or ("packed" if fixed else "variable"),
                        metric=r["metric"], meas=float(r["measured_gib"]),
                        pred=float(r["sweep_gib"])))  # the band's residuals are the sweep's
    join_sources(res)
    line = [l.split() for l in summary.splitlines() if l.startswith("all ")][-1]
    return res, (int(line[3]), int(line[1]))


def join_sources(res):
    """validate_band.c band_sources: prefixes whose rows share a non-empty `source` cell are
    one source to the band (our own grids: one harness)."""
    up = {}

    def root(x):
        while up.setdefault(x, x) != x:
            x = up[x]
        return x

    for r in res:
        if r["cell"]:
            a, b = root(("prefix", r["src"])), root(("cell", r["cell"]))
            if a != b:
                up[a] = b
    names = {}
    for r in res:
        names.setdefault(root(("prefix", r["src"])), r["src"])
    for r in res:
        r["src"] = names[root(("prefix", r["src"]))]


def weighted(group, equal_sources):
    """band.c group_band: weighted 5 % and 95 % quantiles, mass 1/(m+1) at each end."""
    m = len(group)
    t = 1.0 / (m + 1)
    per = collections.Counter(r["src"] for r in group)
    w = [(r["meas"] / r["pred"],
          (1 - t) / (len(per) * per[r["src"]]) if equal_sources else (1 - t) / m) for r in group]
    w.sort()

    def quantile(seq):
        total = 0.0
        for ratio, weight in seq:
            total += weight
            if total >= 1 - ALPHA / 2 - 1e-12:
                return ratio
        return None

    return quantile(reversed(w)), quantile(w)


def symmetric(group, _):
    """One score |log ratio|, rank ceil((m+1)(1-alpha)): a band [1/q, q]."""
    v = sorted(abs(math.log(r["meas"] / r["pred"])) for r in group)
    k = math.ceil((len(v) + 1) * (1 - ALPHA))
    return (None, None) if k > len(v) else (math.exp(-v[k - 1]), math.exp(v[k - 1]))


def coverage(rows, levels, method, equal_sources):
    inside, widths = 0, []
    for r in rows:
        for fields in levels:
            g = [s for s in rows if s["src"] != r["src"] and
                 all(s[f] == r[f] for f in fields)]
            if len(g) < MIN_ROWS or len({s["src"] for s in g}) < MIN_SOURCES:
                continue
            lo, hi = method(g, equal_sources)
            if lo is None or hi is None:
                continue
            lo, hi = min(1.0, lo), max(1.0, hi)
            inside += r["pred"] * lo - 5e-4 <= r["meas"] <= r["pred"] * hi + 5e-4
            widths.append(100 * (hi - lo))
            break
    return inside, len(widths), statistics.median(widths)


def main():
    rows, (c_inside, c_rows) = rows_of(sys.argv[1] if len(sys.argv) > 1 else "build/llmem-sweep")
    key = [("stack", "ft", "data"), ("stack", "ft"), ("stack",), ()]
    with_metric = [("metric",) + k for k in key] + [()]
    cases = [("shipped: stack/finetune/data, sources weighted equally", key, weighted, True),
             ("the same groups, unweighted order statistics", key, weighted, False),
             ("metric first, sources weighted equally", with_metric, weighted, True),
             ("symmetric |log ratio|, unweighted", key, symmetric, False)]
    for i, (name, levels, method, eq) in enumerate(cases):
        inside, n, width = coverage(rows, levels, method, eq)
        print(f"{name:58s} {inside:4d} of {n:4d} inside, {100 * inside / n:5.1f} %, "
              f"median width {width:5.1f} %")
        if i == 0 and (inside, n) != (c_inside, c_rows):
            sys.exit(f"validate says {c_inside} of {c_rows}: this script no longer matches band.c")


if __name__ == "__main__":
    main()
