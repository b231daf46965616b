/* rules.c: the rule format (rules/README.md), its loader and its evaluator.
 *
 * A book holds rule sets; a set holds match conditions, a metric, the with_model switch and
 * up to RULES_MAX_CANDIDATES peak candidates; a candidate is a list of (feature, coefficient)
 * terms. Loading builds the book row by row through rules_add(), so every message names
 * the file, the line and the column (set, candidate, key or value) of the offending cell. */
#include "rules.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "csv_table.h"

/* --- metrics ------------------------------------------------------------------------ */

static const char *const metric_names[RULES_METRIC_COUNT] = {"allocated", "reserved", "device"};

int rules_metric_parse(const char *s)
{
    for (int i = 0; i < RULES_METRIC_COUNT; i++)
        if (strcmp(metric_names[i], s) == 0)
            return i;
    return -1;
}

const char *rules_metric_name(enum rules_metric m)
{
    return (int)m >= 0 && m < RULES_METRIC_COUNT ? metric_names[m] : "?";
}

/* --- the book ----------------------------------------------------------------------- */

/* Configuration fields a set can restrict to a list of values (rows of one key are OR'ed). */
enum enum_key { K_FINETUNE, K_QUANT, K_STACK, K_PRECISION, K_METHOD, K_OPTIMIZER, K_CKPT, K_COUNT };

static int ckpt_parse(const char *s) { return !strcmp(s, "on") ? 1 : !strcmp(s, "off") ? 0 : -1; }

static const struct {
    const char *key;
    int (*parse)(const char *);
} enum_keys[K_COUNT] = {
    {"finetune", finetune_parse}, {"quant", quant_parse},         {"stack", stack_parse},
    {"precision", precision_parse}, {"method", method_parse},     {"optimizer", optimizer_parse},
    {"grad_ckpt", ckpt_parse},
};

static int enum_value(enum enum_key k, const struct train_config *c)
{
    switch (k) {
    case K_FINETUNE: return (int)c->finetune;
    case K_QUANT: return (int)c->quant;
    case K_STACK: return (int)c->stack;
    case K_PRECISION: return (int)c->precision;
    case K_METHOD: return (int)c->method;
    case K_OPTIMIZER: return (int)c->optimizer;
    case K_CKPT: return c->grad_ckpt ? 1 : 0;
    default: return -1;
    }
}

/* Integer ranges; micro_batch and seq_len are checked per point, the others per config. */
enum range_key { R_MICRO_BATCH, R_SEQ_LEN, R_LORA_R, R_GPUS, R_COUNT };
static const char *const range_names[R_COUNT] = {"micro_batch", "seq_len", "lora_r", "gpus"};

static int64_t range_value(enum range_key k, const struct train_config *c)
{
    switch (k) {
    case R_MICRO_BATCH: return c->micro_batch;
    case R_SEQ_LEN: return c->seq_len;
    case R_LORA_R: return c->lora_r;
    default: return c->gpus;
    }
}

#define MAX_TARGET_LISTS 16
#define CAND_NAME_MAX 32

struct rule_term {
    int feature;
    double coef;
};

struct rule_cand {
    char name[CAND_NAME_MAX];
    char label[RULES_NAME_MAX + CAND_NAME_MAX];
    int set;
    long line;
    struct rule_term terms[RULES_MAX_FEATURES];
    int nterms;
};

struct rule_set {
    char name[RULES_NAME_MAX];
    char file[512];
    long line;
    int metric, with_model; /* -1 until their rows are read; with_model 2 = add */
    double band_lo, band_hi; /* band.lo / band.hi: the set's error band; 0 = none */
    char **models, **families;
    size_t nmodels, nfamilies;
    uint32_t allow[K_COUNT]; /* bit v: value v allowed; 0: any */
    uint32_t targets[MAX_TARGET_LISTS];
    int ntargets;
    int64_t lo[R_COUNT], hi[R_COUNT];
    uint32_t has_lo, has_hi; /* bit per range key, to reject duplicate rows */
    int cand[RULES_MAX_CANDIDATES];
    int ncand;
};

struct rule_binding {
    int *sets;
    int n;
};

struct rule_book {
    struct rule_set *sets;
    size_t nsets, capsets;
    struct rule_cand *cands;
    size_t ncands, capcands;
    struct rule_binding *binds;
    size_t nbinds, capbinds;
};

