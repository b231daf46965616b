/* plan.c: per-model precomputation (see plan.h). */
#include "plan.h"

#include <string.h>

#include "chunk.h"

static bool is_linear_role(enum tensor_role r)
{
    return r != ROLE_EMBED && r != ROLE_POS_EMBED && r != ROLE_NORM;
}

/* Per-block sums, finished when the next block starts: the largest block is what FSDP
 * gathers as one unit and what autocast copies at once (DeepSeek's first blocks are dense,
 * the rest MoE). */
struct block_acc {
    int32_t layer;
    int64_t p, linear_w, expert_p;
};

static void block_done(struct model_plan *p, const struct block_acc *a)
{
    if (a->p > p->layer_p)
        p->layer_p = a->p;
    if (a->linear_w > p->layer_linear_w)
        p->layer_linear_w = a->linear_w;
    if (a->expert_p > p->layer_expert_p)
        p->layer_expert_p = a->expert_p;
}

static void add_tensor(struct model_plan *p, const struct tensor *t, struct block_acc *a,
                       int32_t *fuse_seen)
{
    const struct model_spec *m = &p->spec;
    int64_t n = tensor_numel(t);
    /* a routed expert sees experts_per_tok / experts of the tokens, on average */
    double share = t->expert ? (double)m->experts_per_tok / (double)m->experts : 1.0;
    bool lin = !t->bias && is_linear_role(t->role);
    p->params += n;
    if (t->expert)
        p->expert_p += n;
    if (t->bias || t->role == ROLE_NORM) {
        p->vector_p += n;
    } else {
        p->role_w[t->role] += n;
        p->role_active[t->role] += t->expert ? (double)n * share : (double)n;
        p->role_expert_w[t->role] += t->expert ? n : 0;
        if (is_linear_role(t->role)) {
            p->linear_w += n;
            p->lora_io[t->role] += t->rows + t->cols;
            p->lora_io_active[t->role] += (double)(t->rows + t->cols) * share;
            p->lora_io_expert[t->role] += t->expert ? t->rows + t->cols : 0;
            p->lora_in[t->role] += t->cols;
            p->lora_in_active[t->role] += (double)t->cols * share;
            p->lora_mods_active[t->role] += share;
            if (t->fuse > 0 && t->fuse == *fuse_seen) { /* not the fused module's first part */
                p->lora_shared_in[t->role] += t->cols;
                p->lora_shared_mods[t->role] += 1;
            }
            if (t->fuse > 0)
                *fuse_seen = t->fuse;
        } else {
            p->embedding_w += n;
        }
    }
    if (t->layer < 0)
        return;
    if (t->layer != a->layer) {
        block_done(p, a);
        *a = (struct block_acc){.layer = t->layer};
    }
    a->p += n;
    a->expert_p += t->expert ? n : 0;
    if (lin) {
        a->linear_w += n;
        if (n > p->max_linear_w)
            p->max_linear_w = n;
        p->block_rows += t->rows;
    }
}

int plan_init(struct model_plan *p, const struct model_spec *m)
{
    struct block_acc a = {.layer = -1};
    int32_t fuse_seen = 0;
    memset(p, 0, sizeof *p);
    p->spec = *m;
    if (tensors_build(m, &p->tensors) != 0)
        return -1;
    for (size_t i = 0; i < p->tensors.n; i++)
        add_tensor(p, &p->tensors.t[i], &a, &fuse_seen);
    block_done(p, &a);
    p->embed_p = p->role_w[ROLE_EMBED];
    p->head_p = p->role_w[ROLE_LM_HEAD];
    p->other_p = p->params - p->embed_p - p->head_p;
    p->emb_modules = 1 + (m->pos == POS_LEARNED);
    for (int64_t l = 0; l < m->layers; l++)
        p->moe_layers += model_layer_moe(m, l);
    p->inter_active = (double)m->intermediate;
    if (p->moe_layers)
        p->inter_active = ((double)(m->layers - p->moe_layers) * (double)m->intermediate +
                           (double)p->moe_layers * (double)(m->experts_per_tok * m->moe_intermediate +
                                                            m->shared_intermediate)) /
                          (double)m->layers;
    return 0;
}

void plan_free(struct model_plan *p)
{
    if (p)
        tensors_free(&p->tensors);
}

int64_t plan_chunk(struct model_plan *p)
{
    if (!p->chunk_searched)
        p->chunk_searched = chunk_search(&p->tensors);
    return p->chunk_searched;
}

