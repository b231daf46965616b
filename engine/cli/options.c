/* options.c: command-line parsing for the sweep and explain (see options.h). */
#include "options.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "error.h"
#include "rules.h"
#include "units.h"


static int parse_i32(const char *s, int32_t lo, int32_t hi, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno || v < lo || v > hi)
        return -1;
    *out = (int32_t)v;
    return (int)(end - s);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int options_parse_int_list(const char *s, int32_t lo, int32_t hi, struct int_list *out)
{
    out->n = 0;
    while (*s) {
        int32_t a, b;
        int n = parse_i32(s, lo, hi, &a);
        if (n <= 0)
            return -1;
        s += n;
        b = a;
        if (s[0] == '.' && s[1] == '.') {
            n = parse_i32(s + 2, lo, hi, &b);
            if (n <= 0 || b < a)
                return -1;
            s += 2 + n;
        }
        if ((int64_t)b - a + out->n >= OPT_LIST_MAX)
            return -1;
        for (int32_t v = a; v <= b; v++)
            out->v[out->n++] = v;
        if (*s == ',') {
            if (*++s == '\0')
                return -1;
        } else if (*s) {
            return -1;
        }
    }
    if (out->n == 0)
        return -1;
    qsort(out->v, (size_t)out->n, sizeof out->v[0], cmp_i32);
    int w = 1;
    for (int i = 1; i < out->n; i++)
        if (out->v[i] != out->v[w - 1])
            out->v[w++] = out->v[i];
    out->n = w;
    return 0;
}

/* A comma list of names into values (in command-line order, without repeats). */
static int parse_names(const char *s, int (*parse)(const char *), int *vals, int max, int *n)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *p = buf; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        int v = parse(p);
        if (v < 0)
            return -1;
        bool seen = false;
        for (int i = 0; i < *n; i++)
            seen |= vals[i] == v;
        if (!seen) {
            if (*n == max)
                return -1;
            vals[(*n)++] = v;
        }
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int targets_list(const char *s, struct options *o)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    o->axes.ntargets = 0;
    for (char *p = buf; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (o->axes.ntargets == 16 || targets_parse(p, &o->axes.targets[o->axes.ntargets]) != 0)
            return -1;
        o->axes.ntargets++;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int parse_shard(const char *s, struct options *o)
{
    int32_t k, n;
    int a = parse_i32(s, 1, 1 << 20, &k);
    if (a <= 0 || s[a] != '/')
        return -1;
    int b = parse_i32(s + a + 1, 1, 1 << 20, &n);
    if (b <= 0 || s[a + 1 + b] || k > n)
        return -1;
    o->shard_k = k;
    o->shard_n = n;
    return 0;
}

/* --margin auto|PCT: auto is -1; PCT a percentage in [0, 1000]. */
static int parse_margin(const char *v, double *pct)
{
    char *end;
    if (!strcmp(v, "auto"))
        return *pct = -1, 0;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0 && x <= 1000))
        return -1;
    *pct = x;
    return 0;
}

/* ---- the option table ------------------------------------------------------------------ */

/* What went wrong with one argument; opt_message turns each into the one message (curl's
 * ParameterError and param2text). */
enum opt_error {
    OPT_OK,
    OPT_UNKNOWN,      /* no such option */
    OPT_NOT_HERE,     /* an option of another command */
    OPT_NEEDS_VALUE,
    OPT_NO_VALUE,     /* a flag given `=value` */
    OPT_BAD_VALUE,
    OPT_TOO_MANY,     /* a repeatable option past its limit */
    OPT_UNEXPECTED,   /* not an option, and the command takes no other arguments */
};

/* How a value is parsed and stored at the row's field. */
enum opt_type {
    T_FLAG,   /* no value: the bool field becomes true */
    T_STR,    /* const char *: the value itself */
    T_LIST,   /* const char *[max] with an int count at count_off: one more value */
    T_ARGV,   /* const char ** to argc entries, int count at count_off: one more value */
    T_INTS,   /* struct int_list: comma lists and ranges in [lo, hi] */
    T_INT,    /* int: decimal digits in [lo, hi] */
    T_LONG,   /* long: decimal digits in [lo, hi] */
    T_REAL,   /* double in [lo, hi] */
    T_SIZE,   /* uint64_t bytes: 80GiB, 16384MB (units_parse_size) */
    T_NAMES,  /* int[max] with an int count at count_off: a comma list of names (names()) */
    T_ENUM,   /* int: one name (names() < 0 when unknown) */
    T_CHOICE, /* int: one of choices */
    T_CALL,   /* call(dst, value): 0 or -1 */
};

struct opt_choice {
    const char *name;
    int value;
};

struct opt_row {
    const char *name;     /* sorted by name (strcmp), for bsearch */
    unsigned cmds;        /* enum opt_cmd bits; rows of one name never share a bit */
    enum opt_type type;
    size_t off;           /* the field in the command's dst */
    size_t count_off;     /* T_LIST, T_ARGV, T_NAMES: the int count */
    double lo, hi;        /* T_INTS, T_INT, T_LONG, T_REAL: the range; T_LIST, T_NAMES: the most values */
    int (*names)(const char *);
    const struct opt_choice *choices; /* T_CHOICE, ended by a NULL name */
    int (*call)(void *dst, const char *v);
    const char *hint;     /* after a bad or missing value; T_CHOICE lists its choices */
};

