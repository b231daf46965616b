/* hf_config.c: a HuggingFace config.json -> struct model_spec, with jansson: the file, its
 * JSON (non-finite numbers, the line of a bad key), the common dimensions and the errors.
 * Each model_type's keys and class defaults are in hf_families.c (the transformers
 * configuration classes); what the modelling code fixes regardless of the file comes from
 * model_family_defaults() (model.c). */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: stat, realpath, strerror_r */

#include "hf_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "hf_reader.h"

#define PATH_BUF 4096

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                               */

/* strlcpy: copies what fits, always terminates (long paths are cut, on purpose). */
static void copy_str(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static void err_init(struct input_error *err, const char *file)
{
    memset(err, 0, sizeof *err);
    err->code = EXIT_BAD_INPUT;
    copy_str(err->file, sizeof err->file, file ? file : "<buffer>");
}

void hf_set_err(struct input_error *err, const char *key, const char *fmt, ...)
{
    va_list ap;
    copy_str(err->field, sizeof err->field, key ? key : "");
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

/* What a bad value is, for "must be ..., not <what>". */
static void describe(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%g", json_real_value(v));
    else if (json_is_string(v))
        snprintf(buf, n, "a string");
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_object(v))
        snprintf(buf, n, "an object");
    else
        snprintf(buf, n, "an array");
}

/* ------------------------------------------------------------------------------------ */
/* Infinity / NaN pre-pass                                                              */

static bool ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* Length of a bare Infinity, -Infinity or NaN token at s[i], else 0. */
static size_t nonfinite_len(const char *s, size_t len, size_t i)
{
    static const char *const tokens[] = {"-Infinity", "Infinity", "NaN"};
    if (i > 0 && ident_char(s[i - 1]))
        return 0;
    for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++) {
        size_t n = strlen(tokens[t]);
        if (len - i >= n && memcmp(s + i, tokens[t], n) == 0 &&
            (i + n == len || !ident_char(s[i + n])))
            return n;
    }
    return 0;
}

/* Python's json module writes Infinity and NaN by default and real configs carry them
 * (Mamba2 / Nemotron-H "time_step_limit": [0.0, Infinity]; transformers PR #42959), but
 * jansson rejects them. Outside strings they become null; (-)Infinity is padded with
 * spaces so later columns in error messages stay true. The memory model reads none of
 * those fields. Returns a malloc'ed copy, or NULL when memory runs out. */
static char *replace_nonfinite(const char *s, size_t len, size_t *out_len)
{
    char *out = malloc(len + len / 3 + 1); /* each 3-byte NaN grows by one */
    size_t o = 0, i = 0;
    bool in_string = false;
    if (!out)
        return NULL;
    while (i < len) {
        char ch = s[i];
        size_t n = in_string ? 0 : nonfinite_len(s, len, i);
        if (n) {
            memcpy(out + o, "null", 4);
            o += 4;
            for (size_t pad = 4; pad < n; pad++)
                out[o++] = ' ';
            i += n;
            continue;
        }
        out[o++] = ch;
        i++;
        if (in_string && ch == '\\' && i < len)
            out[o++] = s[i++]; /* the escaped byte, so \" does not end the string */
        else if (ch == '"')
            in_string = !in_string;
    }
    *out_len = o;
    return out;
}

/* model_check()'s names for the dimensions of enum field (hf_reader.h). */
static const char *const field_names[F_COUNT] = {
    "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab", "max_pos",
    "emb_dim", "norms_per_layer", "experts", "experts_per_tok", "moe_intermediate",
    "shared_intermediate", "dense_layers", "kv_lora_rank",
};


/* ------------------------------------------------------------------------------------ */
/* Typed getters                                                                        */

/* The first non-null value among k's keys; *found names it. */
static json_t *lookup(const struct reader *r, const struct keyspec *k, const char **found)
{
    for (size_t i = 0; i < sizeof k->look / sizeof k->look[0] && k->look[i]; i++) {
        json_t *v = json_object_get(r->root, k->look[i]);
        if (v && !json_is_null(v)) {
            *found = k->look[i];
            return v;
        }
    }
    return NULL;
}

