/* sweep.c: the parallel, pruned, deterministic sweep (see sweep.h). */
#include "sweep.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "losspath.h"
#include "mempoint.h"

int sweep_hit_cmp(const void *a, const void *b)
{
    const struct sweep_hit *x = a, *y = b;
    if (x->fits != y->fits)
        return x->fits ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->peak != y->peak)
        return x->peak < y->peak ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* LLMem's Algorithm 1 score: samples per iteration, CDP credited 1.5x against ZeRO-3's
 * 1.5x communication volume (reference section 7); the methods the paper lacks score their
 * samples per iteration. */
static double llmem_score(const struct train_config *c)
{
    double bs = (double)c->micro_batch;
    switch (c->method) {
    case METHOD_CDP:
        return bs * c->gpus * 1.5;
    case METHOD_ADP:
        return bs * c->gpus;
    case METHOD_DPTP:
        return bs * c->dp;
    case METHOD_ZERO1: /* beyond the paper: samples per iteration, as ADP */
    case METHOD_ZERO2:
    case METHOD_OFFLOAD:
        return bs * c->dp;
    case METHOD_PP:
        return bs * c->dp * train_microbatches(c);
    default:
        return bs;
    }
}

/* --- per-thread state ------------------------------------------------------------- */

/* One recipe's kept layouts in one thread: a heap with the worst on top when bounded. */
struct recipe_acc {
    struct sweep_hit *hits;
    uint32_t n, cap;
    uint64_t fitting;
    struct sweep_hit closest;
    bool has_closest;
};

/* One thread's state, a cache line (or more) of its own: its per-point counters are
 * written at every point, and a neighbour's fields on the same line would bounce between
 * the cores (false sharing). */
struct worker {
    _Alignas(64) struct recipe_acc *rec; /* per recipe id */
    size_t limit;           /* 0 = keep all */
    uint64_t evaluated, fitting;
    uint64_t host_over;     /* points left out: offload over --host-memory */
    bool failed;
    struct sweep_hit *by_gpu; /* per (recipe, GPU count) */
};

static bool worse(const struct sweep_hit *a, const struct sweep_hit *b)
{
    return sweep_hit_cmp(a, b) > 0;
}

static void sift_down(struct sweep_hit *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && worse(&h[l], &h[w]))
            w = l;
        if (r < n && worse(&h[r], &h[w]))
            w = r;
        if (w == i)
            return;
        struct sweep_hit t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void sift_up(struct sweep_hit *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!worse(&h[i], &h[p]))
            return;
        struct sweep_hit t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static void keep(struct worker *w, struct recipe_acc *a, const struct sweep_hit *hit)
{
    if (w->limit && a->n == w->limit) {
        if (worse(hit, &a->hits[0]))
            return;
        a->hits[0] = *hit;
        sift_down(a->hits, a->n, 0);
        return;
    }
    if (a->n == a->cap) { /* once per recipe when bounded; amortised doubling otherwise */
        size_t cap = w->limit ? w->limit : (a->cap ? 2 * (size_t)a->cap : 64);
        struct sweep_hit *h = cap > UINT32_MAX ? NULL : realloc(a->hits, cap * sizeof *h);
        if (!h) {
            w->failed = true;
            return;
        }
        a->hits = h;
        a->cap = (uint32_t)cap;
    }
    a->hits[a->n++] = *hit;
    if (w->limit)
        sift_up(a->hits, a->n - 1);
}

bool sweep_hit_closer(const struct sweep_hit *a, const struct sweep_hit *b)
{
    return a->peak < b->peak || (a->peak == b->peak && a->index < b->index);
}

#define closer sweep_hit_closer

/* The best fitting layout per (recipe, GPU count). */
static void note_by_gpu(struct sweep_hit *b, const struct sweep_hit *hit)
{
    if (!b->fits || sweep_hit_cmp(hit, b) < 0)
        *b = *hit;
}

/* --- evaluation ------------------------------------------------------------------- */

struct prepared {
    struct train_config cfg;
    struct mem_prepared mem;
    struct mem_seq seq;       /* mem's activations at cfg.seq_len (set per sequence length) */
    struct speed_prepared speed;
    struct rules_point rules; /* the matching rule set folded to (1, b*s, b*s^2) terms */
    const struct model_plan *plan;
    struct band band;         /* the configuration's error band */
    double fit_factor;        /* peak x this must fit the budget (--margin) */
    bool host_over;           /* its offloaded states overfill a node's --host-memory */
};