_Static_assert(sizeof(enum out_format) == sizeof(int) && sizeof(enum rank_mode) == sizeof(int) &&
                   sizeof(enum stack) == sizeof(int) && sizeof(enum alloc_conf) == sizeof(int) &&
                   sizeof(enum offload_mode) == sizeof(int),
               "T_ENUM and T_CHOICE store an int");

static int set_base(void *dst, const char *v)
{
    struct options *o = dst;
    o->base_set = units_parse_size(v, &o->base) == 0;
    return o->base_set ? 0 : -1;
}

/* --data: the data shape; any other value keeps the older meaning, the catalog folder. */
static int set_data(void *dst, const char *v)
{
    struct options *o = dst;
    int shape = data_shape_parse(v);
    if (shape >= 0)
        o->axes.data = (enum data_shape)shape;
    else
        o->data_dir = v;
    return 0;
}

static int set_targets(void *dst, const char *v)
{
    return targets_list(v, dst);
}

static int set_shard(void *dst, const char *v)
{
    return parse_shard(v, dst);
}

static int set_margin(void *dst, const char *v)
{
    return parse_margin(v, &((struct options *)dst)->margin_pct);
}

static int set_attention(void *dst, const char *v)
{
    ((struct options *)dst)->axes.eager = !strcmp(v, "eager");
    ((struct options *)dst)->axes.flash = !strcmp(v, "flash");
    return strcmp(v, "sdpa") && strcmp(v, "eager") && strcmp(v, "flash") ? -1 : 0;
}

static int set_pp_schedule(void *dst, const char *v)
{
    ((struct options *)dst)->axes.pp_interleaved = !strcmp(v, "interleaved");
    return strcmp(v, "1f1b") && strcmp(v, "interleaved") ? -1 : 0;
}

static int set_recipes(void *dst, const char *v)
{
    ((struct options *)dst)->all_recipes = !strcmp(v, "all");
    return strcmp(v, "default") && strcmp(v, "all") ? -1 : 0;
}

/* --offload: what method offload keeps on the host; "none" is no offload method. */
static int offload_value(const char *s)
{
    int v = offload_parse(s);
    return v <= OFFLOAD_NONE ? -1 : v;
}

/* fit --features: LIST for every candidate, or CAND=LIST for one. */
static int set_features(void *dst, const char *v)
{
    struct fit_args *a = dst;
    if (!strchr(v, '=')) {
        a->feat_all = v;
        return 0;
    }
    if (a->nfeat_for == FIT_ARGS_MAX)
        return -2; /* too many */
    a->feat_for[a->nfeat_for++] = v;
    return 0;
}

static const struct opt_choice formats[] = {
    {"auto", FORMAT_AUTO}, {"table", FORMAT_TABLE}, {"csv", FORMAT_CSV}, {"json", FORMAT_JSON},
    {"html", FORMAT_HTML}, {"text", FORMAT_TEXT},   {NULL, 0}};
static const struct opt_choice merge_formats[] = {
    {"table", FORMAT_TABLE}, {"csv", FORMAT_CSV}, {"json", FORMAT_JSON}, {"html", FORMAT_HTML}, {NULL, 0}};
static const struct opt_choice devices_formats[] = {{"text", 0}, {"json", 1}, {NULL, 0}};
static const struct opt_choice ranks[] = {{"speed", RANK_SPEED}, {"llmem", RANK_LLMEM}, {NULL, 0}};
static const struct opt_choice rope_tables[] = {{"none", 0}, {"weights", 1}, {"fp32", 2}, {NULL, 0}};
static const struct opt_choice with_model[] = {{"yes", 1}, {"no", 0}, {"add", RULES_ADD}, {NULL, 0}};

#define SW (CMD_SWEEP | CMD_EXPLAIN) /* what explain reads of the sweep's options */
#define O(f) offsetof(struct options, f)
#define V(f) offsetof(struct validate_args, f)
#define F(f) offsetof(struct fit_args, f)
#define FLAG(n, c, off) {n, c, T_FLAG, off, 0, 0, 0, NULL, NULL, NULL, NULL}
#define STR(n, c, off) {n, c, T_STR, off, 0, 0, 0, NULL, NULL, NULL, NULL}
#define LIST(n, c, off, cnt, max) {n, c, T_LIST, off, cnt, 0, max, NULL, NULL, NULL, NULL}
#define INTS(n, off, lo, hi) {n, SW, T_INTS, O(off), 0, lo, hi, NULL, NULL, NULL, NULL}
#define NUM(n, c, t, off, lo, hi, hint) {n, c, t, off, 0, lo, hi, NULL, NULL, NULL, hint}
#define NAMES(n, arr, cnt, fn, max) {n, SW, T_NAMES, O(arr), O(cnt), 0, max, fn, NULL, NULL, NULL}
#define ENUM(n, off, fn) {n, SW, T_ENUM, O(off), 0, 0, 0, fn, NULL, NULL, NULL}
#define CHOICE(n, c, off, ch) {n, c, T_CHOICE, off, 0, 0, 0, NULL, ch, NULL, NULL}
#define CALL(n, c, fn) {n, c, T_CALL, 0, 0, 0, 0, NULL, NULL, fn, NULL}

