/* catalog.c: reading the catalogs with csv_table (see catalog.h). */
#include "catalog.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "csv_table.h"

const char *catalog_default_dir(void)
{
    const char *env = getenv("LLMEM_DATA");
    if (env && *env)
        return env;
    if (access(LLMEM_SOURCE_DIR "/datasets/models.csv", R_OK) == 0)
        return LLMEM_SOURCE_DIR "/datasets";
    return "/usr/local/share/llmem-sweep";
}

static const char *const model_cols[] = {
    "model", "model_type", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate",
    "vocab", "max_pos", "pos_offset", "emb_dim", "norms_per_layer", "norm", "mlp", "pos_emb",
    "tied", "qkv_bias", "o_bias", "mlp_bias", "lm_head_bias", "emb_norm", "fused_qkv",
    "fused_gate_up", "logits_fp32", "params", NULL,
};

static int enum_cell(const struct csv_table *t, size_t row, int col, const char *const *names,
                     int *out, struct input_error *e)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(t->cells[row][col], names[i]) == 0) {
            *out = i;
            return 0;
        }
    return csv_cell_error(t, row, col, e, "unknown value '%s'", t->cells[row][col]);
}

/* Optional columns (CATALOG.md): q/k norms, MoE and latent attention. An absent column, or
 * an empty cell, keeps the family default (qk_norm) or 0. */
static int model_row_ext(const struct csv_table *t, size_t r, struct model_spec *m,
                         struct input_error *e)
{
    static const char *const qk[] = {"none", "head", "proj", NULL};
    static const char *const cols[] = {"experts", "experts_per_tok", "moe_intermediate",
                                       "shared_intermediate", "dense_layers", "q_lora_rank",
                                       "kv_lora_rank", "qk_rope_dim", "v_head_dim"};
    int64_t *dims[] = {&m->experts, &m->experts_per_tok, &m->moe_intermediate,
                       &m->shared_intermediate, &m->dense_layers, &m->q_lora_rank,
                       &m->kv_lora_rank, &m->qk_rope_dim, &m->v_head_dim};
    int col = csv_table_col(t, "qk_norm"), k;
    if (col >= 0 && *t->cells[r][col]) {
        if (enum_cell(t, r, col, qk, &k, e))
            return -1;
        m->qk_norm = (enum qk_norm_kind)k;
    }
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        col = csv_table_col(t, cols[i]);
        if (col >= 0 && *t->cells[r][col] &&
            csv_get_i64(t, r, col, 0, INT64_C(1) << 24, dims[i], e))
            return -1;
    }
    col = csv_table_col(t, "shared_gate");
    if (col >= 0 && *t->cells[r][col]) {
        if (csv_get_bool(t, r, col, &k, e))
            return -1;
        m->shared_gate = k != 0;
    }
    return 0;
}

static int model_row(const struct csv_table *t, size_t r, struct model_spec *m,
                     struct input_error *e)
{
    static const char *const norms[] = {"layernorm", "rmsnorm", NULL};
    static const char *const mlps[] = {"plain", "gated", NULL};
    static const char *const pos[] = {"learned", "rotary", "alibi", NULL};
    int64_t *dims[] = {&m->layers, &m->hidden, &m->heads, &m->kv_heads, &m->head_dim,
                       &m->intermediate, &m->vocab, &m->max_pos, &m->pos_offset, &m->emb_dim};
    bool *flags[] = {&m->tied, &m->qkv_bias, &m->o_bias, &m->mlp_bias, &m->lm_head_bias,
                     &m->emb_norm, &m->fused_qkv, &m->fused_gate_up, &m->logits_fp32};
    const char *name = t->cells[r][0];
    int64_t v;
    int k;

