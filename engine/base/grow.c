/* grow.c: arrays grown by doubling (see grow.h). */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

void *grow_array(void *p, size_t *cap, size_t n, size_t sz, size_t first)
{
    if (n < *cap)
        return p;
    size_t c = *cap ? 2 * *cap : first;
    while (c <= n)
        c *= 2;
    if (c > SIZE_MAX / sz)
        return NULL;
    void *q = realloc(p, c * sz);
    if (q)
        *cap = c;
    return q;
}