/* Grows *p (of *cap elements of size sz) to hold n + 1; returns 0 or -1. */
static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 8;
    void *q = realloc(*p, c * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

struct rule_book *rules_new(void) { return calloc(1, sizeof(struct rule_book)); }

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void rules_free(struct rule_book *rb)
{
    if (!rb)
        return;
    for (size_t i = 0; i < rb->nsets; i++) {
        free_strings(rb->sets[i].models, rb->sets[i].nmodels);
        free_strings(rb->sets[i].families, rb->sets[i].nfamilies);
    }
    for (size_t i = 0; i < rb->nbinds; i++)
        free(rb->binds[i].sets);
    free(rb->sets);
    free(rb->cands);
    free(rb->binds);
    free(rb);
}

/* Where a row is, for its messages. */
struct row_at {
    const char *file;
    long line;
    struct input_error *e;
};

static int row_error(const struct row_at *at, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int row_error(const struct row_at *at, const char *column, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return input_error_set(at->e, EXIT_BAD_INPUT, at->file, at->line, column, "%s", msg);
}

/* Names become labels in reports: keep them to a plain, shell- and HTML-safe alphabet. */
static int check_name(const struct row_at *at, const char *column, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max)
        return row_error(at, column, "a name of 1 to %zu characters is required", max - 1);
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return row_error(at, column, "'%.80s': use only letters, digits, '.', '_' and '-'", s);
    }
    return 0;
}

static int parse_number(const struct row_at *at, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v))
        return row_error(at, "value", "'%.80s' is not a finite number", s);
    *out = v;
    return 0;
}

static int parse_count(const struct row_at *at, const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > INT32_MAX)
        return row_error(at, "value", "'%.80s' is not an integer in [0, %d]", s, INT32_MAX);
    *out = v;
    return 0;
}

static int push_string(const struct row_at *at, char ***v, size_t *n, const char *s)
{
    if (!*s)
        return row_error(at, "value", "empty value");
    char **q = realloc(*v, (*n + 1) * sizeof *q);
    if (!q)
        return input_error_set(at->e, EXIT_IO, at->file, at->line, NULL, "out of memory");
    *v = q;
    if (!(q[*n] = strdup(s)))
        return input_error_set(at->e, EXIT_IO, at->file, at->line, NULL, "out of memory");
    (*n)++;
    return 0;
}

static bool is_candidate_key(const char *key)
{
    return rules_feature_parse(key) >= 0 || strncmp(key, "fit.", 4) == 0;
}

static int find_range_key(const char *key, bool *is_max)
{
    for (int r = 0; r < R_COUNT; r++) {
        size_t n = strlen(range_names[r]);
        if (strncmp(key, range_names[r], n) != 0)
            continue;
        if (strcmp(key + n, ".min") == 0 || strcmp(key + n, ".max") == 0) {
            *is_max = key[n + 2] == 'a';
            return r;
        }
    }
    return -1;
}

static int set_range(const struct row_at *at, struct rule_set *s, int r, bool is_max,
                     const char *key, const char *value)
{
    uint32_t *has = is_max ? &s->has_hi : &s->has_lo;
    if (*has & (1u << r))
        return row_error(at, "key", "duplicate '%s' row for set '%s'", key, s->name);
    int64_t v = 0;
    if (parse_count(at, value, &v) != 0)
        return -1;
    *has |= 1u << r;
    (is_max ? s->hi : s->lo)[r] = v;
    return 0;
}

static int set_enum(const struct row_at *at, struct rule_set *s, int k, const char *value)
{
    int v = enum_keys[k].parse(value);
    if (v < 0 || v >= 32)
        return row_error(at, "value", "'%.80s' is not a valid %s", value, enum_keys[k].key);
    s->allow[k] |= 1u << v;
    return 0;
}

static int set_choice(const struct row_at *at, int *slot, const char *key, const char *value,
                      int v)
{
    if (*slot >= 0)
        return row_error(at, "key", "duplicate '%s' row", key);
    if (v < 0)
        return row_error(at, "value", "'%.80s' is not a valid %s", value, key);
    *slot = v;
    return 0;
}

