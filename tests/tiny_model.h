/* tiny_model.h: the tiny llama-style model the memory and speed tests work out by hand
 * (layers 2, hidden 64, heads 4 of 16, kv_heads 2, intermediate 128, vocab 1000; the
 * parameter count is derived in test_memmodel.c). Header-only: each test is its own program. */
#ifndef LLMEM_TEST_TINY_MODEL_H
#define LLMEM_TEST_TINY_MODEL_H

#include <stdio.h>
#include <string.h>

#include "plan.h"

/* @return plan_init's result for the tiny model. */
static inline int tiny_model_plan(struct model_plan *plan)
{
    struct model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    model_family_defaults("llama", &m);
    m.layers = 2, m.hidden = 64, m.heads = 4, m.kv_heads = 2, m.head_dim = 16;
    m.intermediate = 128, m.vocab = 1000, m.max_pos = 128;
    return plan_init(plan, &m);
}

#endif