/* A dimension: an integer in [1, 2^24]; an integral real (4096.0) is accepted too. */
static bool to_dim(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 1 || i > DIM_LIMIT)
            return false;
        *out = (int64_t)i;
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 1.0 && d <= (double)DIM_LIMIT) || d != (double)(int64_t)d)
            return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

static void missing_key(struct reader *r, const struct keyspec *k)
{
    const char *alt = NULL;
    for (size_t i = 0; i < sizeof k->look / sizeof k->look[0] && k->look[i]; i++)
        if (strcmp(k->look[i], k->name) != 0)
            alt = k->look[i];
    if (alt)
        hf_set_err(r->err, k->name, "missing key \"%s\" (or \"%s\")", k->name, alt);
    else
        hf_set_err(r->err, k->name, "missing key \"%s\"", k->name);
}

int hf_get_dim(struct reader *r, const struct keyspec *k, int64_t dflt, enum field f,
                   int64_t *out)
{
    const char *key = NULL;
    json_t *v = k->name ? lookup(r, k, &key) : NULL;
    if (!v) {
        if (dflt < 0 && k->name) {
            missing_key(r, k);
            return -1;
        }
        *out = dflt;
        return 0;
    }
    if (!to_dim(v, out)) {
        char what[48];
        describe(v, what, sizeof what);
        hf_set_err(r->err, key, "key \"%s\" must be an integer from 1 to %lld, not %s", key,
                (long long)DIM_LIMIT, what);
        return -1;
    }
    r->src[f] = key;
    return 0;
}

