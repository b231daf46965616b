/* answer.c: a finished sweep turned into the data the reports print (see answer.h). */
#include "answer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "speed.h"
#include "units.h"

static const char *const objective_names[OBJECTIVE_COUNT] = {"throughput", "per-gpu", "min-gpus"};

const char *objective_name(enum objective o)
{
    return o < OBJECTIVE_COUNT ? objective_names[o] : "?";
}

int objective_parse(const char *s)
{
    for (int i = 0; i < OBJECTIVE_COUNT; i++)
        if (!strcmp(s, objective_names[i]))
            return i;
    return -1;
}

/* --- stable ids -------------------------------------------------------------------- */

/* FNV-1a, 64 bits (Fowler, Noll, Vo): a fixed, documented function of the bytes, so an id
 * never depends on the tool's version, the catalog or the order of the run. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
    return h;
}

/* The recipe's knobs as the CSV prints them, joined by unit separators. */
static int recipe_text(const char *model, const struct train_config *c, char *buf, size_t n)
{
    char targets[96];
    targets_format(c->lora_targets, targets, sizeof targets);
    return snprintf(buf, n, "%s\x1f%s\x1f%d\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d", model,
                    finetune_name(c->finetune), c->lora_r, targets, quant_name(c->quant),
                    precision_name(c->precision), optimizer_name(c->optimizer), c->seq_len);
}

void answer_recipe_id(const char *model, const struct train_config *c, char out[ANSWER_ID_LEN])
{
    char text[MODEL_NAME_MAX + 256];
    recipe_text(model, c, text, sizeof text);
    snprintf(out, ANSWER_ID_LEN, "%016llx", (unsigned long long)fnv1a(text));
}

void answer_config_id(const char *model, const struct train_config *c, char out[ANSWER_ID_LEN])
{
    char text[MODEL_NAME_MAX + 384];
    int n = recipe_text(model, c, text, sizeof text);
    /* the layout's knobs; those a later version added enter only when they are not their
     * default, so the layouts of earlier versions keep their ids */
    if (n > 0 && (size_t)n < sizeof text)
        n += snprintf(text + n, sizeof text - (size_t)n, "\x1f%s\x1f%d\x1f%d\x1f%d\x1f%d\x1f%s",
                      method_name(c->method), c->gpus, c->tp, c->dp, c->micro_batch,
                      ckpt_mode_name(c));
    if (n > 0 && (size_t)n < sizeof text && train_ep(c) > 1)
        n += snprintf(text + n, sizeof text - (size_t)n, "\x1f" "ep%d", train_ep(c));
    if (n > 0 && (size_t)n < sizeof text && train_pp(c) > 1)
        n += snprintf(text + n, sizeof text - (size_t)n, "\x1f" "pp%d\x1f" "m%d", train_pp(c),
                      train_microbatches(c));
    if (n > 0 && (size_t)n < sizeof text && c->offload != OFFLOAD_NONE)
        snprintf(text + n, sizeof text - (size_t)n, "\x1f" "offload-%s", offload_name(c->offload));
    snprintf(out, ANSWER_ID_LEN, "%016llx", (unsigned long long)fnv1a(text));
}

/* --- rows ---------------------------------------------------------------------------- */

void answer_row_from_point(struct report_row *row, const struct sweep *s,
                           const struct sweep_point *pt)
{
    const struct mem_estimate *e = &pt->mem;
    memset(row, 0, sizeof *row);
    snprintf(row->model, sizeof row->model, "%s", s->models[pt->model].spec.name);
    row->cfg = pt->cfg;
    row->global_batch = (int64_t)pt->cfg.micro_batch * pt->cfg.dp * train_microbatches(&pt->cfg);
    row->host_gib = units_gib(e->host);
    row->peak_bytes = pt->peak;
    row->peak_gib = units_gib(pt->peak);
    row->budget_gib = units_gib(s->budget);
    row->headroom_gib = row->budget_gib - row->peak_gib;
    snprintf(row->peak_phase, sizeof row->peak_phase, "%s", mem_phase_name(e->peak_phase));
    for (int t = 0; t < TERM_COUNT; t++)
        row->term_gib[t] = units_gib(e->phase[e->peak_phase][t]);
    if (pt->rule >= 0 && s->rules)
        snprintf(row->rule, sizeof row->rule, "%s", rules_label(s->rules, pt->rule));
    row->step_time_s = pt->speed.step_time_s;
    row->samples_per_s = pt->speed.samples_per_s;
    row->tokens_per_s = pt->speed.tokens_per_s;
    row->tokens_per_s_gpu = pt->speed.tokens_per_s / (pt->cfg.gpus > 0 ? pt->cfg.gpus : 1);
    row->fits = pt->fits;
    row->index = pt->index < space_points(&s->space) ? space_layout_of(&s->space, pt->index) : 0;
    row->score = pt->score;
    row->allocated_gib = units_gib(e->allocated);
    row->reserved_gib = units_gib(e->reserved);
    row->peak_hi_gib = units_gib(pt->peak_hi);
    answer_recipe_id(row->model, &row->cfg, row->recipe_id);
    answer_config_id(row->model, &row->cfg, row->config_id);
}

