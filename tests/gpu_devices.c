/* gpu_devices.c: checks that need a real GPU. With no usable GPU it exits 77, which ctest
 * reports as skipped (register it with SKIP_RETURN_CODE 77 and LABELS gpu). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "devices.h"

#define SKIP 77
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static int failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                                \
        }                                                                              \
    } while (0)

static void check_device(const struct device_info *d, int index)
{
    printf("device %d: %s, total %" PRIu64 ", free %" PRIu64 ", cc %d.%d\n", d->index,
           d->name, d->total_bytes, d->free_bytes, d->cc_major, d->cc_minor);
    CHECK(d->index == index);
    CHECK(strlen(d->name) > 0);
    CHECK(d->total_bytes > d->free_bytes);
    CHECK(d->free_bytes > 0);
    CHECK(d->cc_major >= 3);
}

/* The context floor: hundreds of MiB on current GPUs; below 100 MiB would mean the probe did
 * not create a context, above 4 GiB that something else holds the GPU or the math is wrong. */
static uint64_t check_probe(int index)
{
    uint64_t bytes = 0;
    char note[256] = "";
    int rc = devices_probe_context(index, &bytes, note, sizeof note);
    printf("device %d: context uses %" PRIu64 " bytes (%" PRIu64 " MiB)%s%s\n", index, bytes,
           bytes / MIB, note[0] ? ": " : "", note);
    CHECK(rc == 0);
    CHECK(bytes > 100 * MIB);
    CHECK(bytes < 4 * GIB);
    return bytes;
}

/* Two probes in a row must agree: each builds and releases its own context, so the reading
 * must not depend on what an earlier call left behind. */
static void check_probe_repeatable(int index, uint64_t first)
{
    uint64_t second = check_probe(index);
    uint64_t diff = first > second ? first - second : second - first;
    CHECK(diff < 64 * MIB);
}

int main(void)
{
    struct device_info devs[16];
    char note[256] = "";
    int n = devices_list(devs, 16, note, sizeof note);
    if (n == 0) {
        printf("skipped: no GPU: %s\n", note);
        return SKIP;
    }
    if (n < 0) {
        fprintf(stderr, "devices_list failed: %s\n", note);
        return 1;
    }
    for (int i = 0; i < n && i < 16; i++)
        check_device(&devs[i], i);
    check_probe_repeatable(0, check_probe(0));
    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all GPU checks passed\n");
    return 0;
}
