/* html_table.c: the ranked table of the HTML report (sortable by the page's script:
 * numeric cells carry their value in data-v) and the link to the ranked CSV. */
#include <string.h>

#include "html_escape.h"
#include "html_page.h"

/* The ranked table: every CSV column that means something to a reader, the results
 * first so the important part fits a screen; budget_gib is in the header, the exact
 * tie-break columns stay in the CSV. */
enum col_id {
    COL_RANK, COL_MODEL, COL_METHOD, COL_GPUS, COL_TP, COL_DP, COL_MB, COL_SEQ, COL_TOKENS,
    COL_PEAK, COL_HEADROOM, COL_PHASE, COL_PRECISION, COL_FINETUNE, COL_LORA_R, COL_TARGETS,
    COL_QUANT, COL_CKPT, COL_OPTIMIZER, COL_GLOBAL, COL_SAMPLES, COL_STEP, COL_TERM0,
    COL_RULE = COL_TERM0 + TERM_COUNT, COL_FITS, COL_TIE, COL_COUNT
};

struct column {
    const char *key, *label; /* key: the CSV column name */
    bool num;
};

static const struct column columns[COL_COUNT] = {
    [COL_RANK] = {"rank", "#", true},
    [COL_MODEL] = {"model", "Model", false},
    [COL_METHOD] = {"method", "Method", false},
    [COL_GPUS] = {"gpus", "GPUs", true},
    [COL_TP] = {"tp", "TP", true},
    [COL_DP] = {"dp", "DP", true},
    [COL_MB] = {"micro_batch", "Micro-batch", true},
    [COL_SEQ] = {"seq_len", "Seq", true},
    [COL_TOKENS] = {"tokens_per_s", "Tokens/s", true},
    [COL_PEAK] = {"peak_gib", "Peak GiB", true},
    [COL_HEADROOM] = {"headroom_gib", "Headroom GiB", true},
    [COL_PHASE] = {"peak_phase", "Peak phase", false},
    [COL_PRECISION] = {"precision", "Precision", false},
    [COL_FINETUNE] = {"finetune", "Fine-tune", false},
    [COL_LORA_R] = {"lora_r", "LoRA r", true},
    [COL_TARGETS] = {"lora_targets", "Targets", false},
    [COL_QUANT] = {"quant", "Quant", false},
    [COL_CKPT] = {"grad_ckpt", "Ckpt", false},
    [COL_OPTIMIZER] = {"optimizer", "Optimizer", false},
    [COL_GLOBAL] = {"global_batch", "Global batch", true},
    [COL_SAMPLES] = {"samples_per_s", "Samples/s", true},
    [COL_STEP] = {"step_time_s", "Step s", true},
    [COL_TERM0 + TERM_BASE] = {"base_gib", "Base GiB", true},
    [COL_TERM0 + TERM_PARAMS] = {"params_gib", "Weights GiB", true},
    [COL_TERM0 + TERM_GRADS] = {"grads_gib", "Grads GiB", true},
    [COL_TERM0 + TERM_OPTIMIZER] = {"optimizer_gib", "Optimizer GiB", true},
    [COL_TERM0 + TERM_ACTIVATIONS] = {"activations_gib", "Activations GiB", true},
    [COL_TERM0 + TERM_LOGITS] = {"logits_gib", "Logits GiB", true},
    [COL_TERM0 + TERM_COMM] = {"comm_buffers_gib", "Comm GiB", true},
    [COL_RULE] = {"rule", "Rule", false},
    [COL_FITS] = {"fits", "Fits", false},
    [COL_TIE] = {"speed_within_error", "Speed vs fastest", false},
};

/* Columns that say nothing for these rows stay out: the rule without --rules, fits when
 * every row fits. */
