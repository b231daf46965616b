/* numfmt.h: the one way the reports round a number to a fixed count of decimals: printf's
 * "%.*f" in the C locale, which rounds the exact binary value (a tie such as 35.0625 GiB
 * goes to even: 35.062). The CSV prints it; the JSON carries the number it prints, so the
 * two never disagree in the last digit. */
#ifndef LLMEM_NUMFMT_H
#define LLMEM_NUMFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NUMFMT_MAX 400 /* enough for %.6f of 1e300 */

#define NUMFMT_UINT_MAX 20 /* decimal digits of UINT64_MAX */

/* The decimal digits of v, written backwards so that they end just before `end` (no
 * terminator). @return where they start. */
char *numfmt_uint(uint64_t v, char *end);

/* v with `decimals` decimals into buf (n bytes); returns buf. */
char *numfmt_fixed(double v, int decimals, char *buf, size_t n);

/* The number numfmt_fixed prints, read back: what a JSON writer stores. */
double numfmt_value(double v, int decimals);

/* Writes numfmt_fixed(v, decimals) and then sep (when not '\0') to f; 0 or -1. */
int numfmt_put(FILE *f, double v, int decimals, char sep);

#endif
