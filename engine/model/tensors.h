/* tensors.h: the ordered list of a model's parameter tensors.
 *
 * Built once per model from its dimensions, in the order the HF modelling code registers
 * them (which is the order Colossal-AI packs chunks in). It is the basis for exact
 * parameter counts, the chunk-size search, per-tensor allocator rounding, TP sharding
 * and the choice of LoRA targets. */
#ifndef LLMEM_TENSORS_H
#define LLMEM_TENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum tensor_role {
    ROLE_EMBED,     /* token embedding */
    ROLE_POS_EMBED, /* learned position embedding */
    ROLE_PROJ,      /* OPT-350m project_in / project_out */
    ROLE_Q,
    ROLE_K,
    ROLE_V,
    ROLE_O,
    ROLE_GATE,
    ROLE_UP,
    ROLE_DOWN,
    ROLE_NORM,
    ROLE_LM_HEAD,
    ROLE_ROUTER,    /* a MoE layer's router Linear(hidden, experts) */
    ROLE_COUNT
};

struct tensor {
    enum tensor_role role;
    int32_t layer;   /* transformer block index, -1 outside the blocks */
    int32_t fuse;    /* >0: consecutive tensors with the same id are one allocation */
    bool bias;       /* a bias vector (cols == 1) of a Linear of this role */
    int64_t rows;    /* output features (vocab for embeddings) */
    int64_t cols;    /* input features; 1 for vectors */
    bool expert;     /* a routed expert's weight: a token passes experts_per_tok of experts */
};

struct tensor_list {
    struct tensor *t;
    size_t n;
};

/* Builds the list for m; the caller frees it with tensors_free. Returns 0, or -1 when
 * memory runs out. */
int tensors_build(const struct model_spec *m, struct tensor_list *out);
void tensors_free(struct tensor_list *l);

static inline int64_t tensor_numel(const struct tensor *t) { return t->rows * t->cols; }

/* True for the weight matrices that Linear/Embedding modules own (LLMem counts those). */
bool tensor_is_matrix(const struct tensor *t);

/* True for a block's Linear weights (no bias, no norm): what a k-bit base quantizes, the
 * lm_head and embedding left as they are. */
static inline bool tensor_is_block_matrix(const struct tensor *t)
{
    return t->layer >= 0 && tensor_is_matrix(t);
}

/* Role name as used in LoRA target lists and messages: "q", "gate", "lm_head", ... */
const char *tensor_role_name(enum tensor_role r);

#endif
