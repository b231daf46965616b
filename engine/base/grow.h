/* grow.h: the one way the tool grows an array: doubling, so appending n elements costs
 * O(n) copies in all. Used while building (tensor lists, the space, hit lists, rule books),
 * never per evaluated point. */
#ifndef LLMEM_GROW_H
#define LLMEM_GROW_H

#include <stddef.h>

/* Makes room for element n in p, an array of *cap elements of size sz: when n < *cap it
 * returns p; else it reallocates to twice *cap (first when *cap is 0), sets *cap and
 * returns the new array. Returns NULL when memory runs out (p and *cap unchanged). */
void *grow_array(void *p, size_t *cap, size_t n, size_t sz, size_t first);

#endif
