/* rule_book.c: the rule format (rules/README.md): a book built row by row, its checks and
 * its accessors.
 *
 * A book holds rule sets; a set holds match conditions, a metric, the with_model switch and
 * up to RULES_MAX_CANDIDATES peak candidates; a candidate is a list of (feature, coefficient)
 * terms. The loader (rule_load.c) builds the book row by row through rules_add(), so every
 * message names the file, the line and the column (set, candidate, key or value) of the
 * offending cell. */
#include "rule_book.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "grow.h"

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

static const struct {
    const char *key;
    int (*parse)(const char *);
} enum_keys[K_COUNT] = {
    {"finetune", finetune_parse}, {"quant", quant_parse},         {"stack", stack_parse},
    {"precision", precision_parse}, {"method", method_parse},     {"optimizer", optimizer_parse},
    {"grad_ckpt", ckpt_mode_parse},
};

static const char *const range_names[R_COUNT] = {"micro_batch", "seq_len", "lora_r", "gpus"};

/* Grows *p (of *cap elements of size sz) to hold n + 1 (grow.h); returns 0 or -1. */
int rule_grow(void **p, size_t *cap, size_t n, size_t sz)
{
    void *q = grow_array(*p, cap, n, sz, 8);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

struct rule_book *rules_new(void) { return calloc(1, sizeof(struct rule_book)); }

void rule_free_strings(char **v, size_t n)
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
        rule_free_strings(rb->sets[i].models, rb->sets[i].nmodels);
        rule_free_strings(rb->sets[i].families, rb->sets[i].nfamilies);
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
    c->terms[c->nterms++] = (struct rule_term){f, v, at->line};
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
    if (rule_grow((void **)&rb->sets, &rb->capsets, rb->nsets, sizeof *rb->sets) != 0)
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
    if (rule_grow((void **)&rb->cands, &rb->capcands, rb->ncands, sizeof *rb->cands) != 0)
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
            /* every feature is memory a run holds: only a calibration corrects the model down */
            for (int t = 0; t < c->nterms && s->with_model != RULES_ADD; t++)
                if (c->terms[t].coef < 0) {
                    const struct row_at tat = {s->file, c->terms[t].line, e};
                    return row_error(&tat, "value", "candidate '%s': %s has a negative coefficient "
                                     "(only a with_model add calibration may subtract)", c->label,
                                     rules_feature_name(c->terms[t].feature));
                }
        }
    }
    return 0;
}

/* --- accessors ----------------------------------------------------------------------- */

int rules_set_count(const struct rule_book *rb) { return rb ? (int)rb->nsets : 0; }

int rules_find_set(const struct rule_book *rb, const char *name) { return find_set(rb, name); }

const struct rule_set *rule_book_set(const struct rule_book *rb, int set)
{
    return rb && set >= 0 && (size_t)set < rb->nsets ? &rb->sets[set] : NULL;
}

const char *rules_set_name(const struct rule_book *rb, int set)
{
    const struct rule_set *s = rule_book_set(rb, set);
    return s ? s->name : "";
}

enum rules_metric rules_set_metric(const struct rule_book *rb, int set)
{
    const struct rule_set *s = rule_book_set(rb, set);
    return s && s->metric >= 0 ? (enum rules_metric)s->metric : RULES_DEVICE;
}

bool rules_set_with_model(const struct rule_book *rb, int set)
{
    const struct rule_set *s = rule_book_set(rb, set);
    return s && s->with_model == 1;
}

bool rules_set_additive(const struct rule_book *rb, int set)
{
    const struct rule_set *s = rule_book_set(rb, set);
    return s && s->with_model == RULES_ADD;
}

bool rules_set_band(const struct rule_book *rb, int set, double *lo, double *hi)
{
    const struct rule_set *s = rule_book_set(rb, set);
    if (!s || s->band_lo == 0.0 || s->band_hi == 0.0)
        return false;
    *lo = s->band_lo;
    *hi = s->band_hi;
    return true;
}

int rules_set_candidates(const struct rule_book *rb, int set, const int **ids)
{
    const struct rule_set *s = rule_book_set(rb, set);
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

