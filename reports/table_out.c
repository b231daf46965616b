/* table_out.c: the ranked report as a terminal table (stdout when no --out is given). */
#include "report.h"

#include <inttypes.h>

static void recipe_text(const struct train_config *c, char *buf, size_t n)
{
    if (c->finetune == FT_FULL)
        snprintf(buf, n, "full %s %s seq %d", precision_name(c->precision),
                 optimizer_name(c->optimizer), c->seq_len);
    else
        snprintf(buf, n, "%s r%d %s %s seq %d", finetune_name(c->finetune), c->lora_r,
                 precision_name(c->precision), optimizer_name(c->optimizer), c->seq_len);
}

/* One line per recipe: the fewest GPUs, the best layout under the objective and its
 * speed and time; for a recipe that fits nowhere, the nearest changes. */
static void write_recipes(const struct report *r, FILE *f)
{
    fprintf(f, "\nper recipe (best = %s; time for %.3g training tokens)\n",
            objective_name(r->meta.objective), r->meta.tokens);
    fprintf(f, "%-36s %-32s %5s  %-32s %8s %11s %9s %9s %9s\n", "model", "recipe", "fewest",
            "best layout", "peak GiB", "tokens/s", "tok/s/GPU", "hours", "GPU-hours");
    for (size_t i = 0; i < r->nrecipes; i++) {
        const struct answer_recipe *k = &r->recipes[i];
        char recipe[96], layout[80], method[24];
        recipe_text(&k->cfg, recipe, sizeof recipe);
        fprintf(f, "%-36.36s %-32.32s ", k->model, recipe);
        if (k->best < 0) {
            fputs("    -  fits nowhere", f);
            for (int c = 0; c < k->nchange && c < 3; c++)
                fprintf(f, "%s%s (%.2f GiB)", c ? "; " : "; to fit: ", k->change[c].what,
                        k->change[c].peak_gib);
            fputc('\n', f);
            continue;
        }
        const struct answer_layout *b = &r->by_gpus[k->by0 + (size_t)k->best];
        report_method_text(&b->cfg, method, sizeof method);
        snprintf(layout, sizeof layout, "%s x%d tp%d mb%d ckpt %s", method,
                 b->cfg.gpus, b->cfg.tp, b->cfg.micro_batch, ckpt_mode_name(&b->cfg));
        fprintf(f, "%5d  %-32.32s %8.2f %11.0f %9.0f %9.1f %9.1f\n", k->min_gpus,
                layout, b->peak_gib, b->tokens_per_s, b->tokens_per_s_gpu, b->hours, b->gpu_hours);
    }
}

int report_write_table(const struct report *r, FILE *f)
{
    const struct report_meta *m = &r->meta;
    fprintf(f, "GPU %s, budget %.2f GiB per GPU, stack %s%s\n", m->gpu, m->budget_gib, m->stack,
            m->paper ? " (LLMem paper equations)" : "");
    if (m->has_counts)
        fprintf(f, "space %" PRIu64 " points: %" PRIu64 " evaluated, %" PRIu64 " pruned, %" PRIu64
                   " fit\n", m->space, m->evaluated, m->pruned, m->fitting);
    if (m->warning[0])
        fprintf(f, "warning: %s\n", m->warning);
    write_recipes(r, f);
    fprintf(f, "\nlayouts ranked within each recipe\n%4s  %-36s %-10s %4s %3s %5s %5s %-9s %-12s %-4s %-9s %8s %-20s %11s\n", "rank",
            "model", "method", "gpus", "tp", "batch", "seq", "precision", "finetune", "ckpt",
            "optimizer", "peak GiB", "peak phase", "tokens/s");
    for (size_t i = 0; i < r->nrows; i++) {
        const struct report_row *w = &r->rows[i];
        const struct train_config *c = &w->cfg;
        char ft[32], method[24];
        report_method_text(c, method, sizeof method);
        if (c->finetune == FT_FULL)
            snprintf(ft, sizeof ft, "full");
        else
            snprintf(ft, sizeof ft, "%s r%d", finetune_name(c->finetune), c->lora_r);
        fprintf(f, "%4ld  %-36.36s %-10s %4d %3d %5d %5d %-9s %-12s %-4s %-9s %8.2f %-20.20s %11.0f%s\n",
                w->rank, w->model, method, c->gpus, c->tp, c->micro_batch,
                c->seq_len, precision_name(c->precision), ft, ckpt_mode_name(c),
                optimizer_name(c->optimizer), w->peak_gib, w->peak_phase, w->tokens_per_s,
                w->fits ? "" : "  (does not fit)");
    }
    return ferror(f) ? -1 : 0;
}
