/* test_allocsim.c: the caching-allocator model on hand-worked sequences. Each expected
 * number is derived in the comment beside it from the rules of
 * c10/cuda/CUDACachingAllocator.cpp (see engine/model/allocsim.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "allocsim.h"

#define MiB (UINT64_C(1) << 20)
#define NBLOCKS 64

static allocsim_block blocks[NBLOCKS];

static allocsim_state make(uint64_t capacity, uint64_t max_split, int expandable)
{
    allocsim_state st;
    allocsim_config cfg = {capacity, max_split, expandable};
    assert_int_equal(allocsim_init(&st, &cfg, blocks, NBLOCKS), ALLOCSIM_OK);
    return st;
}

static uint32_t alloc_ok(allocsim_state *st, uint64_t bytes)
{
    uint32_t h = 0;
    assert_int_equal(allocsim_alloc(st, bytes, &h), ALLOCSIM_OK);
    assert_int_equal(allocsim_check(st), ALLOCSIM_OK);
    return h;
}

static void free_ok(allocsim_state *st, uint32_t h)
{
    assert_int_equal(allocsim_free(st, h), ALLOCSIM_OK);
    assert_int_equal(allocsim_check(st), ALLOCSIM_OK);
}

/* allocated, reserved and segment count in one line */
static void expect(const allocsim_state *st, uint64_t allocated, uint64_t reserved,
                   uint32_t segments)
{
    const allocsim_stats *s = allocsim_get_stats(st);
    assert_int_equal(s->allocated, allocated);
    assert_int_equal(s->reserved, reserved);
    assert_int_equal(s->segments, segments);
}

static void test_rounding_and_segment_sizes(void **state)
{
    (void)state;
    assert_int_equal(allocsim_round_size(1), 512);    /* below kMinBlockSize: 512 */
    assert_int_equal(allocsim_round_size(512), 512);  /* already a multiple */
    assert_int_equal(allocsim_round_size(513), 1024); /* next multiple of 512 */
    assert_int_equal(allocsim_segment_size(1024), 2 * MiB);        /* small: kSmallBuffer */
    assert_int_equal(allocsim_segment_size(1 * MiB), 2 * MiB);     /* 1 MiB is still small */
    assert_int_equal(allocsim_segment_size(1 * MiB + 512), 20 * MiB); /* large, < 10 MiB */
    assert_int_equal(allocsim_segment_size(10 * MiB - 512), 20 * MiB);
    assert_int_equal(allocsim_segment_size(10 * MiB), 10 * MiB);   /* kMinLargeAlloc: own size */
    assert_int_equal(allocsim_segment_size(10 * MiB + 512), 12 * MiB); /* up to 2 MiB */
    assert_int_equal(allocsim_segment_size(100 * MiB), 100 * MiB);
}

static void test_small_requests_share_a_segment(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 0);
    alloc_ok(&st, 1000);
    expect(&st, 1024, 2 * MiB, 1); /* 1000 -> 1024 B in a new 2 MiB small segment */
    alloc_ok(&st, 3000);
    expect(&st, 4096, 2 * MiB, 1); /* 3000 -> 3072 B from the remainder: 1024+3072 */
    alloc_ok(&st, 1 * MiB);
    /* 1 MiB is small; the remainder 2 MiB - 4096 = 2093056 B holds it */
    expect(&st, 4096 + 1 * MiB, 2 * MiB, 1);
    alloc_ok(&st, 1 * MiB);
    /* left: 2093056 - 1048576 = 1044480 B < 1 MiB: a second 2 MiB segment */
    expect(&st, 4096 + 2 * MiB, 4 * MiB, 2);
}

static void test_mid_size_requests_carve_a_20mib_segment(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 0);
    uint32_t first = alloc_ok(&st, 5 * MiB);
    expect(&st, 5 * MiB, 20 * MiB, 1); /* 1..10 MiB: kLargeBuffer segment, 15 MiB left */
    alloc_ok(&st, 5 * MiB);
    expect(&st, 10 * MiB, 20 * MiB, 1); /* from the 15 MiB remainder (10 > 1 MiB left) */
    uint32_t h = alloc_ok(&st, 9 * MiB + MiB / 2);
    /* 10 MiB left - 9.5 MiB = 0.5 MiB <= kSmallSize: not split, the whole 10 MiB is used */
    assert_int_equal(allocsim_block_size(&st, h), 10 * MiB);
    expect(&st, 20 * MiB, 20 * MiB, 1);
    free_ok(&st, first);
    assert_int_equal(allocsim_empty_cache(&st), ALLOCSIM_OK);
    /* the free head of a split segment is not released: 20 MiB stay reserved */
    expect(&st, 15 * MiB, 20 * MiB, 1);
}

