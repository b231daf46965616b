/* units.h: memory sizes as people write them, and as reports print them.
 * MB/GB/TB are powers of 10, MiB/GiB/TiB powers of 2 (DESIGN.md section 4). */
#ifndef LLMEM_UNITS_H
#define LLMEM_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define GIB (UINT64_C(1) << 30)
#define UNITS_MAX_BYTES (UINT64_C(1) << 50) /* 1 PiB: larger is a typo */

/* "80GiB", "81920MiB", "85.9GB", "16384MB", "1.5 TiB", "4096B". The unit is required
 * and case-insensitive; the value must be positive and at most 1 PiB. Returns 0 and sets
 * *bytes (rounded to the nearest byte), or -1 on junk. */
int units_parse_size(const char *s, uint64_t *bytes);

/* bytes / 2^30 */
static inline double units_gib(uint64_t bytes) { return (double)bytes / (double)GIB; }

#endif
