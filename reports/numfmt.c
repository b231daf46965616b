/* numfmt.c: fixed-decimal numbers for every report (see numfmt.h). */
#include "numfmt.h"

#include <stdlib.h>

char *numfmt_fixed(double v, int decimals, char *buf, size_t n)
{
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
