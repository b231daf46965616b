/* test_streampool.c: FSDP2's all-gather copy-in stream pool (engine/model/streampool.c) on
 * hand-worked unit sequences, and its place in the memory model (torchtitan only). Sizes
 * are multiples of 2 MiB above 10 MiB where they open a segment, so every new segment is
 * exactly the request (CUDACachingAllocator get_allocation_size) and best fit is by size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "allocsim.h"
#include "memmodel.h"
#include "plan.h"
#include "streampool.h"
#include "tiny_model.h"

#define MiB (UINT64_C(1) << 20)

/* No shard group, nothing gathered: no pool. */
static void test_no_pool(void **state)
{
    (void)state;
    struct fsdp2_units u = {.first = 1024 * MiB, .block = 200 * MiB, .blocks = 4, .dp = 1};
    assert_int_equal(streampool_fsdp2_copy_in(&u), 0);
    u = (struct fsdp2_units){.dp = 8};
    assert_int_equal(streampool_fsdp2_copy_in(&u), 0);
}

/* torchtitan 9dec370 without pp, dp 8: root 1024 MiB, four blocks of 200 MiB.
 * root: its casts 128 MiB (segment A), its output 1024 (B), casts freed (A free).
 * block 0: casts 25 MiB split off A; output 200 while the root's is held: new segment C;
 *   casts freed, then the root's output (B free).
 * block 1: casts in A again (the smallest free block that fits); output 200 split off B
 *   (C is held); block 0's output freed (C free).
 * block 2: output 200 into C (exact fit beats B's remainder); block 3: into B; and so on.
 * backward: blocks 2..0 gathered again one at a time: they fit. 128 + 1024 + 200 MiB. */
static void test_root_then_blocks(void **state)
{
    (void)state;
    struct fsdp2_units u = {.first = 1024 * MiB, .block = 200 * MiB, .blocks = 4, .dp = 8, .bwd_blocks = 3};
    assert_int_equal(streampool_fsdp2_copy_in(&u), 1352 * MiB);
    u.blocks = 32, u.bwd_blocks = 31; /* the two block segments alternate: more blocks add nothing */
    assert_int_equal(streampool_fsdp2_copy_in(&u), 1352 * MiB);
}

/* torchtitan from 83e69410, dp 8: the embedding's unit 512 MiB first, four blocks of 200,
 * [norm, output] 512 last; backward gathers the four blocks and the embedding again.
 * embedding: casts 64 (A), output 512 (B). block 0: casts off A, output while the
 * embedding's is held: C, 200; then B is free. Blocks 1..3 alternate in B (split) and C.
 * [norm, output]: casts 64 fill A; its output finds block 3's 200 in B and C's 200 free:
 * neither holds 512, so D, 512. Backward fits in these. 64 + 512 + 200 + 512 MiB. */
static void test_end_units(void **state)
{
    (void)state;
    struct fsdp2_units u = {.first = 512 * MiB, .block = 200 * MiB, .last = 512 * MiB, .blocks = 4, .dp = 8,
                            .bwd_blocks = 4, .bwd_first = true};
    assert_int_equal(streampool_fsdp2_copy_in(&u), 1288 * MiB);
}

/* No policy over bf16 shards (as_is): no casts, only the outputs. Llama-3.2-1B (tied) over
 * 4 ranks, FSDP2 as the harness wraps it: the root 525340672 B (a 502 MiB segment, A), a
 * block 121643008 B (118 MiB). Block 0's output while the root's is held: B, 118; the root's
 * freed, block 1 splits A, block 2 takes B, and so on; backward gathers one block at a time.
 * 502 + 118 = 620 MiB, the 0.6055 GiB that gpu-fsdp1-pools-09 measured on that stream
 * (`pools=`, datasets/measured/h200-20261127-fsdp1-pools.csv). With the casts (a policy over
 * fp32 shards of these sizes) the root's first cast opens a 126 MiB segment before A. */
static void test_uncast_gather(void **state)
{
    (void)state;
    struct fsdp2_units u = {.first = UINT64_C(525340672), .block = UINT64_C(121643008), .blocks = 16,
                            .dp = 4, .bwd_blocks = 15, .as_is = true};
    assert_int_equal(streampool_fsdp2_copy_in(&u), 620 * MiB);
    u.as_is = false;
    assert_int_equal(streampool_fsdp2_copy_in(&u), 746 * MiB);
}

