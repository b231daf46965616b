/* test_pipeline.c: the pipeline stages (--method pp) of the phase-timeline memory model on
 * the tiny model (tiny_model.h; its parameters are worked out in test_memmodel.c: embedding
 * 64000, two blocks of 36992, final norm 64, lm_head 64000, 202048 in all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "memmodel.h"
#include "tiny_model.h"

TINY_PLAN_FIXTURE

/* torchtitan's pipeline on the tiny model: 2 stages, 8 micro-batches, bf16 mixed. */
static struct train_config titan_stages(void)
{
    struct train_config c = tiny_base_config();
    c.method = METHOD_PP, c.gpus = c.pp = 2, c.microbatches = 8, c.precision = PREC_BF16;
    c.stack = STACK_TORCHTITAN, c.features = stack_features(STACK_TORCHTITAN);
    return c;
}

/* A 2-stage pipeline of the 2-block tiny model, bf16-pure, 8 micro-batches: each stage one
 * block and its end of the model (embedding 64000 first, lm_head 64000 last: 100992
 * parameters each, half of P up to rounding). The first stage holds min(pp, m) = 2
 * micro-batches of its block's activations and no lm_head input; the last stage one
 * micro-batch of one block plus the tail; both keep the p2p buffers (2 x 2h per token). */
static void test_pipeline(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_prepared one;
    memmodel_prepare(&plan, &c, &o, &one); /* single GPU: the per-block coefficients */
    c.method = METHOD_PP, c.gpus = c.pp = 2, c.microbatches = 8;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    const uint64_t t = 2 * 8;
    const uint64_t *fwd = e.phase[PHASE_FORWARD], *loss = e.phase[PHASE_LOSS];
    /* a block's coefficient at micro-batch 2: with HF's repeated K and V (test_kv_repeat)
     * and SDPA's copy of the padded batch's mask, 8 x 2 bytes a token (act_sdpa_mask) */
    const uint64_t blk = one.layer_tok + one.kv_rep_tok + one.mask_tok_s * 8;
    assert_true(one.kv_rep_padded && one.kv_rep_tok == 128 && one.mask_tok_s == 2);
    assert_int_equal(fwd[TERM_ACTIVATIONS], 2 * t * blk);
    assert_int_equal(loss[TERM_ACTIVATIONS], t * blk + t * one.tail_tok);
    assert_int_equal(fwd[TERM_COMM], t * 2 * 2 * 64);
    /* bf16-pure: 2 bytes weights, 2 grads (Megatron's buffer, every phase), 4 states */
    assert_in_range(fwd[TERM_PARAMS], 2 * 100992 - 1, 2 * 100992);
    assert_in_range(fwd[TERM_GRADS], 2 * 100992 - 1, 2 * 100992);
    assert_in_range(loss[TERM_OPTIMIZER], 4 * 100992 - 1, 4 * 100992);
    /* fewer micro-batches than stages: the first stage holds only m of them */
    c.microbatches = 1;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], t * blk);
}

/* torchtitan's FSDP2 pipeline stages (2 stages of the tiny model, bf16 mixed, full, 8
 * micro-batches, dp 1): each stage keeps its parameters gathered in bf16 through the step
 * (the first stage: one block and the embedding, 100992 parameters: 2 x 100992) beside
 * the p2p buffers (2 x 2h x 16 = 4096), and its gradients accumulate unsharded in fp32
 * (4 x 100992) in every phase but the step. torch's pipelining keeps one receive buffer
 * per micro-batch: the first stage 8 gradient buffers of its output, 8 x 16 x 2h = 16384
 * (in place of Megatron's two p2p buffers, 2 x 2h x 16 = 4096); the last stage 8 input
 * buffers, one fewer under checkpointing (the one in flight is its first block's
 * checkpoint): 2048 less. Megatron's stages (stack hf) keep none of these gathered units. */
static void test_pipeline_fsdp_stages(void **state)
{
    (void)state;
    struct train_config c = titan_stages();
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    const uint64_t *fwd = e.phase[PHASE_FORWARD], *bwd = e.phase[PHASE_BWD_FIRST];
    /* + the first stage's 8 outputs torch's pipelining keeps (test_pipeline_stage_io_kept) */
    assert_in_range(fwd[TERM_COMM], 2 * 100992 + 2 * 16384 - 1, 2 * 100992 + 2 * 16384);
    assert_in_range(bwd[TERM_COMM], 2 * 100992 + 2 * 16384 - 1, 2 * 100992 + 2 * 16384);
    assert_in_range(fwd[TERM_GRADS], 4 * 100992 - 4, 4 * 100992);
    assert_in_range(bwd[TERM_GRADS], 4 * 100992 - 4, 4 * 100992);
    /* the last stage keeps every micro-batch's 2-byte logits in output_chunks (torch
     * pipelining): 8 x 16 x 1000 x 2 = 256000 beside the loss path's 12 x 16 x 1000 at the
     * loss, and through its last block's backward */
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 192000 + 256000);
    assert_int_equal(e.phase[PHASE_BWD_LAST][TERM_LOGITS], 256000);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_LOGITS], 0);
    struct mem_estimate ck;
    c.grad_ckpt = true;
    tiny_predict(&plan, &c, &ck);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_COMM] - ck.phase[PHASE_LOSS][TERM_COMM], 2048);
    assert_int_equal(ck.phase[PHASE_FORWARD][TERM_COMM], fwd[TERM_COMM]);
    c.grad_ckpt = false;
    c.stack = STACK_HF, c.features = stack_features(STACK_HF);
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_COMM], 4096);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 192000);
    assert_int_equal(e.phase[PHASE_BWD_LAST][TERM_LOGITS], 0);
}