/* The largest term of the peak phase, the base (CUDA context) aside: what a user can act
 * on. */
static int largest_term(const struct mem_estimate *e)
{
    const uint64_t *terms = e->phase[e->peak_phase];
    int big = TERM_PARAMS;
    for (int t = TERM_PARAMS; t < TERM_COUNT; t++)
        if (terms[t] > terms[big])
            big = t;
    return big;
}

void answer_miss_from_point(struct answer_miss *m, const struct sweep *s,
                            const struct sweep_point *pt)
{
    int big = largest_term(&pt->mem);
    memset(m, 0, sizeof *m);
    m->cfg = pt->cfg;
    m->peak_gib = units_gib(pt->peak);
    m->fit_peak_gib = units_gib(pt->fit_peak);
    snprintf(m->term, sizeof m->term, "%s", mem_term_name((enum mem_term)big));
    m->term_gib = units_gib(pt->mem.phase[pt->mem.peak_phase][big]);
    snprintf(m->phase, sizeof m->phase, "%s", mem_phase_name(pt->mem.peak_phase));
    if (pt->rule >= 0 && s->rules)
        snprintf(m->rule, sizeof m->rule, "%s", rules_label(s->rules, pt->rule));
}

/* A layout from its configuration, peak and speed; the hours and GPU-hours that tokens take
 * at that speed (0 when it has none). */
static void layout_set(struct answer_layout *l, const struct train_config *cfg, double peak_gib,
                       double tokens_per_s, double tokens_per_s_gpu, double step_time_s,
                       double tokens)
{
    memset(l, 0, sizeof *l);
    l->cfg = *cfg;
    l->peak_gib = peak_gib;
    l->tokens_per_s = tokens_per_s;
    l->tokens_per_s_gpu = tokens_per_s_gpu;
    l->step_time_s = step_time_s;
    l->hours = tokens_per_s > 0 ? tokens / tokens_per_s / 3600.0 : 0;
    l->gpu_hours = l->hours * cfg->gpus;
}

static void layout_from_point(struct answer_layout *l, const struct sweep *s,
                              const struct sweep_point *pt, double tokens)
{
    layout_set(l, &pt->cfg, units_gib(pt->peak), pt->speed.tokens_per_s,
               pt->speed.tokens_per_s / pt->cfg.gpus, pt->speed.step_time_s, tokens);
    answer_config_id(s->models[pt->model].spec.name, &pt->cfg, l->config_id);
}

static void layout_from_row(struct answer_layout *l, const struct report_row *w, double tokens)
{
    layout_set(l, &w->cfg, w->peak_gib, w->tokens_per_s, w->tokens_per_s_gpu, w->step_time_s,
               tokens);
    snprintf(l->config_id, sizeof l->config_id, "%s", w->config_id);
}

/* --- ranking ------------------------------------------------------------------------- */

/* Recipe order (model, fine-tuning, rank, targets, base format, precision, optimizer,
 * sequence length); 0 for the same recipe. */
static int recipe_cmp(const char *ma, const struct train_config *x, const char *mb,
                      const struct train_config *y)
{
    int d = strcmp(ma, mb);
    const int64_t k[7][2] = {
        {x->finetune, y->finetune},   {x->lora_r, y->lora_r},       {x->lora_targets, y->lora_targets},
        {x->quant, y->quant},         {x->precision, y->precision}, {x->optimizer, y->optimizer},
        {x->seq_len, y->seq_len},
    };
    for (int i = 0; !d && i < 7; i++)
        d = (k[i][0] > k[i][1]) - (k[i][0] < k[i][1]);
    return d;
}

int answer_recipe_cmp(const struct report_row *a, const struct report_row *b)
{
    return recipe_cmp(a->model, &a->cfg, b->model, &b->cfg);
}

static int row_cmp(const void *a, const void *b)
{
    const struct report_row *x = a, *y = b;
    int d = answer_recipe_cmp(x, y);
    if (d)
        return d;
    struct sweep_hit hx = {x->score, x->peak_bytes, x->index, x->fits};
    struct sweep_hit hy = {y->score, y->peak_bytes, y->index, y->fits};
    return sweep_hit_cmp(&hx, &hy);
}