    memset(m, 0, sizeof *m);
    if (!*name || strlen(name) >= sizeof m->name)
        return csv_cell_error(t, r, 0, e, "model id must be 1 to %zu characters", sizeof m->name - 1);
    snprintf(m->name, sizeof m->name, "%s", name);
    if (!model_family_defaults(t->cells[r][1], m))
        return csv_cell_error(t, r, 1, e, "unsupported model_type '%s'", t->cells[r][1]);
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (csv_get_i64(t, r, csv_table_col(t, model_cols[2 + i]), 0, INT64_C(1) << 24, dims[i], e))
            return -1;
    if (csv_get_i64(t, r, csv_table_col(t, "norms_per_layer"), 1, 8, &v, e))
        return -1;
    m->norms_per_layer = (int)v;
    if (enum_cell(t, r, csv_table_col(t, "norm"), norms, &k, e))
        return -1;
    m->norm = (enum norm_kind)k;
    if (enum_cell(t, r, csv_table_col(t, "mlp"), mlps, &k, e))
        return -1;
    m->mlp = k ? MLP_GATED : MLP_PLAIN;
    if (enum_cell(t, r, csv_table_col(t, "pos_emb"), pos, &k, e))
        return -1;
    m->pos = (enum pos_kind)k;
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (csv_get_bool(t, r, csv_table_col(t, model_cols[16 + i]), &k, e))
            return -1;
        *flags[i] = k != 0;
    }
    if (csv_get_i64(t, r, csv_table_col(t, "params"), 0, INT64_C(1) << 42, &m->published_params, e))
        return -1;
    if (model_row_ext(t, r, m, e))
        return -1;
    const char *bad = model_check(m);
    if (bad)
        return csv_cell_error(t, r, csv_table_col(t, bad), e, "inconsistent with the other dimensions");
    return 0;
}

int catalog_load_models(const char *path, struct catalog *c, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    int rc = csv_table_require(&t, model_cols, e);
    c->models = rc ? NULL : calloc(t.nrows ? t.nrows : 1, sizeof *c->models);
    if (!rc && !c->models)
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    for (size_t r = 0; !rc && r < t.nrows; r++) {
        rc = model_row(&t, r, &c->models[r], e);
        for (size_t q = 0; !rc && q < r; q++)
            if (strcmp(c->models[q].name, c->models[r].name) == 0)
                rc = csv_cell_error(&t, r, 0, e, "duplicate model '%s'", c->models[r].name);
        c->nmodels = r + 1;
    }
    csv_table_free(&t);
    return rc;
}

static const char *const gpu_cols[] = {
    "gpu", "memory_bytes", "bf16_tflops", "fp16_tflops", "fp32_tflops", "mem_bw_gbs",
    "interconnect_gbs", "context_bytes", "match", NULL,
};

static int gpu_row(const struct csv_table *t, size_t r, struct gpu_spec *g, struct input_error *e)
{
    double *rates[] = {&g->bf16_tflops, &g->fp16_tflops, &g->fp32_tflops, &g->mem_bw_gbs,
                       &g->interconnect_gbs};
    int64_t mem, ctx;
    memset(g, 0, sizeof *g);
    if (!*t->cells[r][0] || strlen(t->cells[r][0]) >= sizeof g->name)
        return csv_cell_error(t, r, 0, e, "GPU name must be 1 to %zu characters", sizeof g->name - 1);
    snprintf(g->name, sizeof g->name, "%s", t->cells[r][0]);
    if (csv_get_i64(t, r, csv_table_col(t, "memory_bytes"), 1 << 20, INT64_C(1) << 50, &mem, e) ||
        csv_get_i64(t, r, csv_table_col(t, "context_bytes"), 0, INT64_C(1) << 40, &ctx, e))
        return -1;
    g->memory_bytes = (uint64_t)mem;
    g->context_bytes = (uint64_t)ctx;
    /* optional column; without it PyTorch's default off Hopper (CublasHandlePool.cpp
     * parseChosenWorkspaceSize, ":4096:2:16:8" = 8,519,680 bytes, torch >= 2.0) */
    int64_t ws = CUBLAS_WS_DEFAULT;
    int wcol = csv_table_col(t, "cublas_workspace_bytes");
    if (wcol >= 0 && csv_get_i64(t, r, wcol, 0, INT64_C(1) << 34, &ws, e))
        return -1;
    g->cublas_ws_bytes = (uint64_t)ws;
    int64_t nccl = (int64_t)NCCL_BYTES_DEFAULT;
    int ncol = csv_table_col(t, "nccl_bytes");
    if (ncol >= 0 && csv_get_i64(t, r, ncol, 0, INT64_C(1) << 40, &nccl, e))
        return -1;
    g->nccl_bytes = (uint64_t)nccl;
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
        if (csv_get_f64(t, r, csv_table_col(t, gpu_cols[2 + i]), 0, 1e7, rates[i], e))
            return -1;
    if (g->fp32_tflops <= 0)
        return csv_cell_error(t, r, csv_table_col(t, "fp32_tflops"), e, "must be positive");
    const char *match = t->cells[r][csv_table_col(t, "match")];
    if (strlen(match) >= sizeof g->match)
        return csv_cell_error(t, r, csv_table_col(t, "match"), e, "too long");
    for (size_t i = 0; match[i]; i++)
        g->match[i] = (char)tolower((unsigned char)match[i]);
    g->gpus_per_node = GPU_PER_NODE_DEFAULT;
    /* optional (README "Contract extensions"): the inter-node link, the host link and the
     * host memory bandwidth (offload), the dense float8 rate (--precision fp8) */
    static const char *const optional[] = {"internode_gbs", "pcie_gbs", "host_mem_gbs", "fp8_tflops"};
    double *dst[] = {&g->internode_gbs, &g->pcie_gbs, &g->host_mem_gbs, &g->fp8_tflops};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        int col = csv_table_col(t, optional[i]);
        if (col >= 0 && *t->cells[r][col] && csv_get_f64(t, r, col, 0, 1e7, dst[i], e))
            return -1;
    }
    return 0;
}

