/* test_fsdpwrap.c: FSDP1's wrap from CPU-resident weights through the allocator model
 * (engine/model/fsdpwrap.c), worked by hand on a model whose block tensors are 32 MiB each:
 * hidden 4096, 32 heads of 128 (k and v as wide as q), intermediate 4096, two layers,
 * vocabulary 4096, untied lm_head; bf16-pure full fine-tuning over two FSDP1 ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fsdpwrap.h"
#include "memmodel.h"
#include "resident.h"
#include "tiny_model.h"

#define MiB (UINT64_C(1) << 20)

static struct model_plan plan;

static int setup(void **state)
{
    (void)state;
    return llama_test_plan(&plan, "wide", (const int64_t[8]){2, 4096, 32, 32, 128, 4096, 4096, 128});
}

static int teardown(void **state)
{
    (void)state;
    plan_free(&plan);
    return 0;
}

static struct train_config fsdp1_config(void)
{
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP;
    c.gpus = c.dp = 2;
    c.features = FEAT_FSDP | FEAT_FSDP_FLAT;
    return c;
}

/* A block: seven 32 MiB weights (each its own segment: above 10 MiB a segment is the
 * request rounded to 2 MiB) and two 8 KiB norms (a 2 MiB small segment). Its flat
 * parameter, 224 MiB + 16 KiB, takes a 226 MiB segment (113 x 2 MiB); its shard, half of
 * that, 57 x 2 MiB. Block 0 cuts them all: 7 x 32 + 226 + 114 MiB + the small 2. Block 1
 * finds its weights' and flat's blocks free (exact and best fit) and cuts only its shard:
 * 114 MiB more. The root (embedding and lm_head, 32 MiB each, and the final norm) fits
 * into two of the free 32 MiB blocks, its flat (64 MiB + 8 KiB) and shard (32 MiB + 4 KiB)
 * into the free 226 MiB segment: nothing more. Reserved 224 + 226 + 2 + 228 = 680 MiB; in
 * use the three shards, 2 x (112 MiB + 8 KiB) + 32 MiB + 4 KiB. With sync_module_states
 * the bucket (all nine tensors, below 250 MiB: one cat) cuts the 226 MiB segment first
 * and the flat reuses it: the same. */
static void test_by_hand(void **state)
{
    (void)state;
    const struct train_config c = fsdp1_config();
    struct fsdpwrap_result r;
    assert_int_equal(fsdpwrap_replay(&plan, &c, false, &r), 0);
    assert_int_equal(r.reserved, 680 * MiB);
    assert_int_equal(r.allocated, 2 * (112 * MiB + 8192) + 32 * MiB + 4096);
    assert_int_equal(fsdpwrap_replay(&plan, &c, true, &r), 0);
    assert_int_equal(r.reserved, 680 * MiB);
}

/* Only FSDP1 over two ranks or more: one rank, FSDP2 (no flat parameters), DDP. */
static void test_not_fsdp1(void **state)
{
    (void)state;
    struct train_config c = fsdp1_config();
    struct fsdpwrap_result r;
    c.dp = c.gpus = 1;
    assert_int_equal(fsdpwrap_replay(&plan, &c, false, &r), -1);
    c = fsdp1_config();
    c.features = FEAT_FSDP;
    assert_int_equal(fsdpwrap_replay(&plan, &c, false, &r), -1);
    c = fsdp1_config();
    c.method = METHOD_CDP;
    assert_int_equal(fsdpwrap_replay(&plan, &c, false, &r), -1);
}

/* In the phases (feature cpu-init): the wrap's reserved is a floor under each phase's
 * reserved, never in the held peak (device) or the allocated one. Beside it, what cannot use
 * its large cached blocks: the phase's gathered units and sharded gradients (other streams)
 * and its small-pool optimizer states (LoRA r 8 on q and v: each adapter shard 8 x 4096 / 2
 * elements of 2 bytes, 32 KiB, below 1 MiB, so all of them). One 8-token sample asks for far
 * less than that, so every phase reserves its floor and its side pools' free part; without
 * the feature reserved is below it. */
static void test_floor(void **state)
{
    (void)state;
    struct train_config c = fsdp1_config();
    c.finetune = FT_LORA;
    c.lora_r = 8;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    c.micro_batch = 1;
    struct fsdpwrap_result w;
    assert_int_equal(fsdpwrap_replay(&plan, &c, false, &w), 0);
    struct mem_estimate plain, kept;
    tiny_predict(&plan, &c, &plain);
    c.features |= FEAT_WRAP_CACHE;
    tiny_predict(&plan, &c, &kept);
    const struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_prepared mp;
    memmodel_prepare(&plan, &c, &o, &mp);
    assert_int_equal(mp.wrap_reserved, w.reserved);
    uint64_t top = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (!mp.phase_on[ph])
            continue;
        const uint64_t *f = mp.fixed[ph];
        assert_true(f[TERM_OPTIMIZER] > 0);
        assert_int_equal(mp.wrap_floor[ph], w.reserved + memmodel_round(f[TERM_COMM]) +
                                                memmodel_round(f[TERM_GRADS]) + memmodel_round(f[TERM_OPTIMIZER]));
        top = mp.wrap_floor[ph] + mp.stream_free[ph] > top ? mp.wrap_floor[ph] + mp.stream_free[ph] : top;
    }
    assert_true(plain.reserved < top);
    assert_int_equal(kept.reserved, top);
    assert_int_equal(kept.device, plain.device);
    assert_int_equal(kept.allocated, plain.allocated);
}

