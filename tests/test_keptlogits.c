/* test_keptlogits.c: training loops that keep logits-sized tensors past the loss (features
 * outputs-kept, outputs-until-step, logits-kept; memmodel.c kept_logits, kept_outputs) on the
 * tiny model of test_memmodel.c, worked by hand: vocab 1000, two blocks with kv 32. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mempoint.h"
#include "plan.h"
#include "tiny_model.h"

TINY_PLAN_FIXTURE

/* c's prediction without and with `feature` (added to c). */
static void predict_pair(struct train_config *c, uint64_t feature, struct mem_estimate *plain,
                         struct mem_estimate *with)
{
    tiny_predict(&plan, c, plain);
    c->features |= feature;
    tiny_predict(&plan, c, with);
}

/* A loop that keeps `outputs` (feature outputs-kept), bf16-pure, full, b = 2, s = 8 (t = 16),
 * no checkpointing: the KV cache of both blocks, 2 x (k 32 + v 32) x 2 bytes = 256 per
 * token (4096), from the forward on, beside the previous step's during the forward
 * (8192 more there, with its 2-byte logits 2 x 16 x 1000 = 32000); after the loss the
 * logits stay (32000) through backward and the optimizer step; at the loss the path
 * keeps them through backward: 14 x 16 x 1000 = 224000 instead of hf's 192000. With
 * checkpointing transformers turns the cache off: only the logits stay. */
static void test_outputs_kept(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate plain, kept;
    predict_pair(&c, FEAT_OUTPUTS_KEPT, &plain, &kept);
    assert_int_equal(kept.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         plain.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 8192);
    assert_int_equal(kept.phase[PHASE_FORWARD][TERM_LOGITS], 32000);
    assert_int_equal(kept.phase[PHASE_LOSS][TERM_LOGITS], 224000);
    assert_int_equal(kept.phase[PHASE_LOSS][TERM_ACTIVATIONS] -
                         plain.phase[PHASE_LOSS][TERM_ACTIVATIONS], 4096);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_ACTIVATIONS], 4096);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_LOGITS], 32000);
    assert_int_equal(kept.phase[PHASE_BWD_FIRST][TERM_LOGITS], 32000);
    c.grad_ckpt = true;
    tiny_predict(&plan, &c, &kept);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_ACTIVATIONS], 0);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_LOGITS], 32000);
}

/* A loop that drops `outputs` after the optimizer step (feature outputs-until-step), the
 * same run: this step's KV cache (4096) from the forward on, but no previous step's in the
 * forward, neither its cache nor its logits (0); at the loss the hf path keeps the 16-bit
 * logits through backward as outputs-kept's (224000), and on through the optimizer step
 * (32000). On transformers 4.31 .. 4.45 `outputs` hold the fp32 logits: 4 x 16 x 1000 =
 * 64000 after the loss, and at the loss the hf-4.31 path with them kept, 16 x 16 x 1000 =
 * 256000 (test_losspath test_older_outputs_kept). */
static void test_outputs_until_step(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate plain, kept;
    predict_pair(&c, FEAT_OUTPUTS_UNTIL_STEP, &plain, &kept);
    assert_int_equal(kept.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         plain.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 4096);
    assert_int_equal(kept.phase[PHASE_FORWARD][TERM_LOGITS], 0);
    assert_int_equal(kept.phase[PHASE_LOSS][TERM_LOGITS], 224000);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_ACTIVATIONS], 4096);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_LOGITS], 32000);
    c.stack = STACK_HF_431;
    tiny_predict(&plan, &c, &kept);
    assert_int_equal(kept.phase[PHASE_FORWARD][TERM_LOGITS], 0);
    assert_int_equal(kept.phase[PHASE_LOSS][TERM_LOGITS], 256000);
    assert_int_equal(kept.phase[PHASE_BWD_FIRST][TERM_LOGITS], 64000);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_LOGITS], 64000);
}

/* torchtune @0217d44c's loop (feature logits-kept), bf16-pure, full, b = 2, s = 8 (t = 16):
 * the shifted fp32 copy, 4 x 16 x 1000 = 64000, stays through the blocks' backward and the
 * optimizer step and into the next forward; at the loss the path LOSS_KEPT holds it with
 * the rest: 16 x 16 x 1000 = 256000 (the copy, log_softmax's output, nll_loss's and
 * log_softmax's gradients). */
static void test_logits_kept(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate plain, kept;
    predict_pair(&c, FEAT_LOGITS_KEPT, &plain, &kept);
    assert_int_equal(plain.phase[PHASE_BWD_FIRST][TERM_LOGITS], 0);
    assert_int_equal(kept.phase[PHASE_FORWARD][TERM_LOGITS], 64000);
    assert_int_equal(kept.phase[PHASE_BWD_LAST][TERM_LOGITS], 64000);
    assert_int_equal(kept.phase[PHASE_BWD_FIRST][TERM_LOGITS], 64000);
    assert_int_equal(kept.phase[PHASE_OPTIMIZER][TERM_LOGITS], 64000);
    assert_int_equal(kept.phase[PHASE_LOSS][TERM_LOGITS], 256000);
    assert_int_equal(kept.phase[PHASE_BWD_FIRST][TERM_ACTIVATIONS], plain.phase[PHASE_BWD_FIRST][TERM_ACTIVATIONS]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outputs_kept),
        cmocka_unit_test(test_outputs_until_step),
        cmocka_unit_test(test_logits_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