/* Host memory a node gives the configuration's offloaded states: each of its GPUs on the
 * node keeps its share there (mem_prepared.host, per GPU). */
static uint64_t node_host_bytes(const struct sweep *s, const struct prepared *pr)
{
    const int32_t per_node = s->gpu && s->gpu->gpus_per_node > 0 ? s->gpu->gpus_per_node
                                                                 : GPU_PER_NODE_DEFAULT;
    const int32_t on_node = pr->cfg.gpus < per_node ? pr->cfg.gpus : per_node;
    return bytes_mul(pr->mem.host, (uint64_t)on_node);
}

static void prepare(const struct sweep *s, uint32_t model, const struct train_config *c,
                    struct prepared *pr)
{
    pr->cfg = *c;
    pr->plan = &s->models[model];
    memmodel_prepare(pr->plan, &pr->cfg, &s->mem, &pr->mem);
    speed_prepare(pr->plan, &pr->cfg, s->gpu, &pr->speed);
    pr->rules.set = -1;
    if (s->rules) {
        int set = rules_prepare(s->rules, s->rule_binding[model], pr->plan, &pr->cfg);
        rules_compile(s->rules, set, pr->plan, &pr->cfg, &pr->rules);
    }
    /* the band's factors are per configuration: the upper end stays monotone in the peak,
     * so pruning on it is as exact as pruning on the peak */
    pr->band = band_lookup(s->band, &pr->cfg);
    if (pr->rules.set >= 0 && rules_set_band(s->rules, pr->rules.set, &pr->band.lo, &pr->band.hi))
        pr->band.level = BAND_CALIBRATION; /* a calibration's own held-out band */
    pr->fit_factor = s->par.margin_pct < 0 ? pr->band.hi : 1.0 + s->par.margin_pct / 100.0;
    pr->host_over = s->host_budget && node_host_bytes(s, pr) > s->host_budget;
}

/* Whether a point of pr with this peak fits: the GPU's budget under --margin, and the
 * node's host memory under --host-memory (the same for all the configuration's points). */
static bool point_fits(const struct sweep *s, const struct prepared *pr, uint64_t peak)
{
    return !pr->host_over && band_scale(peak, pr->fit_factor) <= s->budget;
}

/* The micro-batch buckets of the space's batch axis (bit b: losspath_batch_bucket b). */
static unsigned space_buckets(const struct space *sp)
{
    unsigned m = 0;
    for (int bi = 0; bi < sp->nbatch; bi++)
        m |= 1u << losspath_batch_bucket(sp->batch[bi]);
    return m;
}

int sweep_use_lengths(const struct sweep *s, const struct model_plan *p, const struct train_config *c,
                      unsigned buckets, struct mem_prepared *mp)
{
    if (!s->lengths || losspath_data_shape(c) != DATA_VARIABLE || c->seq_len < 1)
        return -1;
    return length_costs_get(s->lengths, losspath_select(c, p->spec.model_type),
                            losspath_class(c->precision), c->alloc, (uint32_t)c->seq_len, buckets,
                            mp->logits_res_tok, mp->logits_need_tok);
}

/* Moves the point loop to sequence length seq: the memory model's per-sequence terms. */
static void at_seq(const struct sweep *s, struct prepared *pr, int32_t seq)
{
    pr->cfg.seq_len = seq;
    if (s->lengths)
        (void)sweep_use_lengths(s, pr->plan, &pr->cfg, space_buckets(&s->space), &pr->mem);
    memmodel_seq(&pr->mem, seq, &pr->seq);
}

/* Peak of the point in pr->cfg with its breakdown in *e; *rule gets the binding rule
 * candidate or -1. */
static uint64_t point_peak_full(const struct sweep *s, const struct prepared *pr,
                                struct mem_estimate *e, int *rule)
{
    memmodel_eval(pr->plan, &pr->cfg, &s->mem, &pr->mem, e);
    uint64_t peak = e->device, rp;
    int cand;
    *rule = -1;
    if (pr->rules.set >= 0 && rules_eval_point(s->rules, &pr->rules, &pr->cfg, e, &rp, &cand)) {
        peak = rp;
        *rule = cand;
    }
    return peak;
}

