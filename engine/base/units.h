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

/* Byte counts of the model saturate at BYTES_SAT (2^62 bytes, 4 EiB: far beyond any GPU,
 * and a sum of two stays below 2^63), so no term wraps and none prints negative where a
 * signed 64-bit integer carries it (JSON). A saturated count stays saturated. */
#define BYTES_SAT (UINT64_C(1) << 62)

static inline uint64_t bytes_add(uint64_t a, uint64_t b)
{
    return (a >= BYTES_SAT || b >= BYTES_SAT || a + b >= BYTES_SAT) ? BYTES_SAT : a + b;
}

static inline uint64_t bytes_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return (__builtin_mul_overflow(a, b, &r) || r >= BYTES_SAT) ? BYTES_SAT : r;
}

/* n x per for a per-element byte count that need not be whole (0.5 for a chunk of eight);
 * NaN saturates too. */
static inline uint64_t bytes_scale(uint64_t n, double per)
{
    double r = (double)n * per;
    return !(r < (double)BYTES_SAT) ? BYTES_SAT : r <= 0 ? 0 : (uint64_t)r;
}

/* bytes / 2^30 */
static inline double units_gib(uint64_t bytes) { return (double)bytes / (double)GIB; }

#endif