/* band.lo in (0, 1], band.hi in [1, 1000]: factors of the prediction (README "Error band"). */
static int set_band(const struct row_at *at, struct rule_set *s, bool hi, const char *value)
{
    double v = 0.0;
    double *slot = hi ? &s->band_hi : &s->band_lo;
    if (*slot != 0.0)
        return row_error(at, "key", "duplicate '%s' row", hi ? "band.hi" : "band.lo");
    if (parse_number(at, value, &v) != 0)
        return -1;
    if (hi ? !(v >= 1.0 && v <= 1000.0) : !(v > 0.0 && v <= 1.0))
        return row_error(at, "value", "%s must be in %s", hi ? "band.hi" : "band.lo",
                         hi ? "[1, 1000]" : "(0, 1]");
    *slot = v;
    return 0;
}

/* One set-level row (candidate column empty). */
static int set_key(const struct row_at *at, struct rule_set *s, const char *key, const char *value)
{
    if (strcmp(key, "note") == 0)
        return 0;
    if (strcmp(key, "metric") == 0)
        return set_choice(at, &s->metric, key, value, rules_metric_parse(value));
    if (strcmp(key, "with_model") == 0)
        return set_choice(at, &s->with_model, key, value,
                          !strcmp(value, "yes") ? 1 : !strcmp(value, "no") ? 0
                          : !strcmp(value, "add") ? RULES_ADD : -1);
    if (strcmp(key, "band.lo") == 0 || strcmp(key, "band.hi") == 0)
        return set_band(at, s, key[5] == 'h', value);
    if (strcmp(key, "model") == 0)
        return push_string(at, &s->models, &s->nmodels, value);
    if (strcmp(key, "family") == 0)
        return push_string(at, &s->families, &s->nfamilies, value);
    if (strcmp(key, "lora_targets") == 0) {
        uint32_t t;
        if (rules_targets_parse(value, &t) != 0)
            return row_error(at, "value", "'%.80s' is not a LoRA target list", value);
        if (s->ntargets == MAX_TARGET_LISTS)
            return row_error(at, "key", "more than %d lora_targets rows", MAX_TARGET_LISTS);
        s->targets[s->ntargets++] = t;
        return 0;
    }
    for (int k = 0; k < K_COUNT; k++)
        if (strcmp(key, enum_keys[k].key) == 0)
            return set_enum(at, s, k, value);
    bool is_max;
    int r = find_range_key(key, &is_max);
    if (r >= 0)
        return set_range(at, s, r, is_max, key, value);
    if (is_candidate_key(key))
        return row_error(at, "candidate", "'%.80s' belongs to a candidate, but this row has none",
                         key);
    return row_error(at, "key", "unknown set-level key '%.80s'", key);
}

/* One candidate row: a feature's coefficient, a fit statistic or a note. */
static int cand_key(const struct row_at *at, struct rule_cand *c, const char *key,
                    const char *value)
{
    if (strcmp(key, "note") == 0)
        return 0;
    double v = 0.0;
    if (strncmp(key, "fit.", 4) == 0) {
        static const char *const stats[] = {"fit.rows",         "fit.mean_pct",
                                            "fit.rms_pct",      "fit.max_pct",
                                            "fit.loo_mean_pct", "fit.loo_rms_pct",
                                            "fit.loo_max_pct",  "fit.lomo_models",
                                            "fit.lomo_rows",    "fit.lomo_mean_pct",
                                            "fit.lomo_max_pct"};
        for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
            if (strcmp(key, stats[i]) == 0)
                return parse_number(at, value, &v);
        return row_error(at, "key", "unknown fit statistic '%.80s'", key);
    }
    int f = rules_feature_parse(key);
    if (f < 0) {
        if (strcmp(key, "metric") == 0 || strcmp(key, "with_model") == 0 ||
            strcmp(key, "model") == 0 || strcmp(key, "family") == 0)
            return row_error(at, "candidate", "'%s' is a set-level key: leave candidate empty",
                             key);
        return row_error(at, "key", "unknown feature '%.80s' (see rules/README.md, Features)", key);
    }
    for (int i = 0; i < c->nterms; i++)
        if (c->terms[i].feature == f)
            return row_error(at, "key", "duplicate feature '%s' in candidate '%s'", key, c->name);
    if (parse_number(at, value, &v) != 0)
        return -1;
    c->terms[c->nterms++] = (struct rule_term){f, v};
    return 0;
}

