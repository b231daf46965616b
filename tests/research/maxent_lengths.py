#!/usr/bin/env python3
"""Sample lengths for `--lengths` from a dataset's stated statistics (README "Answer.AI's rows
join the measured set", the SWB check; not run by ctest).

A dataset card often gives only the mean, standard deviation, minimum and maximum of its token
lengths. The least-informed distribution with exactly those (the maximum-entropy density on
[min, max] with that mean and variance) is exp(a z + b z^2), z = (x - mean) / std; a and b are
solved by Newton's method on a 4000-point grid. The script writes N lengths at the
distribution's quantiles (i + 0.5) / N in a fixed shuffled order, as a CSV with a `tokens`
column, and prints the share of samples at or above each cap.

Usage: python3 tests/research/maxent_lengths.py MEAN STD MIN MAX OUT.csv [N]
  e.g. the SWB rows' cls-fudan-news-zh under Qwen's tokenizer (datasets/measured/public-2.csv
  notes): 3234.4 2547.5 91 19548 /tmp/len.csv
"""
import math
import random
import sys


def solve(xs, mu, sd):
    zs = [(x - mu) / sd for x in xs]

    def moments(a, b):
        w = [math.exp(a * z + b * z * z) for z in zs]
        total = sum(w)
        m = sum(wi * z for wi, z in zip(w, zs)) / total
        v = sum(wi * z * z for wi, z in zip(w, zs)) / total
        return m, v, w

    a, b = 0.0, -0.5
    for _ in range(100):
        m, v, _ = moments(a, b)
        e = 1e-5
        m1, v1, _ = moments(a + e, b)
        m2, v2, _ = moments(a, b + e)
        j = [[(m1 - m) / e, (m2 - m) / e], [(v1 - v) / e, (v2 - v) / e]]
        r = [-m, 1.0 - v]
        det = j[0][0] * j[1][1] - j[0][1] * j[1][0]
        da = (r[0] * j[1][1] - j[0][1] * r[1]) / det
        db = (j[0][0] * r[1] - j[1][0] * r[0]) / det
        a, b = a + da, b + db
        if abs(da) + abs(db) < 1e-12:
            break
    return moments(a, b)[2]


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    mu, sd, lo, hi = (float(v) for v in sys.argv[1:5])
    n = int(sys.argv[6]) if len(sys.argv) == 7 else 20000
    xs = [lo + (hi - lo) * (i + 0.5) / 4000 for i in range(4000)]
    w = solve(xs, mu, sd)
    total, acc, cdf = sum(w), 0.0, []
    for wi in w:
        acc += wi / total
        cdf.append(acc)
    out, j = [], 0
    for i in range(n):
        q = (i + 0.5) / n
        while j < len(cdf) - 1 and cdf[j] < q:
            j += 1
        out.append(int(round(xs[j])))
    random.Random(1).shuffle(out)
    with open(sys.argv[5], "w") as f:
        f.write("tokens\n" + "\n".join(map(str, out)) + "\n")
    for cap in (2048, 4096, 8192):
        print(f"at or above {cap}: {sum(x >= cap for x in out) / n:.4f}")


if __name__ == "__main__":
    main()