/* The same peak for the point loop, which keeps no breakdown: without a rule set (the only
 * reader of the breakdown) the model's peak alone, which is cheaper. */
static uint64_t point_peak(const struct sweep *s, const struct prepared *pr)
{
    struct mem_estimate e;
    int rule;
    if (pr->rules.set < 0)
        return memmodel_peak(pr->plan, &pr->cfg, &s->mem, &pr->mem, &pr->seq);
    return point_peak_full(s, pr, &e, &rule);
}

static double point_score(const struct sweep *s, const struct prepared *pr, struct speed_estimate *sp)
{
    speed_eval(&pr->cfg, &pr->speed, sp);
    if (pr->mem.paged) { /* paged optimizer states: what crosses PCIe depends on the point */
        struct mem_estimate e;
        memmodel_eval(pr->plan, &pr->cfg, &s->mem, &pr->mem, &e);
        speed_add_paging(s->gpu, e.paged_moved, sp);
    }
    return s->par.llmem_rank ? llmem_score(&pr->cfg) : sp->tokens_per_s;
}

/* Walks one outer configuration; returns true when even its smallest point (first
 * sequence length, first micro-batch) does not fit. */
/* Pruning needs memory monotone in micro-batch, sequence and rank. Rule sets may cover
 * only ranges of those, so a rule-raised peak can fall again past a range: no pruning
 * with --rules. */
static bool pruning(const struct sweep *s)
{
    return !s->par.no_prune && !s->par.all && !s->rules;
}

static bool sweep_outer(const struct sweep *s, size_t oi, struct worker *w)
{
    const struct space *sp = &s->space;
    const bool prune = pruning(s);
    const struct space_outer *so = &sp->outer[oi];
    struct prepared pr;
    prepare(s, so->model, &so->cfg, &pr);
    if (pr.host_over) { /* no point of it fits; a larger rank offloads more: prune like a miss */
        w->host_over += (uint64_t)sp->nseq * (uint64_t)sp->nbatch;
        return true;
    }
    const int gi = space_gpu_index(sp, pr.cfg.gpus);
    uint64_t base = (uint64_t)oi * (uint64_t)sp->nseq * (uint64_t)sp->nbatch;

    for (int si = 0; si < sp->nseq; si++) {
        const size_t rid = (size_t)so->recipe * (size_t)sp->nseq + (size_t)si;
        struct recipe_acc *acc = &w->rec[rid];
        struct sweep_hit *by_gpu = &w->by_gpu[rid * (size_t)sp->ngpus + (size_t)gi];
        at_seq(s, &pr, sp->seq[si]);
        for (int bi = 0; bi < sp->nbatch; bi++) {
            struct speed_estimate spd;
            pr.cfg.micro_batch = sp->batch[bi];
            struct sweep_hit hit = {.index = base + (uint64_t)si * (uint64_t)sp->nbatch + (uint64_t)bi};
            hit.peak = point_peak(s, &pr);
            hit.fits = point_fits(s, &pr, hit.peak);
            w->evaluated++;
            if (hit.fits) {
                hit.score = point_score(s, &pr, &spd);
                w->fitting++;
                acc->fitting++;
                keep(w, acc, &hit);
                note_by_gpu(by_gpu, &hit);
            } else {
                if (!acc->has_closest || closer(&hit, &acc->closest))
                    acc->closest = hit, acc->has_closest = true;
                if (s->par.all) {
                    hit.score = point_score(s, &pr, &spd);
                    keep(w, acc, &hit);
                }
            }
            if (!hit.fits && prune) {
                if (bi == 0) /* the smallest micro-batch fails: longer sequences fail too */
                    return si == 0;
                break;
            }
        }
    }
    return false;
}

static size_t group_end(const struct space *sp, size_t g)
{
    return g + 1 < sp->ngroups ? sp->group[g + 1] : sp->nouter;
}

/* A rank group in ascending rank: once a rank's smallest point fails, larger ranks (more
 * adapter weights, states and activations) fail too and are pruned. */
static void sweep_group(const struct sweep *s, size_t g, struct worker *w)
{
    const bool prune = pruning(s);
    for (size_t oi = s->space.group[g]; oi < group_end(&s->space, g); oi++)
        if (sweep_outer(s, oi, w) && prune)
            return;
}

