/* nnls.h: non-negative least squares, min ||A x - b||_2 subject to x >= 0, by the active
 * set method of Lawson and Hanson ("Solving Least Squares Problems", 1974, chapter 23). */
#ifndef LLMEM_NNLS_H
#define LLMEM_NNLS_H

#include <stddef.h>

/* A is m x n, row-major; b has m entries; x receives n. *rnorm (may be NULL) receives the
 * residual norm. Columns should be of comparable scale (the fitter scales them to unit
 * norm). Returns 0, or -1 when memory runs out or the iteration limit is reached. */
int nnls(const double *a, size_t m, size_t n, const double *b, double *x, double *rnorm);

/* Unconstrained least squares on the columns with use[j] != 0 (Householder QR); the other
 * entries of x are set to 0, as are those of columns found dependent. Returns 0 or -1. */
int nnls_lsq(const double *a, size_t m, size_t n, const unsigned char *use, const double *b,
             double *x);

#endif