/* r x the sum of per-role (in + out) over the targeted roles */
static int64_t adapter_params(const int64_t io_per_role[ROLE_COUNT], uint32_t targets, int32_t r)
{
    int64_t io = 0;
    for (int role = 0; role < ROLE_COUNT; role++)
        if (targets & (1u << role))
            io += io_per_role[role];
    return io * r;
}

int64_t plan_lora_params(const struct model_plan *p, uint32_t targets, int32_t r)
{
    return adapter_params(p->lora_io, targets, r);
}

int64_t plan_lora_expert_params(const struct model_plan *p, uint32_t targets, int32_t r)
{
    return adapter_params(p->lora_io_expert, targets, r);
}

/* One trained tensor of n elements into the sums of plan_trained_tensors. */
static void count_trained(double n, const double limit[2], double below[2], double *largest)
{
    for (int i = 0; i < 2; i++)
        below[i] += n < limit[i] ? n : 0.0;
    *largest = n > *largest ? n : *largest;
}

/* One LoRA adapter of rank r on a module with `in` inputs and `out` outputs: its lora_A and
 * lora_B, split like the module (div: TP and shards). */
static void count_adapter(double r, double in, double out, double div, const double limit[2],
                          double below[2], double *largest)
{
    count_trained(r * in / div, limit, below, largest);
    count_trained(r * out / div, limit, below, largest);
}

void plan_trained_tensors(const struct model_plan *p, const struct train_config *c, double shard,
                          const double limit[2], double below[2], double *largest)
{
    below[0] = below[1] = *largest = 0.0;
    const uint32_t targets = plan_lora_targets(p, c);
    const bool fused = plan_peft_fused(c);
    const double r = (double)c->lora_r, div = (double)c->tp * shard;
    double in = 0.0, out = 0.0; /* the adapter being read: a fused module's grows */
    int32_t fuse = 0;
    for (size_t i = 0; i < p->tensors.n; i++) {
        const struct tensor *t = &p->tensors.t[i];
        const bool matrix = tensor_is_matrix(t);
        if (c->finetune == FT_FULL) {
            count_trained((double)tensor_numel(t) / (matrix ? div : shard), limit, below, largest);
            continue;
        }
        if (!matrix || !is_linear_role(t->role) || !(targets & TARGET_BIT(t->role)))
            continue;
        if (fused && t->fuse > 0 && t->fuse == fuse) { /* one more output of the same module */
            out += (double)t->rows;
            continue;
        }
        if (in > 0) /* the previous adapter is complete */
            count_adapter(r, in, out, div, limit, below, largest);
        in = (double)t->cols, out = (double)t->rows;
        fuse = fused ? t->fuse : 0;
    }
    if (in > 0)
        count_adapter(r, in, out, div, limit, below, largest);
}

double plan_active_params(const struct model_plan *p)
{
    double n = (double)p->params;
    for (int role = 0; role < ROLE_COUNT; role++)
        n -= (double)p->role_expert_w[role] - (double)p->role_expert_w[role] *
             (double)p->spec.experts_per_tok / (p->spec.experts ? (double)p->spec.experts : 1.0);
    return n;
}

double plan_embed_rank(const struct model_plan *p, const struct train_config *c)
{
    return (double)p->embed_p / (double)train_embed_tp(c);
}

double plan_rank_params(const struct model_plan *p, const struct train_config *c)
{
    return (double)(p->params - p->embed_p) / (double)c->tp + plan_embed_rank(p, c);
}

double plan_head_rank(const struct model_plan *p, const struct train_config *c)
{
    return p->head_p ? (double)p->head_p / (double)c->tp : plan_embed_rank(p, c);
}

bool plan_peft_fused(const struct train_config *c)
{
    return stack_hf_trainer(c->stack);
}

uint32_t plan_lora_targets(const struct model_plan *p, const struct train_config *c)
{
    const uint32_t qkv = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_K) | TARGET_BIT(ROLE_V);
    const uint32_t gu = TARGET_BIT(ROLE_GATE) | TARGET_BIT(ROLE_UP);
    uint32_t t = c->lora_targets;
    if (!plan_peft_fused(c))
        return t;
    if (p->spec.fused_qkv && (t & qkv))
        t |= qkv;
    if (p->spec.fused_gate_up && (t & gu))
        t |= gu;
    return t;
}

int64_t plan_lora_params_cfg(const struct model_plan *p, const struct train_config *c)
{
    const uint32_t t = plan_lora_targets(p, c);
    int64_t io = 0;
    for (int role = 0; role < ROLE_COUNT; role++)
        if (t & (1u << role))
            io += p->lora_io[role] - (plan_peft_fused(c) ? p->lora_shared_in[role] : 0);
    return io * c->lora_r;
}