/* --- driver ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void merge_counts(struct sweep_result *r, const struct worker *w)
{
    r->evaluated += w->evaluated;
    r->host_over += w->host_over;
    r->fitting += w->fitting;
    for (size_t i = 0; i < r->nby_gpu; i++)
        if (w->by_gpu[i].fits)
            note_by_gpu(&r->by_gpu[i], &w->by_gpu[i]);
    for (size_t k = 0; k < r->nrecipes; k++) {
        const struct recipe_acc *a = &w->rec[k];
        struct sweep_recipe *d = &r->recipes[k];
        d->fitting += a->fitting;
        d->n += a->n;
        if (a->has_closest && (!d->has_closest || closer(&a->closest, &d->closest)))
            d->closest = a->closest, d->has_closest = true;
    }
}

/* The threads' kept layouts of each recipe, sorted and cut to the limit; the overall
 * closest miss. */
static int merge_hits(struct sweep_result *r, struct worker *w, int nthreads, size_t limit)
{
    size_t total = 0;
    for (size_t k = 0; k < r->nrecipes; k++)
        total += r->recipes[k].n;
    r->hits = malloc((total ? total : 1) * sizeof *r->hits);
    if (!r->hits)
        return -1;
    size_t at = 0;
    for (size_t k = 0; k < r->nrecipes; k++) {
        struct sweep_recipe *d = &r->recipes[k];
        d->off = at;
        for (int t = 0; t < nthreads; t++) {
            const struct recipe_acc *a = &w[t].rec[k];
            if (a->n)
                memcpy(r->hits + at, a->hits, a->n * sizeof *a->hits);
            at += a->n;
        }
        qsort(r->hits + d->off, d->n, sizeof *r->hits, sweep_hit_cmp);
        if (limit && d->n > limit)
            d->n = limit;
        if (d->has_closest && (!r->has_closest || closer(&d->closest, &r->closest)))
            r->closest = d->closest, r->has_closest = true;
    }
    /* compact: recipes cut to the limit leave gaps */
    size_t w2 = 0;
    for (size_t k = 0; k < r->nrecipes; k++) {
        struct sweep_recipe *d = &r->recipes[k];
        memmove(r->hits + w2, r->hits + d->off, d->n * sizeof *r->hits);
        d->off = w2;
        w2 += d->n;
    }
    r->nhits = w2;
    return 0;
}

static void free_worker(struct worker *w, size_t nrecipes)
{
    for (size_t k = 0; w->rec && k < nrecipes; k++)
        free(w->rec[k].hits);
    free(w->rec);
    free(w->by_gpu);
}

int sweep_threads(const struct sweep *s)
{
#ifdef _OPENMP
    return s->par.threads > 0 ? s->par.threads : omp_get_max_threads();
#else
    (void)s;
    return 1;
#endif
}

/* With --lengths: the (path, class, allocator) keys that the shard's configurations of
 * variable-length data ask for, at every sequence length and micro-batch bucket of the
 * space, replayed in parallel before the point loop (lengthcost.h), which then only reads
 * them: threads asking for one key at once would otherwise wait for each other. */
static void prefetch_lengths(const struct sweep *s, size_t shard_k, size_t shard_n, int nthreads)
{
    enum { MAXK = LOSS_COUNT * LP_CLASS_COUNT * ALLOC_COUNT };
    const struct space *sp = &s->space;
    int key[MAXK], nk = 0;
    bool seen[MAXK] = {false};
    for (size_t g = shard_k; g < sp->ngroups; g += shard_n)
        for (size_t oi = sp->group[g]; oi < group_end(sp, g); oi++) {
            const struct train_config *c = &sp->outer[oi].cfg;
            if (losspath_data_shape(c) != DATA_VARIABLE)
                continue;
            const int id = ((int)losspath_select(c, s->models[sp->outer[oi].model].spec.model_type) *
                            LP_CLASS_COUNT + (int)losspath_class(c->precision)) * ALLOC_COUNT + (int)c->alloc;
            if (!seen[id])
                seen[id] = true, key[nk++] = id;
        }
    const unsigned buckets = space_buckets(sp);
    const long ntasks = (long)nk * sp->nseq * LP_BATCH_BUCKETS;
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
    for (long t = 0; t < ntasks; t++) {
        const int id = key[t / ((long)sp->nseq * LP_BATCH_BUCKETS)];
        const int si = (int)(t / LP_BATCH_BUCKETS % sp->nseq);
        const unsigned b = (unsigned)(t % LP_BATCH_BUCKETS);
        double res[LP_BATCH_BUCKETS], need[LP_BATCH_BUCKETS];
        if (buckets & (1u << b))
            (void)length_costs_get(s->lengths, (enum loss_path)(id / (LP_CLASS_COUNT * ALLOC_COUNT)),
                                   (enum lp_class)(id / ALLOC_COUNT % LP_CLASS_COUNT),
                                   (enum alloc_conf)(id % ALLOC_COUNT), (uint32_t)sp->seq[si], 1u << b,
                                   res, need);
    }
}

