/* table_out.c: the ranked report as a terminal table (stdout when no --out is given). */
#include "report.h"

#include <inttypes.h>

int report_write_table(const struct report *r, FILE *f)
{
    const struct report_meta *m = &r->meta;
    fprintf(f, "GPU %s, budget %.2f GiB per GPU, stack %s%s\n", m->gpu, m->budget_gib, m->stack,
            m->paper ? " (LLMem paper equations)" : "");
    if (m->has_counts)
        fprintf(f, "space %" PRIu64 " points: %" PRIu64 " evaluated, %" PRIu64 " pruned, %" PRIu64
                   " fit\n", m->space, m->evaluated, m->pruned, m->fitting);
    fprintf(f, "\n%4s  %-36s %-6s %4s %3s %5s %5s %-9s %-12s %-4s %-9s %8s %-20s %11s\n", "rank",
            "model", "method", "gpus", "tp", "batch", "seq", "precision", "finetune", "ckpt",
            "optimizer", "peak GiB", "peak phase", "tokens/s");
    for (size_t i = 0; i < r->nrows; i++) {
        const struct report_row *w = &r->rows[i];
        const struct train_config *c = &w->cfg;
        char ft[32];
        if (c->finetune == FT_FULL)
            snprintf(ft, sizeof ft, "full");
        else
            snprintf(ft, sizeof ft, "%s r%d", finetune_name(c->finetune), c->lora_r);
        fprintf(f, "%4ld  %-36.36s %-6s %4d %3d %5d %5d %-9s %-12s %-4s %-9s %8.2f %-20.20s %11.0f%s\n",
                w->rank, w->model, method_name(c->method), c->gpus, c->tp, c->micro_batch,
                c->seq_len, precision_name(c->precision), ft, c->grad_ckpt ? "on" : "off",
                optimizer_name(c->optimizer), w->peak_gib, w->peak_phase, w->tokens_per_s,
                w->fits ? "" : "  (does not fit)");
    }
    return ferror(f) ? -1 : 0;
}
