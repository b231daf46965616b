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
    assert_true(cost(LOSS_HF, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 12.0);
    /* fp32 training: the logits are fp32 too, the peak is still three fp32 tensors */
    assert_true(cost(LOSS_HF, 4, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 12.0);
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
    assert_true(c.reserved[0] == 14.0);
    assert_true(c.needed[0] == 12.0);
}

/* Replays worked by hand, on the compiled-CE path in 16 bit (two 2-byte tensors, then freed).
 * Half the cap, then the cap: step 1 cuts two segments of 1 unit (2 bytes x half the
 * entries); at the cap neither 2-unit tensor fits a 1-unit block: two new segments, 6
 * reserved. At that peak both 1-unit segments are wholly free: 4 held. The other order:
 * the cap cuts 2 + 2; at half the cap the first tensor splits a free 2 (best fit, lowest
 * address; the 1-unit remainder exceeds 1 MiB, so it is split off) and the second takes
 * that remainder: nothing new, 4 reserved. */
static void test_replay_by_hand(void **state)
{
    (void)state;
    double res, need;
    const uint32_t rising[] = {LP_LEN_UNIT / 2, LP_LEN_UNIT};
    assert_int_equal(losspath_replay(LOSS_COMPILED_CE, LP_HALF, ALLOC_DEFAULT, 1, rising, 2, &res, &need), 0);
    assert_true(res == 6.0);
    assert_true(need == 4.0);
    const uint32_t falling[] = {LP_LEN_UNIT, LP_LEN_UNIT / 2};
    assert_int_equal(losspath_replay(LOSS_COMPILED_CE, LP_HALF, ALLOC_DEFAULT, 1, falling, 2, &res, &need), 0);
    assert_true(res == 4.0);
    assert_true(need == 4.0);
    /* expandable segments: one growing segment; rising lengths unmap nothing and map the
     * difference. Half the cap: 256 MiB in 13 pages of 20 MiB (260), the second tensor the
     * 4 MiB left and 13 more (520 MiB). At the cap the first 512 MiB fits the free 520; the
     * second takes the 8 MiB left and maps 504 MiB, 26 pages: 52 pages, 1040 MiB, of 256 MiB
     * units (2^28 entries at one byte) 4.0625 */
    assert_int_equal(losspath_replay(LOSS_COMPILED_CE, LP_HALF, ALLOC_EXPANDABLE, 1, rising, 2, &res, &need), 0);
    assert_true(res == 4.0625);
    /* bad arguments */
    const uint32_t bad[] = {0};
    assert_int_equal(losspath_replay(LOSS_HF, LP_HALF, ALLOC_DEFAULT, 1, bad, 1, &res, &need), -1);
    assert_int_equal(losspath_replay(LOSS_COUNT, LP_HALF, ALLOC_DEFAULT, 1, rising, 2, &res, &need), -1);
}

/* Variable lengths: a run over 128 data orders. Stranded segments make it reserve more
 * than packed batches, and more the more distinct lengths a run sees: a micro-batch of 32
 * pads to the longest of 32 samples, whose lengths crowd near the cap, so it strands less
 * than a micro-batch of 1. What a run cannot release stays near the allocated peak (the
 * stranded segments are wholly free at the peak). */
static void test_variable_run(void **state)
{
    (void)state;
    struct loss_cost v = cost(LOSS_HF, 2, DATA_VARIABLE, ALLOC_DEFAULT);
    struct loss_cost p = cost(LOSS_HF, 2, DATA_PACKED, ALLOC_DEFAULT);
    for (unsigned bk = 0; bk < LP_BATCH_BUCKETS; bk++) {
        assert_true(v.reserved[bk] > p.reserved[bk]);
        assert_true(v.needed[bk] <= v.reserved[bk]);
        assert_true(v.needed[bk] >= v.allocated[bk]);
        if (bk)
            assert_true(v.reserved[bk] < v.reserved[bk - 1]);
    }
    assert_int_equal(losspath_batch_bucket(0), 0);
    assert_int_equal(losspath_batch_bucket(1), 0);
    assert_int_equal(losspath_batch_bucket(3), 1);
    assert_int_equal(losspath_batch_bucket(4), 2);
    assert_int_equal(losspath_batch_bucket(1000), LP_BATCH_BUCKETS - 1);
}

/* The table built at compile time holds what a replay now gives (two combinations: the
 * stock HF path under autocast, Qwen v1's in 16 bit with expandable segments). */
static void test_variable_table(void **state)
{
    (void)state;
    const struct {
        enum loss_path lp;
        enum lp_class k;
        enum alloc_conf a;
    } cases[] = {{LOSS_HF, LP_MIXED, ALLOC_DEFAULT}, {LOSS_QWEN1, LP_HALF, ALLOC_EXPANDABLE}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct loss_cost live, table;
        assert_int_equal(losspath_variable_cost(cases[i].lp, cases[i].k, cases[i].a, &live), 0);
        losspath_cost(cases[i].lp, cases[i].k, DATA_VARIABLE, cases[i].a, &table);
        for (unsigned bk = 0; bk < LP_BATCH_BUCKETS; bk++) {
            assert_true(live.reserved[bk] == table.reserved[bk]);
            assert_true(live.needed[bk] == table.needed[bk]);
        }
    }
    struct loss_cost c;
    assert_int_equal(losspath_variable_cost(LOSS_COUNT, LP_MIXED, ALLOC_DEFAULT, &c), -1);
}

/* The orders of a run: a full-length run's median is the model's cost (the same replay),
 * a shorter run sets fewer records (H(n) of them on average), so it reserves less: the
 * harness's 30-step runs (README "Ground truth of our own") are not the model's 1000. */
static void test_variable_orders(void **state)
{
    (void)state;
    double r[LP_RUN_ORDERS], n[LP_RUN_ORDERS], r30[LP_RUN_ORDERS], n30[LP_RUN_ORDERS];
    struct loss_cost table;
    losspath_cost(LOSS_HF, LP_MIXED, DATA_VARIABLE, ALLOC_DEFAULT, &table);
    const unsigned bk = losspath_batch_bucket(4);
    assert_int_equal(losspath_variable_orders(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, 4, LP_RUN_STEPS, r, n), 0);
    for (size_t i = 1; i < LP_RUN_ORDERS; i++)
        assert_true(r[i - 1] <= r[i]);
    assert_true((r[LP_RUN_ORDERS / 2 - 1] + r[LP_RUN_ORDERS / 2]) / 2.0 == table.reserved[bk]);
    assert_int_equal(losspath_variable_orders(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, 4, 30, r30, n30), 0);
    assert_true(r30[LP_RUN_ORDERS / 2] < r[LP_RUN_ORDERS / 2]);
    assert_int_equal(losspath_variable_orders(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, 4, 0, r30, n30), -1);
    assert_int_equal(losspath_variable_orders(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, 4, LP_RUN_STEPS + 1, r30, n30), -1);
    assert_int_equal(losspath_variable_orders(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, 0, 30, r30, n30), -1);
}

/* The user's data (--lengths), on cases worked by hand:
 *   - lengths 1 .. 4096, one sample each, at a 4096-token cap: a row drawn uniformly is a
 *     length uniform on 1 .. 4096 from the same stream, so the run is the model's own and
 *     its cost the compiled-in table's, bit for bit;
 *   - every sample longer than the cap: every step is cut to the cap, the packed steady
 *     state (HF, bf16: 14 reserved, 12 held, test_hf_packed_reserved);
 *   - every sample half the cap: the same run at half the length, 7 and 6;
 *   - Liger's path has no N x V tensor to replay, and an empty dataset is no dataset. */
static void test_lengths_cost(void **state)
{
    (void)state;
    static uint32_t tok[LP_LEN_UNIT];
    for (uint32_t i = 0; i < LP_LEN_UNIT; i++)
        tok[i] = i + 1;
    struct loss_cost table;
    losspath_cost(LOSS_HF, LP_MIXED, DATA_VARIABLE, ALLOC_DEFAULT, &table);
    double res, need;
    assert_int_equal(losspath_lengths_cost(LOSS_HF, LP_MIXED, ALLOC_DEFAULT, tok, LP_LEN_UNIT, LP_LEN_UNIT,
                                           2, &res, &need), 0);
    assert_true(res == table.reserved[1]);
    assert_true(need == table.needed[1]);
    const uint32_t longer[] = {5000, 9000, 4097};
    assert_int_equal(losspath_lengths_cost(LOSS_HF, LP_HALF, ALLOC_DEFAULT, longer, 3, 4096, 1, &res, &need), 0);
    assert_true(res == 14.0);
    assert_true(need == 12.0);
    const uint32_t half[] = {1024};
    assert_int_equal(losspath_lengths_cost(LOSS_HF, LP_HALF, ALLOC_DEFAULT, half, 1, 2048, 1, &res, &need), 0);
    assert_true(res == 7.0);
    assert_true(need == 6.0);
    assert_int_equal(losspath_lengths_cost(LOSS_LIGER, LP_HALF, ALLOC_DEFAULT, half, 1, 2048, 1, &res, &need), -1);
    assert_int_equal(losspath_lengths_cost(LOSS_HF, LP_HALF, ALLOC_DEFAULT, half, 0, 2048, 1, &res, &need), -1);
    assert_int_equal(losspath_lengths_cost(LOSS_HF, LP_HALF, ALLOC_DEFAULT, NULL, 1, 2048, 1, &res, &need), -1);
}

/* Expandable segments: one growing segment in 20 MiB pages. Logits [0,2), upcast [2,6),
 * output [6,10); freeing upcast and logits leaves [0,6) free; nll_loss's gradient takes
 * [0,4); the log_softmax gradient cannot use [4,6) and grows the segment to 14. At the
 * reference size (2^28 entries) 14 units are 3584 MiB, 179.2 pages: 180 pages = 14.0625. */
static void test_hf_expandable(void **state)
{
    (void)state;
    struct loss_cost c = cost(LOSS_HF, 2, DATA_PACKED, ALLOC_EXPANDABLE);
    assert_true(c.reserved[0] == 14.0625);
    /* variable lengths no longer strand whole segments: within a page of packed */
    assert_true(cost(LOSS_HF, 2, DATA_VARIABLE, ALLOC_EXPANDABLE).reserved[0] < 14.0625 + 0.08);
}

/* torchtune compiled chunked CE: 16-bit logits 2 + one fp32 chunk of eight 0.5. */
static void test_chunked(void **state)
{
    (void)state;
    assert_true(cost(LOSS_CHUNKED_COMPILED, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 2.5);
    assert_true(cost(LOSS_CHUNKED_UPCAST, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 6.0);
    /* litgpt under Fabric: the previous step's fp32 logits 4 + this step's 16-bit chunks 2 +
     * their fp32 copies 4 while convert_output returns; under fp32 the copy is the tensor
     * itself: 4 + 4. Full: fp32 logits 4 + the shifted reshape copy 4 + log_softmax 4. The
     * run's first step has no previous logits: 2 + 4, then 4 + 4 (log_softmax). */
    assert_true(cost(LOSS_LITGPT_LORA, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 10.0);
    assert_true(cost(LOSS_LITGPT_LORA, 4, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 8.0);
    assert_true(cost(LOSS_LITGPT_FULL, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 12.0);
    assert_true(cost(LOSS_LITGPT_LORA_FIRST, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 8.0);
    assert_true(cost(LOSS_LITGPT_FULL_FIRST, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 12.0);
    assert_true(cost(LOSS_KEPT, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 16.0);
}

/* A loop that keeps `outputs` (PEFT MetaMathQA), bf16, packed: the hf path with the 2-byte
 * logits alive to the end: 2 + 4 + 4 at the loss, upcast freed, nll grad 4 (into the
 * upcast's segment) and log_softmax grad 4 (a new segment) beside the logits and the saved
 * output: 14 allocated, the peak. Segments 2 + 4 + 4 + 4 = 14, every one in use at the
 * peak: 14 held. */
static void test_outputs_kept(void **state)
{
    (void)state;
    struct loss_cost c = cost(LOSS_OUTPUTS_KEPT, 2, DATA_PACKED, ALLOC_DEFAULT);
    assert_true(c.allocated[0] == 14.0);
    assert_true(c.reserved[0] == 14.0);
    assert_true(c.needed[0] == 14.0);
}

/* A loop that keeps `outputs` past the loss on older transformers, packed. hf-4.31, bf16:
 * H 2 and its fp32 copy L 4 (6), H freed; the shifted copy 4 and log_softmax's output 4
 * beside L: 12 at the loss; the copy freed; with L kept (4), nll_loss's and log_softmax's
 * gradients (4 + 4) beside the saved output: 16, where L dying with compute_loss gives 12.
 * Under fp32 L is H itself (4, no 16-bit part): the same 16, and 12 in the forward already
 * (H, the copy, the output). hf-4.46, bf16: the forward's 14 (H 2, upcast 4, copy 4,
 * log_softmax 4) stays the peak; what it keeps is H, 2 bytes. */
static void test_older_outputs_kept(void **state)
{
    (void)state;
    assert_true(cost(LOSS_HF431_KEPT, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 16.0);
    assert_true(cost(LOSS_HF_431, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 12.0);
    assert_true(cost(LOSS_HF431_KEPT, 4, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 16.0);
    assert_true(cost(LOSS_HF_431, 4, DATA_PACKED, ALLOC_DEFAULT).in_forward == 12.0);
    assert_true(cost(LOSS_HF446_KEPT, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 14.0);
    assert_int_equal(losspath_kept_logits(STACK_HF_431, PREC_BF16_PURE), 4);
    assert_int_equal(losspath_kept_logits(STACK_HF_431, PREC_FP32), 4);
    assert_int_equal(losspath_kept_logits(STACK_HF_446, PREC_BF16), 2);
    assert_int_equal(losspath_kept_logits(STACK_HF_449, PREC_BF16_PURE), 2);
    assert_int_equal(losspath_kept_logits(STACK_TRL, PREC_BF16_PURE), 0);
    struct train_config c = {.stack = STACK_HF_446, .finetune = FT_LORA, .features = FEAT_OUTPUTS_UNTIL_STEP};
    assert_int_equal(losspath_select(&c, "llama"), LOSS_HF446_KEPT);
    c.stack = STACK_TRL; /* TRL's compute_loss holds its own metrics' tensors: its path */
    assert_int_equal(losspath_select(&c, "llama"), LOSS_TRL);
}

/* The events a whole-step replay runs (losspath_ops): hf-4.31's 16 in bf16-pure, the
 * first 6 the model's forward, slot 1 (the fp32 logits L) allocated at 4 B an entry (1024
 * in 1/256 B), slot 0 (H) at 2; no slot kept. Its kept form frees L last (slot 1 kept);
 * under fp32 H is the 16-bit part only (SZ_HALF_ONLY: 0). The logits' 16-bit gradient is
 * freed last but for the kept logits (grad_free). Other stacks' paths (Liger's, TRL's) are
 * not given. */
static void test_ops(void **state)
{
    (void)state;
    struct lp_ops o;
    assert_int_equal(losspath_ops(LOSS_HF_431, LP_HALF, 1, &o), 0);
    assert_int_equal(o.n, 16);
    assert_int_equal(o.forward, 6);
    assert_int_equal(o.outputs_slot, -1);
    assert_true(o.op[0].alloc && o.op[0].slot == 0 && o.op[0].units == 2 * LOSSPATH_UNIT);
    assert_true(o.op[1].alloc && o.op[1].slot == 1 && o.op[1].units == 4 * LOSSPATH_UNIT);
    assert_true(!o.op[2].alloc && o.op[2].slot == 0);
    assert_int_equal(o.grad_free, 15); /* F(7): the logits' 16-bit gradient, A(7) at 2 B */
    assert_true(!o.op[15].alloc && o.op[15].slot == 7 && o.op[13].slot == 7 &&
                o.op[13].units == 2 * LOSSPATH_UNIT);
    assert_int_equal(losspath_ops(LOSS_HF431_KEPT, LP_HALF, 1, &o), 0);
    assert_int_equal(o.outputs_slot, 1);
    assert_true(!o.op[o.n - 1].alloc && o.op[o.n - 1].slot == 1);
    assert_int_equal(o.grad_free, o.n - 2);
    assert_true(!o.op[o.grad_free].alloc && o.op[o.grad_free].slot == 7);
    assert_true(losspath_transformers(LOSS_HF446_KEPT) && !losspath_transformers(LOSS_TRL));
    assert_int_equal(losspath_ops(LOSS_HF431_KEPT, LP_FP32, 1, &o), 0);
    assert_int_equal(o.op[0].units, 0);
    assert_int_equal(losspath_ops(LOSS_OUTPUTS_KEPT, LP_HALF, 1, &o), 0);
    assert_int_equal(o.outputs_slot, 0);
    assert_int_equal(losspath_ops(LOSS_LIGER, LP_HALF, 1, &o), -1);
    assert_int_equal(losspath_ops(LOSS_HF, LP_HALF, 0, &o), -1);
}

/* torchtitan's compiled loss, bf16: the 16-bit logits the compiled graph saves and the
 * 16-bit gradient its backward writes: 4, packed 2 + 2 segments, both in use at the peak. */
static void test_compiled_ce(void **state)
{
    (void)state;
    struct loss_cost c = cost(LOSS_COMPILED_CE, 2, DATA_PACKED, ALLOC_DEFAULT);
    assert_true(c.allocated[0] == 4.0);
    assert_true(c.reserved[0] == 4.0);
    assert_true(c.needed[0] == 4.0);
    struct train_config tc = {.stack = STACK_TORCHTITAN, .finetune = FT_FULL,
                              .features = FEAT_COMPILE | FEAT_COMPILED_LOSS};
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_COMPILED_CE);
    tc.features = FEAT_COMPILE; /* torchtitan 9dec370: blocks compiled, the loss not */
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_HF);
}

/* torchtitan under TP with loss_parallel (torch distributed/tensor/parallel/loss.py): the
 * forward holds the logits H, the upcast X, shifted S and exp E (14), the fused backward
 * the saved log-softmax R, zeros Z, exp(R) and their sum (16); under fp32 the upcast is
 * the logits themselves and the backward's 16 still binds. Selected for torchtitan with
 * tp > 1 and its sequence-parallel plan; one TP rank runs plain log_softmax (hf's 12). */
static void test_loss_parallel(void **state)
{
    (void)state;
    assert_true(cost(LOSS_LOSS_PARALLEL, 2, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 16.0);
    assert_true(cost(LOSS_LOSS_PARALLEL, 4, DATA_PACKED, ALLOC_DEFAULT).allocated[0] == 16.0);
    struct train_config tc = {.stack = STACK_TORCHTITAN, .finetune = FT_FULL, .tp = 8,
                              .features = FEAT_COMPILE | FEAT_SEQ_PARALLEL};
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_LOSS_PARALLEL);
    tc.tp = 1;
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_HF);
    tc.tp = 8, tc.stack = STACK_HF;
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_HF);
}

/* TRL's SFTTrainer, its metrics beside the loss's saved log_softmax output P (4) and
 * outputs.logits (accelerate's fp32 copy F, 4, under autocast; the 16-bit logits H, 2,
 * without). TRL 0.22, bf16 autocast, one sample: P + F = 8, the entropy's log_softmax,
 * exp and product of the sample (4 each): 20, the peak; two samples: 8 + 3 x 2 = 14; four:
 * 8 + 3 < the backward's 12. bf16 without autocast, one sample: P 4 + H 2 + 3 x 2 = 12.
 * TRL 0.15: the accuracy's copy C (4) beside P and F: 12, as the backward. TRL >= 1.6:
 * the reshape copies only for more than one sample, 12 either way. */
static void test_trl(void **state)
{
    (void)state;
    struct loss_cost c;
    losspath_cost(LOSS_TRL_022, LP_MIXED, DATA_PACKED, ALLOC_DEFAULT, &c);
    assert_true(c.allocated[0] == 20.0);
    assert_true(c.allocated[1] == 14.0);
    assert_true(c.allocated[2] == 12.0);
    assert_true(c.allocated[LP_BATCH_BUCKETS - 1] == 12.0);
    assert_true(c.reserved[0] >= c.allocated[0]);
    losspath_cost(LOSS_TRL_022, LP_HALF, DATA_PACKED, ALLOC_DEFAULT, &c);
    assert_true(c.allocated[0] == 12.0);
    losspath_cost(LOSS_TRL_022, LP_FP32, DATA_PACKED, ALLOC_DEFAULT, &c);
    assert_true(c.allocated[0] == 20.0); /* fp32 logits: P 4 + H 4 + 3 x 4 */
    losspath_cost(LOSS_TRL_015, LP_MIXED, DATA_PACKED, ALLOC_DEFAULT, &c);
    assert_true(c.allocated[0] == 12.0);
    losspath_cost(LOSS_TRL, LP_MIXED, DATA_PACKED, ALLOC_DEFAULT, &c);
    assert_true(c.allocated[0] == 12.0 && c.allocated[1] == 12.0);
    /* variable lengths: the metrics' extra 4-byte tensor strands at least as much as hf */
    struct loss_cost hf, trl;
    losspath_cost(LOSS_HF, LP_MIXED, DATA_VARIABLE, ALLOC_DEFAULT, &hf);
    losspath_cost(LOSS_TRL_015, LP_MIXED, DATA_VARIABLE, ALLOC_DEFAULT, &trl);
    assert_true(trl.reserved[0] >= hf.reserved[0]);
    struct train_config tc = {.stack = STACK_TRL_022, .finetune = FT_LORA};
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_TRL_022);
    tc.stack = STACK_TRL;
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_TRL);
    tc.stack = STACK_TRL_015;
    assert_int_equal(losspath_select(&tc, "llama"), LOSS_TRL_015);
    assert_true(stack_hf_trainer(STACK_TRL) && !stack_hf_trainer(STACK_TORCHTITAN));
}

/* Which path a configuration runs. */
static void test_select(void **state)
{
    (void)state;
    struct train_config c = {.stack = STACK_HF, .finetune = FT_LORA};
    assert_int_equal(losspath_select(&c, "llama"), LOSS_HF);
    c.features = FEAT_LOGITS_KEPT;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_KEPT);
    c.features = FEAT_OUTPUTS_KEPT;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_OUTPUTS_KEPT);
    c.stack = STACK_HF_431; /* older transformers: their own paths */
    assert_int_equal(losspath_select(&c, "llama"), LOSS_HF431_KEPT);
    c.features = 0;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_HF_431);
    c.stack = STACK_LITGPT;
    c.features = FEAT_CHUNKED_CE;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LITGPT_LORA);
    c.finetune = FT_FULL;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LITGPT_FULL);
    c.features |= FEAT_LONGEST_FIRST;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LITGPT_FULL_FIRST);
    c.finetune = FT_LORA;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LITGPT_LORA_FIRST);
    c.features = FEAT_CHUNKED_CE;
    c.stack = STACK_TORCHTUNE;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_CHUNKED_UPCAST);
    c.features |= FEAT_COMPILE;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_CHUNKED_COMPILED);
    /* Liger's fused loss replaces an HF or TRL stack's path (not Qwen v1's remote code), and
     * holds no N x V tensor of its own (its chunk is counted per point, test_memmodel) */
    c.features = FEAT_LIGER_FLCE; /* torchtune is not HF Trainer: its own (hf) path stays */
    assert_int_equal(losspath_select(&c, "llama"), LOSS_HF);
    c.stack = STACK_TRL;
    assert_int_equal(losspath_select(&c, "llama"), LOSS_LIGER);
    assert_int_equal(losspath_select(&c, "qwen"), LOSS_QWEN1);
    const struct loss_cost l = cost(LOSS_LIGER, 2, DATA_VARIABLE, ALLOC_DEFAULT);
    for (int b = 0; b < LP_BATCH_BUCKETS; b++)
        assert_true(l.allocated[b] == 0 && l.reserved[b] == 0 && l.needed[b] == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_allocated),         cmocka_unit_test(test_hf_packed_reserved),
        cmocka_unit_test(test_replay_by_hand), cmocka_unit_test(test_variable_run), cmocka_unit_test(test_variable_table), cmocka_unit_test(test_hf_expandable),
        cmocka_unit_test(test_variable_orders),      cmocka_unit_test(test_lengths_cost),
        cmocka_unit_test(test_chunked),              cmocka_unit_test(test_select),
        cmocka_unit_test(test_outputs_kept),         cmocka_unit_test(test_compiled_ce),
        cmocka_unit_test(test_older_outputs_kept),   cmocka_unit_test(test_ops),
        cmocka_unit_test(test_loss_parallel),        cmocka_unit_test(test_trl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