int sweep_run(const struct sweep *s, struct sweep_result *r)
{
    const struct sweep_params *o = &s->par;
    const struct space *sp = &s->space;
    const size_t nrec = space_recipes(sp);
    const size_t ncells = nrec * (size_t)sp->ngpus;
    const size_t limit = (o->top > 0 && !o->all) ? (size_t)o->top : 0;
    const size_t shard_n = o->shard_n ? (size_t)o->shard_n : 1;
    const size_t shard_k = o->shard_n ? (size_t)o->shard_k - 1 : 0;
    int nthreads, failed = 0;
    atomic_size_t done = 0;
    double t0 = now_s(), last = t0;

    memset(r, 0, sizeof *r);
    r->by_gpu = calloc(ncells ? ncells : 1, sizeof *r->by_gpu);
    r->recipes = calloc(nrec ? nrec : 1, sizeof *r->recipes);
    r->nby_gpu = ncells;
    r->nrecipes = nrec;
    if (!r->by_gpu || !r->recipes)
        return -1;
    for (size_t g = shard_k; g < sp->ngroups; g += shard_n)
        r->space += (uint64_t)(group_end(sp, g) - sp->group[g]) * (uint64_t)sp->nseq * (uint64_t)sp->nbatch;
    nthreads = sweep_threads(s);
    struct worker *workers = aligned_alloc(_Alignof(struct worker), (size_t)nthreads * sizeof *workers);
    if (!workers)
        return -1;
    memset(workers, 0, (size_t)nthreads * sizeof *workers);
    for (int t = 0; t < nthreads; t++) {
        workers[t].limit = limit;
        workers[t].by_gpu = calloc(ncells ? ncells : 1, sizeof *workers[t].by_gpu);
        workers[t].rec = calloc(nrec ? nrec : 1, sizeof *workers[t].rec);
        failed |= !workers[t].by_gpu || !workers[t].rec;
    }
    const long nslices = failed || shard_k >= sp->ngroups ? 0
                       : (long)((sp->ngroups - shard_k + shard_n - 1) / shard_n);
    if (s->lengths && !failed)
        prefetch_lengths(s, shard_k, shard_n, nthreads);

#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 8)
    for (long k = 0; k < nslices; k++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        sweep_group(s, shard_k + (size_t)k * shard_n, &workers[t]);
        size_t d = atomic_fetch_add(&done, 1) + 1;
        if (o->progress && t == 0 && (d & 63) == 0) {
            double now = now_s();
            if (now - last > 0.2) {
                uint64_t ev = 0;
                for (int i = 0; i < nthreads; i++) /* racy read: a progress hint only */
                    ev += workers[i].evaluated;
                struct sweep_progress p = {d, nslices, (double)ev / (now - t0), false};
                o->progress(o->progress_data, &p);
                last = now;
            }
        }
    }
    if (o->progress) {
        struct sweep_progress p = {(size_t)atomic_load(&done), nslices, 0, true};
        o->progress(o->progress_data, &p);
    }

    for (int t = 0; t < nthreads && !failed; t++) {
        failed |= workers[t].failed;
        if (!failed)
            merge_counts(r, &workers[t]);
    }
    if (!failed && merge_hits(r, workers, nthreads, limit) != 0)
        failed = 1;
    for (int t = 0; t < nthreads; t++)
        free_worker(&workers[t], nrec);
    free(workers);
    if (failed) {
        sweep_result_free(r);
        return -1;
    }
    r->pruned = r->space - r->evaluated;
    return 0;
}