static bool column_shown(const struct report *r, int col)
{
    bool rule = false, nofit = false, tie = false;
    for (size_t i = 0; i < r->nrows; i++) {
        rule |= r->rows[i].rule[0] != '\0';
        nofit |= !r->rows[i].fits;
        tie |= r->rows[i].speed_tie;
    }
    return col == COL_RULE ? rule : col == COL_FITS ? nofit : col == COL_TIE ? tie : true;
}

static void td_int(FILE *f, long v)
{
    fprintf(f, "<td class=\"n\" data-v=\"%ld\">%ld</td>", v, v);
}

static void td_fix(FILE *f, double v, int decimals)
{
    fprintf(f, "<td class=\"n\" data-v=\"%.6f\">%.*f</td>", v, decimals, v);
}

static void td_grouped(FILE *f, double v)
{
    char b[40];
    html_grouped(v, b, sizeof b);
    fprintf(f, "<td class=\"n\" data-v=\"%.3f\">%s</td>", v, b);
}

static void td_text(FILE *f, const char *s)
{
    fputs("<td>", f);
    html_text(f, s);
    fputs("</td>", f);
}

/* The tuning cells, where full fine-tuning has no LoRA rank or targets to show. */
static void write_tuning_cell(FILE *f, const struct train_config *c, int col)
{
    char t[96];
    switch (col) {
    case COL_PRECISION: td_text(f, precision_name(c->precision)); break;
    case COL_FINETUNE: td_text(f, finetune_name(c->finetune)); break;
    case COL_LORA_R:
        if (c->lora_r)
            td_int(f, c->lora_r);
        else
            fputs("<td class=\"n\" data-v=\"0\">\xE2\x80\x93</td>", f);
        break;
    case COL_TARGETS: targets_format(c->lora_targets, t, sizeof t); td_text(f, t); break;
    case COL_QUANT: td_text(f, quant_name(c->quant)); break;
    case COL_CKPT: td_text(f, ckpt_mode_name(c)); break;
    default: td_text(f, optimizer_name(c->optimizer)); break;
    }
}

static void write_cell(FILE *f, const struct report_row *w, int col)
{
    const struct train_config *c = &w->cfg;
    if (col >= COL_TERM0 && col < COL_TERM0 + TERM_COUNT) {
        td_fix(f, w->term_gib[col - COL_TERM0], 3);
        return;
    }
    switch (col) {
    case COL_RANK: td_int(f, w->rank); break;
    case COL_MODEL: td_text(f, w->model); break;
    case COL_METHOD: {
        char method[24];
        report_method_text(c, method, sizeof method);
        td_text(f, method);
        break;
    }
    case COL_GPUS: td_int(f, c->gpus); break;
    case COL_TP: td_int(f, c->tp); break;
    case COL_DP: td_int(f, c->dp); break;
    case COL_MB: td_int(f, c->micro_batch); break;
    case COL_SEQ: td_int(f, c->seq_len); break;
    case COL_TOKENS: td_grouped(f, w->tokens_per_s); break;
    case COL_PEAK: td_fix(f, w->peak_gib, 3); break;
    case COL_HEADROOM: td_fix(f, w->headroom_gib, 3); break;
    case COL_PHASE: td_text(f, w->peak_phase); break;
    case COL_GLOBAL: td_int(f, (long)w->global_batch); break;
    case COL_SAMPLES: td_fix(f, w->samples_per_s, 2); break;
    case COL_STEP: td_fix(f, w->step_time_s, 4); break;
    case COL_RULE: td_text(f, w->rule); break;
    case COL_FITS: td_text(f, w->fits ? "yes" : "no"); break;
    case COL_TIE: td_text(f, w->speed_tie ? "within the error" : ""); break;
    default: write_tuning_cell(f, c, col); break;
    }
}

static void write_table_head(FILE *f, const bool *shown)
{
    fputs("<thead><tr>", f);
    for (int i = 0; i < COL_COUNT; i++)
        if (shown[i])
            fprintf(f, "<th%s data-key=\"%s\"%s><button type=\"button\">%s</button></th>",
                    columns[i].num ? " class=\"n\"" : "", columns[i].key,
                    i == 0 ? " aria-sort=\"ascending\"" : "", columns[i].label);
    fputs("</tr></thead>\n", f);
}