void answer_rank(struct report *r, long top)
{
    qsort(r->rows, r->nrows, sizeof *r->rows, row_cmp);
    for (size_t lo = 0, hi; lo < r->nrows; lo = hi) {
        int32_t g = 0;
        for (hi = lo; hi < r->nrows && !answer_recipe_cmp(&r->rows[hi], &r->rows[lo]); hi++)
            if (r->rows[hi].recipe_min_gpus && (!g || r->rows[hi].recipe_min_gpus < g))
                g = r->rows[hi].recipe_min_gpus;
        for (size_t k = lo; k < hi; k++)
            r->rows[k].recipe_min_gpus = g;
    }
    size_t w = 0;
    long rank = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        rank = i && !answer_recipe_cmp(&r->rows[i], &r->rows[i - 1]) ? rank + 1 : 1;
        if (top > 0 && rank > top)
            continue;
        r->rows[w] = r->rows[i];
        r->rows[w++].rank = rank;
    }
    r->nrows = w;
}

/* tokens/s as the ranked CSV prints it (%.1f): a merge of shard CSVs sees only that, so
 * a single run compares the same numbers and marks the same ties. */
static double csv_tokens(const struct report_row *r)
{
    return round(r->tokens_per_s * 10.0) / 10.0;
}

void answer_mark_ties(struct report *r)
{
    const double keep = 1.0 - SPEED_ERROR_PCT / 100.0;
    for (size_t i = 0; i < r->nrows; i++)
        r->rows[i].speed_tie = false;
    /* rows are grouped by recipe (answer_rank, answer_build) */
    for (size_t lo = 0, hi; lo < r->nrows; lo = hi) {
        struct report_row *best = NULL;
        for (hi = lo; hi < r->nrows && !answer_recipe_cmp(&r->rows[hi], &r->rows[lo]); hi++)
            if (r->rows[hi].fits && (!best || csv_tokens(&r->rows[hi]) > csv_tokens(best)))
                best = &r->rows[hi];
        for (size_t k = lo; best && k < hi; k++)
            if (&r->rows[k] != best && r->rows[k].fits &&
                csv_tokens(&r->rows[k]) >= csv_tokens(best) * keep)
                r->rows[k].speed_tie = best->speed_tie = true;
    }
}

/* --- per-recipe summaries ------------------------------------------------------------ */

/* The by_gpus entry that is best under the objective; ties go to fewer GPUs. */
static int pick_best(const struct answer_layout *by, size_t n, enum objective o)
{
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        if (best < 0)
            best = (int)i;
        else if (o == OBJECTIVE_THROUGHPUT && by[i].tokens_per_s > by[best].tokens_per_s)
            best = (int)i;
        else if (o == OBJECTIVE_PER_GPU && by[i].tokens_per_s_gpu > by[best].tokens_per_s_gpu)
            best = (int)i;
    }
    return best; /* min-gpus: the first, GPU counts ascending */
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

static int layout_gpus_cmp(const void *a, const void *b)
{
    const struct answer_layout *x = a, *y = b;
    return (x->cfg.gpus > y->cfg.gpus) - (x->cfg.gpus < y->cfg.gpus);
}

int answer_summarize(struct report *r)
{
    size_t rcap = 0, bcap = 0;
    free(r->recipes);
    free(r->by_gpus);
    r->recipes = NULL;
    r->by_gpus = NULL;
    r->nrecipes = r->nby = 0;
    for (size_t lo = 0, hi; lo < r->nrows; lo = hi) {
        for (hi = lo + 1; hi < r->nrows && !answer_recipe_cmp(&r->rows[hi], &r->rows[lo]); hi++)
            ;
        if (grow((void **)&r->recipes, &rcap, r->nrecipes + 1, sizeof *r->recipes) ||
            grow((void **)&r->by_gpus, &bcap, r->nby + (hi - lo), sizeof *r->by_gpus))
            return -1;
        struct answer_recipe *k = &r->recipes[r->nrecipes++];
        memset(k, 0, sizeof *k);
        snprintf(k->model, sizeof k->model, "%s", r->rows[lo].model);
        k->model_index = UINT32_MAX;
        k->cfg = r->rows[lo].cfg;
        snprintf(k->recipe_id, sizeof k->recipe_id, "%s", r->rows[lo].recipe_id);
        k->row0 = lo;
        k->nrows = hi - lo;
        k->fitting = -1;
        k->min_gpus = r->rows[lo].recipe_min_gpus;
        k->by0 = r->nby;
        /* rows are best first: the first fitting row of each GPU count is its fastest */
        for (size_t i = lo; i < hi; i++) {
            bool seen = !r->rows[i].fits;
            for (size_t b = k->by0; b < r->nby && !seen; b++)
                seen = r->by_gpus[b].cfg.gpus == r->rows[i].cfg.gpus;
            if (!seen)
                layout_from_row(&r->by_gpus[r->nby++], &r->rows[i], r->meta.tokens);
        }
        qsort(r->by_gpus + k->by0, r->nby - k->by0, sizeof *r->by_gpus, layout_gpus_cmp);
        k->nby = r->nby - k->by0;
        k->best = pick_best(r->by_gpus + k->by0, k->nby, r->meta.objective);
    }
    return 0;
}