/* Every option of every command (DESIGN.md section 4, README "Contract extensions"). */
static const struct opt_row table[] = {
    FLAG("--all", CMD_SWEEP, O(all)),
    ENUM("--alloc-conf", axes.alloc, alloc_conf_parse),
    FLAG("--append", CMD_FIT, F(append)),
    CALL("--attention", SW, set_attention),
    CALL("--base", SW, set_base),
    INTS("--batch", axes.batch, 1, 65536),
    NUM("--budget", SW, T_SIZE, O(budget), 0, 0, NULL),
    STR("--catalog", SW, O(data_dir)),
    STR("--catalog", CMD_VALIDATE, V(data)),
    STR("--catalog", CMD_CATALOG, 0),
    CALL("--data", SW, set_data),
    STR("--data", CMD_VALIDATE, V(data)), /* the older spelling of --catalog */
    STR("--data", CMD_FIT, F(data)),
    STR("--data", CMD_CATALOG, 0),
    FLAG("--detail", CMD_EXPLAIN, O(detail)),
    NUM("--device", CMD_PROBE, T_INT, 0, 0, INT_MAX, "(a device index: 0, 1, ...)"),
    INTS("--ep", axes.ep, 1, 4096),
    NUM("--fail-above", CMD_VALIDATE, T_REAL, V(fail_above), 0, DBL_MAX, "(a percentage)"),
    {"--features", CMD_FIT, T_CALL, 0, 0, 0, FIT_ARGS_MAX, NULL, NULL, set_features, NULL},
    NAMES("--finetune", axes.finetunes, axes.nfinetunes, finetune_parse, FT_COUNT),
    CHOICE("--format", SW, O(format), formats),
    CHOICE("--format", CMD_MERGE, O(format), merge_formats),
    CHOICE("--format", CMD_DEVICES, 0, devices_formats),
    FLAG("--fsdp-end-units", SW, O(axes.end_units)),
    STR("--gpu", SW, O(gpu)),
    INTS("--gpus", axes.gpus, 1, 4096),
    NUM("--gpus-per-node", SW, T_INT, O(axes.gpus_per_node), 1, 4096, NULL),
    NAMES("--grad-ckpt", axes.ckpts, axes.nckpts, ckpt_mode_parse, CKPT_COUNT),
    NUM("--host-memory", SW, T_SIZE, O(host_memory), 0, 0, NULL),
    STR("--id", CMD_EXPLAIN, O(measured_id)),
    STR("--lengths", SW, O(lengths)),
    FLAG("--liger", SW, O(axes.liger)),
    INTS("--lora-r", axes.lora_r, 1, 65536),
    CALL("--lora-targets", SW, set_targets),
    CALL("--margin", SW, set_margin),
    LIST("--match", CMD_FIT, F(match), F(nmatch), FIT_ARGS_MAX),
    STR("--measured", CMD_EXPLAIN, O(measured_csv)),
    {"--measured", CMD_VALIDATE, T_ARGV, V(measured), V(nmeasured), 0, 0, NULL, NULL, NULL, NULL},
    LIST("--measured", CMD_FIT, F(measured), F(nmeasured), FIT_ARGS_MAX),
    NAMES("--method", axes.methods, axes.nmethods, method_parse, METHOD_COUNT),
    NAMES("--methods", axes.methods, axes.nmethods, method_parse, METHOD_COUNT),
    STR("--metric", CMD_FIT, F(metric)),
    INTS("--micro-batch", axes.batch, 1, 65536),
    LIST("--model", SW, O(models), O(nmodels), OPT_MODELS_MAX),
    FLAG("--no-prune", CMD_SWEEP, O(no_prune)),
    LIST("--note", CMD_FIT, F(notes), F(nnotes), FIT_ARGS_MAX),
    {"--objective", CMD_SWEEP, T_ENUM, O(objective), 0, 0, 0, objective_parse, NULL, NULL, NULL},
    ENUM("--offload", axes.offload, offload_value),
    NAMES("--optimizer", axes.optimizers, axes.noptimizers, optimizer_parse, OPT_COUNT),
    LIST("--out", CMD_SWEEP | CMD_MERGE, O(outs), O(nouts), OPT_OUTS_MAX),
    STR("--out", CMD_VALIDATE, V(out)),
    STR("--out", CMD_FIT, F(out)),
    FLAG("--paged", SW, O(axes.paged)),
    FLAG("--paper", SW, O(paper)),
    FLAG("--paper", CMD_VALIDATE, V(paper)),
    INTS("--pp", axes.pp, 2, 4096),
    NUM("--pp-microbatches", SW, T_INT, O(axes.pp_microbatches), 1, 65536, NULL),
    CALL("--pp-schedule", SW, set_pp_schedule),
    NAMES("--precision", axes.precisions, axes.nprecisions, precision_parse, PREC_COUNT),
    FLAG("--progress", CMD_SWEEP, O(progress)),
    NAMES("--quant", axes.quants, axes.nquants, quant_parse, QUANT_COUNT),
    FLAG("--quiet", CMD_SWEEP, O(quiet)),
    CHOICE("--rank", CMD_SWEEP, O(rank), ranks),
    CALL("--recipes", CMD_SWEEP, set_recipes),
    CHOICE("--rope-tables", SW, O(axes.rope_tables), rope_tables),
    STR("--rules", SW, O(rules)),
    STR("--rules", CMD_VALIDATE, V(rules)),
    INTS("--seq", axes.seq, 2, 1 << 20),
    STR("--set", CMD_FIT, F(set)),
    CALL("--shard", CMD_SWEEP, set_shard), /* explain evaluates one point */
    ENUM("--stack", axes.stack, stack_parse),
    FLAG("--stamp", CMD_SWEEP, O(stamp)),
    FLAG("--summary", CMD_VALIDATE, V(summary_only)),
    NUM("--threads", CMD_SWEEP, T_INT, O(threads), 1, 4096, NULL),
    NUM("--threshold", CMD_DIFF, T_REAL, 0, 0, 1e6, "(a percentage)"),
    NUM("--tokens", CMD_SWEEP, T_REAL, O(tokens), 1, 1e18, NULL),
    NUM("--top", CMD_SWEEP | CMD_MERGE, T_LONG, O(top), 0, INT32_MAX, NULL),
    INTS("--tp", axes.tp, 1, 4096),
    FLAG("--verbose", CMD_FIT, F(verbose)),
    CHOICE("--with-model", CMD_FIT, F(with_model), with_model),
    STR("--write-band", CMD_VALIDATE, V(write_band)),
};

