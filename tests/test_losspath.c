/* test_losspath.c: loss paths and their replay through the caching allocator model, on
 * cases worked out by hand (sizes in bytes per token and vocabulary entry, "units"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "losspath.h"

static struct loss_cost cost(enum loss_path lp, uint32_t ea, enum data_shape d, enum alloc_conf a)
{
    struct loss_cost c;
    losspath_cost(lp, ea == 4 ? LP_FP32 : LP_HALF, d, a, &c);
    return c;
}

/* HF >= 4.46, bf16: logits 2 + upcast 4 + log_softmax output 4 = 10 at the loss; upcast and
 * logits freed (4 left); nll_loss grad 4 and log_softmax grad 4 beside the saved output:
 * 12, the peak; then the 2-byte cast of the gradient beside the 4-byte one: 6. */
static void test_hf_allocated(void **state)
{
    (void)state;
    assert_true(cost(LOSS_HF, 2, DATA_PACKED, ALLOC_DEFAULT).allocated == 12.0);
    /* fp32 training: the logits are fp32 too, the peak is still three fp32 tensors */
    assert_true(cost(LOSS_HF, 4, DATA_PACKED, ALLOC_DEFAULT).allocated == 12.0);
}

/* Packed, default allocator. Step 1 cuts segments 2 (logits), 4 (upcast), 4 (log_softmax
 * output). nll_loss's gradient takes the freed upcast segment (best fit, exact); the
 * log_softmax gradient finds no free 4 (the free 2 is too small): a new 4. Reserved
 * 2 + 4 + 4 + 4 = 14; step 2 reuses every segment. At the peak the logits' 2 is wholly
 * free and could be released: 12 needed. */
static void test_hf_packed_reserved(void **state)
{
    (void)state;
    struct loss_cost c = cost(LOSS_HF, 2, DATA_PACKED, ALLOC_DEFAULT);
    assert_true(c.reserved == 14.0);
    assert_true(c.needed == 12.0);
}

/* Variable lengths: a step at half the length first cuts 1, 2, 2 and 2 (the same pattern
 * at half size: 7). At full length the logits (2) take a free 2; the upcast and the
 * log_softmax output need new 4s (15); nll_loss's gradient reuses the upcast's; the
 * log_softmax gradient a new 4: reserved 19. At that peak the half-length 1 and the three
 * 2s are wholly free (7 releasable): 19 - 7 = 12 needed. */
static void test_hf_variable_reserved(void **state)
{
    (void)state;
    struct loss_cost c = cost(LOSS_HF, 2, DATA_VARIABLE, ALLOC_DEFAULT);
    assert_true(c.reserved == 19.0);
    assert_true(c.needed == 12.0);
}

/* Expandable segments: one growing segment in 20 MiB pages. Logits [0,2), upcast [2,6),
 * output [6,10); freeing upcast and logits leaves [0,6) free; nll_loss's gradient takes
 * [0,4); the log_softmax gradient cannot use [4,6) and grows the segment to 14. At the
 * reference size (2^28 entries) 14 units are 3584 MiB, 179.2 pages: 180 pages = 14.0625. */
static void test_hf_expandable(void **state)
{
    (void)state;
    struct loss_cost c = cost(LOSS_HF, 2, DATA_PACKED, ALLOC_EXPANDABLE);
    assert_true(c.reserved == 14.0625);
    /* variable lengths no longer strand whole segments: the same as packed */
    assert_true(cost(LOSS_HF, 2, DATA_VARIABLE, ALLOC_EXPANDABLE).reserved == 14.0625);
}

/* torchtune compiled chunked CE: 16-bit logits 2 + one fp32 chunk of eight 0.5. */
static void test_chunked(void **state)
{
    (void)state;
    assert_true(cost(LOSS_CHUNKED_COMPILED, 2, DATA_PACKED, ALLOC_DEFAULT).allocated == 2.5);
    assert_true(cost(LOSS_CHUNKED_UPCAST, 2, DATA_PACKED, ALLOC_DEFAULT).allocated == 6.0);
    assert_true(cost(LOSS_LITGPT_LORA, 2, DATA_PACKED, ALLOC_DEFAULT).allocated == 4.0);
    assert_true(cost(LOSS_LITGPT_FULL, 2, DATA_PACKED, ALLOC_DEFAULT).allocated == 6.0);
    assert_true(cost(LOSS_KEPT, 2, DATA_PACKED, ALLOC_DEFAULT).allocated == 16.0);
}

/* Which path a configuration runs. */
static void test_select(void **state)
{
    (void)state;
    struct train_config c = {.stack = STACK_HF, .finetune = FT_LORA};
    assert_int_equal(losspath_select(&c, "llama"), LOSS_HF);
    c.features = FEAT_LOGITS_KEPT;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_KEPT);
    c.stack = STACK_LITGPT;
    c.features = FEAT_CHUNKED_CE;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LITGPT_LORA);
    c.finetune = FT_FULL;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LITGPT_FULL);
    c.stack = STACK_TORCHTUNE;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_CHUNKED_UPCAST);
    c.features |= FEAT_COMPILE;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_CHUNKED_COMPILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_allocated),         cmocka_unit_test(test_hf_packed_reserved),
        cmocka_unit_test(test_hf_variable_reserved), cmocka_unit_test(test_hf_expandable),
        cmocka_unit_test(test_chunked),              cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