/* --- what to change ------------------------------------------------------------------ */

struct candidates {
    const struct sweep *s;
    uint32_t model;
    struct answer_change *out;
    int n, max;
    const char *also; /* a change every candidate carries besides its own ("" for none) */
};

/* Evaluates c; keeps it when it fits and is a valid configuration. */
static bool try_change(struct candidates *cd, const struct train_config *c, int cost,
                       const char *what)
{
    const struct model_spec *m = &cd->s->models[cd->model].spec;
    if (train_config_check(c, m) != NULL)
        return false;
    struct sweep_point pt;
    sweep_eval_config(cd->s, cd->model, c, &pt);
    if (!pt.fits)
        return false;
    struct answer_change ch = {.cfg = *c, .cost = cost};
    /* offload fits the GPU by filling host memory: say how much, the planner's other limit */
    if (pt.mem.host)
        snprintf(ch.what, sizeof ch.what, "%s%s, %.0f GiB host memory a GPU", what, cd->also,
                 units_gib(pt.mem.host));
    else
        snprintf(ch.what, sizeof ch.what, "%s%s", what, cd->also);
    ch.peak_gib = units_gib(pt.peak);
    ch.fit_peak_gib = units_gib(pt.fit_peak);
    /* keep the max cheapest: (cost, GPUs, peak) */
    int at = cd->n;
    while (at > 0) {
        const struct answer_change *p = &cd->out[at - 1];
        if (p->cost < cost || (p->cost == cost && (p->cfg.gpus < c->gpus ||
                                                   (p->cfg.gpus == c->gpus && p->peak_gib <= ch.peak_gib))))
            break;
        at--;
    }
    if (at >= cd->max)
        return true;
    int last = cd->n < cd->max ? cd->n : cd->max - 1;
    memmove(&cd->out[at + 1], &cd->out[at], (size_t)(last - at) * sizeof *cd->out);
    cd->out[at] = ch;
    if (cd->n < cd->max)
        cd->n++;
    return true;
}

/* c laid out by method m on g GPUs, as the space lays it out: TP over all of them, DP x TP
 * with c's TP degree (else 2), a pipeline with a stage per GPU and the space's default of
 * 4 micro-batches a stage, offload keeping `off` in host memory; data parallel otherwise.
 * Returns false when m cannot use g GPUs. */
static bool method_layout(const struct train_config *c, enum method m, int32_t g,
                          enum offload_mode off, struct train_config *x)
{
    *x = *c;
    x->method = m;
    x->gpus = g;
    x->tp = m == METHOD_TP ? g : m == METHOD_DPTP ? (c->tp > 1 ? c->tp : 2) : 1;
    x->pp = m == METHOD_PP ? g : 1;
    x->microbatches = m == METHOD_PP ? 4 * g : 1;
    x->offload = m == METHOD_OFFLOAD ? off : OFFLOAD_NONE;
    x->dp = g / (x->tp * x->pp);
    return m != METHOD_SINGLE && g % (x->tp * x->pp) == 0;
}

/* "offload on 8 GPUs", "offload (also parameters) on 8 GPUs" */
static void layout_what(const struct train_config *x, char *what, size_t n)
{
    snprintf(what, n, "%s%s on %d GPUs", method_name(x->method),
             x->offload == OFFLOAD_PARAMS ? " (also parameters)" : "", (int)x->gpus);
}

/* The fewest GPUs (doubling from c's count, up to 4096) on which method m fits. */
static void more_gpus(struct candidates *cd, const struct train_config *c, enum method m,
                      enum offload_mode off)
{
    for (int32_t g = c->gpus * 2; g <= 4096; g *= 2) {
        struct train_config x;
        if (!method_layout(c, m, g, off, &x))
            return;
        char what[96];
        layout_what(&x, what, sizeof what);
        if (try_change(cd, &x, 3, what))
            return;
    }
}