#define TABLE_ROWS (sizeof table / sizeof table[0])

/* A name given as a pointer and a length (the part of `--name=value` before '='). */
struct opt_key {
    const char *s;
    size_t len;
};

static int key_cmp(const void *k, const void *r)
{
    const struct opt_key *key = k;
    const char *name = ((const struct opt_row *)r)->name;
    int c = strncmp(key->s, name, key->len);
    return c ? c : -(name[key->len] != '\0'); /* a longer table name sorts after the key */
}

/* The row of name for command cmd; *known says whether any command has the option. */
static const struct opt_row *find_row(const char *s, size_t len, unsigned cmd, bool *known)
{
    struct opt_key key = {s, len};
    const struct opt_row *r = bsearch(&key, table, TABLE_ROWS, sizeof table[0], key_cmp);
    *known = r != NULL;
    if (!r)
        return NULL;
    while (r > table && key_cmp(&key, r - 1) == 0) /* the first row of this name */
        r--;
    for (; r < table + TABLE_ROWS && key_cmp(&key, r) == 0; r++)
        if (r->cmds & cmd)
            return r;
    return NULL;
}

const char *options_table_row(size_t i, unsigned *cmds)
{
    if (i >= TABLE_ROWS)
        return NULL;
    *cmds = table[i].cmds;
    return table[i].name;
}

const char *options_table_problem(void)
{
    for (size_t i = 0; i < TABLE_ROWS; i++) {
        int c = i ? strcmp(table[i - 1].name, table[i].name) : -1;
        if (c > 0)
            return table[i].name; /* out of order */
        if (!table[i].cmds || (c == 0 && table[i - 1].cmds & table[i].cmds))
            return table[i].name; /* for no command, or twice for one */
    }
    return NULL;
}

