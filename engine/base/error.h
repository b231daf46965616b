/* error.h: where a bad input is, for the `llmem-sweep: <file>:<line>: <what>` messages,
 * and the exit codes of DESIGN.md section 4. */
#ifndef LLMEM_ERROR_H
#define LLMEM_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum exit_code {
    EXIT_OK = 0,
    EXIT_NOTHING_FITS = 1,
    EXIT_USAGE = 2,
    EXIT_BAD_INPUT = 3,
    EXIT_IO = 4,
};

struct input_error {
    char file[512];
    long line;        /* 0 when not known */
    char field[64];   /* column or key, "" when not known */
    char msg[512];
    int code;         /* EXIT_BAD_INPUT or EXIT_IO */
};

/* Fills e (any argument may be NULL/0) and returns -1, for `return input_error_set(...)`. */
int input_error_set(struct input_error *e, int code, const char *file, long line,
                    const char *field, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The one usage error: prints `llmem-sweep: [cmd: ]message (see llmem-sweep [cmd ]--help)`
 * to stderr and returns EXIT_USAGE. cmd is the subcommand, or NULL for the sweep. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints `llmem-sweep: file:line: field: msg` to stderr, through text_printable. */
void input_error_print(const struct input_error *e);

/* Copies in to out (n bytes, always terminated) for a terminal: C0 control characters,
 * DEL and UTF-8-encoded C1 controls become \xNN, so text from an input file (a CSV cell, a
 * config name) cannot move the cursor, clear the screen or retitle the window. Returns out. */
char *text_printable(const char *in, char *out, size_t n);

#endif