static void test_large_request_split_then_fragmentation(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 0);
    uint32_t a = alloc_ok(&st, 100 * MiB);
    expect(&st, 100 * MiB, 100 * MiB, 1); /* >= 10 MiB: its own 100 MiB segment */
    free_ok(&st, a);
    expect(&st, 0, 100 * MiB, 1); /* cached, still reserved */
    assert_int_equal(allocsim_releasable(&st), 100 * MiB); /* an unsplit cached segment */
    uint32_t b = alloc_ok(&st, 60 * MiB);
    assert_int_equal(allocsim_block_size(&st, b), 60 * MiB); /* split: 40 MiB > 1 MiB left */
    expect(&st, 60 * MiB, 100 * MiB, 1);
    assert_int_equal(allocsim_releasable(&st), 0); /* the free 40 MiB is part of a split one */
    alloc_ok(&st, 80 * MiB);
    /* 40 MiB free cannot hold 80: a new 80 MiB segment, 100 + 80 = 180 reserved */
    expect(&st, 140 * MiB, 180 * MiB, 2);
    assert_int_equal(allocsim_get_stats(&st)->peak_reserved, 180 * MiB);
    assert_int_equal(allocsim_get_stats(&st)->peak_allocated, 140 * MiB);
}

static void test_expandable_reserves_less(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 1);
    uint32_t a = alloc_ok(&st, 100 * MiB);
    expect(&st, 100 * MiB, 100 * MiB, 1); /* five 20 MiB pages of one expandable segment */
    free_ok(&st, a);
    alloc_ok(&st, 60 * MiB);
    expect(&st, 60 * MiB, 100 * MiB, 1); /* split, 40 MiB free at the mapped end */
    alloc_ok(&st, 80 * MiB);
    /* the 40 MiB free end grows by two pages (40 MiB): 140 reserved, not 180 */
    expect(&st, 140 * MiB, 140 * MiB, 1);
    alloc_ok(&st, 1000);
    /* small pool: its own expandable segment, one 2 MiB page */
    expect(&st, 140 * MiB + 1024, 142 * MiB, 2);
}

static void test_fragmentation_oom_that_expandable_avoids(void **state)
{
    (void)state;
    uint32_t h;
    allocsim_state st = make(150 * MiB, 0, 0);
    free_ok(&st, alloc_ok(&st, 100 * MiB));
    alloc_ok(&st, 60 * MiB);
    /* 100 + 80 = 180 > 150; the 100 MiB segment is split (60 live) so release frees
     * nothing: out of memory although 40 cached + 50 unreserved >= 80 */
    assert_int_equal(allocsim_alloc(&st, 80 * MiB, &h), ALLOCSIM_OOM);
    expect(&st, 60 * MiB, 100 * MiB, 1);
    assert_int_equal(allocsim_get_stats(&st)->ooms, 1);
    assert_int_equal(allocsim_check(&st), ALLOCSIM_OK);

    st = make(150 * MiB, 0, 1);
    free_ok(&st, alloc_ok(&st, 100 * MiB));
    alloc_ok(&st, 60 * MiB);
    alloc_ok(&st, 80 * MiB);
    expect(&st, 140 * MiB, 140 * MiB, 1); /* 140 <= 150: fits with expandable segments */
}

static void test_max_split_size(void **state)
{
    (void)state;
    allocsim_state st = make(0, 40 * MiB, 0);
    free_ok(&st, alloc_ok(&st, 100 * MiB));
    uint32_t b = alloc_ok(&st, 60 * MiB);
    /* 60 >= max_split but the cached 100 >= 60 + 20 (kLargeBuffer tolerance): new segment */
    assert_int_equal(allocsim_block_size(&st, b), 60 * MiB);
    expect(&st, 60 * MiB, 160 * MiB, 2);
    free_ok(&st, b);
    alloc_ok(&st, 30 * MiB);
    /* 30 < max_split: oversize cached blocks (60, 100) are not used: a 30 MiB segment */
    expect(&st, 30 * MiB, 190 * MiB, 3);
    uint32_t d = alloc_ok(&st, 85 * MiB);
    /* best fit is the 100 MiB block: 100 < 85 + 20, handed out whole (85 >= max_split
     * is never split) */
    assert_int_equal(allocsim_block_size(&st, d), 100 * MiB);
    expect(&st, 130 * MiB, 190 * MiB, 3);

    /* without max_split_size the same 85 MiB request splits the 100 MiB block */
    st = make(0, 0, 0);
    free_ok(&st, alloc_ok(&st, 100 * MiB));
    d = alloc_ok(&st, 85 * MiB);
    assert_int_equal(allocsim_block_size(&st, d), 85 * MiB); /* 15 MiB left > 1 MiB */
}