/* The whole sequence, every block in both directions, as streampool.c describes it. */
static uint64_t full_replay(const struct fsdp2_units *u)
{
    allocsim_block blocks[64];
    allocsim_state st;
    const allocsim_config cfg = {0, 0, 0};
    assert_int_equal(allocsim_init(&st, &cfg, blocks, 64), ALLOCSIM_OK);
    uint32_t held = ALLOCSIM_NULL_HANDLE, in, out;
    const uint32_t n = u->blocks + (u->first ? 1u : 0u) + (u->last ? 1u : 0u);
    for (uint32_t i = 0; i < n + u->bwd_blocks + (u->bwd_first ? 1u : 0u); i++) {
        uint64_t bytes = u->block;
        if (i == 0 && u->first)
            bytes = u->first;
        else if (i == n - 1 && u->last)
            bytes = u->last;
        else if (i == n + u->bwd_blocks)
            bytes = u->first;
        assert_int_equal(allocsim_alloc(&st, bytes / u->dp, &in), ALLOCSIM_OK);
        assert_int_equal(allocsim_alloc(&st, bytes, &out), ALLOCSIM_OK);
        assert_int_equal(allocsim_free(&st, in), ALLOCSIM_OK);
        assert_int_equal(allocsim_free(&st, held), ALLOCSIM_OK);
        held = i + 1 < n ? out : ALLOCSIM_NULL_HANDLE;
        if (i + 1 >= n)
            assert_int_equal(allocsim_free(&st, out), ALLOCSIM_OK);
    }
    return allocsim_get_stats(&st)->reserved;
}

/* streampool.c replays at most 7 blocks forward and one backward: the same reserved bytes
 * as the whole sequence, over unit sizes that are not multiples of the 2 MiB rounding,
 * blocks larger and smaller than the ends, 1 to 40 blocks and three shard groups. */
static void test_capped_replay(void **state)
{
    (void)state;
    const uint64_t ends[] = {0, 150 * MiB + 4097, 1024 * MiB, 2004 * MiB + 12345};
    const uint64_t units[] = {50 * MiB + 3, 436207616 + 777, 3 * 1024 * MiB};
    const uint32_t dps[] = {2, 8, 128};
    for (size_t a = 0; a < 4; a++)
        for (size_t z = 0; z < 4; z++)
            for (size_t b = 0; b < 3; b++)
                for (size_t d = 0; d < 3; d++)
                    for (uint32_t n = 1; n <= 40; n++) {
                        struct fsdp2_units u = {.first = ends[a], .last = ends[z], .block = units[b],
                                                .blocks = n, .dp = dps[d], .bwd_blocks = n - (a != 3),
                                                .bwd_first = z == 2 && ends[a]};
                        assert_int_equal(streampool_fsdp2_copy_in(&u), full_replay(&u));
                    }
}

/* A pipeline stage with no root parameters (a middle stage), dp 4: block 0's casts 26 MiB
 * (A) and output 104 (B); block 1's output is allocated while block 0's is held: C, 104;
 * block 2's goes back to B. 26 + 104 + 104 MiB: two outputs live at once. One block: 130. */
static void test_blocks_only(void **state)
{
    (void)state;
    struct fsdp2_units u = {.block = 104 * MiB, .blocks = 3, .dp = 4};
    assert_int_equal(streampool_fsdp2_copy_in(&u), 234 * MiB);
    u.blocks = 1;
    assert_int_equal(streampool_fsdp2_copy_in(&u), 130 * MiB);
}

/* In the memory model: the tiny model (root 2 x 64000 parameters, blocks of 36992) under
 * torchtitan's FSDP2 on 2 GPUs gathers 256000 and 73984 bytes in bf16; every request is
 * at most 1 MiB, so the small pool's one 2 MiB segment holds them all. It is reserved in
 * every phase, allocated in none; stack hf (FSDP1 here) has no such pool, unless the row
 * says fully_shard with a MixedPrecisionPolicy (FEAT_FSDP_MP: the harness's adp rows) or
 * fully_shard with none over bf16 parameters. */
static void test_memmodel_pool(void **state)
{
    (void)state;
    struct model_plan plan;
    assert_int_equal(tiny_model_plan(&plan), 0);
    struct train_config c = {
        .method = METHOD_ADP, .gpus = 2, .tp = 1, .dp = 2, .pp = 1, .microbatches = 1, .ep = 1,
        .micro_batch = 2, .seq_len = 8, .precision = PREC_BF16, .finetune = FT_FULL,
        .optimizer = OPT_ADAMW, .stack = STACK_TORCHTITAN,
    };
    c.features = stack_features(c.stack) | FEAT_FSDP;
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_prepared mp;
    memmodel_prepare(&plan, &c, &o, &mp);
    assert_int_equal(mp.side_pool, 2 * MiB);
    struct mem_prepared hf;
    c.stack = STACK_HF;
    c.features = FEAT_FSDP;
    memmodel_prepare(&plan, &c, &o, &hf);
    assert_int_equal(hf.side_pool, 0);
    c.features |= FEAT_FSDP_MP;
    memmodel_prepare(&plan, &c, &o, &hf);
    assert_int_equal(hf.side_pool, 2 * MiB);
    /* no policy over bf16 parameters gathers them as they are (train_fsdp2_plain16); over
     * fp32 ones without a policy it gathers fp32, a regime no row measured: no pool */
    c.features = FEAT_FSDP, c.precision = PREC_BF16_PURE;
    memmodel_prepare(&plan, &c, &o, &hf);
    assert_int_equal(hf.side_pool, 2 * MiB);
    c.precision = PREC_BF16;
    memmodel_prepare(&plan, &c, &o, &hf);
    assert_int_equal(hf.side_pool, 0);
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        if (mp.phase_on[ph])
            assert_true(mp.fixed_r[ph] >= 2 * MiB);
    plan_free(&plan);
}