/* QLoRA (nf4 with double quantization) on the same units: every rank keeps each block
 * Linear's QuantState whole, quantized on the GPU before the wrap, one 8-bit absmax per 64
 * weights and one fp32 per 256 of those: 14 weights of 4096 x 4096 (234881024) keep
 * 3670016 + 57344 = 3727360 B, 4 MiB in whole 2 MiB segments, on top of the floor's other
 * terms (test_floor). */
static void test_quant_floor(void **state)
{
    (void)state;
    struct train_config c = fsdp1_config();
    c.finetune = FT_QLORA, c.quant = QUANT_NF4_DQ, c.lora_r = 8;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    c.micro_batch = 1;
    c.features |= FEAT_WRAP_CACHE;
    const struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_prepared mp;
    memmodel_prepare(&plan, &c, &o, &mp);
    assert_true(mp.wrap_reserved > 0);
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (!mp.phase_on[ph])
            continue;
        const uint64_t *f = mp.fixed[ph];
        assert_int_equal(mp.wrap_floor[ph], mp.wrap_reserved + memmodel_round(f[TERM_COMM]) +
                                                memmodel_round(f[TERM_GRADS]) +
                                                memmodel_round(f[TERM_OPTIMIZER]) + 4 * MiB);
    }
}

/* transformers <= 4.39's rotary tables (FEAT_ROPE_TABLES) on the same units with
 * max_position_embeddings 4096: each block's two tables, 4096 x 128 bf16, 1 MiB each, move
 * after its parameters and stay. 1 MiB is a small-pool request: block 0's two norms and
 * first table share a 2 MiB small segment, its second table cuts a second one. Block 1's
 * norms take the 16 KiB the first one's freed norms left, its first table the second
 * segment's free MiB, its second table cuts a third; the root's final norm fits beside.
 * Reserved 680 MiB (test_by_hand) + 4 MiB, allocated + the four tables' 4 MiB. fp32
 * tables (FEAT_ROPE_TABLES_FP32), 2 MiB each, are large requests: block 0 cuts a 20 MiB
 * segment for its pair (below 10 MiB a large request gets kLargeBuffer), block 1's pair
 * fits into it, reserved 680 + 20 MiB. Every rank holds them whole: the phases' weights
 * grow by exactly the tables on one GPU. */
static void test_rope_tables(void **state)
{
    (void)state;
    struct model_plan p4;
    assert_int_equal(llama_test_plan(&p4, "wide", (const int64_t[8]){2, 4096, 32, 32, 128, 4096, 4096, 4096}), 0);
    struct train_config c = fsdp1_config();
    struct fsdpwrap_result r;
    assert_int_equal(fsdpwrap_replay(&p4, &c, false, &r), 0);
    assert_int_equal(r.reserved, 680 * MiB);
    c.features |= FEAT_ROPE_TABLES;
    assert_int_equal(fsdpwrap_replay(&p4, &c, false, &r), 0);
    assert_int_equal(r.reserved, 684 * MiB);
    assert_int_equal(r.allocated, 2 * (112 * MiB + 8192) + 32 * MiB + 4096 + 4 * MiB);
    c.features |= FEAT_ROPE_TABLES_FP32;
    assert_int_equal(fsdpwrap_replay(&p4, &c, false, &r), 0);
    assert_int_equal(r.reserved, 700 * MiB);
    assert_int_equal(r.allocated, 2 * (112 * MiB + 8192) + 32 * MiB + 4096 + 8 * MiB);
    /* the weights' load dtype: bf16-pure's 2 bytes; mixed precision's fp32 master weights;
     * a LoRA base in the compute dtype, fp32 only under fp32 or an fp32 base (FEAT_FP32_BASE) */
    const uint64_t elems = 4096 * 128;
    struct train_config d = fsdp1_config();
    d.features |= FEAT_ROPE_TABLES;
    assert_int_equal(resident_rope_table(&p4, &d), 2 * elems);
    d.precision = PREC_BF16;
    assert_int_equal(resident_rope_table(&p4, &d), 4 * elems);
    d.finetune = FT_LORA, d.lora_r = 8, d.lora_targets = TARGET_BIT(ROLE_Q);
    assert_int_equal(resident_rope_table(&p4, &d), 2 * elems);
    d.features |= FEAT_FP32_BASE;
    assert_int_equal(resident_rope_table(&p4, &d), 4 * elems);
    d.features &= ~FEAT_FP32_BASE;
    d.precision = PREC_FP32;
    assert_int_equal(resident_rope_table(&p4, &d), 4 * elems);
    d.features &= ~FEAT_ROPE_TABLES;
    assert_int_equal(resident_rope_table(&p4, &d), 0);
    struct train_config one = tiny_base_config();
    struct mem_estimate plain, tables;
    tiny_predict(&p4, &one, &plain);
    one.features |= FEAT_ROPE_TABLES;
    tiny_predict(&p4, &one, &tables);
    assert_int_equal(tables.allocated - plain.allocated, 4 * MiB);
    plan_free(&p4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_not_fsdp1),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_quant_floor),
        cmocka_unit_test(test_rope_tables),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
