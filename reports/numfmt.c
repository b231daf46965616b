/* numfmt.c: fixed-decimal numbers for every report (see numfmt.h). */
#include "numfmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

char *numfmt_uint(uint64_t v, char *end)
{
    do
        *--end = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    return end;
}

/* The sweep's reports print tens of numbers per layout and printf's exact binary-to-decimal
 * conversion was most of the default sweep's time, so the common case takes a fast path
 * that yields the same characters. |v| x 10^d is rounded once (10^d is exact for d <= 9),
 * so the computed product is within product x 2^-53 of the exact one; rounding it to the
 * nearest integer gives printf's digits unless the exact product lies that close to a
 * half (a tie, which printf breaks to even, or nearly one): those, and anything large,
 * non-finite or too long for buf, go to snprintf. */
static bool fixed_fast(double v, int d, char *buf, size_t n)
{
    static const double scale[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    static const uint64_t unit[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                    100000000, 1000000000};
    if (d < 0 || d > 9 || n < 32 || !isfinite(v))
        return false;
    const double p = fabs(v) * scale[d];
    if (!(p < 0x1p52))
        return false;
    const double whole = floor(p), frac = p - whole; /* both exact below 2^52 */
    if (fabs(frac - 0.5) <= p * 0x1p-50)
        return false;
    const uint64_t r = (uint64_t)whole + (frac > 0.5);
    uint64_t fp = r % unit[d];
    char digits[NUMFMT_UINT_MAX];
    const char *ip = numfmt_uint(r / unit[d], digits + sizeof digits);
    char *o = buf;
    if (signbit(v)) /* printf keeps the sign of a negative that rounds to zero: -0.000 */
        *o++ = '-';
    while (ip < digits + sizeof digits)
        *o++ = *ip++;
    if (d) {
        *o++ = '.';
        for (int i = d - 1; i >= 0; i--, fp /= 10)
            o[i] = (char)('0' + fp % 10);
        o += d;
    }
    *o = '\0';
    return true;
}

char *numfmt_fixed(double v, int decimals, char *buf, size_t n)
{
    if (!fixed_fast(v, decimals, buf, n))
        snprintf(buf, n, "%.*f", decimals, v);
    return buf;
}

double numfmt_value(double v, int decimals)
{
    char buf[NUMFMT_MAX];
    return strtod(numfmt_fixed(v, decimals, buf, sizeof buf), NULL);
}

int numfmt_put(FILE *f, double v, int decimals, char sep)
{
    char buf[NUMFMT_MAX];
    if (fputs(numfmt_fixed(v, decimals, buf, sizeof buf), f) == EOF)
        return -1;
    return sep && fputc(sep, f) == EOF ? -1 : 0;
}