static int find_set(const struct rule_book *rb, const char *name)
{
    for (size_t i = 0; i < rb->nsets; i++)
        if (strcmp(rb->sets[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int open_set(const struct row_at *at, struct rule_book *rb, const char *name)
{
    int i = find_set(rb, name);
    if (i >= 0) {
        if (strcmp(rb->sets[i].file, at->file) != 0)
            return row_error(at, "set", "set '%s' is already defined in %s", name,
                             rb->sets[i].file);
        return i;
    }
    if (grow((void **)&rb->sets, &rb->capsets, rb->nsets, sizeof *rb->sets) != 0)
        return input_error_set(at->e, EXIT_IO, at->file, at->line, NULL, "out of memory");
    struct rule_set *s = &rb->sets[rb->nsets];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->file, sizeof s->file, "%s", at->file);
    s->line = at->line;
    s->metric = s->with_model = -1;
    return (int)rb->nsets++;
}

static int open_cand(const struct row_at *at, struct rule_book *rb, int set, const char *name)
{
    struct rule_set *s = &rb->sets[set];
    for (int i = 0; i < s->ncand; i++)
        if (strcmp(rb->cands[s->cand[i]].name, name) == 0)
            return s->cand[i];
    if (s->ncand == RULES_MAX_CANDIDATES)
        return row_error(at, "candidate", "set '%s' has more than %d candidates", s->name,
                         RULES_MAX_CANDIDATES);
    if (grow((void **)&rb->cands, &rb->capcands, rb->ncands, sizeof *rb->cands) != 0)
        return input_error_set(at->e, EXIT_IO, at->file, at->line, NULL, "out of memory");
    struct rule_cand *c = &rb->cands[rb->ncands];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->label, sizeof c->label, "%s/%s", s->name, name);
    c->set = set;
    c->line = at->line;
    s->cand[s->ncand++] = (int)rb->ncands;
    return (int)rb->ncands++;
}

int rules_add(struct rule_book *rb, const char *set, const char *candidate, const char *key,
              const char *value, const char *file, long line, struct input_error *e)
{
    const struct row_at at = {file, line, e};
    if (check_name(&at, "set", set, RULES_NAME_MAX) != 0)
        return -1;
    if (!*key)
        return row_error(&at, "key", "empty key");
    int si = open_set(&at, rb, set);
    if (si < 0)
        return -1;
    if (!*candidate)
        return set_key(&at, &rb->sets[si], key, value);
    if (check_name(&at, "candidate", candidate, CAND_NAME_MAX) != 0)
        return -1;
    int ci = open_cand(&at, rb, si, candidate);
    return ci < 0 ? -1 : cand_key(&at, &rb->cands[ci], key, value);
}

int rules_check(struct rule_book *rb, struct input_error *e)
{
    if (rb->nsets == 0)
        return input_error_set(e, EXIT_BAD_INPUT, NULL, 0, NULL, "no rule sets");
    for (size_t i = 0; i < rb->nsets; i++) {
        const struct rule_set *s = &rb->sets[i];
        const struct row_at at = {s->file, s->line, e};
        if (s->metric < 0)
            return row_error(&at, "key", "set '%s' has no 'metric' row", s->name);
        if (s->with_model < 0)
            return row_error(&at, "key", "set '%s' has no 'with_model' row", s->name);
        if (s->ncand == 0)
            return row_error(&at, "candidate", "set '%s' has no candidates", s->name);
        for (int r = 0; r < R_COUNT; r++)
            if ((s->has_lo & s->has_hi & (1u << r)) && s->lo[r] > s->hi[r])
                return row_error(&at, "value", "set '%s': %s.min is above %s.max", s->name,
                                 range_names[r], range_names[r]);
        for (int k = 0; k < s->ncand; k++) {
            const struct rule_cand *c = &rb->cands[s->cand[k]];
            if (c->nterms == 0) {
                const struct row_at cat = {s->file, c->line, e};
                return row_error(&cat, "candidate", "candidate '%s' has no feature row", c->label);
            }
        }
    }
    return 0;
}

/* --- reading files ------------------------------------------------------------------- */

static int add_table(struct rule_book *rb, const struct csv_table *t, struct input_error *e)
{
    static const char *const need[] = {"set", "candidate", "key", "value", NULL};
    if (csv_table_require(t, need, e) != 0)
        return -1;
    for (size_t c = 0; c < t->ncols; c++) {
        const char *h = t->header[c];
        if (strcmp(h, "set") && strcmp(h, "candidate") && strcmp(h, "key") && strcmp(h, "value") &&
            strcmp(h, "note"))
            return input_error_set(e, EXIT_BAD_INPUT, t->path, 1, h,
                                   "unknown column (expected set,candidate,key,value[,note])");
    }
    int cs = csv_table_col(t, "set"), cc = csv_table_col(t, "candidate");
    int ck = csv_table_col(t, "key"), cv = csv_table_col(t, "value");
    for (size_t r = 0; r < t->nrows; r++) {
        char **row = t->cells[r];
        if (rules_add(rb, row[cs], row[cc], row[ck], row[cv], t->path, t->lines[r], e) != 0)
            return -1;
    }
    return 0;
}

static int load_file(struct rule_book *rb, const char *path, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    int rc = add_table(rb, &t, e);
    csv_table_free(&t);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_csv_name(const char *n)
{
    size_t len = strlen(n);
    return n[0] != '.' && len > 4 && strcmp(n + len - 4, ".csv") == 0;
}

/* Every *.csv of a folder, in byte order of the names so loading is reproducible. */
static int load_dir(struct rule_book *rb, const char *dir, struct input_error *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return input_error_set(e, EXIT_IO, dir, 0, NULL, "cannot open folder: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (!is_csv_name(de->d_name))
            continue;
        if (grow((void **)&names, &cap, n, sizeof *names) != 0 || !(names[n] = strdup(de->d_name)))
            rc = input_error_set(e, EXIT_IO, dir, 0, NULL, "out of memory");
        else
            n++;
    }
    closedir(d);
    if (rc == 0 && n == 0)
        rc = input_error_set(e, EXIT_BAD_INPUT, dir, 0, NULL, "no *.csv rules files in the folder");
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[1024];
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (w < 0 || (size_t)w >= sizeof path)
            rc = input_error_set(e, EXIT_IO, dir, 0, NULL, "path too long");
        else
            rc = load_file(rb, path, e);
    }
    free_strings(names, n);
    return rc;
}

static int finish(struct rule_book *rb, int rc, struct rule_book **out, struct input_error *e)
{
    if (rc == 0)
        rc = rules_check(rb, e);
    if (rc != 0) {
        rules_free(rb);
        return -1;
    }
    *out = rb;
    return 0;
}

int rules_load(const char *path, struct rule_book **out, struct input_error *e)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return input_error_set(e, EXIT_IO, path, 0, NULL, "cannot open: %s", strerror(errno));
    struct rule_book *rb = rules_new();
    if (!rb)
        return input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    int rc = S_ISDIR(st.st_mode) ? load_dir(rb, path, e) : load_file(rb, path, e);
    if (rc == 0 && rb->nsets == 0)
        rc = input_error_set(e, EXIT_BAD_INPUT, path, 0, NULL, "no rule sets");
    return finish(rb, rc, out, e);
}

int rules_parse(const char *buf, size_t len, const char *name, struct rule_book **out,
                struct input_error *e)
{
    *out = NULL;
    struct csv_table t;
    if (csv_table_parse(buf, len, name, &t, e) != 0)
        return -1;
    struct rule_book *rb = rules_new();
    int rc = rb ? add_table(rb, &t, e)
                : input_error_set(e, EXIT_IO, name, 0, NULL, "out of memory");
    csv_table_free(&t);
    if (!rb)
        return -1;
    if (rc == 0 && rb->nsets == 0)
        rc = input_error_set(e, EXIT_BAD_INPUT, name, 0, NULL, "no rule sets");
    return finish(rb, rc, out, e);
}

/* --- accessors ----------------------------------------------------------------------- */

int rules_set_count(const struct rule_book *rb) { return rb ? (int)rb->nsets : 0; }

int rules_find_set(const struct rule_book *rb, const char *name) { return find_set(rb, name); }

static const struct rule_set *get_set(const struct rule_book *rb, int set)
{
    return rb && set >= 0 && (size_t)set < rb->nsets ? &rb->sets[set] : NULL;
}

const char *rules_set_name(const struct rule_book *rb, int set)
{
    const struct rule_set *s = get_set(rb, set);
    return s ? s->name : "";
}

enum rules_metric rules_set_metric(const struct rule_book *rb, int set)
{
    const struct rule_set *s = get_set(rb, set);
    return s && s->metric >= 0 ? (enum rules_metric)s->metric : RULES_DEVICE;
}

bool rules_set_with_model(const struct rule_book *rb, int set)
{
    const struct rule_set *s = get_set(rb, set);
    return s && s->with_model == 1;
}

bool rules_set_additive(const struct rule_book *rb, int set)
{
    const struct rule_set *s = get_set(rb, set);
    return s && s->with_model == RULES_ADD;
}

bool rules_set_band(const struct rule_book *rb, int set, double *lo, double *hi)
{
    const struct rule_set *s = get_set(rb, set);
    if (!s || s->band_lo == 0.0 || s->band_hi == 0.0)
        return false;
    *lo = s->band_lo;
    *hi = s->band_hi;
    return true;
}

int rules_set_candidates(const struct rule_book *rb, int set, const int **ids)
{
    const struct rule_set *s = get_set(rb, set);
    *ids = s ? s->cand : NULL;
    return s ? s->ncand : 0;
}

const char *rules_candidate_name(const struct rule_book *rb, int candidate)
{
    return rb && candidate >= 0 && (size_t)candidate < rb->ncands ? rb->cands[candidate].name : "";
}

int rules_candidate_terms(const struct rule_book *rb, int candidate, int *feats,
                          double *coefs, int max)
{
    if (!rb || candidate < 0 || (size_t)candidate >= rb->ncands)
        return 0;
    const struct rule_cand *c = &rb->cands[candidate];
    int n = c->nterms < max ? c->nterms : max;
    for (int i = 0; i < n; i++) {
        feats[i] = c->terms[i].feature;
        coefs[i] = c->terms[i].coef;
    }
    return n;
}

const char *rules_label(const struct rule_book *rb, int candidate)
{
    return rb && candidate >= 0 && (size_t)candidate < rb->ncands ? rb->cands[candidate].label : "";
}

/* --- matching ------------------------------------------------------------------------ */

static bool in_list(char *const *v, size_t n, const char *s)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(v[i], s) == 0)
            return true;
    return false;
}