static int suggest_from(const struct sweep *s, uint32_t model, const struct train_config *c,
                        struct answer_change *out, int max, const char *also)
{
    struct candidates cd = {s, model, out, 0, max, also};
    struct train_config x;
    char what[96];
    if (c->micro_batch > 1) {
        x = *c;
        x.micro_batch = 1;
        try_change(&cd, &x, 1, "micro-batch 1");
    }
    if (!c->grad_ckpt) {
        x = *c;
        train_set_ckpt(&x, CKPT_ON);
        try_change(&cd, &x, 1, "checkpointing on");
    }
    /* every other method on the same GPUs, then on more; offload first with the optimizer
     * in host memory, then with the parameters too (PCIe traffic grows with each) */
    for (int m = METHOD_CDP; m < METHOD_COUNT; m++) {
        for (int off = OFFLOAD_OPTIMIZER; off <= (m == METHOD_OFFLOAD ? OFFLOAD_PARAMS : OFFLOAD_OPTIMIZER); off++) {
            const bool same = m == (int)c->method && (m != METHOD_OFFLOAD || off == (int)c->offload);
            const int cost = off == OFFLOAD_PARAMS ? 3 : 2; /* the parameters too: more traffic */
            if (!same && c->gpus > 1 && method_layout(c, (enum method)m, c->gpus, (enum offload_mode)off, &x)) {
                layout_what(&x, what, sizeof what);
                if (try_change(&cd, &x, cost, what))
                    continue; /* fits on these GPUs: more of them change more */
            }
            more_gpus(&cd, c, (enum method)m, (enum offload_mode)off);
        }
    }
    if (c->optimizer == OPT_ADAMW) {
        x = *c;
        x.optimizer = OPT_ADAMW8BIT;
        try_change(&cd, &x, 4, "8-bit AdamW (bitsandbytes)");
    }
    if (c->finetune == FT_FULL) {
        x = *c;
        x.finetune = FT_LORA;
        x.lora_r = 16;
        x.lora_targets = TARGETS_ALL;
        x.quant = QUANT_NONE;
        try_change(&cd, &x, 5, "LoRA r16 on all linear layers");
    }
    if (c->finetune != FT_QLORA) {
        x = *c;
        x.finetune = FT_QLORA;
        x.lora_r = c->lora_r ? c->lora_r : 16;
        x.lora_targets = c->lora_targets ? c->lora_targets : TARGETS_ALL;
        x.quant = QUANT_NF4;
        try_change(&cd, &x, 6, "QLoRA (4-bit NF4 base)");
    }
    for (int32_t q = c->seq_len / 2; q >= 128 && q >= c->seq_len / 8; q /= 2) {
        x = *c;
        x.seq_len = q;
        snprintf(what, sizeof what, "sequence %d", (int)q);
        if (try_change(&cd, &x, 7, what))
            break;
    }
    return cd.n;
}

/* Without checkpointing, a configuration whose states alone overflow the GPU may need two
 * changes: a layout that shares the states and checkpointing to make room for the
 * activations. When no single change fits, the same changes are tried with checkpointing
 * on, which each of them then names. */
int answer_suggest(const struct sweep *s, uint32_t model, const struct train_config *c,
                   struct answer_change *out, int max)
{
    int n = suggest_from(s, model, c, out, max, "");
    if (n == 0 && !c->grad_ckpt) {
        struct train_config x = *c;
        train_set_ckpt(&x, CKPT_ON);
        n = suggest_from(s, model, &x, out, max, ", with checkpointing on");
    }
    return n;
}

/* --- the answer of a live sweep ------------------------------------------------------- */

static const char *model_name(const struct sweep *s, uint32_t m)
{
    return s->models[m].spec.name;
}

static const struct sweep *sort_sweep; /* answer_build sorts on one thread */

static int recipe_id_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b, mx, my;
    struct train_config cx, cy;
    space_recipe_config(&sort_sweep->space, x, &mx, &cx);
    space_recipe_config(&sort_sweep->space, y, &my, &cy);
    int d = recipe_cmp(model_name(sort_sweep, mx), &cx, model_name(sort_sweep, my), &cy);
    return d ? d : (x > y) - (x < y);
}

