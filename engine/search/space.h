/* space.h: the configuration space of a sweep, as a flat list of "outer" configurations
 * (everything but micro-batch and sequence length) times a seq x batch grid.
 *
 * A point's index is outer * (nseq * nbatch) + seq_i * nbatch + batch_i: a total order
 * that the ranking uses to break ties; `--shard` slices whole rank groups (group % N). Invalid
 * combinations never enter the list (single needs 1 GPU, tp divides the GPU count, the
 * heads and the KV heads, dp x tp x pp = GPUs, DP+TP needs both > 1, qlora is nf4). */
#ifndef LLMEM_SPACE_H
#define LLMEM_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "train.h"

#define OPT_LIST_MAX 1024

/* A sorted, deduplicated list of integers (an axis). */
struct int_list {
    int32_t v[OPT_LIST_MAX];
    int n;
};

/* The axes of a sweep, after defaults (the CLI fills them from its options). */
struct space_axes {
    int methods[METHOD_COUNT];
    int nmethods;
    struct int_list gpus, batch, seq, lora_r, tp, ep;
    struct int_list pp;       /* pipeline stages of method pp (empty: every divisor >= 2) */
    int pp_microbatches;      /* per pipelined step; 0 = 4 x pp */
    enum offload_mode offload;/* what method offload keeps in host memory */
    int gpus_per_node;        /* TP of a pipeline stays within a node by default */
    int precisions[PREC_COUNT], nprecisions;
    int finetunes[FT_COUNT], nfinetunes;
    int quants[QUANT_COUNT], nquants;
    int optimizers[OPT_COUNT], noptimizers;
    int ckpts[CKPT_COUNT]; /* enum ckpt_mode */
    int nckpts;
    uint32_t targets[16];
    int ntargets;
    enum stack stack;
    bool eager;            /* eager attention instead of SDPA */
    bool flash;            /* the flash-attn package: K and V at their KV width (GQA) */
    bool liger;            /* Liger's fused linear cross-entropy (HF Trainer use_liger_kernel) */
    bool paged;            /* bitsandbytes' paged AdamW / AdamW8bit (HF optim paged_adamw_*) */
    bool pp_interleaved;   /* the interleaved pipeline schedule (--pp-schedule interleaved) */
    int rope_tables;       /* --rope-tables: 0 none, 1 in the weights' dtype, 2 fp32
                              (transformers 4.31 - 4.39, train.h FEAT_ROPE_TABLES) */
    bool end_units;        /* --fsdp-end-units: the embedding and the output layer as FSDP2
                              units of their own (train.h FEAT_FSDP_END_UNITS) */
    enum data_shape data;
    enum alloc_conf alloc;
};

struct space_outer {
    uint32_t model;          /* index into the sweep's models */
    uint32_t recipe;         /* its tuning recipe (space.recipe_outer); times nseq plus the
                              * sequence index is the point's recipe (DESIGN.md section 1) */
    uint32_t layout;         /* its position among the outer entries of that tuning recipe */
    struct train_config cfg; /* micro_batch and seq_len unset */
};

struct space {
    struct space_outer *outer;
    size_t nouter;
    /* Rank groups: outer entries that differ only in the LoRA rank are consecutive, ranks
     * ascending; group[k] is the first entry of group k (full fine-tuning: groups of one).
     * The sweep and --shard work on whole groups so the rank axis can be pruned. */
    size_t *group;
    size_t ngroups;
    int32_t batch[OPT_LIST_MAX], seq[OPT_LIST_MAX];
    int nbatch, nseq;
    /* Recipes (DESIGN.md section 1): what is trained, the layout aside. A tuning recipe is
     * (model, fine-tuning, rank, targets, base format, precision, optimizer); a recipe is a
     * tuning recipe at one sequence length: recipe id = tuning recipe * nseq + seq index.
     * recipe_outer[t] is the first outer entry of tuning recipe t, nlayout[t] its count. */
    uint32_t *recipe_outer, *nlayout;
    size_t ntuning;
    int32_t gpus[OPT_LIST_MAX]; /* the GPU-count axis, ascending */
    int ngpus;
};

/* Enumerates the outer configurations of the axes for the given models.
 * Returns 0, or -1 when memory runs out. */
int space_build(const struct space_axes *o, const struct model_plan *const *models,
                size_t nmodels, struct space *s);
void space_free(struct space *s);

static inline uint64_t space_points(const struct space *s)
{
    return (uint64_t)s->nouter * (uint64_t)s->nseq * (uint64_t)s->nbatch;
}

/* The feature bits the command line asks for (--attention eager|flash, --liger, --paged,
 * --pp-schedule interleaved), which every configuration of these axes adds to its stack's. */
uint64_t space_features(const struct space_axes *o);

/* When space_build finds no configuration: why, per method and GPU count, for model p
 * ("tp on 16 GPU(s): tp must divide ..."), written into buf (truncated to n). */
void space_why_empty(const struct space_axes *o, const struct model_plan *p, char *buf, size_t n);

static inline size_t space_recipes(const struct space *s)
{
    return s->ntuning * (size_t)s->nseq;
}

/* The recipe of a point index. */
static inline uint32_t space_recipe_of(const struct space *s, uint64_t index)
{
    uint64_t inner = (uint64_t)s->nseq * (uint64_t)s->nbatch;
    return s->outer[index / inner].recipe * (uint32_t)s->nseq +
           (uint32_t)((index % inner) / (uint64_t)s->nbatch);
}

/* A point's position among the layouts of its recipe (method, GPUs, split, checkpointing,
 * micro-batch in the space's order): the ranking's last tie-break, which does not depend on
 * which other models or recipes are in the run. */
static inline uint64_t space_layout_of(const struct space *s, uint64_t index)
{
    uint64_t inner = (uint64_t)s->nseq * (uint64_t)s->nbatch;
    return (uint64_t)s->outer[index / inner].layout * (uint64_t)s->nbatch +
           index % (uint64_t)s->nbatch;
}

/* The index of the GPU count on the axis, or -1. */
int space_gpu_index(const struct space *s, int32_t gpus);

/* A representative configuration of recipe r (its first layout, micro-batch 1); *model
 * gets its model. */
void space_recipe_config(const struct space *s, size_t r, uint32_t *model, struct train_config *c);

/* The full configuration of a point index; returns the outer entry. */
const struct space_outer *space_decode(const struct space *s, uint64_t index,
                                       struct train_config *c);

#endif