static bool model_matches(const struct rule_set *s, const struct model_plan *p)
{
    return in_list(s->models, s->nmodels, p->spec.name) &&
           in_list(s->families, s->nfamilies, p->spec.model_type);
}

static bool in_range(const struct rule_set *s, int r, int64_t v)
{
    if ((s->has_lo & (1u << r)) && v < s->lo[r])
        return false;
    return !((s->has_hi & (1u << r)) && v > s->hi[r]);
}

static bool config_matches(const struct rule_set *s, const struct train_config *c)
{
    for (int k = 0; k < K_COUNT; k++) {
        int v = enum_value((enum enum_key)k, c);
        if (s->allow[k] && (v < 0 || v >= 32 || !(s->allow[k] & (1u << v))))
            return false;
    }
    if (s->ntargets) {
        int i = 0;
        while (i < s->ntargets && s->targets[i] != c->lora_targets)
            i++;
        if (i == s->ntargets)
            return false;
    }
    return in_range(s, R_LORA_R, c->lora_r) && in_range(s, R_GPUS, c->gpus);
}

static bool point_matches(const struct rule_set *s, const struct train_config *c)
{
    return in_range(s, R_MICRO_BATCH, range_value(R_MICRO_BATCH, c)) &&
           in_range(s, R_SEQ_LEN, range_value(R_SEQ_LEN, c));
}