/* Decimal digits only (no sign, no space) in [lo, hi]. */
static int parse_digits(const char *v, double lo, double hi, long *out)
{
    if (!*v || v[strspn(v, "0123456789")])
        return -1;
    errno = 0;
    long x = strtol(v, NULL, 10);
    if (errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int parse_real(const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        return -1;
    *out = x;
    return 0;
}

static int parse_choice(const struct opt_choice *ch, const char *v, int *out)
{
    for (; ch->name; ch++)
        if (!strcmp(ch->name, v))
            return *out = ch->value, 0;
    return -1;
}

/* Appends one value to a list of strings; -2 past max (max 0: the list has argc room). */
static int push(const char **v, int *n, int max, const char *s)
{
    if (max && *n == max)
        return -2;
    v[(*n)++] = s;
    return 0;
}

/* Parses v into row r's field of dst: 0, -1 (a bad value) or -2 (too many values). */
static int store(const struct opt_row *r, void *dst, const char *v)
{
    char *f = (char *)dst + r->off;
    int *count = (int *)((char *)dst + r->count_off), i;
    long l;
    switch (r->type) {
    case T_FLAG:
        return *(bool *)f = true, 0;
    case T_STR:
        return *(const char **)f = v, 0;
    case T_LIST:
        return push((const char **)f, count, (int)r->hi, v);
    case T_ARGV:
        return push(*(const char ***)f, count, 0, v);
    case T_INTS:
        return options_parse_int_list(v, (int32_t)r->lo, (int32_t)r->hi, (struct int_list *)f);
    case T_INT:
        return parse_digits(v, r->lo, r->hi, &l) ? -1 : (*(int *)f = (int)l, 0);
    case T_LONG:
        return parse_digits(v, r->lo, r->hi, &l) ? -1 : (*(long *)f = l, 0);
    case T_REAL:
        return parse_real(v, r->lo, r->hi, (double *)f);
    case T_SIZE:
        return units_parse_size(v, (uint64_t *)f) ? -1 : 0;
    case T_NAMES:
        return parse_names(v, r->names, (int *)f, (int)r->hi, count);
    case T_ENUM:
        return (i = r->names(v)) < 0 ? -1 : (*(int *)f = i, 0);
    case T_CHOICE:
        return parse_choice(r->choices, v, (int *)f);
    case T_CALL:
        return r->call(dst, v);
    }
    return -1;
}

/* What a value of row r may be, after a bad or missing one: the row's hint, the range of a
 * number (lists and ranges only where cmd is the sweep: explain takes one value), the choices. */
static const char *value_hint(const struct opt_row *r, unsigned cmd, char *buf, size_t n)
{
    buf[0] = '\0';
    if (r->hint)
        snprintf(buf, n, " %s", r->hint);
    else if (r->type == T_INTS && cmd == CMD_SWEEP)
        snprintf(buf, n, " (whole numbers from %.0f to %.0f: a comma list, ranges like 1..64)", r->lo, r->hi);
    else if (r->type == T_INTS || r->type == T_INT || r->type == T_LONG)
        snprintf(buf, n, " (a whole number from %.0f to %.0f)", r->lo, r->hi);
    else if (r->type == T_CHOICE)
        for (const struct opt_choice *c = r->choices, *first = c; c->name; c++) {
            size_t k = strlen(buf);
            snprintf(buf + k, n - k, "%s%s%s", c == first ? " (" : "", c->name,
                     !c[1].name ? ")" : !c[2].name ? " or " : ", ");
        }
    return buf;
}

static const char *const cmd_names[] = {"the sweep", "explain", "validate", "fit", "merge",
                                        "models and gpus", "devices", "probe", "diff"};

/* The commands of row name (after the one at hand), "validate and fit". */
static void owners(const char *name, char *buf, size_t n)
{
    unsigned cmds = 0;
    for (size_t i = 0; i < TABLE_ROWS; i++)
        if (!strcmp(table[i].name, name))
            cmds |= table[i].cmds;
    size_t k = 0, left = (size_t)__builtin_popcount(cmds);
    buf[0] = '\0';
    for (int b = 0; cmds >> b && k < n; b++)
        if (cmds >> b & 1) {
            left--;
            k += (size_t)snprintf(buf + k, n - k, "%s%s", cmd_names[b],
                                  !left ? "" : left == 1 ? " and " : ", ");
        }
}

static size_t edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b), row[64];
    if (la >= 64 || lb >= 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The option of cmd nearest to a mistyped name, at most two edits away, or NULL. */
static const char *nearest(const char *s, size_t len, unsigned cmd)
{
    const char *best = NULL;
    size_t d = 3;
    if (len < 5) /* "--x" is two edits from "--ep": no guess for names that short */
        return NULL;
    for (size_t i = 0; i < TABLE_ROWS; i++) {
        size_t e = table[i].cmds & cmd ? edit_distance(s, len, table[i].name) : SIZE_MAX;
        if (e < d)
            d = e, best = table[i].name;
    }
    return best;
}

/* The one message of each enum opt_error; returns EXIT_USAGE. */
static int opt_message(const char *cmd, unsigned bit, enum opt_error err, const char *s,
                       size_t len, const struct opt_row *r, const char *v)
{
    char buf[160];
    const char *near;
    switch (err) {
    case OPT_UNKNOWN:
        near = nearest(s, len, bit);
        if (near)
            return usage_error(cmd, "unknown option '%.*s'; did you mean %s?", (int)len, s, near);
        return usage_error(cmd, "unknown option '%.*s'", (int)len, s);
    case OPT_NOT_HERE: {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, s);
        owners(name, buf, sizeof buf);
        if (!cmd)
            return usage_error(cmd, "the sweep takes no %s (an option of %s)", name, buf);
        return usage_error(cmd, "takes no %s (an option of %s)", name, buf);
    }
    case OPT_NEEDS_VALUE:
        return usage_error(cmd, "option %s needs a value%s", r->name, value_hint(r, bit, buf, sizeof buf));
    case OPT_NO_VALUE:
        return usage_error(cmd, "option %s takes no value", r->name);
    case OPT_BAD_VALUE: {
        return usage_error(cmd, "invalid value '%s' for %s%s", v, r->name, value_hint(r, bit, buf, sizeof buf));
    }
    case OPT_TOO_MANY:
        return usage_error(cmd, "too many %s options (at most %d)", r->name, (int)r->hi);
    case OPT_UNEXPECTED:
        return usage_error(cmd, "unexpected argument '%s'", s);
    case OPT_OK:
        break;
    }
    return EXIT_USAGE;
}

int options_parse_cmd(enum opt_cmd cmd, int argc, char **argv, void *dst, const char **pos,
                      int *npos)
{
    const char *name = cmd == CMD_SWEEP ? NULL : argv[0];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return -1;
        if (arg[0] != '-' || !strcmp(arg, "-")) { /* "-" is stdin or a file called so */
            if (!pos)
                return opt_message(name, cmd, OPT_UNEXPECTED, arg, strlen(arg), NULL, NULL);
            pos[(*npos)++] = arg;
            continue;
        }
        const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        bool known;
        const struct opt_row *r = find_row(arg, len, cmd, &known);
        if (!r)
            return opt_message(name, cmd, known ? OPT_NOT_HERE : OPT_UNKNOWN, arg, len, NULL, NULL);
        if (r->type == T_FLAG && eq)
            return opt_message(name, cmd, OPT_NO_VALUE, arg, len, r, NULL);
        const char *v = r->type == T_FLAG ? "" : eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return opt_message(name, cmd, OPT_NEEDS_VALUE, arg, len, r, NULL);
        int rc = store(r, dst, v);
        if (rc)
            return opt_message(name, cmd, rc == -2 ? OPT_TOO_MANY : OPT_BAD_VALUE, arg, len, r, v);
    }
    return 0;
}