/* The recipes this run covers: those with an outer entry in its shard. */
static bool *recipes_in_run(const struct sweep *s)
{
    const struct space *sp = &s->space;
    bool *in = calloc(space_recipes(sp) ? space_recipes(sp) : 1, sizeof *in);
    if (!in)
        return NULL;
    size_t n = s->par.shard_n ? (size_t)s->par.shard_n : 1;
    size_t k = s->par.shard_n ? (size_t)s->par.shard_k - 1 : 0;
    for (size_t g = k; g < sp->ngroups; g += n) {
        size_t end = g + 1 < sp->ngroups ? sp->group[g + 1] : sp->nouter;
        for (size_t oi = sp->group[g]; oi < end; oi++)
            for (int si = 0; si < sp->nseq; si++)
                in[(size_t)sp->outer[oi].recipe * (size_t)sp->nseq + (size_t)si] = true;
    }
    return in;
}

/* The recipe's fastest layout at each GPU count (over the methods' cells). */
/* The recipe's best layout per GPU count into r->by_gpus from by0 on (its slot). */
static void recipe_by_gpus(struct report *r, const struct sweep *s, const struct sweep_result *res,
                           size_t rid, struct answer_recipe *k, size_t by0)
{
    const size_t ng = (size_t)s->space.ngpus;
    k->by0 = by0;
    k->nby = 0;
    for (size_t gi = 0; gi < ng; gi++) {
        const struct sweep_hit *best = &res->by_gpu[rid * ng + gi];
        if (best->fits) {
            struct sweep_point pt;
            sweep_eval_point(s, best->index, &pt);
            layout_from_point(&r->by_gpus[by0 + k->nby++], s, &pt, r->meta.tokens);
        }
    }
    k->best = pick_best(r->by_gpus + k->by0, k->nby, r->meta.objective);
}

/* Recipe i of the report (rid in the sweep) with its rows from row0 and its layouts per
 * GPU count from by0: slots answer_build counted beforehand, so recipes fill in parallel. */
static void fill_recipe(struct report *r, const struct sweep *s, const struct sweep_result *res,
                        uint32_t rid, size_t i, size_t row0, size_t by0)
{
    const struct sweep_recipe *sr = &res->recipes[rid];
    struct answer_recipe *k = &r->recipes[i];
    memset(k, 0, sizeof *k);
    space_recipe_config(&s->space, rid, &k->model_index, &k->cfg);
    snprintf(k->model, sizeof k->model, "%s", model_name(s, k->model_index));
    answer_recipe_id(k->model, &k->cfg, k->recipe_id);
    k->fitting = (int64_t)sr->fitting;
    k->row0 = row0;
    k->nrows = sr->n;
    recipe_by_gpus(r, s, res, rid, k, by0);
    k->min_gpus = k->nby ? r->by_gpus[k->by0].cfg.gpus : 0;
    for (size_t j = 0; j < sr->n; j++) {
        struct sweep_point pt;
        sweep_eval_point(s, res->hits[sr->off + j].index, &pt);
        answer_row_from_point(&r->rows[row0 + j], s, &pt);
        r->rows[row0 + j].rank = (long)j + 1;
        r->rows[row0 + j].recipe_min_gpus = k->min_gpus;
    }
    if (!sr->fitting && sr->has_closest) {
        struct sweep_point pt;
        sweep_eval_point(s, sr->closest.index, &pt);
        k->has_miss = true;
        answer_miss_from_point(&k->miss, s, &pt);
        k->nchange = answer_suggest(s, pt.model, &pt.cfg, k->change, ANSWER_SUGGEST_MAX);
    }
}

/* Every recipe of the report, order[0..n): the slots of its rows and layouts per GPU count
 * counted first, then the recipes filled in parallel (each writes only its own slots).
 * Returns 0 or -1 without memory. */
static int add_recipes(struct report *r, const struct sweep *s, const struct sweep_result *res,
                       const uint32_t *order, size_t n)
{
    const size_t ng = (size_t)s->space.ngpus;
    size_t *row0 = malloc((n ? n : 1) * sizeof *row0), *by0 = malloc((n ? n : 1) * sizeof *by0);
    size_t rows = 0, by = 0;
    for (size_t i = 0; row0 && by0 && i < n; i++) {
        row0[i] = rows, by0[i] = by;
        rows += res->recipes[order[i]].n;
        for (size_t gi = 0; gi < ng; gi++)
            by += res->by_gpu[(size_t)order[i] * ng + gi].fits;
    }
    r->by_gpus = calloc(by ? by : 1, sizeof *r->by_gpus);
    if (!row0 || !by0 || !r->by_gpus) {
        free(row0);
        free(by0);
        return -1;
    }
#pragma omp parallel for num_threads(sweep_threads(s)) schedule(dynamic, 16)
    for (long i = 0; i < (long)n; i++)
        fill_recipe(r, s, res, order[i], (size_t)i, row0[i], by0[i]);
    r->nrecipes = n, r->nrows = rows, r->nby = by;
    free(row0);
    free(by0);
    return 0;
}