int rules_bind(struct rule_book *rb, const struct model_plan *p)
{
    if (!rb)
        return -1;
    int *list = malloc((rb->nsets ? rb->nsets : 1) * sizeof *list);
    if (!list)
        return -1;
    int n = 0;
    for (size_t i = 0; i < rb->nsets; i++)
        if (model_matches(&rb->sets[i], p))
            list[n++] = (int)i;
    /* the same list for another model (or the same model bound again) reuses its binding */
    for (size_t b = 0; n > 0 && b < rb->nbinds; b++) {
        if (rb->binds[b].n == n && memcmp(rb->binds[b].sets, list, (size_t)n * sizeof *list) == 0) {
            free(list);
            return (int)b;
        }
    }
    if (n == 0 || grow((void **)&rb->binds, &rb->capbinds, rb->nbinds, sizeof *rb->binds) != 0) {
        free(list);
        return -1;
    }
    rb->binds[rb->nbinds] = (struct rule_binding){list, n};
    return (int)rb->nbinds++;
}

int rules_prepare(const struct rule_book *rb, int binding, const struct model_plan *p,
                  const struct train_config *c)
{
    (void)p;
    if (!rb || binding < 0 || (size_t)binding >= rb->nbinds)
        return -1;
    const struct rule_binding *b = &rb->binds[binding];
    for (int i = 0; i < b->n; i++)
        if (config_matches(&rb->sets[b->sets[i]], c))
            return b->sets[i];
    return -1;
}

