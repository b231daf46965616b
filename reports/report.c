/* report.c: rows from a sweep, ranking, and atomic writing (see report.h). */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "speed.h"
#include "units.h"

static void fill_meta(struct report_meta *m, const struct sweep *s, const struct report_inputs *o,
                      const char *gpu_note)
{
    m->version = LLMEM_VERSION;
    snprintf(m->gpu, sizeof m->gpu, "%s", s->gpu->name);
    snprintf(m->gpu_note, sizeof m->gpu_note, "%s", gpu_note ? gpu_note : "");
    m->budget_gib = units_gib(s->budget);
    m->gpu_memory_gib = units_gib(s->gpu->memory_bytes);
    m->budget_bytes = s->budget;
    m->gpu_memory_bytes = s->gpu->memory_bytes;
    m->host_budget_bytes = s->host_budget;
    snprintf(m->stack, sizeof m->stack, "%s%s%s%s%s", stack_name(o->axes.stack), o->axes.liger ? "+liger" : "",
             o->axes.paged ? "+paged" : "", o->axes.pp_interleaved ? "+interleaved" : "",
             stack_feature_suffix(space_features(&o->axes)));
    snprintf(m->rank_mode, sizeof m->rank_mode, "%s", o->llmem_rank ? "llmem" : "speed");
    m->paper = o->paper;
    m->rules = o->rules;
    m->in = o;
    m->stamp = o->stamp;
    m->margin_pct = o->margin_pct;
    m->objective = (enum objective)o->objective;
    m->tokens = o->tokens;
    m->command = o->command;
    if (s->budget > s->gpu->memory_bytes)
        snprintf(m->warning, sizeof m->warning,
                 "the budget (%.2f GiB) is above the memory of the %s (%.2f GiB)",
                 units_gib(s->budget), s->gpu->name, units_gib(s->gpu->memory_bytes));
}

int report_from_sweep(struct report *r, const struct sweep *s, const struct sweep_result *res,
                      const struct report_inputs *o, const char *gpu_note)
{
    memset(r, 0, sizeof *r);
    fill_meta(&r->meta, s, o, gpu_note);
    r->meta.has_counts = true;
    r->meta.space = res->space;
    r->meta.evaluated = res->evaluated;
    r->meta.pruned = res->pruned;
    r->meta.fitting = res->fitting;
    r->meta.host_over = res->host_over;
    return answer_build(r, s, res);
}

void report_free(struct report *r)
{
    answer_free(r);
}

enum out_format report_format_for(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot)
        return FORMAT_AUTO;
    if (!strcmp(dot, ".csv"))
        return FORMAT_CSV;
    if (!strcmp(dot, ".json"))
        return FORMAT_JSON;
    if (!strcmp(dot, ".html") || !strcmp(dot, ".htm"))
        return FORMAT_HTML;
    if (!strcmp(dot, ".txt"))
        return FORMAT_TABLE;
    return FORMAT_AUTO;
}

static int write_to(const struct report *r, enum out_format f, FILE *out)
{
    switch (f) {
    case FORMAT_CSV:
        return report_write_csv(r, out);
    case FORMAT_JSON:
        return report_write_json(r, out);
    case FORMAT_HTML:
        return report_write_html(r, out);
    default:
        return report_write_table(r, out);
    }
}

int report_write(const struct report *r, enum out_format f, const char *path, struct input_error *e)
{
    struct outfile o;
    if (outfile_open(&o, path, e) != 0)
        return -1;
    if (write_to(r, f, o.f) != 0) {
        int err = errno;
        outfile_abort(&o);
        return input_error_set(e, EXIT_IO, o.path, 0, NULL, "write failed: %s", strerror(err));
    }
    return outfile_commit(&o, e);
}

/* The method as a layout names it: a pipeline with its stage count ("pp4"), expert
 * parallelism with its degree ("adp ep8"), so that two rows that differ only there do not
 * read as the same layout. */
void report_method_text(const struct train_config *c, char *buf, size_t n)
{
    int k = snprintf(buf, n, "%s", method_name(c->method));
    if (k > 0 && (size_t)k < n && train_pp(c) > 1)
        k += snprintf(buf + k, n - (size_t)k, "%d", train_pp(c));
    if (k > 0 && (size_t)k < n && c->ep > 1)
        snprintf(buf + k, n - (size_t)k, " ep%d", c->ep);
}
