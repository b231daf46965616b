/* fixtures.c: see fixtures.h. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno: to capture a command's stdout */

#include "fixtures.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

int fixture_run_cmd(int (*fn)(int, char **), const char *line, char *buf, size_t len)
{
    char words[512];
    char *argv[FIXTURE_ARGS_MAX + 1];
    int argc = 0;
    assert_true(strlen(line) < sizeof words);
    memcpy(words, line, strlen(line) + 1);
    for (char *p = words; *p != '\0' && argc < FIXTURE_ARGS_MAX;) {
        argv[argc++] = p;
        while (*p != '\0' && *p != ' ')
            p++;
        if (*p == ' ')
            *p++ = '\0';
    }
    argv[argc] = NULL;

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