int hf_get_bool(struct reader *r, const char *key, bool dflt, bool *out)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) {
        char what[48];
        describe(v, what, sizeof what);
        hf_set_err(r->err, key, "key \"%s\" must be true or false, not %s", key, what);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* The reader                                                                           */

static void unsupported_type(struct input_error *err, const char *type)
{
    char list[400] = "", shown[48];
    size_t used = 0;
    for (size_t i = 0; model_supported_types[i] && used < sizeof list; i++) {
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                         model_supported_types[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    text_printable(type, shown, sizeof shown); /* a hostile file sends no terminal escapes */
    hf_set_err(err, "model_type", "unsupported model_type \"%s\" (supported: %s)", shown, list);
}

/* model_type -> family defaults and the key table. */
static int read_type(struct reader *r, const struct hf_class **cls)
{
    json_t *t = json_object_get(r->root, "model_type");
    if (!t) {
        hf_set_err(r->err, "model_type", "missing key \"model_type\"");
        return -1;
    }
    if (!json_is_string(t)) {
        hf_set_err(r->err, "model_type", "key \"model_type\" must be a string");
        return -1;
    }
    /* Gemma3Config (Gemma3ForConditionalGeneration) keeps the language model's dimensions
     * in text_config, a Gemma3TextConfig */
    *cls = hf_class_find(strcmp(json_string_value(t), "gemma3") == 0 ? "gemma3_text"
                                                                   : json_string_value(t));
    if (!*cls || !model_family_defaults(json_string_value(t), r->m)) {
        unsupported_type(r->err, json_string_value(t));
        return -1;
    }
    return 0;
}

/* Gemma3ForConditionalGeneration: the text part is what a causal-LM fine-tune trains
 * (Gemma3ForCausalLM loads it alone); the vision tower and projector are not counted. */
static int multimodal_text(struct reader *r)
{
    json_t *text;
    if (strcmp(r->m->model_type, "gemma3") != 0)
        return 0;
    text = json_object_get(r->root, "text_config");
    if (!json_is_object(text)) {
        hf_set_err(r->err, "text_config", text ? "key \"text_config\" must be an object"
                                             : "missing key \"text_config\"");
        return -1;
    }
    r->root = text;
    return 0;
}

static void read_name(struct reader *r, const char *fallback)
{
    json_t *v = json_object_get(r->root, "_name_or_path");
    const char *name = json_is_string(v) ? json_string_value(v) : "";
    copy_str(r->m->name, sizeof r->m->name, *name ? name : fallback);
}

/* head_dim: the key, else the class default, else hidden / heads, which HF classes that
 * derive it require to divide (e.g. GPTNeoXAttention, BloomAttention raise otherwise). */
static int read_head_dim(struct reader *r, const struct hf_class *c)
{
    struct model_spec *m = r->m;
    if (hf_get_dim(r, &c->head_dim, 0, F_HEAD_DIM, &m->head_dim) != 0)
        return -1;
    if (m->head_dim == 0)
        m->head_dim = c->head_dim_default;
    if (m->head_dim != 0)
        return 0;
    if (m->hidden % m->heads != 0) {
        hf_set_err(r->err, r->src[F_HEADS], "%s %lld is not divisible by %s %lld",
                r->src[F_HIDDEN], (long long)m->hidden, r->src[F_HEADS], (long long)m->heads);
        return -1;
    }
    m->head_dim = m->hidden / m->heads;
    r->src[F_HEAD_DIM] = r->src[F_HEADS];
    return 0;
}

static int read_dims(struct reader *r, const struct hf_class *c)
{
    static const struct keyspec vocab_key = K1("vocab_size");
    struct model_spec *m = r->m;
    if (hf_get_dim(r, &vocab_key, -1, F_VOCAB, &m->vocab) != 0 ||
        hf_get_dim(r, &c->hidden, -1, F_HIDDEN, &m->hidden) != 0 ||
        hf_get_dim(r, &c->layers, -1, F_LAYERS, &m->layers) != 0 ||
        hf_get_dim(r, &c->heads, -1, F_HEADS, &m->heads) != 0 ||
        hf_get_dim(r, &c->kv_heads, m->heads, F_KV_HEADS, &m->kv_heads) != 0 ||
        hf_get_dim(r, &c->intermediate, c->ffn_4x ? 4 * m->hidden : -1, F_INTERMEDIATE,
                &m->intermediate) != 0 ||
        hf_get_dim(r, &c->max_pos, c->max_pos_default, F_MAX_POS, &m->max_pos) != 0)
        return -1;
    /* Derived dimensions blame the keys they derive from. */
    if (!r->src[F_KV_HEADS])
        r->src[F_KV_HEADS] = r->src[F_HEADS];
    if (!r->src[F_INTERMEDIATE])
        r->src[F_INTERMEDIATE] = c->intermediate.name ? c->intermediate.name : r->src[F_HIDDEN];
    return read_head_dim(r, c);
}

/* tie_word_embeddings, absent: the family default, which is the config class default
 * (PretrainedConfig's True unless the class overrides it, e.g. LlamaConfig False).
 * dtype (transformers >= 4.56) and torch_dtype are informational and not read. */
static int read_flags(struct reader *r)
{
    return hf_get_bool(r, "tie_word_embeddings", r->m->tied, &r->m->tied);
}

/* model_check's verdict, reported against the config key the bad field came from. */
static int check_spec(struct reader *r)
{
    const char *bad = model_check(r->m);
    const char *key;
    if (!bad)
        return 0;
    key = bad;
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(field_names[f], bad) == 0 && r->src[f])
            key = r->src[f];
    hf_set_err(r->err, key, "dimensions do not fit together: %s (key \"%s\") is out of range or "
            "does not divide the others", bad, key);
    return -1;
}

static int read_root(json_t *root, const char *fallback_name, struct model_spec *m,
                     struct input_error *err)
{
    struct reader r = {.root = root, .m = m, .err = err};
    const struct hf_class *c = NULL;
    if (!json_is_object(root)) {
        hf_set_err(err, "", "the top level must be a JSON object");
        return -1;
    }
    if (read_type(&r, &c) != 0)
        return -1;
    read_name(&r, fallback_name);
    if (multimodal_text(&r) != 0)
        return -1;
    if (read_dims(&r, c) != 0 || read_flags(&r) != 0 || (c->extra && c->extra(&r) != 0))
        return -1;
    return check_spec(&r);
}

static void syntax_error(struct input_error *err, const json_error_t *je)
{
    err->line = je->line > 0 ? je->line : 0;
    if (json_error_code(je) == json_error_duplicate_key) {
        /* jansson says: duplicate object key near '"name"' */
        const char *q = strstr(je->text, "'\"");
        char key[64] = "";
        if (q) {
            size_t n = strcspn(q + 2, "\"");
            snprintf(key, sizeof key, "%.*s", (int)(n < sizeof key ? n : sizeof key - 1),
                     q + 2);
        }
        hf_set_err(err, key, "duplicate key \"%s\"", key);
        return;
    }
    if (je->column > 0)
        hf_set_err(err, "", "invalid JSON at column %d: %s", je->column, je->text);
    else
        hf_set_err(err, "", "invalid JSON: %s", je->text);
}

/* The line of a key's first `"key":` in the text, for errors about its value (jansson keeps
 * no positions); 0 when the key is not there (a missing key has no line). */
static long key_line(const char *buf, size_t len, const char *key)
{
    size_t k = strlen(key);
    long line = 1;
    for (size_t i = 0; k && i + k + 2 <= len; i++) {
        if (buf[i] == '\n')
            line++;
        if (buf[i] != '"' || memcmp(buf + i + 1, key, k) != 0 || buf[i + 1 + k] != '"')
            continue;
        size_t j = i + k + 2;
        while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\r' || buf[j] == '\n'))
            j++;
        if (j < len && buf[j] == ':')
            return line;
    }
    return 0;
}

/* Parses len bytes; err->file is already set. */
static int parse_buffer(const char *buf, size_t len, const char *fallback_name,
                        struct model_spec *m, struct input_error *err)
{
    struct model_spec spec = {0};
    json_error_t je;
    size_t clean_len = 0;
    char *clean;
    json_t *root;
    int rc;
    if (len > HF_CONFIG_MAX_BYTES) {
        hf_set_err(err, "", "file is larger than %zu MiB", HF_CONFIG_MAX_BYTES >> 20);
        return -1;
    }
    clean = replace_nonfinite(buf ? buf : "", buf ? len : 0, &clean_len);
    if (!clean) {
        hf_set_err(err, "", "out of memory");
        return -1;
    }
    root = json_loadb(clean, clean_len, JSON_REJECT_DUPLICATES, &je);
    free(clean);
    if (!root) {
        syntax_error(err, &je);
        return -1;
    }
    rc = read_root(root, fallback_name, &spec, err);
    json_decref(root);
    if (rc != 0 && err->field[0])
        err->line = key_line(buf ? buf : "", buf ? len : 0, err->field);
    if (rc == 0)
        *m = spec; /* *m is untouched on error */
    return rc;
}

int hf_config_parse(const char *buf, size_t len, const char *name, struct model_spec *m,
                    struct input_error *err)
{
    err_init(err, name);
    return parse_buffer(buf, len, name ? name : "<buffer>", m, err);
}

/* ------------------------------------------------------------------------------------ */
/* Files                                                                                */

static void io_error(struct input_error *err, const char *what, int errnum)
{
    char reason[128] = "unknown error";
    if (strerror_r(errnum, reason, sizeof reason) != 0)
        snprintf(reason, sizeof reason, "error %d", errnum);
    hf_set_err(err, "", "%s: %s", what, reason);
}

/* path, or path/config.json when path is a folder, into file. */
static int resolve_path(const char *path, char *file, size_t size, struct input_error *err)
{
    struct stat st;
    size_t n = strlen(path);
    if (stat(path, &st) != 0) {
        io_error(err, "cannot open", errno);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        copy_str(file, size, path);
        return 0;
    }
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n >= size - sizeof "/config.json") {
        hf_set_err(err, "", "path is too long");
        return -1;
    }
    snprintf(file, size, "%.*s/config.json", (int)n, path);
    copy_str(err->file, sizeof err->file, file);
    if (stat(file, &st) != 0) {
        io_error(err, "folder has no config.json", errno);
        return -1;
    }
    return 0;
}

/* Appends up to cap - *n bytes from f to *buf, growing it; returns false when memory runs out. */
static bool read_more(FILE *f, char **buf, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t grown = *cap * 2 > HF_CONFIG_MAX_BYTES + 1 ? HF_CONFIG_MAX_BYTES + 1 : *cap * 2;
        char *b = realloc(*buf, grown);
        if (!b)
            return false;
        *buf = b;
        *cap = grown;
    }
    *n += fread(*buf + *n, 1, *cap - *n, f);
    return true;
}

