/* fuzz_allocsim.c: random allocation traces on the caching-allocator model. Whatever the
 * sequence, no crash and the invariants hold after every step: allocated <= reserved,
 * reserved <= capacity when set, the blocks sum to both counters (allocsim_check), and
 * empty_cache releases what allocsim_releasable() reported.
 *
 * Input: byte 0 picks the configuration (bit 0 expandable, bits 1-2 max_split_size,
 * bits 3-4 capacity); then 4-byte steps: op (bits 0-1: alloc, free, empty_cache, reset
 * peaks; bits 2-7: live slot), size exponent, two bytes of mantissa. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "allocsim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SLOTS 64
#define MIB (UINT64_C(1) << 20)

static void require(int ok)
{
    if (!ok)
        abort();
}

static allocsim_config config_of(uint8_t c)
{
    static const uint64_t split[4] = {0, 20 * MIB, 40 * MIB, 200 * MIB};
    static const uint64_t cap[4] = {0, 64 * MIB, 1024 * MIB, 80 * 1024 * MIB};
    allocsim_config cfg = {cap[(c >> 3) & 3], split[(c >> 1) & 3], c & 1};
    return cfg;
}

/* A request from 1 byte to about 2^40 bytes: mantissa << exponent. */
static uint64_t bytes_of(const uint8_t *p)
{
    uint64_t mant = (uint64_t)p[1] << 8 | p[2];
    return mant << (p[0] % 25);
}

static void step(allocsim_state *st, const uint8_t *p, uint32_t *live)
{
    unsigned slot = (p[0] >> 2) % SLOTS;
    switch (p[0] & 3) {
    case 0:
        if (live[slot] == UINT32_MAX - 1) {
            allocsim_status s = allocsim_alloc(st, bytes_of(p + 1), &live[slot]);
            require(s == ALLOCSIM_OK || s == ALLOCSIM_OOM || s == ALLOCSIM_WORKSPACE);
            if (s != ALLOCSIM_OK)
                live[slot] = UINT32_MAX - 1;
        }
        break;
    case 1:
        if (live[slot] != UINT32_MAX - 1) {
            require(allocsim_free(st, live[slot]) == ALLOCSIM_OK);
            live[slot] = UINT32_MAX - 1;
        }
        break;
    case 2: {
        /* empty_cache gives back exactly what allocsim_releasable() announced */
        uint64_t before = allocsim_get_stats(st)->reserved, r = allocsim_releasable(st);
        allocsim_status s = allocsim_empty_cache(st);
        require(s == ALLOCSIM_WORKSPACE ||
                (s == ALLOCSIM_OK && allocsim_get_stats(st)->reserved == before - r));
        break;
    }
    default:
        allocsim_reset_peaks(st);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static allocsim_block blocks[256];
    uint32_t live[SLOTS];
    allocsim_state st;
    if (size < 1)
        return 0;
    allocsim_config cfg = config_of(data[0]);
    require(allocsim_init(&st, &cfg, blocks, 256) == ALLOCSIM_OK);
    for (unsigned i = 0; i < SLOTS; i++)
        live[i] = UINT32_MAX - 1;
    for (size_t i = 1; i + 4 <= size; i += 4) {
        step(&st, data + i, live);
        require(allocsim_check(&st) == ALLOCSIM_OK);
    }
    for (unsigned i = 0; i < SLOTS; i++)
        if (live[i] != UINT32_MAX - 1)
            require(allocsim_free(&st, live[i]) == ALLOCSIM_OK);
    require(allocsim_get_stats(&st)->allocated == 0);
    require(allocsim_empty_cache(&st) == ALLOCSIM_OK);
    require(allocsim_check(&st) == ALLOCSIM_OK);
    /* with nothing live every segment is released */
    require(allocsim_get_stats(&st)->reserved == 0);
    return 0;
}
