/* html_recipes.c: the headline of the HTML report, one row per model and recipe (what is
 * trained): the fewest GPUs that fit, the best layout (how it runs) under the objective,
 * tokens/s and tokens/s per GPU, the time and GPU-hours for the token count; for recipes
 * that fit nowhere, the closest miss and the nearest changes that make them fit. Read from
 * the answer (answer.h). */
#include <string.h>

#include "html_escape.h"
#include "html_page.h"

static void layout_cells(FILE *f, const struct answer_layout *l)
{
    char layout[96], tok[32], tokg[32];
    html_layout_text(&l->cfg, layout, sizeof layout);
    html_grouped(l->tokens_per_s, tok, sizeof tok);
    html_grouped(l->tokens_per_s_gpu, tokg, sizeof tokg);
    fprintf(f, "<td>%s, micro-batch %d, checkpointing %s</td><td class=\"n\">%.2f</td>"
               "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%.1f</td>"
               "<td class=\"n\">%.1f</td>",
            layout, l->cfg.micro_batch, ckpt_mode_name(&l->cfg), l->peak_gib, tok, tokg,
            l->hours, l->gpu_hours);
}

static void changes_cell(FILE *f, const struct report *r, const struct answer_recipe *k)
{
    fputs("<td colspan=\"7\" class=\"why\"><span class=\"bad\">fits nowhere</span>", f);
    if (k->has_miss) {
        fputs(" \xE2\x80\x94 closest: ", f);
        html_why(f, &k->miss, r->meta.budget_gib, false);
    }
    for (int i = 0; i < k->nchange && i < 4; i++) {
        fputs(i ? "; " : ". To make it fit: ", f);
        html_text(f, k->change[i].what);
        fprintf(f, " (%.2f GiB)", k->change[i].peak_gib);
    }
    if (k->has_miss && !k->nchange)
        fputs(". No single change tried makes it fit.", f);
    fputs("</td>", f);
}

static void recipe_row(FILE *f, const struct report *r, const struct answer_recipe *k)
{
    char recipe[256];
    html_recipe_text(&k->cfg, recipe, sizeof recipe);
    fputs("<tr><td>", f);
    html_text(f, k->model);
    fputs("</td><td>", f);
    html_text(f, recipe);
    fputs("</td>", f);
    if (k->best >= 0) {
        fprintf(f, "<td class=\"n\">%d</td>", k->min_gpus);
        layout_cells(f, &r->by_gpus[k->by0 + (size_t)k->best]);
    } else {
        fputs("<td class=\"n\">\xE2\x80\x94</td>", f);
        changes_cell(f, r, k);
    }
    fputs("</tr>\n", f);
}

void html_recipes(struct html_out *o)
{
    FILE *f = o->f;
    const struct report *r = o->r;
    char tokens[32];
    html_grouped(r->meta.tokens, tokens, sizeof tokens);
    fputs("<section id=\"recipes\" class=\"card\">\n<h2>Per recipe: fewest GPUs and the best "
          "layout</h2>\n", f);
    fprintf(f, "<p class=\"note\">Best = %s (--objective). Time and GPU-hours are for %s "
               "training tokens (--tokens).%s</p>\n",
            r->meta.objective == OBJECTIVE_PER_GPU ? "the most tokens/s per GPU"
            : r->meta.objective == OBJECTIVE_MIN_GPUS ? "the fewest GPUs, then the most tokens/s"
                                                      : "the most tokens/s for the whole job",
            tokens,
            r->nmodels ? "" : " Merged from shard CSVs: the best layouts are those among the "
                              "ranked rows.");
    fputs("<div class=\"tablewrap\"><table class=\"data\" id=\"recipe-table\"><thead><tr>"
          "<th>Model</th><th>Recipe</th><th class=\"n\">Fewest GPUs</th><th>Best layout</th>"
          "<th class=\"n\">Peak GiB</th><th class=\"n\">Tokens/s</th>"
          "<th class=\"n\">Tokens/s per GPU</th><th class=\"n\">Hours</th>"
          "<th class=\"n\">GPU-hours</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < r->nrecipes; i++)
        recipe_row(f, r, &r->recipes[i]);
    fputs("</tbody></table></div>\n</section>\n", f);
}