int rules_select(struct rule_book *rb, const struct model_plan *p, const struct train_config *c)
{
    int set = rules_prepare(rb, rules_bind(rb, p), p, c);
    return set >= 0 && point_matches(&rb->sets[set], c) ? set : -1;
}

/* --- evaluation ---------------------------------------------------------------------- */

void rules_compile(const struct rule_book *rb, int set, const struct model_plan *p,
                   const struct train_config *c, struct rules_point *pt)
{
    const struct rule_set *s = get_set(rb, set);
    pt->set = s ? set : -1;
    pt->ncand = s ? s->ncand : 0;
    for (int i = 0; i < pt->ncand; i++) {
        const struct rule_cand *cd = &rb->cands[s->cand[i]];
        double *k = pt->k[i];
        k[0] = k[1] = k[2] = 0.0;
        for (int t = 0; t < cd->nterms; t++) {
            int f = cd->terms[t].feature;
            k[rules_feature_monomial(f)] += cd->terms[t].coef * rules_feature_factor(f, p, c);
        }
    }
}

int rules_eval_metric(const struct rule_book *rb, const struct rules_point *pt,
                      const struct train_config *c, double *bytes)
{
    const struct rule_set *s = get_set(rb, pt->set);
    if (!s || pt->ncand < 1 || !point_matches(s, c))
        return -1;
    const double bs = (double)c->micro_batch * (double)c->seq_len;
    const double bss = bs * (double)c->seq_len;
    int best = 0;
    double top = -HUGE_VAL;
    for (int i = 0; i < pt->ncand; i++) {
        double v = pt->k[i][0] + pt->k[i][1] * bs + pt->k[i][2] * bss;
        if (v > top) { /* strict: the first candidate wins ties, deterministically */
            top = v;
            best = i;
        }
    }
    /* an additive correction may be negative: the model's part is added by the caller */
    *bytes = top > 0.0 || s->with_model == RULES_ADD ? top : 0.0;
    return s->cand[best];
}

/* Rule bytes in the set's metric to device bytes: add what the model puts between that
 * metric and the device peak (allocator slack, CUDA context, communication buffers). The
 * offset is signed: `device` counts only what the allocator cannot give back (memmodel.h),
 * so it can be below `reserved`; validate inverts this conversion exactly. */
static uint64_t to_device(double v, int metric, const struct mem_estimate *e)
{
    double extra = 0.0;
    if (metric == RULES_RESERVED)
        extra = (double)e->device - (double)e->reserved;
    else if (metric == RULES_ALLOCATED)
        extra = (double)e->device - (double)e->allocated;
    else /* a device-metric set predicts what nvidia-smi shows */
        extra = (double)e->device - (double)e->shown;
    double d = ceil(fmax(0.0, v + extra));
    return d >= 0x1p63 ? UINT64_C(1) << 63 : (uint64_t)d;
}

double rules_model_metric(int metric, const struct mem_estimate *e)
{
    return (double)(metric == RULES_ALLOCATED ? e->allocated
                    : metric == RULES_RESERVED ? e->reserved : e->shown);
}

bool rules_eval_point(const struct rule_book *rb, const struct rules_point *pt,
                      const struct train_config *c, const struct mem_estimate *e,
                      uint64_t *peak, int *candidate)
{
    double v = 0.0;
    int id = rules_eval_metric(rb, pt, c, &v);
    *peak = e->device;
    *candidate = -1;
    if (id < 0)
        return false;
    const struct rule_set *s = &rb->sets[pt->set];
    if (s->with_model == RULES_ADD) /* model + correction, in the set's metric; always binds */
        v = fmax(0.0, rules_model_metric(s->metric, e) + v);
    uint64_t dev = to_device(v, s->metric, e);
    if (s->with_model == 1 && e->device >= dev) /* the model bounds it: report no rule */
        return false;
    *peak = dev;
    *candidate = id;
    return true;
}

bool rules_eval(const struct rule_book *rb, int set, const struct model_plan *p,
                const struct train_config *c, const struct mem_estimate *e, uint64_t *peak,
                int *candidate)
{
    struct rules_point pt;
    if (set < 0) {
        *peak = e->device;
        *candidate = -1;
        return false;
    }
    rules_compile(rb, set, p, c, &pt);
    return rules_eval_point(rb, &pt, c, e, peak, candidate);
}
