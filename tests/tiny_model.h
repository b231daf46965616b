/* tiny_model.h: the tiny llama-style model the memory and speed tests work out by hand, and the configuration they start from
 * (layers 2, hidden 64, heads 4 of 16, kv_heads 2, intermediate 128, vocab 1000; the
 * parameter count is derived in test_memmodel.c). Header-only: each test is its own program. */
#ifndef LLMEM_TEST_TINY_MODEL_H
#define LLMEM_TEST_TINY_MODEL_H

#include <stdio.h>
#include <string.h>

#include "mempoint.h"
#include "plan.h"

/* A llama-family model of the given shape (name, layers, hidden, heads, kv_heads, head_dim,
 * intermediate, vocab, max_pos). @return plan_init's result. */
static inline int llama_test_plan(struct model_plan *plan, const char *name, const int64_t dims[8])
{
    struct model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    model_family_defaults("llama", &m);
    m.layers = dims[0], m.hidden = dims[1], m.heads = dims[2], m.kv_heads = dims[3];
    m.head_dim = dims[4], m.intermediate = dims[5], m.vocab = dims[6], m.max_pos = dims[7];
    return plan_init(plan, &m);
}

/* @return plan_init's result for the tiny model. */
static inline int tiny_model_plan(struct model_plan *plan)
{
    return llama_test_plan(plan, "tiny", (const int64_t[8]){2, 64, 4, 2, 16, 128, 1000, 128});
}

/* The tiny plan as a test program's cmocka group fixture: `static struct model_plan plan`,
 * built by setup and freed by teardown (each test is its own program, so one each). */
#define TINY_PLAN_FIXTURE                                                                      \
    static struct model_plan plan;                                                             \
    static int setup(void **state)                                                             \
    {                                                                                          \
        (void)state;                                                                           \
        return tiny_model_plan(&plan);                                                         \
    }                                                                                          \
    static int teardown(void **state)                                                          \
    {                                                                                          \
        (void)state;                                                                           \
        plan_free(&plan);                                                                      \
        return 0;                                                                              \
    }

/* The configuration the memory tests start from: one GPU, micro-batch 2 x 8 tokens,
 * bf16-pure full fine-tuning with AdamW, no checkpointing, the hf stack without features. */
static inline struct train_config tiny_base_config(void)
{
    struct train_config c = {
        .method = METHOD_SINGLE, .gpus = 1, .tp = 1, .dp = 1, .micro_batch = 2, .seq_len = 8,
        .precision = PREC_BF16_PURE, .finetune = FT_FULL, .grad_ckpt = false,
        .optimizer = OPT_ADAMW, .stack = STACK_HF, .features = 0,
    };
    return c;
}

/* The model's prediction for c on plan with a 1 MiB base and no catalog GPU. */
static inline void tiny_predict(const struct model_plan *plan, const struct train_config *c,
                                struct mem_estimate *e)
{
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    memmodel_predict(plan, c, &o, e);
}

#endif
