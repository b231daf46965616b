/* llmem.h: the LLMem equations (Kim et al., IJCAI 2024; reference/llmem-model.md).
 *
 * Pure arithmetic over a model plan: full fine-tuning, fp16 mixed precision with fp32
 * master weights, activation checkpointing, Adam. The same terms serve `--paper` (exactly
 * the paper's equations) and, with `paper = false`, the corrected form documented in the
 * README (DP+TP keeps its TP shard of m_p16). */
#ifndef LLMEM_LLMEM_H
#define LLMEM_LLMEM_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "train.h"

#define LLMEM_PAGE (UINT64_C(2) << 20) /* cu_p: 2 MiB */

struct llmem_terms {
    uint64_t m_base, m_p, m_p16, m_p32, m_os, m_out, m_lm, m_back;
    int64_t chunk_elems; /* cs used for m_p */
    int64_t e_n;         /* embedding layers counted in m_out */
    uint64_t peak;       /* the method's peak equation */
};

static inline uint64_t llmem_ceil_page(uint64_t x)
{
    return (x + LLMEM_PAGE - 1) / LLMEM_PAGE * LLMEM_PAGE;
}

/* Batch-independent terms: m_base, m_p, m_p16, m_p32, m_os, chunk_elems. The plan's chunk
 * size must already be searched (plan_chunk). */
void llmem_static(const struct model_plan *p, const struct train_config *c, uint64_t m_base,
                  bool paper, struct llmem_terms *t);

/* Batch-dependent terms (m_out, m_lm, m_back) and the peak, given the static ones. */
void llmem_eval(const struct model_plan *p, const struct train_config *c, bool paper,
                struct llmem_terms *t);

/* The DP degree Gemini shards chunks over for a method (1 for single, CDP and TP). */
int llmem_chunk_dp(const struct train_config *c);

#endif
