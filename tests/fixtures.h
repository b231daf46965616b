/* fixtures.h: what several unit tests build the same way, in one place. */
#ifndef LLMEM_TEST_FIXTURES_H
#define LLMEM_TEST_FIXTURES_H

#include <stddef.h>

#define FIXTURE_ARGS_MAX 32

/* Runs fn on the space-separated words of line (argv[0] is the first word) with stdout
 * redirected into buf (len bytes, always terminated; may be NULL to drop it); returns fn's
 * result. The words are copied because commands take a mutable argv. */
int fixture_run_cmd(int (*fn)(int, char **), const char *line, char *buf, size_t len);

#endif