static void test_capacity_release_then_oom(void **state)
{
    (void)state;
    uint32_t h;
    allocsim_state st = make(200 * MiB, 0, 0);
    free_ok(&st, alloc_ok(&st, 120 * MiB));
    alloc_ok(&st, 150 * MiB);
    /* 120 + 150 = 270 > 200: the unsplit cached 120 MiB segment is released first */
    expect(&st, 150 * MiB, 150 * MiB, 1);
    assert_int_equal(allocsim_get_stats(&st)->peak_reserved, 150 * MiB);
    assert_int_equal(allocsim_alloc(&st, 60 * MiB, &h), ALLOCSIM_OOM);
    /* 150 + 60 = 210 > 200 and nothing cached: out of memory, state unchanged */
    expect(&st, 150 * MiB, 150 * MiB, 1);
    assert_int_equal(allocsim_check(&st), ALLOCSIM_OK);
}

static void test_release_available_frees_only_what_is_needed(void **state)
{
    (void)state;
    allocsim_state st = make(180 * MiB, 40 * MiB, 0);
    uint32_t a = alloc_ok(&st, 100 * MiB), b = alloc_ok(&st, 60 * MiB);
    free_ok(&st, a);
    free_ok(&st, b);
    uint32_t c = alloc_ok(&st, 30 * MiB);
    /* cached 100 and 60 are oversize (>= 40) so 30 needs a segment: 160 + 30 > 180.
     * release_available_cached_blocks frees the smallest oversize block >= 40 (60):
     * 100 + 30 = 130 reserved; release_cached_blocks would have left 30 */
    expect(&st, 30 * MiB, 130 * MiB, 2);
    free_ok(&st, c);
    alloc_ok(&st, 150 * MiB);
    /* no cached block >= 150: frees the largest oversize (100), stops at 30 < 40;
     * 100 < 150 so it falls back to releasing every unsplit block (30): 0 + 150 */
    expect(&st, 150 * MiB, 150 * MiB, 1);
}

static void test_expandable_unmap_and_gap_fill(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 1);
    uint32_t a = alloc_ok(&st, 100 * MiB);
    uint32_t b = alloc_ok(&st, 10 * MiB);
    expect(&st, 110 * MiB, 120 * MiB, 1); /* one more 20 MiB page, 10 MiB of it free */
    free_ok(&st, a);
    /* releasable: the free 100 MiB are five whole pages; the free 10 MiB shares its
     * page with b */
    assert_int_equal(allocsim_releasable(&st), 100 * MiB);
    assert_int_equal(allocsim_empty_cache(&st), ALLOCSIM_OK);
    /* pages 0..4 (100 MiB) were free and are unmapped; the free 10 MiB shares a page
     * with b and stays */
    expect(&st, 10 * MiB, 20 * MiB, 1);
    uint32_t c = alloc_ok(&st, 50 * MiB);
    /* the lowest unmapped range (0..100 MiB) holds 50: three pages mapped there */
    expect(&st, 60 * MiB, 80 * MiB, 1);
    free_ok(&st, b);
    free_ok(&st, c);
    assert_int_equal(allocsim_empty_cache(&st), ALLOCSIM_OK);
    expect(&st, 0, 0, 0); /* every page unmapped: the segment itself is released */
}

