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

#include "options.h"
#include "plan.h"
#include "train.h"

struct space_outer {
    uint32_t model;          /* index into the sweep's models */
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
};

/* Enumerates the outer configurations of the options' axes for the given models.
 * Returns 0, or -1 when memory runs out. */
int space_build(const struct options *o, const struct model_plan *const *models,
                size_t nmodels, struct space *s);
void space_free(struct space *s);

static inline uint64_t space_points(const struct space *s)
{
    return (uint64_t)s->nouter * (uint64_t)s->nseq * (uint64_t)s->nbatch;
}

/* When space_build finds no configuration: why, per method and GPU count, for model p
 * ("tp on 16 GPU(s): tp must divide ..."), written into buf (truncated to n). */
void space_why_empty(const struct options *o, const struct model_plan *p, char *buf, size_t n);

/* The full configuration of a point index; returns the outer entry. */
const struct space_outer *space_decode(const struct space *s, uint64_t index,
                                       struct train_config *c);

#endif
