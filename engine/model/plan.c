/* plan.c: per-model precomputation (see plan.h). */
#include "plan.h"

#include <string.h>

#include "chunk.h"

static bool is_linear_role(enum tensor_role r)
{
    return r != ROLE_EMBED && r != ROLE_POS_EMBED && r != ROLE_NORM;
}

static void add_tensor(struct model_plan *p, const struct tensor *t)
{
    int64_t n = tensor_numel(t);
    p->params += n;
    if (t->bias || t->role == ROLE_NORM) {
        p->vector_p += n;
    } else {
        p->role_w[t->role] += n;
        if (is_linear_role(t->role)) {
            p->linear_w += n;
            p->lora_io[t->role] += t->rows + t->cols;
            p->lora_in[t->role] += t->cols;
        } else {
            p->embedding_w += n;
        }
    }
    if (t->layer == 0) {
        p->layer_p += n;
        if (!t->bias && is_linear_role(t->role) && t->role != ROLE_NORM) {
            p->layer_linear_w += n;
            if (n > p->max_linear_w)
                p->max_linear_w = n;
        }
    }
    if (t->layer >= 0 && !t->bias && is_linear_role(t->role) && t->role != ROLE_NORM)
        p->block_rows += t->rows;
}

int plan_init(struct model_plan *p, const struct model_spec *m)
{
    memset(p, 0, sizeof *p);
    p->spec = *m;
    if (tensors_build(m, &p->tensors) != 0)
        return -1;
    for (size_t i = 0; i < p->tensors.n; i++)
        add_tensor(p, &p->tensors.t[i]);
    p->embed_p = p->role_w[ROLE_EMBED];
    p->head_p = p->role_w[ROLE_LM_HEAD];
    p->other_p = p->params - p->embed_p - p->head_p;
    p->emb_modules = 1 + (m->pos == POS_LEARNED);
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

int64_t plan_lora_params(const struct model_plan *p, uint32_t targets, int32_t r)
{
    int64_t io = 0;
    for (int role = 0; role < ROLE_COUNT; role++)
        if (targets & (1u << role))
            io += p->lora_io[role];
    return io * r;
}