static void test_expandable_best_fit_prefers_blocks_that_cannot_grow(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 1);
    uint32_t a = alloc_ok(&st, 30 * MiB); /* 2 pages (40 MiB), 10 free at 30..40 */
    alloc_ok(&st, 10 * MiB);              /* exactly the free 10: segment full at 40 */
    alloc_ok(&st, 25 * MiB);              /* 2 more pages: 80 reserved, 15 free at 65..80 */
    expect(&st, 65 * MiB, 80 * MiB, 1);
    free_ok(&st, a); /* free: 30 MiB at 0..30 (cannot grow) and 15 at the end (can) */
    alloc_ok(&st, 12 * MiB);
    /* best fit is the 15 MiB end block, but its expandable size is unbounded, larger
     * than the next block's 30, so get_free_block takes the 30 MiB block */
    expect(&st, 47 * MiB, 80 * MiB, 1);
    alloc_ok(&st, 28 * MiB);
    /* free now: 18 MiB (12..30) and the 15 MiB end: 28 grows the end by one page */
    expect(&st, 75 * MiB, 100 * MiB, 1);
}

static void test_peaks_and_reset(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 0);
    free_ok(&st, alloc_ok(&st, 100 * MiB));
    allocsim_reset_peaks(&st);
    assert_int_equal(allocsim_get_stats(&st)->peak_allocated, 0);        /* current */
    assert_int_equal(allocsim_get_stats(&st)->peak_reserved, 100 * MiB); /* current */
    alloc_ok(&st, 30 * MiB); /* split from the cached 100 MiB: reserved unchanged */
    assert_int_equal(allocsim_get_stats(&st)->peak_allocated, 30 * MiB);
    assert_int_equal(allocsim_get_stats(&st)->peak_reserved, 100 * MiB);
}

static void test_workspace_and_bad_arguments(void **state)
{
    (void)state;
    allocsim_state st;
    allocsim_config cfg = {0, 0, 0};
    allocsim_block two[2];
    uint32_t h = 7, h2;
    assert_int_equal(allocsim_init(&st, &cfg, two, 2), ALLOCSIM_OK);
    h = alloc_ok(&st, 1000); /* segment + split remainder: both slots used */
    assert_int_equal(allocsim_alloc(&st, 1000, &h2), ALLOCSIM_WORKSPACE);
    expect(&st, 1024, 2 * MiB, 1); /* untouched */
    free_ok(&st, h);               /* merged back: one slot */
    alloc_ok(&st, 1000);

    assert_int_equal(allocsim_free(&st, 1), ALLOCSIM_INVALID); /* the free remainder */
    assert_int_equal(allocsim_free(&st, 99), ALLOCSIM_INVALID);
    assert_int_equal(allocsim_alloc(&st, 0, &h), ALLOCSIM_OK);
    assert_int_equal(h, ALLOCSIM_NULL_HANDLE);
    assert_int_equal(allocsim_free(&st, h), ALLOCSIM_OK);
    assert_int_equal(allocsim_alloc(&st, ALLOCSIM_MAX_REQUEST + 1, &h), ALLOCSIM_INVALID);
    cfg.max_split_size = 10 * MiB; /* PyTorch requires max_split_size_mb >= 20 */
    assert_int_equal(allocsim_init(&st, &cfg, two, 2), ALLOCSIM_INVALID);
}

static void test_double_free(void **state)
{
    (void)state;
    allocsim_state st = make(0, 0, 0);
    uint32_t h = alloc_ok(&st, 100 * MiB);
    free_ok(&st, h);
    assert_int_equal(allocsim_free(&st, h), ALLOCSIM_INVALID);
}

static void test_trace_driver(void **state)
{
    (void)state;
    uint32_t handles[4];
    allocsim_workspace ws = {blocks, NBLOCKS, handles, 4};
    allocsim_config cfg = {0, 0, 0};
    allocsim_result r;
    const allocsim_event ev[] = {
        {ALLOCSIM_EV_ALLOC, 0, 100 * MiB},
        {ALLOCSIM_EV_FREE, 0, 0},
        {ALLOCSIM_EV_ALLOC, 1, 60 * MiB},
        {ALLOCSIM_EV_ALLOC, 2, 80 * MiB},
        {ALLOCSIM_EV_FREE, 1, 0},
        {ALLOCSIM_EV_FREE, 2, 0},
    };
    assert_int_equal(allocsim_run(&cfg, ev, 6, &ws, &r), ALLOCSIM_OK);
    /* the fragmentation sequence: peak 60 + 80 allocated, 100 + 80 reserved */
    assert_int_equal(r.stats.peak_allocated, 140 * MiB);
    assert_int_equal(r.stats.peak_reserved, 180 * MiB);
    assert_int_equal(r.stats.allocated, 0);
    assert_int_equal(r.failed_event, 6);

    cfg.expandable = 1;
    assert_int_equal(allocsim_run(&cfg, ev, 6, &ws, &r), ALLOCSIM_OK);
    assert_int_equal(r.stats.peak_reserved, 140 * MiB); /* as in the expandable test */

    const allocsim_event bad[] = {
        {ALLOCSIM_EV_ALLOC, 0, 1000},
        {ALLOCSIM_EV_FREE, 3, 0}, /* id 3 was never allocated */
    };
    assert_int_equal(allocsim_run(&cfg, bad, 2, &ws, &r), ALLOCSIM_INVALID);
    assert_int_equal(r.failed_event, 1);
    const allocsim_event out_of_range[] = {{ALLOCSIM_EV_ALLOC, 4, 1000}};
    assert_int_equal(allocsim_run(&cfg, out_of_range, 1, &ws, &r), ALLOCSIM_INVALID);
    assert_int_equal(r.failed_event, 0);
}

