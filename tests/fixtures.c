/* fixtures.c: see fixtures.h. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno: to capture a command's stdout */

#include "fixtures.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#ifndef LLMEM_SOURCE_DIR
#define LLMEM_SOURCE_DIR "."
#endif

int fixture_words(const char *line, char *buf, size_t len, char **argv)
{
    int argc = 0;
    size_t n = strlen(line);
    assert_true(n < len);
    memcpy(buf, line, n + 1);
    for (char *p = buf; *p != '\0' && argc < FIXTURE_ARGS_MAX;) {
        argv[argc++] = p;
        while (*p != '\0' && *p != ' ')
            p++;
        if (*p == ' ')
            *p++ = '\0';
    }
    argv[argc] = NULL;
    return argc;
}

int fixture_run_cmd(int (*fn)(int, char **), const char *line, char *buf, size_t len)
{
    char words[512];
    char *argv[FIXTURE_ARGS_MAX + 1];
    int argc = fixture_words(line, words, sizeof words, argv);

    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDOUT_FILENO) >= 0);
    int rc = fn(argc, argv);
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    if (buf && len) {
        rewind(tmp);
        size_t n = fread(buf, 1, len - 1, tmp);
        buf[n] = '\0';
    }
    fclose(tmp);
    return rc;
}

void fixture_shipped_catalog(struct catalog *c)
{
    const char *dir = getenv("LLMEM_DATA");
    struct input_error e;
    if (catalog_load(dir ? dir : LLMEM_SOURCE_DIR "/datasets", c, &e) != 0)
        fail_msg("%s:%ld: %s: %s", e.file, e.line, e.field, e.msg);
}

struct model_spec fixture_opt_spec(const char *name, int64_t layers, int64_t hidden,
                                   int64_t heads, int64_t intermediate, int64_t vocab,
                                   int64_t max_pos)
{
    struct model_spec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    snprintf(m.model_type, sizeof m.model_type, "opt");
    m.layers = layers;
    m.hidden = hidden;
    m.heads = m.kv_heads = heads;
    m.head_dim = hidden / heads;
    m.intermediate = intermediate;
    m.vocab = vocab;
    m.max_pos = max_pos;
    m.pos_offset = 2;
    m.norms_per_layer = 2;
    m.norm = NORM_LAYERNORM;
    m.mlp = MLP_PLAIN;
    m.pos = POS_LEARNED;
    m.tied = true;
    m.qkv_bias = m.o_bias = m.mlp_bias = true;
    return m;
}