int catalog_load_gpus(const char *path, struct catalog *c, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    int rc = csv_table_require(&t, gpu_cols, e);
    c->gpus = rc ? NULL : calloc(t.nrows ? t.nrows : 1, sizeof *c->gpus);
    if (!rc && !c->gpus)
        rc = input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    for (size_t r = 0; !rc && r < t.nrows; r++) {
        rc = gpu_row(&t, r, &c->gpus[r], e);
        c->ngpus = r + 1;
    }
    csv_table_free(&t);
    return rc;
}

int catalog_load(const char *dir, struct catalog *c, struct input_error *e)
{
    char path[1024];
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/models.csv", dir);
    int rc = catalog_load_models(path, c, e);
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/gpus.csv", dir);
        rc = catalog_load_gpus(path, c, e);
    }
    if (rc != 0) /* nothing half-loaded survives a failure */
        catalog_free(c);
    return rc;
}

void catalog_free(struct catalog *c)
{
    if (!c)
        return;
    free(c->models);
    free(c->gpus);
    memset(c, 0, sizeof *c);
}

const struct model_spec *catalog_find_model(const struct catalog *c, const char *name)
{
    for (size_t i = 0; i < c->nmodels; i++)
        if (strcmp(c->models[i].name, name) == 0)
            return &c->models[i];
    for (size_t i = 0; i < c->nmodels; i++) {
        const char *id = c->models[i].name, *slash = strchr(id, '/');
        if (strcasecmp(id, name) == 0 || (slash && strcasecmp(slash + 1, name) == 0))
            return &c->models[i];
    }
    return NULL;
}

const struct gpu_spec *catalog_find_gpu(const struct catalog *c, const char *name)
{
    for (size_t i = 0; i < c->ngpus; i++)
        if (strcasecmp(c->gpus[i].name, name) == 0)
            return &c->gpus[i];
    return NULL;
}

const struct gpu_spec *catalog_match_device(const struct catalog *c, const char *device_name)
{
    char lower[256];
    size_t n = 0;
    for (; device_name[n] && n + 1 < sizeof lower; n++)
        lower[n] = (char)tolower((unsigned char)device_name[n]);
    lower[n] = '\0';
    const struct gpu_spec *best = NULL;
    for (size_t i = 0; i < c->ngpus; i++) {
        const char *m = c->gpus[i].match;
        if (*m && strstr(lower, m) && (!best || strlen(m) > strlen(best->match)))
            best = &c->gpus[i];
    }
    return best;
}