/* A tied lm_head is the embedding: the root unit gathers it once (FSDP2 shards each
 * parameter once), so a tied model's pool is below the same model's with its own head.
 * Large enough that the root unit (32000 x 1024 in bf16, 62.5 MiB) leaves the small pool. */
static void test_tied_root(void **state)
{
    (void)state;
    struct model_plan untied, tied;
    const int64_t dims[8] = {2, 1024, 8, 8, 128, 2048, 32000, 2048};
    assert_int_equal(llama_test_plan(&untied, "untied", dims), 0);
    struct model_spec m = untied.spec;
    m.tied = true;
    assert_int_equal(plan_init(&tied, &m), 0);
    struct train_config c = {
        .method = METHOD_ADP, .gpus = 2, .tp = 1, .dp = 2, .pp = 1, .microbatches = 1, .ep = 1,
        .micro_batch = 2, .seq_len = 8, .precision = PREC_BF16, .finetune = FT_FULL,
        .optimizer = OPT_ADAMW, .stack = STACK_HF, .features = FEAT_FSDP | FEAT_FSDP_MP,
    };
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_prepared a, b;
    memmodel_prepare(&untied, &c, &o, &a);
    memmodel_prepare(&tied, &c, &o, &b);
    assert_true(b.side_pool > 0);
    assert_true(b.side_pool < a.side_pool);
    plan_free(&untied);
    plan_free(&tied);
}

/* FSDP1's pools for Llama-3.2-1B (tied) over 4 ranks, by hand. The root unit: 262670336
 * parameters (embedding and final norm), 525340672 bytes in bf16, a 502 MiB segment; a
 * block: 60821504 parameters, 121643008 bytes, 118 MiB. Unshard stream, full fine-tuning:
 * the root three times (parameter, flat gradient, the tied weight's summed gradient), a
 * block three times (gathered, prefetched, flat gradient): 3 x 502 + 3 x 118 = 1860 MiB.
 * Post-backward stream, bf16 parameters: the 16 blocks' shards (29.0 MiB, 30 MiB segments)
 * and the root's (125.25 MiB, 126): 606 MiB. Over fp32 parameters each shard's fp32 cast
 * takes its place (60 and 252 MiB) and one 16-bit output of each size stays cached: 30 +
 * 16 x 60 + 126 + 252 = 1368 MiB; the pre-unshard stream keeps the largest 16-bit shard's
 * segment, 126 MiB. These are the per-stream totals measured on gpu-fsdp1-pools-00 and -06
 * (`pools=` in datasets/measured/h200-20261127-fsdp1-pools.csv: 1.8164, 0.5918, 1.3359 and
 * 0.1230 GiB). LoRA: nothing trained, the root once and two blocks: 738 MiB. */
static void test_fsdp1_pools(void **state)
{
    (void)state;
    struct fsdp1_units u = {.root = UINT64_C(525340672), .block = UINT64_C(121643008), .blocks = 16,
                            .dp = 4, .trained = true, .tied = true};
    struct fsdp1_pools p;
    assert_int_equal(streampool_fsdp1(&u, &p), 0);
    assert_int_equal(p.unshard, 1860 * MiB);
    assert_int_equal(p.unshard_root, 1506 * MiB);
    assert_int_equal(p.post_backward, 606 * MiB);
    assert_int_equal(p.pre_unshard, 0);
    u.fp32_master = true;
    assert_int_equal(streampool_fsdp1(&u, &p), 0);
    assert_int_equal(p.post_backward, 1368 * MiB);
    assert_int_equal(p.pre_unshard, 126 * MiB);
    /* LoRA in mixed units (adapters inside the blocks): the blocks as trained, the root
     * frozen, gathered once: 502 + 3 x 118 = 856 MiB; the blocks' shards alone, 480 MiB */
    u.fp32_master = false, u.frozen_root = true;
    assert_int_equal(streampool_fsdp1(&u, &p), 0);
    assert_int_equal(p.unshard, 856 * MiB);
    assert_int_equal(p.post_backward, 480 * MiB);
    u.fp32_master = true, u.frozen_root = false;
    u.trained = false, u.dp = 2;
    assert_int_equal(streampool_fsdp1(&u, &p), 0);
    assert_int_equal(p.unshard, 738 * MiB);
    assert_int_equal(p.post_backward, 0);
    u.dp = 1;
    assert_int_equal(streampool_fsdp1(&u, &p), -1);
    assert_int_equal(p.unshard, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_pool),
        cmocka_unit_test(test_root_then_blocks),
        cmocka_unit_test(test_end_units),
        cmocka_unit_test(test_uncast_gather),
        cmocka_unit_test(test_blocks_only),
        cmocka_unit_test(test_capped_replay),
        cmocka_unit_test(test_memmodel_pool),
        cmocka_unit_test(test_tied_root),
        cmocka_unit_test(test_fsdp1_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
