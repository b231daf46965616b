/* cmd_validate.c: `llmem-sweep validate`: predict measured rows, print per-row errors and
 * a summary per source (median, mean, max absolute % error, signed bias). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "outfile.h"
#include "report.h"
#include "validate.h"
#include "validate_band.h"
#include "validate_out.h"
#include "validate_stats.h"

static void usage(void)
{
    puts("usage: llmem-sweep validate --measured FILE.csv... [--out FILE.csv] [--rules PATH]\n"
         "                            [--summary] [--fail-above PCT] [--paper] [--catalog DIR]\n"
         "                            [--write-band FILE.csv]\n"
         "Predicts each measured row for its metric (allocated, reserved, device,\n"
         "reserved-delta) and prints predicted / measured / error per row and a summary\n"
         "per source. Rows measured below what their own configuration must hold\n"
         "(weights + gradients + optimizer states, or block inputs at the end of forward)\n"
         "are marked inconsistent and left out of the summary. --fail-above exits 1 when\n"
         "the median absolute error exceeds PCT. Each predicted row gets an error band\n"
         "from the other sources' residuals (leave-one-source-out); its coverage and\n"
         "width are printed per source. --write-band writes the band table of all rows\n"
         "(what the sweep reads from datasets/band.csv). Rows with tokens_per_s_gpu\n"
         "(metric none: throughput only) are compared with the speed model: per source\n"
         "the median absolute error and the pairwise ordering agreement in each group.\n"
         "--catalog DIR is the folder of models.csv and gpus.csv (--data DIR also works).\n"
         "--out - writes the CSV to stdout and the table to stderr.");
}

static int parse_args(int argc, char **argv, struct validate_args *a)
{
    memset(a, 0, sizeof *a);
    a->fail_above = -1;
    if (!(a->measured = malloc((size_t)argc * sizeof *a->measured))) {
        fputs("llmem-sweep: out of memory\n", stderr);
        return EXIT_IO;
    }
    int rc = options_parse_cmd(CMD_VALIDATE, argc, argv, a, NULL, NULL);
    if (rc < 0) {
        usage();
        return -1;
    }
    if (!rc && !a->nmeasured)
        return usage_error("validate", "no --measured file given");
    return rc;
}

int cmd_validate(int argc, char **argv)
{
    struct validate_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free(a.measured);
        return rc < 0 ? 0 : rc;
    }
    struct catalog cat;
    struct input_error e;
    /* both outputs writable before anything is predicted or printed: none is left half done */
    if (outfile_check(a.out, &e) != 0 || outfile_check(a.write_band, &e) != 0) {
        input_error_print(&e);
        free(a.measured);
        return e.code;
    }
    struct validate_opts vo = {.cat = &cat, .paper = a.paper};
    if (catalog_load(a.data ? a.data : catalog_default_dir(), &cat, &e) != 0 ||
        (a.rules && rules_load(a.rules, &vo.rules, &e) != 0)) {
        input_error_print(&e);
        catalog_free(&cat);
        free(a.measured);
        return e.code;
    }
    struct validate_row *rows = calloc(VALIDATE_ROW_MAX, sizeof *rows);
    size_t n = 0;
    for (int i = 0; rows && i < a.nmeasured && !rc; i++) {
        long got = validate_file(a.measured[i], &vo, rows + n, VALIDATE_ROW_MAX - n, &e);
        if (got < 0) {
            input_error_print(&e);
            rc = e.code;
        } else {
            n += (size_t)got;
        }
    }
    /* a CSV on stdout (--out -) keeps stdout to itself: the table goes to stderr */
    const bool csv_on_stdout = outfile_is_stdout(a.out) || outfile_is_stdout(a.write_band);
    if (!rows || (!rc && (validate_band_rows(rows, n) != 0 ||
                          validate_out_text(csv_on_stdout ? stderr : stdout, rows, n, a.summary_only) != 0))) {
        fputs("llmem-sweep: out of memory\n", stderr);
        rc = EXIT_IO;
    }
    if (!rc && ((a.out && validate_out_csv(a.out, rows, n, &e) != 0) ||
                (a.write_band && validate_out_band(a.write_band, rows, n, &e) != 0))) {
        input_error_print(&e);
        rc = e.code;
    }
    if (!rc && a.fail_above >= 0) {
        struct validate_stats s = validate_summarize(rows, n, NULL, NULL, NULL);
        if (s.median > a.fail_above) {
            fprintf(stderr, "llmem-sweep: validate: median absolute error %.1f %% is above %.1f %%\n",
                    s.median, a.fail_above);
            rc = 1;
        }
    }
    free(rows);
    free(a.measured);
    rules_free(vo.rules);
    catalog_free(&cat);
    return rc;
}