void sweep_result_free(struct sweep_result *r)
{
    if (!r)
        return;
    free(r->hits);
    free(r->by_gpu);
    free(r->recipes);
    memset(r, 0, sizeof *r);
}

static void eval_prepared(const struct sweep *s, struct prepared *pr, uint32_t model,
                          uint64_t index, struct sweep_point *pt)
{
    memset(pt, 0, sizeof *pt);
    pt->index = index;
    pt->model = model;
    pt->cfg = pr->cfg;
    pt->peak = point_peak_full(s, pr, &pt->mem, &pt->rule);
    pt->band = pr->band;
    pt->peak_lo = band_scale(pt->peak, pr->band.lo);
    pt->peak_hi = band_scale(pt->peak, pr->band.hi);
    pt->fit_peak = band_scale(pt->peak, pr->fit_factor);
    pt->host_node = node_host_bytes(s, pr);
    pt->host_over = pr->host_over;
    pt->fits = point_fits(s, pr, pt->peak);
    pt->score = point_score(s, pr, &pt->speed);
}

void sweep_recipe_cells(const struct sweep *s, size_t recipe, struct sweep_cell *cells)
{
    const struct space *sp = &s->space;
    const uint32_t tuning = (uint32_t)(recipe / (size_t)sp->nseq);
    const int si = (int)(recipe % (size_t)sp->nseq);
    memset(cells, 0, (size_t)METHOD_COUNT * (size_t)sp->ngpus * sizeof *cells);
    for (size_t oi = 0; oi < sp->nouter; oi++) {
        const struct space_outer *so = &sp->outer[oi];
        if (so->recipe != tuning)
            continue;
        struct prepared pr;
        prepare(s, so->model, &so->cfg, &pr);
        if (pr.host_over) /* neither a fit nor a GPU-memory miss */
            continue;
        struct sweep_cell *c = &cells[(size_t)pr.cfg.method * (size_t)sp->ngpus +
                                      (size_t)space_gpu_index(sp, pr.cfg.gpus)];
        at_seq(s, &pr, sp->seq[si]);
        uint64_t base = ((uint64_t)oi * (uint64_t)sp->nseq + (uint64_t)si) * (uint64_t)sp->nbatch;
        for (int bi = 0; bi < sp->nbatch; bi++) {
            struct speed_estimate spd;
            pr.cfg.micro_batch = sp->batch[bi];
            struct sweep_hit hit = {.index = base + (uint64_t)bi};
            hit.peak = point_peak(s, &pr);
            hit.fits = point_fits(s, &pr, hit.peak);
            if (hit.fits) {
                hit.score = point_score(s, &pr, &spd);
                if (!c->has_fit || sweep_hit_cmp(&hit, &c->fit) < 0)
                    c->fit = hit, c->has_fit = true;
            } else if (!c->has_miss || closer(&hit, &c->miss)) {
                c->miss = hit, c->has_miss = true;
            }
        }
    }
}

void sweep_eval_config(const struct sweep *s, uint32_t model, const struct train_config *c,
                       struct sweep_point *pt)
{
    sweep_eval_run(s, model, c, NULL, 0, pt);
}

void sweep_eval_run(const struct sweep *s, uint32_t model, const struct train_config *c,
                    const uint32_t *w, size_t n, struct sweep_point *pt)
{
    struct prepared pr;
    prepare(s, model, c, &pr);
    if (n && memmodel_replay_run(pr.plan, c, w, n, &pr.mem) == 0)
        memmodel_seq(&pr.mem, c->seq_len, &pr.seq); /* its bound reads the replayed reserve */
    else
        (void)sweep_use_lengths(s, pr.plan, c, 1u << losspath_batch_bucket(c->micro_batch), &pr.mem);
    eval_prepared(s, &pr, model, UINT64_MAX, pt);
}

void sweep_eval_point(const struct sweep *s, uint64_t index, struct sweep_point *pt)
{
    struct prepared pr;
    struct train_config c;
    const struct space_outer *o = space_decode(&s->space, index, &c);
    prepare(s, o->model, &o->cfg, &pr);
    pr.cfg = c;
    (void)sweep_use_lengths(s, pr.plan, &c, 1u << losspath_batch_bucket(c.micro_batch), &pr.mem);
    eval_prepared(s, &pr, o->model, index, pt);
}
