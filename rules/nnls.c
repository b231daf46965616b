/* nnls.c: Lawson-Hanson non-negative least squares (see nnls.h).
 *
 * The passive set P holds the columns allowed to be positive. Each outer step moves into P
 * the column whose gradient w = A^T (b - A x) is largest; the inner loop solves the
 * unconstrained problem on P and, while that solution has non-positive entries, steps
 * from x towards it as far as feasibility allows and drops the columns that reach zero.
 * The problems here are tiny (a few features, tens of rows), so clarity beats speed. */
#include "nnls.h"

#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Applies the Householder reflection held in v[0..len) (I - 2 v v^T / v^T v) to the
 * column c of q (rows from..m-1, row stride ld). */
static void reflect(double *q, size_t ld, size_t from, size_t m, size_t c, const double *v,
                    double vv)
{
    double dot = 0.0;
    for (size_t i = from; i < m; i++)
        dot += v[i - from] * q[i * ld + c];
    double f = 2.0 * dot / vv;
    for (size_t i = from; i < m; i++)
        q[i * ld + c] -= f * v[i - from];
}

/* QR of q (m x k, row-major) in place with y transformed alongside; leaves R in the upper
 * triangle. Column k of q is y (so reflections reach it too). */
static void householder(double *q, size_t m, size_t k, double *v)
{
    size_t steps = m < k ? m : k;
    for (size_t j = 0; j < steps; j++) {
        double norm = 0.0;
        for (size_t i = j; i < m; i++)
            norm += q[i * (k + 1) + j] * q[i * (k + 1) + j];
        norm = sqrt(norm);
        if (norm == 0.0)
            continue;
        double alpha = q[j * (k + 1) + j] > 0 ? -norm : norm;
        for (size_t i = j; i < m; i++)
            v[i - j] = q[i * (k + 1) + j];
        v[0] -= alpha;
        double vv = 0.0;
        for (size_t i = 0; i < m - j; i++)
            vv += v[i] * v[i];
        if (vv == 0.0)
            continue;
        for (size_t c = j + 1; c <= k; c++)
            reflect(q, k + 1, j, m, c, v, vv);
        q[j * (k + 1) + j] = alpha;
    }
}

int nnls_lsq(const double *a, size_t m, size_t n, const unsigned char *use, const double *b,
             double *x)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        k += use[j] != 0;
    memset(x, 0, n * sizeof *x);
    if (k == 0)
        return 0;
    size_t *cols = malloc(k * sizeof *cols);
    double *q = malloc(m * (k + 1) * sizeof *q);
    double *v = malloc(m * sizeof *v);
    double *z = calloc(k, sizeof *z);
    if (!cols || !q || !v || !z) {
        free(cols), free(q), free(v), free(z);
        return -1;
    }
    double colmax = 0.0;
    for (size_t j = 0, c = 0; j < n; j++) {
        if (!use[j])
            continue;
        double s = 0.0;
        for (size_t i = 0; i < m; i++) {
            q[i * (k + 1) + c] = a[i * n + j];
            s += a[i * n + j] * a[i * n + j];
        }
        colmax = fmax(colmax, sqrt(s));
        cols[c++] = j;
    }
    for (size_t i = 0; i < m; i++)
        q[i * (k + 1) + k] = b[i];
    householder(q, m, k, v);
    /* back substitution; a diagonal this small means the column depends on earlier ones */
    const double tiny = 1e-10 * colmax;
    size_t steps = m < k ? m : k;
    for (size_t jj = steps; jj-- > 0;) {
        double s = q[jj * (k + 1) + k];
        for (size_t l = jj + 1; l < steps; l++)
            s -= q[jj * (k + 1) + l] * z[l];
        double d = q[jj * (k + 1) + jj];
        z[jj] = fabs(d) > tiny ? s / d : 0.0;
    }
    for (size_t c = 0; c < k; c++)
        x[cols[c]] = z[c];
    free(cols), free(q), free(v), free(z);
    return 0;
}

