/* sweep.c: the parallel, pruned, deterministic sweep (see sweep.h). */
#include "sweep.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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

long sweep_cell_index(const struct sweep *s, uint32_t model, enum method m, int32_t gpus)
{
    const struct int_list *g = &s->opt->gpus;
    for (int i = 0; i < g->n; i++)
        if (g->v[i] == gpus)
            return ((long)model * METHOD_COUNT + (long)m) * g->n + i;
    return -1;
}

/* --- per-thread state ------------------------------------------------------------- */

struct worker {
    struct sweep_hit *hits; /* a heap with the worst on top when bounded */
    size_t n, cap;
    size_t limit;           /* 0 = keep all */
    uint64_t evaluated, fitting;
    struct sweep_hit closest;
    bool has_closest, failed;
    struct sweep_cell *cells;
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

static void keep(struct worker *w, const struct sweep_hit *hit)
{
    if (w->limit && w->n == w->limit) {
        if (worse(hit, &w->hits[0]))
            return;
        w->hits[0] = *hit;
        sift_down(w->hits, w->n, 0);
        return;
    }
    if (w->n == w->cap) { /* grows only while filling; amortised, not per point */
        size_t cap = w->cap ? 2 * w->cap : 1024;
        struct sweep_hit *h = realloc(w->hits, cap * sizeof *h);
        if (!h) {
            w->failed = true;
            return;
        }
        w->hits = h;
        w->cap = cap;
    }
    w->hits[w->n++] = *hit;
    if (w->limit)
        sift_up(w->hits, w->n - 1);
}

static void note_cell(struct worker *w, long cell, const struct sweep_hit *hit, int32_t batch)
{
    if (cell < 0)
        return;
    struct sweep_cell *c = &w->cells[cell];
    if (hit->fits) {
        if (!c->has_fit || batch > c->fit_batch ||
            (batch == c->fit_batch && (hit->score > c->fit_score ||
                                       (hit->score == c->fit_score && hit->index < c->fit_index)))) {
            c->has_fit = true;
            c->fit_batch = batch;
            c->fit_score = hit->score;
            c->fit_peak = hit->peak;
            c->fit_index = hit->index;
        }
    } else if (!c->has_miss || hit->peak < c->miss_peak ||
               (hit->peak == c->miss_peak && hit->index < c->miss_index)) {
        c->has_miss = true;
        c->miss_peak = hit->peak;
        c->miss_index = hit->index;
    }
}

/* --- evaluation ------------------------------------------------------------------- */

struct prepared {
    struct train_config cfg;
    struct mem_prepared mem;
    struct speed_prepared speed;
    struct rules_point rules; /* the matching rule set folded to (1, b*s, b*s^2) terms */
    const struct model_plan *plan;
    struct band band;         /* the configuration's error band */
    double fit_factor;        /* peak x this must fit the budget (--margin) */
};

static void prepare(const struct sweep *s, const struct space_outer *o, struct prepared *pr)
{
    pr->cfg = o->cfg;
    pr->plan = &s->models[o->model];
    memmodel_prepare(pr->plan, &pr->cfg, &s->mem, &pr->mem);
    speed_prepare(pr->plan, &pr->cfg, s->gpu, &pr->speed);
    pr->rules.set = -1;
    if (s->rules) {
        int set = rules_prepare(s->rules, s->rule_binding[o->model], pr->plan, &pr->cfg);
        rules_compile(s->rules, set, pr->plan, &pr->cfg, &pr->rules);
    }
    /* the band's factors are per configuration: the upper end stays monotone in the peak,
     * so pruning on it is as exact as pruning on the peak */
    pr->band = band_lookup(s->band, &pr->cfg);
    if (pr->rules.set >= 0 && rules_set_band(s->rules, pr->rules.set, &pr->band.lo, &pr->band.hi))
        pr->band.level = BAND_CALIBRATION; /* a calibration's own held-out band */
    pr->fit_factor = s->opt->margin_pct < 0 ? pr->band.hi : 1.0 + s->opt->margin_pct / 100.0;
}

/* Peak of the point in pr->cfg; *rule gets the binding rule candidate or -1. */
static uint64_t point_peak(const struct sweep *s, const struct prepared *pr, struct mem_estimate *e,
                           int *rule)
{
    memmodel_eval(pr->plan, &pr->cfg, &s->mem, &pr->mem, e);
    uint64_t peak = e->device;
    *rule = -1;
    if (pr->rules.set >= 0) {
        uint64_t rp;
        int cand;
        if (rules_eval_point(s->rules, &pr->rules, &pr->cfg, e, &rp, &cand)) {
            peak = rp;
            *rule = cand;
        }
    }
    return peak;
}

static double point_score(const struct sweep *s, const struct prepared *pr, struct speed_estimate *sp)
{
    speed_eval(&pr->cfg, &pr->speed, sp);
    return s->opt->rank == RANK_LLMEM ? llmem_score(&pr->cfg) : sp->tokens_per_s;
}

/* Walks one outer configuration; returns true when even its smallest point (first
 * sequence length, first micro-batch) does not fit. */
/* Pruning needs memory monotone in micro-batch, sequence and rank. Rule sets may cover
 * only ranges of those, so a rule-raised peak can fall again past a range: no pruning
 * with --rules. */
static bool pruning(const struct sweep *s)
{
    return !s->opt->no_prune && !s->opt->all && !s->rules;
}

static bool sweep_outer(const struct sweep *s, size_t oi, struct worker *w)
{
    const struct space *sp = &s->space;
    const bool prune = pruning(s);
    struct prepared pr;
    prepare(s, &sp->outer[oi], &pr);
    long cell = sweep_cell_index(s, sp->outer[oi].model, pr.cfg.method, pr.cfg.gpus);
    uint64_t base = (uint64_t)oi * (uint64_t)sp->nseq * (uint64_t)sp->nbatch;

    for (int si = 0; si < sp->nseq; si++) {
        pr.cfg.seq_len = sp->seq[si];
        for (int bi = 0; bi < sp->nbatch; bi++) {
            struct mem_estimate e;
            struct speed_estimate spd;
            int rule;
            pr.cfg.micro_batch = sp->batch[bi];
            struct sweep_hit hit = {.index = base + (uint64_t)si * (uint64_t)sp->nbatch + (uint64_t)bi};
            hit.peak = point_peak(s, &pr, &e, &rule);
            hit.fits = band_scale(hit.peak, pr.fit_factor) <= s->budget;
            w->evaluated++;
            if (hit.fits) {
                hit.score = point_score(s, &pr, &spd);
                w->fitting++;
                keep(w, &hit);
            } else {
                if (!w->has_closest || hit.peak < w->closest.peak ||
                    (hit.peak == w->closest.peak && hit.index < w->closest.index)) {
                    w->closest = hit;
                    w->has_closest = true;
                }
                if (s->opt->all) {
                    hit.score = point_score(s, &pr, &spd);
                    keep(w, &hit);
                }
            }
            note_cell(w, cell, &hit, pr.cfg.micro_batch);
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

static bool show_progress(const struct options *o)
{
    if (o->quiet)
        return false;
    return o->progress || isatty(STDERR_FILENO);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void merge_worker(struct sweep_result *r, struct worker *w, size_t ncells, int *failed)
{
    r->evaluated += w->evaluated;
    r->fitting += w->fitting;
    if (w->has_closest && (!r->has_closest || w->closest.peak < r->closest.peak ||
                           (w->closest.peak == r->closest.peak && w->closest.index < r->closest.index))) {
        r->closest = w->closest;
        r->has_closest = true;
    }
    for (size_t i = 0; i < ncells; i++) {
        struct sweep_cell *c = &w->cells[i];
        struct worker one = {.cells = r->cells};
        if (c->has_fit) {
            struct sweep_hit h = {c->fit_score, c->fit_peak, c->fit_index, true};
            note_cell(&one, (long)i, &h, c->fit_batch);
        }
        if (c->has_miss) {
            struct sweep_hit h = {0, c->miss_peak, c->miss_index, false};
            note_cell(&one, (long)i, &h, 0);
        }
    }
    struct sweep_hit *all = realloc(r->hits, (r->nhits + w->n + 1) * sizeof *all);
    if (all)
        r->hits = all;
    if (!all || w->failed) {
        *failed = 1;
        return;
    }
    if (w->n)
        memcpy(all + r->nhits, w->hits, w->n * sizeof *all);
    r->hits = all;
    r->nhits += w->n;
}

int sweep_run(const struct sweep *s, struct sweep_result *r)
{
    const struct options *o = s->opt;
    const struct space *sp = &s->space;
    const size_t ncells = s->nmodels * METHOD_COUNT * (size_t)o->gpus.n;
    const size_t limit = (o->top > 0 && !o->all) ? (size_t)o->top : 0;
    const size_t shard_n = o->shard_n ? (size_t)o->shard_n : 1;
    const size_t shard_k = o->shard_n ? (size_t)o->shard_k - 1 : 0;
    const bool progress = show_progress(o);
    int nthreads = 1, failed = 0;
    atomic_size_t done = 0;
    double t0 = now_s(), last = t0;

    memset(r, 0, sizeof *r);
    r->cells = calloc(ncells ? ncells : 1, sizeof *r->cells);
    r->ncells = ncells;
    if (!r->cells)
        return -1;
    for (size_t g = shard_k; g < sp->ngroups; g += shard_n)
        r->space += (uint64_t)(group_end(sp, g) - sp->group[g]) * (uint64_t)sp->nseq * (uint64_t)sp->nbatch;
#ifdef _OPENMP
    nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
#endif
    struct worker *workers = calloc((size_t)nthreads, sizeof *workers);
    if (!workers)
        return -1;
    for (int t = 0; t < nthreads; t++) {
        workers[t].limit = limit;
        workers[t].cells = calloc(ncells ? ncells : 1, sizeof *workers[t].cells);
        failed |= !workers[t].cells;
    }
    const long nslices = failed || shard_k >= sp->ngroups ? 0
                       : (long)((sp->ngroups - shard_k + shard_n - 1) / shard_n);

#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 8)
    for (long k = 0; k < nslices; k++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        sweep_group(s, shard_k + (size_t)k * shard_n, &workers[t]);
        size_t d = atomic_fetch_add(&done, 1) + 1;
        if (progress && t == 0 && (d & 63) == 0) {
            double now = now_s();
            if (now - last > 0.2) {
                uint64_t ev = 0;
                for (int i = 0; i < nthreads; i++) /* racy read: a progress hint only */
                    ev += workers[i].evaluated;
                fprintf(stderr, "\r%zu/%ld configuration groups, %.1f M points/s   ", d, nslices,
                        (double)ev / (now - t0) / 1e6);
                last = now;
            }
        }
    }
    if (progress)
        fputs("\r\033[K", stderr);

    for (int t = 0; t < nthreads; t++) {
        if (!failed)
            merge_worker(r, &workers[t], ncells, &failed);
        free(workers[t].hits);
        free(workers[t].cells);
    }
    free(workers);
    if (failed)
        return -1;
    r->pruned = r->space - r->evaluated;
    qsort(r->hits, r->nhits, sizeof *r->hits, sweep_hit_cmp);
    if (limit && r->nhits > limit)
        r->nhits = limit;
    return 0;
}

void sweep_result_free(struct sweep_result *r)
{
    if (!r)
        return;
    free(r->hits);
    free(r->cells);
    memset(r, 0, sizeof *r);
}

void sweep_eval_point(const struct sweep *s, uint64_t index, struct sweep_point *pt)
{
    struct prepared pr;
    struct train_config c;
    const struct space_outer *o = space_decode(&s->space, index, &c);
    prepare(s, o, &pr);
    pr.cfg = c;
    memset(pt, 0, sizeof *pt);
    pt->index = index;
    pt->model = o->model;
    pt->cfg = c;
    pt->peak = point_peak(s, &pr, &pt->mem, &pt->rule);
    pt->band = pr.band;
    pt->peak_lo = band_scale(pt->peak, pr.band.lo);
    pt->peak_hi = band_scale(pt->peak, pr.band.hi);
    pt->fit_peak = band_scale(pt->peak, pr.fit_factor);
    pt->fits = pt->fit_peak <= s->budget;
    pt->score = point_score(s, &pr, &pt->speed);
}
