/* error.c: input errors and their one-line messages. */
#include "error.h"

#include <stdbool.h>
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

char *text_printable(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 1 < n; p++) {
        bool c1 = p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F;
        if (*p >= 0x20 && *p != 0x7F && !c1) {
            out[o++] = (char)*p;
            continue;
        }
        int w = c1 ? 8 : 4;
        if (o + (size_t)w >= n)
            break;
        o += (size_t)snprintf(out + o, n - o, c1 ? "\\x%02x\\x%02x" : "\\x%02x", p[0], c1 ? p[1] : 0);
        p += c1;
    }
    if (n)
        out[o] = '\0';
    return out;
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024], shown[4 * sizeof msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    text_printable(msg, shown, sizeof shown); /* the message may quote an argument */
    if (cmd)
        fprintf(stderr, "llmem-sweep: %s: %s (see llmem-sweep %s --help)\n", cmd, shown, cmd);
    else
        fprintf(stderr, "llmem-sweep: %s (see --help)\n", shown);
    return EXIT_USAGE;
}

void input_error_print(const struct input_error *e)
{
    char file[4 * sizeof e->file], field[4 * sizeof e->field], msg[4 * sizeof e->msg];
    fputs("llmem-sweep: ", stderr);
    if (e->file[0]) {
        fputs(text_printable(e->file, file, sizeof file), stderr);
        if (e->line > 0)
            fprintf(stderr, ":%ld", e->line);
        fputs(": ", stderr);
    }
    if (e->field[0])
        fprintf(stderr, "%s: ", text_printable(e->field, field, sizeof field));
    fprintf(stderr, "%s\n", text_printable(e->msg, msg, sizeof msg));
}