int options_parse(int argc, char **argv, int first, enum options_mode mode, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->top = 50;
    o->axes.stack = STACK_HF;
    o->margin_pct = -1; /* auto */
    o->axes.offload = OFFLOAD_OPTIMIZER;
    o->tokens = ANSWER_TOKENS_DEFAULT;
    int rc = options_parse_cmd(mode == OPTIONS_EXPLAIN ? CMD_EXPLAIN : CMD_SWEEP, argc - first + 1,
                               argv + first - 1, o, NULL, NULL);
    if (rc < 0)
        options_usage(mode);
    /* the end units are FSDP2's (fully_shard per module); FSDP1's root is not modelled so */
    if (!rc && o->axes.end_units && !o->measured_csv && o->axes.stack != STACK_TORCHTITAN &&
        o->axes.stack != STACK_TORCHTUNE)
        rc = usage_error(mode == OPTIONS_EXPLAIN ? "explain" : NULL,
                         "--fsdp-end-units needs --stack torchtitan or torchtune (FSDP2's units)");
    return rc;
}

/* The recipes people run (README "Default recipes"): bf16 mixed precision with AdamW, full
 * fine-tuning, LoRA and QLoRA (r16 on every linear layer, NF4 base for QLoRA) at today's
 * SFT sequence lengths. --recipes all is the full cross product of the recipe axes. */
static void default_recipe_axes(struct options *o)
{
    if (!o->axes.seq.n)
        options_parse_int_list(o->all_recipes ? "512,1024,2048,4096" : "2048,4096,8192", 2,
                               1 << 20, &o->axes.seq);
    if (!o->axes.nprecisions) {
        /* --recipes all leaves fp8 out: it needs float8 tensor cores and full training
         * (train_gpu_check, train_config_check); ask for it with --precision fp8 */
        for (int p = 0; p < PREC_COUNT; p++)
            if ((o->all_recipes && p != PREC_FP8) || p == PREC_BF16)
                o->axes.precisions[o->axes.nprecisions++] = p;
    }
    if (!o->axes.nfinetunes)
        for (int f = 0; f < FT_COUNT; f++)
            o->axes.finetunes[o->axes.nfinetunes++] = f;
    if (!o->axes.nquants) {
        o->axes.quants[o->axes.nquants++] = QUANT_NONE;
        o->axes.quants[o->axes.nquants++] = QUANT_NF4;
    }
    if (!o->axes.noptimizers)
        for (int p = 0; p < OPT_COUNT; p++)
            if (o->all_recipes || p == OPT_ADAMW)
                o->axes.optimizers[o->axes.noptimizers++] = p;
}

void options_default_axes(struct options *o)
{
    static const char *const batch = "1,2,4,8,16,32,64,128,256,512,1024";
    if (!o->axes.nmethods) /* --paper: LLMem's five methods, the ones its equations cover */
        for (int m = 0; m < (o->paper ? METHOD_ZERO1 : METHOD_COUNT); m++)
            o->axes.methods[o->axes.nmethods++] = m;
    if (!o->axes.gpus.n)
        options_parse_int_list("1,2,4,8,16,32,64", 1, 4096, &o->axes.gpus);
    if (!o->axes.batch.n)
        options_parse_int_list(batch, 1, 65536, &o->axes.batch);
    if (!o->axes.lora_r.n)
        options_parse_int_list("16", 1, 65536, &o->axes.lora_r);
    default_recipe_axes(o);
    if (!o->axes.nckpts) {
        o->axes.ckpts[o->axes.nckpts++] = CKPT_ON;
        o->axes.ckpts[o->axes.nckpts++] = CKPT_OFF;
    }
    if (!o->axes.ntargets)
        o->axes.targets[o->axes.ntargets++] = TARGETS_ALL;
    if (o->paper) { /* the paper's regime: fp16 mixed, full, checkpointing, Adam */
        o->axes.nprecisions = o->axes.nfinetunes = o->axes.nckpts = o->axes.noptimizers = 1;
        o->axes.precisions[0] = PREC_FP16;
        o->axes.finetunes[0] = FT_FULL;
        o->axes.ckpts[0] = CKPT_ON;
        o->axes.optimizers[0] = OPT_ADAMW;
        o->axes.stack = STACK_COLOSSAL;
    }
}

