/* error.c: input errors and their one-line messages. */
#include "error.h"

#include <stdio.h>
#include <string.h>

int input_error_set(struct input_error *e, int code, const char *file, long line,
                    const char *field, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->code = code;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    e->line = line;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

void input_error_print(const struct input_error *e)
{
    fputs("llmem-sweep: ", stderr);
    if (e->file[0]) {
        fputs(e->file, stderr);
        if (e->line > 0)
            fprintf(stderr, ":%ld", e->line);
        fputs(": ", stderr);
    }
    if (e->field[0])
        fprintf(stderr, "%s: ", e->field);
    fprintf(stderr, "%s\n", e->msg);
}