static void write_rows(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    bool shown[COL_COUNT];
    for (int i = 0; i < COL_COUNT; i++)
        shown[i] = column_shown(r, i);
    size_t kept = 0;
    for (size_t i = 0; i < r->nrows; i++)
        kept += r->rows[i].rank <= HTML_TABLE_RANKS;
    fprintf(f, "<section class=\"card\" id=\"ranked\">\n<h2>Layouts ranked within each "
               "recipe</h2>\n<p class=\"note\">%zu row%s, recipe by recipe, best layout first "
               "(rank restarts at 1 in each recipe: two recipes are never compared)", kept,
            kept == 1 ? "" : "s");
    if (kept < r->nrows)
        fprintf(f, "; the first %d layouts of each recipe are shown, all %zu rows are in the "
                   "CSV", HTML_TABLE_RANKS, r->nrows);
    fputs(". Click a column header to sort (numbers sort by value); memory columns are the "
          "terms of the peak phase, per GPU, in GiB; tokens/s and samples/s are for the whole "
          "job.</p>\n", f);
    if (!r->nrows) {
        fputs("<p>No rows.</p>\n", f);
        return;
    }
    fputs("<div class=\"tablewrap\"><table class=\"data sortable\" id=\"ranked-table\">\n", f);
    write_table_head(f, shown);
    fputs("<tbody>\n", f);
    for (size_t i = 0; i < r->nrows; i++) {
        const struct report_row *w = &r->rows[i];
        if (w->rank > HTML_TABLE_RANKS)
            continue;
        fprintf(f, "<tr data-rank=\"%ld\"%s>", w->rank, w->fits ? "" : " class=\"nofit\"");
        for (int c = 0; c < COL_COUNT; c++)
            if (shown[c])
                write_cell(f, w, c);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
}

/* The CSV link: the CSV this run wrote, else the HTML file's name with .csv. Only the
 * base name is printed, so the page does not depend on the folder it was written to. */
static const char *html_path(const struct report_inputs *opt)
{
    for (int i = 0; i < opt->nouts; i++)
        if (report_format_for(opt->outs[i]) == FORMAT_CSV && opt->nouts > 1)
            return opt->outs[i];
    for (int i = 0; i < opt->nouts; i++)
        if (report_format_for(opt->outs[i]) == FORMAT_HTML ||
            (opt->nouts == 1 && opt->format_html))
            return opt->outs[i];
    return NULL;
}

static void write_csv_link(struct html_out *o)
{
    FILE *f = o->f;
    const struct report_inputs *opt = o->r->meta.in;
    const char *path = opt ? html_path(opt) : NULL;
    if (!path) {
        fputs("<p class=\"note\">The same rows with every column are in the ranked CSV: add "
              "<code>--out report.csv</code> to the command.</p>\n</section>\n", f);
        return;
    }
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    char csv[4096], *base;
    snprintf(csv, sizeof csv, "%.*s.csv", (int)(stem < 4000 ? stem : 4000), path);
    base = strrchr(csv, '/') ? strrchr(csv, '/') + 1 : csv;
    bool written = false;
    for (int i = 0; i < opt->nouts; i++)
        written |= !strcmp(opt->outs[i], csv);
    fputs("<p class=\"note\">The same rows with every column (exact bytes, tie-break index): "
          "<a href=\"./", f);
    html_url_segment(f, base);
    fputs("\" download>", f);
    html_text(f, base);
    fputs("</a>", f);
    if (written)
        fputs(", written next to this file.</p>\n</section>\n", f);
    else {
        fputs(" \xE2\x80\x94 written only when the command also has <code>--out ", f);
        html_text(f, base);
        fputs("</code>.</p>\n</section>\n", f);
    }
}

void html_table(struct html_out *o)
{
    write_rows(o);
    write_csv_link(o);
}