void options_usage(enum options_mode mode)
{
    if (mode == OPTIONS_EXPLAIN) {
        fputs("usage: llmem-sweep explain --model NAME|PATH [options]\n"
              "       llmem-sweep explain --measured FILE.csv --id ID [--detail] [--format F]\n"
              "Every memory term, the peak phase and the step time of one configuration.\n"
              "  --measured FILE    with --id ID: the configuration, model, stack, features and\n"
              "                     GPU of that measured row, as validate reads it, and the\n"
              "                     model's value of its metric beside the measurement\n"
              "  --method M         single|cdp|adp|tp|dp+tp|zero1|zero2|pp|offload (default single;\n"
              "                     --methods also works)\n"
              "  --gpus N           GPU count (default 1; 2 for multi-GPU methods)\n"
              "  --tp N             TP degree for dp+tp (default 2; tp = gpus for tp; 1 for pp)\n"
              "  --pp N             pipeline stages for pp (default 2)\n"
              "  --micro-batch N    per-GPU micro-batch (default 1; --batch also works)\n"
              "  --seq N            sequence length (default 512)\n"
              "  --detail           every tensor behind each term: shape, dtype, count, bytes\n"
              "                     and where its size comes from\n"
              "  --format F         text (default) or json\n", stdout);
    } else {
        fputs("usage: llmem-sweep [options] [--out FILE]...\n"
              "       llmem-sweep COMMAND [options]   (COMMAND --help for its options)\n"
              "Sweeps fine-tuning recipes (what is trained) and, per recipe, ranks the layouts\n"
              "(how it runs) that fit the budget, fastest first.\n"
              "Commands:\n"
              "  explain            one configuration: every memory term, the peak, the time\n"
              "  validate           predict measured rows; error per row and summary\n"
              "  fit                fit peak-type rules from measurements\n"
              "  models | gpus      list the catalogs\n"
              "  devices            GPUs seen through the CUDA runtime\n"
              "  merge              combine --shard CSVs into one report\n"
              "  diff OLD NEW       what changed between two ranked CSVs (nightly jobs)\n"
              "Options:\n"
              "  --methods LIST     single,cdp,adp,tp,dp+tp,zero1,zero2,pp,offload (default all;\n"
              "                     --method also works)\n"
              "  --gpus LIST        GPU counts (default 1,2,4,8,16,32,64)\n"
              "  --tp LIST          TP degrees of dp+tp and pp (default every divisor)\n"
              "  --pp LIST          pipeline stages of pp (default every divisor >= 2)\n"
              "  --batch LIST       per-GPU micro-batches (default powers of 2 up to 1024;\n"
              "                     --micro-batch also works)\n"
              "  --seq LIST         sequence lengths (default 2048,4096,8192)\n"
              "  --recipes R        default (bf16 mixed, AdamW; full, LoRA and QLoRA r16 on\n"
              "                     all linear layers; seq 2048,4096,8192) or all (every\n"
              "                     precision and optimizer, seq 512,1024,2048,4096); the\n"
              "                     recipe options below override either\n"
              "  --top N            layouts ranked per recipe (default 50; 0 = all fitting)\n"
              "  --objective O      best layout in the per-recipe summaries: throughput\n"
              "                     (default: tokens/s of the job), per-gpu (tokens/s per GPU)\n"
              "                     or min-gpus (the fewest GPUs, then the fastest)\n"
              "  --tokens N         training tokens for the time and GPU-hour estimates\n"
              "                     (default 1e9)\n"
              "  --all              also keep non-fitting points (implies --no-prune)\n"
              "  --no-prune         evaluate every point (same fitting set, slower)\n"
              "  --threads N        worker threads (default: all cores)\n"
              "  --shard K/N        evaluate the K-th of N slices; combine with `merge`\n"
              "  --rank speed|llmem rank by throughput (default) or LLMem's Algorithm 1\n"
              "  --format F         table|csv|json|html (default from --out's extension)\n"
              "  --out FILE         write the report (repeatable: one file per format; - is stdout)\n"
              "  --stamp            the HTML report's footer says when it was generated\n"
              "  --quiet, --progress  progress line on stderr (default: only on a terminal)\n",
              stdout);
    }
    fputs("  --model NAME|PATH  catalog HF id or config.json (file or folder); repeatable\n"
          "  --budget SIZE      per-GPU memory: 80GiB, 81920MiB, 85.9GB, 16384MB\n"
          "                     (MB = 10^6 bytes, MiB = 2^20; default: the GPU's memory)\n"
          "  --gpu NAME         datasets/gpus.csv entry (default: local GPU, else H100-SXM-80GB)\n"
          "  --base SIZE        m_base: CUDA context and workspaces (default: the GPU's)\n"
          "  --precision LIST   fp32,fp16,bf16,bf16-pure,fp8 (sweep default bf16; fp8: bf16 mixed\n"
          "                     precision with torchao float8 block Linears, full training,\n"
          "                     GPUs with float8 tensor cores)\n"
          "  --finetune LIST    full,lora,qlora\n"
          "  --quant LIST       none,int8,nf4,nf4-dq (frozen base; qlora implies nf4)\n"
          "  --lora-r LIST      LoRA ranks (default 16)\n"
          "  --lora-targets L   attn,mlp,all or modules joined by '+' (q+k+v+o+gate+up+down+head)\n"
          "  --grad-ckpt LIST   on,off,selective (selective: op-level SAC, as torchtitan)\n"
          "  --optimizer LIST   adamw,adamw8bit,sgd (sweep default adamw)\n"
          "  --ep LIST          expert-parallel degrees for MoE models (default 1): experts\n"
          "                     sharded over ep ranks of the data-parallel group\n"
          "  --offload WHAT     method offload keeps in host memory: optimizer (default; fp32\n"
          "                     master weights, states, gradients) or params (also the weights)\n"
          "  --host-memory SIZE host memory of one node for offloaded states (default: not\n"
          "                     checked); offload layouts that need more do not fit\n"
          "  --pp-microbatches N  micro-batches of one pipelined step (default 4 x pp)\n"
          "  --pp-schedule S    1f1b (default) or interleaved (torch pipelining's\n"
          "                     ScheduleInterleaved1F1B, 2 stages a rank; --stack torchtitan)\n"
          "  --stack NAME       hf (default; transformers >= 4.54, torch >= 2.8), hf-4.49\n"
          "                     (4.49-4.53 or torch < 2.8), hf-4.46 (4.46-4.48),\n"
          "                     hf-4.31 (4.31-4.45), trl (TRL SFTTrainer >= 1.6), trl-0.22,\n"
          "                     trl-0.15 (0.15-0.21, 0.23-1.5), litgpt, torchtune,\n"
          "                     torchtitan, colossal\n",
          stdout);
    fputs("  --fsdp-end-units   FSDP2 (--stack torchtitan or torchtune): the embedding and\n"
          "                     the output layer are units of their own, gathered only while\n"
          "                     they run (torchtitan from 83e69410; torchtune configs with\n"
          "                     custom_sharded_layers: ['tok_embeddings', 'output']), not\n"
          "                     kept gathered through the step by the root unit\n"
          "  --attention A      sdpa (default), eager, or flash (the flash-attn package:\n"
          "                     K and V kept at their KV width)\n"
          "  --liger            HF Trainer's use_liger_kernel: Liger's fused linear\n"
          "                     cross-entropy, no logits tensor (HF and TRL stacks)\n"
          "  --paged            bitsandbytes' paged optimizers (HF optim paged_adamw_32bit,\n"
          "                     paged_adamw_8bit): adamw and adamw8bit states in managed\n"
          "                     memory, paged over PCIe when the GPU runs short\n"
          "  --rope-tables T    none (default), weights or fp32: transformers 4.31-4.39 keep\n"
          "                     each layer's rotary cos/sin tables (max_position x head_dim)\n"
          "                     as buffers, whole on every GPU, in the weights' dtype or in\n"
          "                     fp32 for a model built without torch_dtype\n"
          "  --paper            LLMem's equations exactly (fp16, full, checkpointing, Adam)\n"
          "  --rules PATH       measured peak-type rules (a rules CSV or a folder of them)\n"
          "  --data SHAPE       variable (default: unpacked batches padded to their longest\n"
          "                     sample, lengths up to --seq) or packed (every batch --seq long)\n"
          "  --lengths FILE     variable data's sample lengths: a CSV with a column tokens,\n"
          "                     one row per sample; each cut to --seq (default: lengths\n"
          "                     uniform up to --seq)\n"
          "  --alloc-conf A     default or expandable (PYTORCH_CUDA_ALLOC_CONF=\n"
          "                     expandable_segments:True)\n"
          "  --gpus-per-node N  GPUs per node (default 8); collectives beyond a node use\n"
          "                     the inter-node link (gpus.csv internode_gbs)\n"
          "  --catalog DIR      folder with models.csv, gpus.csv and band.csv (--data DIR also works)\n"
          "  --margin M         what fits: auto (default: the error band's upper end fits the\n"
          "                     budget), PCT (the prediction + PCT %), 0 (the prediction alone)\n"
          "Exit codes: 0 ok, 1 nothing fits, 2 usage, 3 bad input file, 4 I/O error.\n",
          stdout);
}

void options_report_inputs(const struct options *o, struct report_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->axes = o->axes;
    in->models = o->models;
    in->nmodels = o->nmodels;
    in->outs = o->outs;
    in->nouts = o->nouts;
    in->format_html = o->format == FORMAT_HTML;
    in->budget = o->budget;
    in->base = o->base;
    in->base_set = o->base_set;
    in->top = o->top;
    in->all = o->all;
    in->no_prune = o->no_prune;
    in->paper = o->paper;
    in->llmem_rank = o->rank == RANK_LLMEM;
    in->stamp = o->stamp;
    in->shard_k = o->shard_k;
    in->shard_n = o->shard_n;
    in->rules = o->rules;
    in->lengths = o->lengths;
    in->margin_pct = o->margin_pct;
    in->objective = (enum objective)o->objective;
    in->tokens = o->tokens;
    in->command = o->command;
}