/* --- per model: the featured recipe's comparison and chart ----------------------------- */

/* The featured recipe's layouts per (method, GPU count) from its evaluated cells. */
static void featured_cells(struct report *r, const struct sweep *s, const struct sweep_cell *cells,
                           struct answer_model *am)
{
    const size_t ng = (size_t)s->space.ngpus;
    am->cell0 = r->ncells;
    for (int m = 0; m < METHOD_COUNT; m++)
        for (size_t gi = 0; gi < ng; gi++) {
            const struct sweep_cell *c = &cells[(size_t)m * ng + gi];
            if (!c->has_fit && !c->has_miss) /* not a valid layout, or another shard's */
                continue;
            struct answer_cell *a = &r->cells[r->ncells++];
            struct sweep_point pt;
            memset(a, 0, sizeof *a);
            a->method = (enum method)m;
            a->gpus = s->space.gpus[gi];
            a->has_fit = c->has_fit;
            a->has_miss = c->has_miss;
            if (c->has_fit) {
                sweep_eval_point(s, c->fit.index, &pt);
                layout_from_point(&a->fit, s, &pt, r->meta.tokens);
            }
            if (c->has_miss) {
                sweep_eval_point(s, c->miss.index, &pt);
                answer_miss_from_point(&a->miss, s, &pt);
            }
        }
    am->ncell = r->ncells - am->cell0;
}

/* Peak against micro-batch for every layout of the recipe (micro-batches evenly picked
 * from the axis, both ends included). */
static void featured_series(struct report *r, const struct sweep *s, size_t rid,
                            struct answer_model *am)
{
    const struct space *sp = &s->space;
    const uint32_t tuning = (uint32_t)(rid / (size_t)sp->nseq);
    const uint64_t seq_i = rid % (size_t)sp->nseq, inner = (uint64_t)sp->nseq * (uint64_t)sp->nbatch;
    const int nb = sp->nbatch, want = nb < ANSWER_BATCH_POINTS ? nb : ANSWER_BATCH_POINTS;
    am->series0 = r->nseries;
    for (size_t oi = 0; oi < sp->nouter; oi++) {
        if (sp->outer[oi].recipe != tuning)
            continue;
        if (r->nseries - am->series0 == ANSWER_SERIES_MAX) {
            am->series_cut = true;
            break;
        }
        struct answer_series *ser = &r->series[r->nseries++];
        memset(ser, 0, sizeof *ser);
        ser->cfg = sp->outer[oi].cfg;
        ser->cfg.seq_len = sp->seq[seq_i];
        for (int k = 0; k < want; k++) {
            int bi = want > 1 ? (int)((int64_t)k * (nb - 1) / (want - 1)) : 0;
            struct sweep_point pt;
            sweep_eval_point(s, (uint64_t)oi * inner + seq_i * (uint64_t)nb + (uint64_t)bi, &pt);
            ser->batch[ser->n] = pt.cfg.micro_batch;
            ser->peak[ser->n] = units_gib(pt.peak);
            ser->hi[ser->n] = units_gib(pt.peak_hi);
            ser->fits[ser->n] = pt.fits;
            if (pt.fits)
                ser->largest_fit = pt.cfg.micro_batch;
            ser->n++;
        }
    }
    am->nseries = r->nseries - am->series0;
}

/* The model's featured recipe: its first recipe (in row order) with a fitting layout,
 * else its first recipe with a miss. */
static size_t featured_recipe(const struct report *r, uint32_t m)
{
    size_t first_miss = SIZE_MAX;
    for (size_t i = 0; i < r->nrecipes; i++) {
        const struct answer_recipe *k = &r->recipes[i];
        if (k->model_index != m)
            continue;
        if (k->nby)
            return i;
        if (k->has_miss && first_miss == SIZE_MAX)
            first_miss = i;
    }
    return first_miss;
}

/* Every model's featured recipe (SIZE_MAX: none) and its cells, cells[m x METHOD_COUNT x
 * GPU counts ...]: all points of each recipe evaluated, the bulk of answer_build's work,
 * so the models run in parallel like the sweep (each writes only its own slice). */
static struct sweep_cell *featured_all(const struct report *r, const struct sweep *s,
                                       const uint32_t *rid_of, size_t *featured)
{
    const size_t stride = (size_t)METHOD_COUNT * (s->space.ngpus ? (size_t)s->space.ngpus : 1);
    struct sweep_cell *cells = malloc((s->nmodels ? s->nmodels : 1) * stride * sizeof *cells);
    if (!cells)
        return NULL;
#pragma omp parallel for num_threads(sweep_threads(s)) schedule(dynamic, 1)
    for (long m = 0; m < (long)s->nmodels; m++) {
        featured[m] = featured_recipe(r, (uint32_t)m);
        if (featured[m] != SIZE_MAX)
            sweep_recipe_cells(s, rid_of[featured[m]], cells + (size_t)m * stride);
    }
    return cells;
}