/* Blocks of the first and last pipeline stage (memmodel.c pp_stage_layers), read from
 * act_layers: [0] the first stage's blocks x the micro-batches in flight (min(m, pp) = 8),
 * [1] the last stage's. torchtitan's generate_split_points: L / pp on the first stage, the
 * remainder one a middle stage, the rest on the last: 126 blocks on 8 stages are 15,
 * 16 x 6, 15 (Llama-3.1-405B); 127: 15, 16 x 6, 16; 130: 16, 17 x 2, 16 x 4, 16. Megatron's
 * uniform split elsewhere: ceil(126 / 8) = 16 on both. */
static void test_pipeline_split(void **state)
{
    (void)state;
    struct model_plan p = plan;
    struct train_config c = tiny_base_config();
    c.method = METHOD_PP, c.gpus = c.pp = 8, c.microbatches = 8, c.precision = PREC_BF16;
    c.stack = STACK_TORCHTITAN, c.features = stack_features(STACK_TORCHTITAN);
    struct mem_options mo;
    mem_options_for_gpu(NULL, false, &mo);
    const struct { int32_t layers; enum stack stack; int32_t first, last; } cases[] = {
        {126, STACK_TORCHTITAN, 15, 15}, {127, STACK_TORCHTITAN, 15, 16},
        {130, STACK_TORCHTITAN, 16, 16}, {126, STACK_HF, 16, 16},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct mem_prepared mp;
        p.spec.layers = cases[k].layers;
        c.stack = cases[k].stack, c.features = stack_features(cases[k].stack);
        memmodel_prepare(&p, &c, &mo, &mp);
        assert_int_equal(mp.act_layers[0], cases[k].first * 8);
        assert_int_equal(mp.act_layers[1], cases[k].last);
    }
}

/* What torch's pipelining (the 2024-12 nightly torchtitan 9dec370 runs) keeps of each
 * micro-batch at a stage boundary until the next step, beside the receive buffers, on the
 * tiny model's 2 stages (h 64, bf16, t = 16 tokens a micro-batch, 8 micro-batches, tp 1):
 * the first stage's outputs in output_chunks, 8 x 16 x 2h = 16384 in its phases; the last
 * stage's input gradients in its receive buffers' .grad, 7 x 16 x 2h = 14336 at the last
 * micro-batch's loss and its last block's backward (the 7 earlier micro-batches). torch
 * from PR #153383 (torchtitan >= 83e69410, fsdp-end-units) keeps only the first stage's
 * outputs in flight, min(m, pp) = 2: 2 x 2048, 12288 less. */
static void test_pipeline_stage_io_kept(void **state)
{
    (void)state;
    struct train_config c = titan_stages();
    struct mem_prepared mp;
    struct mem_options mo;
    mem_options_for_gpu(NULL, false, &mo);
    memmodel_prepare(&plan, &c, &mo, &mp);
    assert_int_equal(mp.pp_outs_first_tok * 16, 16384);
    assert_int_equal(mp.pp_igrad_last_tok * 16, 14336);
    struct mem_estimate e, late;
    tiny_predict(&plan, &c, &e);
    c.features |= FEAT_FSDP_END_UNITS;
    tiny_predict(&plan, &c, &late);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_COMM] - late.phase[PHASE_FORWARD][TERM_COMM], 12288);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_COMM] - late.phase[PHASE_BWD_FIRST][TERM_COMM], 12288);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_COMM], late.phase[PHASE_LOSS][TERM_COMM]);
    /* the last stage: its 8 input buffers (test_pipeline_fsdp_stages) + the 7 gradients */
    c.features &= ~FEAT_FSDP_END_UNITS;
    c.microbatches = 1;
    struct mem_estimate one;
    tiny_predict(&plan, &c, &one);
    c.microbatches = 8;
    assert_int_equal(e.phase[PHASE_LOSS][TERM_COMM] - one.phase[PHASE_LOSS][TERM_COMM], 7 * 2048 + 7 * 2048);
    assert_int_equal(e.phase[PHASE_BWD_LAST][TERM_COMM] - one.phase[PHASE_BWD_LAST][TERM_COMM], 7 * 2048 + 7 * 2048);
    /* Megatron's pipelines (stack hf) keep none of them */
    c.stack = STACK_HF, c.features = stack_features(STACK_HF);
    memmodel_prepare(&plan, &c, &mo, &mp);
    assert_int_equal(mp.pp_outs_first_tok + mp.pp_igrad_last_tok, 0);
}