/* The whole file, at most HF_CONFIG_MAX_BYTES (one byte more is read to tell). */
static int read_file(const char *file, char **buf, size_t *len, struct input_error *err)
{
    FILE *f = fopen(file, "rb");
    size_t n = 0, cap = 64 * 1024;
    char *b;
    bool ok;
    if (!f) {
        io_error(err, "cannot open", errno);
        return -1;
    }
    b = malloc(cap);
    ok = b != NULL;
    while (ok && n <= HF_CONFIG_MAX_BYTES && !feof(f) && !ferror(f))
        ok = read_more(f, &b, &n, &cap);
    if (!ok)
        hf_set_err(err, "", "out of memory");
    else if (ferror(f))
        io_error(err, "read error", errno);
    else if (n > HF_CONFIG_MAX_BYTES)
        hf_set_err(err, "", "file is larger than %zu MiB", HF_CONFIG_MAX_BYTES >> 20);
    fclose(f);
    if (!ok || *err->msg) {
        free(b);
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* The repository id of a Hugging Face hub cache snapshot: huggingface_hub keeps a model's files
 * in <cache>/models--ORG--NAME/snapshots/<commit>/ (src/huggingface_hub/file_download.py
 * @003956d3: repo_folder_name joins "models" and the id's parts with REPO_ID_SEPARATOR "--",
 * and hf_hub_download writes under snapshots/<commit_hash>), and an id never holds "--"
 * (utils/_validators.py validate_repo_id). Copies ORG/NAME into out when dir is such a
 * snapshot. Returns 1 then, else 0 (out untouched). */
static int hub_repo_id(const char *dir, char *out, size_t size)
{
    static const char snaps[] = "/snapshots/", repo[] = "models--";
    const char *commit = strrchr(dir, '/');
    if (!commit || commit - dir < (ptrdiff_t)sizeof snaps - 1 ||
        strncmp(commit - (sizeof snaps - 2), snaps, sizeof snaps - 2) != 0)
        return 0;
    const char *end = commit - (sizeof snaps - 2); /* the '/' before "snapshots" */
    const char *start = end;
    while (start > dir && start[-1] != '/')
        start--;
    if ((size_t)(end - start) <= sizeof repo - 1 || strncmp(start, repo, sizeof repo - 1) != 0)
        return 0;
    size_t k = 0;
    for (const char *c = start + sizeof repo - 1; c < end && k + 1 < size; c++) {
        if (c[0] == '-' && c[1] == '-' && c + 1 < end)
            out[k++] = '/', c++;
        else
            out[k++] = *c;
    }
    out[k] = '\0';
    return 1;
}

/* The name of the folder holding file, or the repository id of the hub cache snapshot that
 * holds it. Returns 1 for a repository id, else 0. */
static int folder_name(const char *file, char *out, size_t size)
{
    char dir[PATH_BUF];
    const char *slash = strrchr(file, '/');
    char *real;
    const char *base;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == file ? 1 : (int)(slash - file), file);
    real = realpath(dir, NULL);
    if (hub_repo_id(real ? real : dir, out, size)) {
        free(real);
        return 1;
    }
    base = strrchr(real ? real : dir, '/');
    base = base ? base + 1 : (real ? real : dir);
    copy_str(out, size, *base ? base : "config");
    free(real);
    return 0;
}

int hf_config_load(const char *path, struct model_spec *m, struct input_error *err)
{
    char file[PATH_BUF], name[MODEL_NAME_MAX];
    char *buf = NULL;
    size_t len = 0;
    int rc;
    err_init(err, path);
    if (!path || !*path) {
        hf_set_err(err, "", "no path given");
        return -1;
    }
    if (resolve_path(path, file, sizeof file, err) != 0 ||
        read_file(file, &buf, &len, err) != 0)
        return -1;
    const int hub = folder_name(file, name, sizeof name);
    rc = parse_buffer(buf, len, name, m, err);
    /* a snapshot's repository id before _name_or_path, which may be the uploader's own path */
    if (rc == 0 && hub)
        copy_str(m->name, sizeof m->name, name);
    free(buf);
    return rc;
}