static void add_model(struct report *r, const struct sweep *s, const struct sweep_result *res,
                      const uint32_t *rid_of, uint32_t m, size_t featured, const struct sweep_cell *cells)
{
    struct answer_model *am = &r->models[r->nmodels++];
    memset(am, 0, sizeof *am);
    snprintf(am->name, sizeof am->name, "%s", model_name(s, m));
    am->featured = featured;
    if (am->featured == SIZE_MAX)
        return;
    const size_t rid = rid_of[am->featured];
    featured_cells(r, s, cells, am);
    featured_series(r, s, rid, am);
    const struct sweep_recipe *sr = &res->recipes[rid];
    uint64_t anchor = sr->n ? res->hits[sr->off].index : sr->closest.index;
    struct sweep_point pt;
    sweep_eval_point(s, anchor, &pt);
    answer_row_from_point(&am->best, s, &pt);
    am->best.rank = sr->n ? 1 : 0;
    am->has_best = true;
    am->anchor_fits = pt.fits;
    am->anchor_batch = pt.cfg.micro_batch;
    am->anchor_peak_gib = units_gib(pt.peak);
}

int answer_build(struct report *r, const struct sweep *s, const struct sweep_result *res)
{
    const size_t nrec = res->nrecipes;
    const size_t ng = (size_t)s->space.ngpus;
    bool *in = recipes_in_run(s);
    uint32_t *order = malloc((nrec ? nrec : 1) * sizeof *order);
    r->rows = calloc(res->nhits ? res->nhits : 1, sizeof *r->rows);
    r->recipes = calloc(nrec ? nrec : 1, sizeof *r->recipes);
    r->models = calloc(s->nmodels ? s->nmodels : 1, sizeof *r->models);
    r->cells = calloc(s->nmodels * METHOD_COUNT * (ng ? ng : 1) + 1, sizeof *r->cells);
    r->series = calloc(s->nmodels * ANSWER_SERIES_MAX + 1, sizeof *r->series);
    uint32_t *rid_of = malloc((nrec ? nrec : 1) * sizeof *rid_of);
    int rc = in && order && r->rows && r->recipes && r->models && r->cells && r->series && rid_of
           ? 0 : -1;
    size_t n = 0;
    for (size_t i = 0; !rc && i < nrec; i++)
        if (in[i])
            order[n++] = (uint32_t)i;
    sort_sweep = s;
    if (!rc)
        qsort(order, n, sizeof *order, recipe_id_cmp);
    if (!rc) {
        memcpy(rid_of, order, n * sizeof *rid_of);
        rc = add_recipes(r, s, res, order, n);
    }
    size_t *featured = malloc((s->nmodels ? s->nmodels : 1) * sizeof *featured);
    struct sweep_cell *cells = !rc && featured ? featured_all(r, s, rid_of, featured) : NULL;
    rc = rc || !cells ? -1 : 0;
    const size_t stride = (size_t)METHOD_COUNT * (ng ? ng : 1);
    for (uint32_t m = 0; !rc && m < s->nmodels; m++)
        add_model(r, s, res, rid_of, m, featured[m], cells + (size_t)m * stride);
    free(featured);
    free(cells);
    if (!rc && res->fitting == 0 && res->has_closest) {
        struct sweep_point pt;
        sweep_eval_point(s, res->closest.index, &pt);
        r->has_closest = true;
        answer_miss_from_point(&r->closest, s, &pt);
        snprintf(r->closest_model, sizeof r->closest_model, "%s", model_name(s, pt.model));
        r->nclosest_change = answer_suggest(s, pt.model, &pt.cfg, r->closest_change,
                                            ANSWER_SUGGEST_MAX);
    }
    free(in);
    free(order);
    free(rid_of);
    if (!rc)
        answer_mark_ties(r);
    return rc;
}

void answer_free(struct report *r)
{
    if (!r)
        return;
    free(r->rows);
    free(r->recipes);
    free(r->by_gpus);
    free(r->models);
    free(r->cells);
    free(r->series);
    r->rows = NULL;
    r->recipes = NULL;
    r->by_gpus = NULL;
    r->models = NULL;
    r->cells = NULL;
    r->series = NULL;
    r->nrows = r->nrecipes = r->nby = r->nmodels = r->ncells = r->nseries = 0;
}