/* The step's merged result on the last stage (memmodel.c pp_merge): torch.cat of the 8
 * outputs, 8 x 2 bytes per token and vocab entry. At micro-batch 2 x 1024 tokens: 8 x 2 x
 * 2048 x 1000 = 32768000 bytes, above the largest earlier request (the lm_head's fp32
 * reduce-scatter input, 4 x 64000, and kLargeBuffer, 20 MiB): its own segment, rounded to
 * 2 MiB, 16 x 2 MiB = 33554432, on top of the phases' reserved, not in allocated. */
static void test_pipeline_merge(void **state)
{
    (void)state;
    struct train_config c = titan_stages();
    c.seq_len = 1024;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.step_end, 33554432);
    uint64_t phases = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        phases = e.phase_reserved[ph] > phases ? e.phase_reserved[ph] : phases;
    assert_int_equal(e.reserved, phases + 33554432);
    /* 2 micro-batches: 4 bytes an entry, what a freed fp32 tensor of the loss path holds */
    struct mem_estimate two;
    c.microbatches = 2;
    tiny_predict(&plan, &c, &two);
    assert_int_equal(two.step_end, 0);
    /* 64 tokens a micro-batch: 1024000 bytes, no more than a 20 MiB segment may have free */
    c.microbatches = 8, c.seq_len = 32;
    tiny_predict(&plan, &c, &two);
    assert_int_equal(two.step_end, 0);
    /* expandable segments: a free tail can take part of it (not derived); Megatron: no merge */
    c.seq_len = 1024, c.alloc = ALLOC_EXPANDABLE;
    tiny_predict(&plan, &c, &two);
    assert_int_equal(two.step_end, 0);
    c.alloc = ALLOC_DEFAULT, c.stack = STACK_HF, c.features = stack_features(STACK_HF);
    tiny_predict(&plan, &c, &two);
    assert_int_equal(two.step_end, 0);
}

/* The interleaved schedule (memmodel.c interleaved_held) on an 8-block model, pp 2, m 2:
 * torchtitan splits 4 stages of 2 blocks, rank 0 runs stages 0 and 2, rank 1 stages 1 and 3.
 * Rank 0 warms up min((2 - 1) x 2 + 2 x (2 - 1 - 0), 2 x 2) = 4 forwards, all of them:
 * s0m0, s0m1, s2m0, s2m1, 8 blocks held; then backwards s2m0, s2m1, s0m0 (4 held, 2 beside
 * it), s0m1 (0 beside). Rank 1 warms up 2: s1m0, s1m1 (4 held), then forward s3m0 (6 held at
 * its loss), backward s3m0, forward s3m1 (6), backward s3m1, backwards s1m0, s1m1. 1F1B on
 * the same 2 stages of 4 blocks: 2 x 4 = 8, 4 beside, 4 at the loss. */
static void test_pipeline_interleaved(void **state)
{
    (void)state;
    struct model_plan p8;
    assert_int_equal(llama_test_plan(&p8, "eight", (const int64_t[8]){8, 64, 4, 2, 16, 128, 1000, 128}), 0);
    struct train_config c = titan_stages();
    c.microbatches = 2;
    struct mem_options mo;
    mem_options_for_gpu(NULL, false, &mo);
    struct mem_prepared mp;
    memmodel_prepare(&p8, &c, &mo, &mp);
    assert_true(mp.act_layers[0] == 8 && mp.act_extra_bwd == 4 && mp.act_layers[1] == 4);
    c.features |= FEAT_PP_INTERLEAVED;
    assert_null(train_config_check(&c, &p8.spec));
    memmodel_prepare(&p8, &c, &mo, &mp);
    assert_true(mp.act_layers[0] == 8 && mp.act_extra_bwd == 2 && mp.act_layers[1] == 6);
    /* the other local stage's receive buffers (2 x m) and kept outputs (m), each [b, s, h]
     * of 2 x 64 bytes a token: 6 x 128 more on each end rank than 1F1B's */
    struct train_config one = c;
    one.features &= ~FEAT_PP_INTERLEAVED;
    struct mem_prepared m1;
    memmodel_prepare(&p8, &one, &mo, &m1);
    assert_int_equal(mp.cm_tok[PHASE_FORWARD] - m1.cm_tok[PHASE_FORWARD], 3 * 2 * 128);
    assert_int_equal(mp.cm_tok[PHASE_LOSS] - m1.cm_tok[PHASE_LOSS], 3 * 2 * 128);
    /* torch's requirement and torchtitan's stages */
    c.microbatches = 3;
    assert_non_null(train_config_check(&c, &p8.spec));
    c.microbatches = 2, c.stack = STACK_HF;
    assert_non_null(train_config_check(&c, &p8.spec));
    plan_free(&p8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_pipeline_fsdp_stages),
        cmocka_unit_test(test_pipeline_stage_io_kept),
        cmocka_unit_test(test_pipeline_merge),
        cmocka_unit_test(test_pipeline_interleaved),
        cmocka_unit_test(test_pipeline_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