/* The rule behind memmodel.c pp_merge: a request larger than every earlier one finds no
 * cached block and adds its own segment. The last pipeline stage's logits-sized requests,
 * E = 2^28 entries a unit: 8 micro-batches each keep their 2-byte output (output_chunks) and
 * run the loss-parallel path (losspath.c: 4-byte upcast, shifted, exp, result; backward
 * zeros, exp, sum, gradient; the 2-byte cast back). Reserved is 34 E before the merge, as
 * the phases count it (18 for the path + 8 x 2), and the merged 16 E, larger than any
 * earlier request, adds exactly 16 E; on the next step everything is served from cache. */
static void test_merge_after_pipeline(void **state)
{
    (void)state;
    static allocsim_block many[1024];
    allocsim_state st;
    const allocsim_config cfg = {0, 0, 0};
    assert_int_equal(allocsim_init(&st, &cfg, many, 1024), ALLOCSIM_OK);
    const uint64_t E = UINT64_C(1) << 28;
    uint32_t out[8], s[10], merged;
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < 8; k++) {
            out[k] = alloc_ok(&st, 2 * E);
            s[1] = alloc_ok(&st, 4 * E), s[2] = alloc_ok(&st, 4 * E), s[3] = alloc_ok(&st, 4 * E);
            free_ok(&st, s[3]);
            s[4] = alloc_ok(&st, 4 * E);
            free_ok(&st, s[2]), free_ok(&st, s[1]);
            s[5] = alloc_ok(&st, 4 * E), s[6] = alloc_ok(&st, 4 * E), s[7] = alloc_ok(&st, 4 * E);
            free_ok(&st, s[6]);
            s[8] = alloc_ok(&st, 4 * E);
            free_ok(&st, s[7]), free_ok(&st, s[5]), free_ok(&st, s[4]);
            s[9] = alloc_ok(&st, 2 * E);
            free_ok(&st, s[8]), free_ok(&st, s[9]);
        }
        const uint64_t before = allocsim_get_stats(&st)->peak_reserved;
        assert_int_equal(before, (step ? 50 : 34) * E);
        merged = alloc_ok(&st, 16 * E);
        free_ok(&st, merged);
        assert_int_equal(allocsim_get_stats(&st)->peak_reserved, 50 * E);
        for (int k = 0; k < 8; k++)
            free_ok(&st, out[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding_and_segment_sizes),
        cmocka_unit_test(test_small_requests_share_a_segment),
        cmocka_unit_test(test_mid_size_requests_carve_a_20mib_segment),
        cmocka_unit_test(test_large_request_split_then_fragmentation),
        cmocka_unit_test(test_expandable_reserves_less),
        cmocka_unit_test(test_fragmentation_oom_that_expandable_avoids),
        cmocka_unit_test(test_max_split_size),
        cmocka_unit_test(test_capacity_release_then_oom),
        cmocka_unit_test(test_release_available_frees_only_what_is_needed),
        cmocka_unit_test(test_expandable_unmap_and_gap_fill),
        cmocka_unit_test(test_expandable_best_fit_prefers_blocks_that_cannot_grow),
        cmocka_unit_test(test_peaks_and_reset),
        cmocka_unit_test(test_workspace_and_bad_arguments),
        cmocka_unit_test(test_double_free),
        cmocka_unit_test(test_trace_driver),
        cmocka_unit_test(test_merge_after_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
