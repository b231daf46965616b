/* fixtures.h: what several unit tests build the same way, in one place. */
#ifndef LLMEM_TEST_FIXTURES_H
#define LLMEM_TEST_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "model.h"

#define FIXTURE_ARGS_MAX 64

/* Splits the space-separated words of line into argv (a copy in buf, len bytes, which must
 * outlive argv; at most FIXTURE_ARGS_MAX words, argv[argc] = NULL). Returns argc. */
int fixture_words(const char *line, char *buf, size_t len, char **argv);

/* Runs fn on the words of line (argv[0] is the first word) with stdout redirected into buf
 * (len bytes, always terminated; may be NULL to drop it); returns fn's result. */
int fixture_run_cmd(int (*fn)(int, char **), const char *line, char *buf, size_t len);

/* The shipped catalog ($LLMEM_DATA, which ctest sets, else datasets/), loaded or the test
 * fails with the loader's message. */
void fixture_shipped_catalog(struct catalog *c);

/* An OPT-style model built by hand (LayerNorm, plain MLP, learned positions with offset 2,
 * tied embeddings, biases everywhere but the head; kv_heads = heads, head_dim = hidden /
 * heads), for tests whose expected counts are worked out on paper. */
struct model_spec fixture_opt_spec(const char *name, int64_t layers, int64_t hidden,
                                   int64_t heads, int64_t intermediate, int64_t vocab,
                                   int64_t max_pos);

#endif