/* w = A^T (b - A x); returns ||b - A x||. */
static double gradient(const double *a, size_t m, size_t n, const double *b, const double *x,
                       double *w)
{
    double rr = 0.0;
    memset(w, 0, n * sizeof *w);
    for (size_t i = 0; i < m; i++) {
        double r = b[i];
        for (size_t j = 0; j < n; j++)
            r -= a[i * n + j] * x[j];
        rr += r * r;
        for (size_t j = 0; j < n; j++)
            w[j] += a[i * n + j] * r;
    }
    return sqrt(rr);
}

/* The inner loop for a passive set that just gained column t. Returns 1 when x moved,
 * 0 when t turned out useless (it left P again, x unchanged), -1 on failure. */
static int inner(const double *a, size_t m, size_t n, const double *b, double *x,
                 unsigned char *p, double *z, size_t t, size_t *iter, size_t maxit)
{
    for (bool first = true;; first = false) {
        if (++*iter > maxit || nnls_lsq(a, m, n, p, b, z) != 0)
            return -1;
        if (first && z[t] <= 0.0) { /* rounding: w_t > 0 should guarantee z_t > 0 */
            p[t] = 0;
            return 0;
        }
        double alpha = HUGE_VAL;
        size_t jmin = n;
        for (size_t j = 0; j < n; j++) {
            if (p[j] && z[j] <= 0.0) {
                double step = x[j] / (x[j] - z[j]);
                if (step < alpha)
                    alpha = step, jmin = j;
            }
        }
        if (jmin == n) { /* z is feasible: accept it */
            for (size_t j = 0; j < n; j++)
                x[j] = p[j] ? z[j] : 0.0;
            return 1;
        }
        for (size_t j = 0; j < n; j++)
            if (p[j])
                x[j] += alpha * (z[j] - x[j]);
        x[jmin] = 0.0;
        for (size_t j = 0; j < n; j++)
            if (p[j] && x[j] <= 0.0)
                p[j] = 0, x[j] = 0.0;
    }
}

int nnls(const double *a, size_t m, size_t n, const double *b, double *x, double *rnorm)
{
    unsigned char *p = calloc(n ? n : 1, 2);
    double *w = malloc((n ? n : 1) * sizeof *w), *z = malloc((n ? n : 1) * sizeof *z);
    if (!p || !w || !z) {
        free(p), free(w), free(z);
        return -1;
    }
    unsigned char *skip = p + n;
    memset(x, 0, n * sizeof *x);
    double bnorm = 0.0, colmax = 0.0;
    for (size_t i = 0; i < m; i++)
        bnorm += b[i] * b[i];
    for (size_t j = 0; j < n; j++) {
        double s = 0.0;
        for (size_t i = 0; i < m; i++)
            s += a[i * n + j] * a[i * n + j];
        colmax = fmax(colmax, sqrt(s));
    }
    /* gradients below this are rounding noise relative to |A| |b| */
    const double tol = 1e3 * DBL_EPSILON * colmax * sqrt(bnorm) * (double)(m > n ? m : n);
    size_t iter = 0, maxit = 30 * n + 50;
    int rc = 0;
    double res = gradient(a, m, n, b, x, w);
    for (;;) {
        size_t t = n;
        double best = tol;
        for (size_t j = 0; j < n; j++)
            if (!p[j] && !skip[j] && w[j] > best)
                best = w[j], t = j;
        if (t == n)
            break;
        p[t] = 1;
        int moved = inner(a, m, n, b, x, p, z, t, &iter, maxit);
        if (moved < 0) {
            rc = -1;
            break;
        }
        if (moved == 0) {
            skip[t] = 1;
            continue;
        }
        memset(skip, 0, n);
        res = gradient(a, m, n, b, x, w);
    }
    if (rnorm)
        *rnorm = res;
    free(p), free(w), free(z);
    return rc;
}
