/* memdetail.h: the tensors behind each memory term of one prediction (`explain --detail`).
 *
 * For the phase where the prediction peaks, every term of memmodel's breakdown (base,
 * params, grads, optimizer, activations, logits, comm_buffers) is listed as the tensors
 * (or groups of like tensors) it is the sum of: name, shape with the dimensions resolved,
 * dtype, how many (per layer x layers), bytes on this GPU, and where the size comes from
 * (the paper's equation, the library file that allocates it, or the measured rows a term
 * was inferred from). The rows of a term add up to the term memmodel_eval prints
 * (tests/test_memdetail.c checks it across models, methods and fine-tuning modes).
 * Built for explain only: the sweep never calls it. */
#ifndef LLMEM_MEMDETAIL_H
#define LLMEM_MEMDETAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memmodel.h"

#define MEMDETAIL_MAX 160

struct mem_detail_row {
    enum mem_term term;
    char name[64];      /* "q weight", "saved: linear inputs", ... */
    char shape[64];     /* dimensions resolved: "4096 x 4096", "4 x 2048 x 128256" */
    char dtype[16];     /* "bf16", "fp32", "nf4", "mixed", ... */
    char count[48];     /* "1 x 32 layers", "32 blocks", "1" */
    uint64_t bytes;     /* on this GPU */
    const char *source; /* paper equation, library file and commit, or measured rows */
};

struct mem_detail {
    enum mem_phase phase; /* the phase detailed */
    size_t n;
    bool truncated;       /* more rows than MEMDETAIL_MAX (none of today's models) */
    struct mem_detail_row rows[MEMDETAIL_MAX];
};

/* The tensors behind e's terms at `phase` (explain: e->peak_phase; LLMem's equations have
 * one phase, lm_head+loss), for configuration c of plan p. e is memmodel's prediction of c
 * with options opt; the plan's chunk must be searched when memmodel_uses_llmem. */
void memdetail_build(const struct model_plan *p, const struct train_config *c, const struct mem_options *opt,
                     const struct mem_estimate *e, enum mem_phase phase, struct mem_detail *d);

/* The sum of the rows of term t. */
uint64_t memdetail_term_sum(const struct mem_detail *d, enum mem_term t);

#endif
