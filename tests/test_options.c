/* test_options.c: the command line (options.h, DESIGN.md section 4): integer lists and
 * ranges, option values, usage errors (EXIT_USAGE = 2) and the default axes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "commands.h"
#include "devices.h"
#include "error.h"
#include "fixtures.h"
#include "options.h"
#include "train.h"
#include "units.h"


/* Parses the space-separated words of line (after a program name) in sweep mode. The
 * words are copied into buf, which must outlive o (options keep pointers into argv). */
static int parse_line(const char *line, enum options_mode mode, struct options *o, char *buf,
                      size_t len)
{
    static char prog[] = "llmem-sweep";
    char *argv[FIXTURE_ARGS_MAX + 2] = {prog};
    int argc = 1 + fixture_words(line, buf, len, argv + 1);
    return options_parse(argc, argv, 1, mode, o);
}

static struct options *new_options(void)
{
    struct options *o = calloc(1, sizeof *o);
    assert_non_null(o);
    return o;
}

static void assert_list(const struct int_list *l, const int32_t *want, int n)
{
    assert_int_equal(l->n, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(l->v[i], want[i]);
}

static void test_int_list(void **state)
{
    (void)state;
    struct int_list l;
    assert_int_equal(options_parse_int_list("1..4,8", 1, 100, &l), 0);
    assert_list(&l, (const int32_t[]){1, 2, 3, 4, 8}, 5);
    /* sorted ascending and deduplicated */
    assert_int_equal(options_parse_int_list("4,1,4", 1, 100, &l), 0);
    assert_list(&l, (const int32_t[]){1, 4}, 2);
    assert_int_equal(options_parse_int_list("7", 1, 100, &l), 0);
    assert_list(&l, (const int32_t[]){7}, 1);
    assert_int_equal(options_parse_int_list("3..3", 1, 100, &l), 0);
    assert_list(&l, (const int32_t[]){3}, 1);
    /* overlapping ranges: 512, 1024..1026 and 1025 again */
    assert_int_equal(options_parse_int_list("1024..1026,512,1025", 2, 1 << 20, &l), 0);
    assert_list(&l, (const int32_t[]){512, 1024, 1025, 1026}, 4);
    /* the full OPT_LIST_MAX fits */
    assert_int_equal(options_parse_int_list("1..1024", 1, 4096, &l), 0);
    assert_int_equal(l.n, OPT_LIST_MAX);
    assert_int_equal(l.v[OPT_LIST_MAX - 1], 1024);
}

static void test_int_list_junk(void **state)
{
    (void)state;
    static const char *const junk[] = {
        "1..", "a", "3..1", "1,,2", "", ",", "1,", ",1", "..4", "1...4", "1..2..3",
        "1-4", "1;2", "2x", "0", "101", "1..101", "99999999999999999999",
        "1..2000", /* more than OPT_LIST_MAX values */
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        struct int_list l;
        if (options_parse_int_list(junk[i], 1, 100, &l) != -1)
            fail_msg("'%s' should be rejected", junk[i]);
    }
}

static void test_parse_values(void **state)
{
    (void)state;
    struct options *o = new_options();
    char buf[512];
    int rc = parse_line("--budget 80GiB --methods adp,tp --shard 2/4 --gpus 1..4,8 "
                        "--batch 4,1,4 --seq 512,1024 --top 0 --threads 2 --gpu A10G-24GB "
                        "--model a/b --model c --precision bf16,fp16 --grad-ckpt off "
                        "--out x.csv --no-prune --quiet",
                        OPTIONS_SWEEP, o, buf, sizeof buf);
    assert_int_equal(rc, 0);
    assert_int_equal(o->budget, UINT64_C(80) * GIB);
    assert_int_equal(o->axes.nmethods, 2);
    assert_int_equal(o->axes.methods[0], METHOD_ADP);
    assert_int_equal(o->axes.methods[1], METHOD_TP);
    assert_int_equal(o->shard_k, 2);
    assert_int_equal(o->shard_n, 4);
    assert_list(&o->axes.gpus, (const int32_t[]){1, 2, 3, 4, 8}, 5);
    assert_list(&o->axes.batch, (const int32_t[]){1, 4}, 2);
    assert_list(&o->axes.seq, (const int32_t[]){512, 1024}, 2);
    assert_int_equal(o->top, 0);
    assert_int_equal(o->threads, 2);
    assert_string_equal(o->gpu, "A10G-24GB");
    assert_int_equal(o->nmodels, 2);
    assert_string_equal(o->models[0], "a/b");
    assert_string_equal(o->models[1], "c");
    assert_int_equal(o->axes.nprecisions, 2);
    assert_int_equal(o->axes.precisions[0], PREC_BF16); /* command-line order */
    assert_int_equal(o->axes.precisions[1], PREC_FP16);
    assert_int_equal(o->axes.nckpts, 1);
    assert_false(o->axes.ckpts[0]);
    assert_int_equal(o->nouts, 1);
    assert_string_equal(o->outs[0], "x.csv");
    assert_true(o->no_prune);
    assert_true(o->quiet);
    assert_false(o->all);
    free(o);
}

static void test_parse_defaults(void **state)
{
    (void)state;
    struct options *o = new_options();
    char buf[8];
    assert_int_equal(parse_line("", OPTIONS_SWEEP, o, buf, sizeof buf), 0);
    assert_int_equal(o->top, 50); /* DESIGN.md: --top default 50 */
    assert_int_equal(o->threads, 0);
    assert_int_equal(o->budget, 0);
    assert_int_equal(o->shard_n, 0);
    assert_int_equal(o->axes.nmethods, 0);
    assert_int_equal(o->format, FORMAT_AUTO);
    assert_null(o->gpu);
    assert_false(o->paper);
    free(o);
}

static void test_equals_form(void **state)
{
    (void)state;
    struct options *o = new_options();
    char buf[256];
    assert_int_equal(parse_line("--format=json --budget=16384MB --methods=single", OPTIONS_SWEEP, o,
                                buf, sizeof buf),
                     0);
    assert_int_equal(o->format, FORMAT_JSON);
    assert_int_equal(o->budget, UINT64_C(16384000000));
    assert_int_equal(o->axes.nmethods, 1);
    assert_int_equal(o->axes.methods[0], METHOD_SINGLE);
    assert_int_equal(parse_line("--format csv", OPTIONS_SWEEP, o, buf, sizeof buf), 0);
    assert_int_equal(o->format, FORMAT_CSV);
    assert_int_equal(parse_line("--format html", OPTIONS_SWEEP, o, buf, sizeof buf), 0);
    assert_int_equal(o->format, FORMAT_HTML);
    free(o);
}

static void test_usage_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "--shard 5/4",       /* K > N */
        "--shard 0/4",
        "--shard 2",
        "--shard 2/4x",
        "--bogus",           /* unknown option */
        "--bogus 3",
        "--budget",          /* missing value */
        "--budget 80",       /* no unit */
        "--budget 0GiB",
        "--methods adp,xyz", /* unknown method */
        "--methods ''",
        "--gpus 1..",
        "--gpus 0",
        "--batch 3..1",
        "--seq 1",           /* a sequence of one token has nothing to predict */
        "--precision fp4",
        "--finetune prefix",
        "--grad-ckpt maybe",
        "--optimizer adam",
        "--top -1",
        "--top 5x",
        "--threads 0",
        "--format xml",
        "--lora-targets q+zz",
        "stray",             /* not an option */
        "-x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct options *o = new_options();
        char buf[128];
        int rc = parse_line(bad[i], OPTIONS_SWEEP, o, buf, sizeof buf);
        if (rc != EXIT_USAGE)
            fail_msg("'%s': expected EXIT_USAGE (2), got %d", bad[i], rc);
        free(o);
    }
}

static void test_explain_mode(void **state)
{
    (void)state;
    struct options *o = new_options();
    char buf[128];
    assert_int_equal(parse_line("--model gpt2 --method tp --gpus 2", OPTIONS_EXPLAIN, o, buf,
                                sizeof buf),
                     0);
    assert_int_equal(o->axes.nmethods, 1);
    assert_int_equal(o->axes.methods[0], METHOD_TP);
    /* explain evaluates one point: no shards */
    assert_int_equal(parse_line("--model gpt2 --shard 1/2", OPTIONS_EXPLAIN, o, buf, sizeof buf),
                     EXIT_USAGE);
    free(o);
}

static void test_default_axes(void **state)
{
    (void)state;
    struct options *o = new_options();
    char buf[160];
    assert_int_equal(parse_line("--gpus 2 --batch 8", OPTIONS_SWEEP, o, buf, sizeof buf), 0);
    options_default_axes(o);
    assert_int_equal(o->axes.nmethods, METHOD_COUNT);
    assert_list(&o->axes.gpus, (const int32_t[]){2}, 1);  /* given: kept */
    assert_list(&o->axes.batch, (const int32_t[]){8}, 1); /* given: kept */
    assert_true(o->axes.seq.n > 0);
    assert_true(o->axes.nprecisions > 0);
    assert_true(o->axes.nfinetunes > 0);
    assert_true(o->axes.noptimizers > 0);
    assert_int_equal(o->axes.nckpts, 2);
    assert_true(o->axes.ntargets > 0);
    assert_true(o->axes.lora_r.n > 0);
    free(o);

    /* --paper: the paper's regime, fp16 mixed precision, full, checkpointing, Adam */
    o = new_options();
    assert_int_equal(parse_line("--paper", OPTIONS_SWEEP, o, buf, sizeof buf), 0);
    options_default_axes(o);
    assert_int_equal(o->axes.nprecisions, 1);
    assert_int_equal(o->axes.precisions[0], PREC_FP16);
    assert_int_equal(o->axes.nfinetunes, 1);
    assert_int_equal(o->axes.finetunes[0], FT_FULL);
    assert_int_equal(o->axes.nckpts, 1);
    assert_true(o->axes.ckpts[0]);
    assert_int_equal(o->axes.noptimizers, 1);
    assert_int_equal(o->axes.optimizers[0], OPT_ADAMW);
    assert_list(&o->axes.gpus, (const int32_t[]){1, 2, 4, 8, 16, 32, 64}, 7);
    assert_int_equal(o->axes.nmethods, METHOD_ZERO1); /* LLMem's five */
    free(o);

    /* the methods beyond LLMem and their options */
    o = new_options();
    assert_int_equal(parse_line("--methods zero1,zero2,pp,offload --pp 2,4 --offload params "
                                "--pp-microbatches 16", OPTIONS_SWEEP, o, buf, sizeof buf), 0);
    assert_int_equal(o->axes.nmethods, 4);
    assert_int_equal(o->axes.methods[0], METHOD_ZERO1);
    assert_int_equal(o->axes.methods[3], METHOD_OFFLOAD);
    assert_list(&o->axes.pp, (const int32_t[]){2, 4}, 2);
    assert_int_equal(o->axes.offload, OFFLOAD_PARAMS);
    assert_int_equal(o->axes.pp_microbatches, 16);
    free(o);
    o = new_options();
    assert_int_equal(parse_line("--offload none", OPTIONS_SWEEP, o, buf, sizeof buf), EXIT_USAGE);
    free(o);
    o = new_options();
    assert_int_equal(parse_line("--pp 1", OPTIONS_SWEEP, o, buf, sizeof buf), EXIT_USAGE);
    free(o);
}

static void test_table(void **state)
{
    (void)state;
    const char *bad = options_table_problem();
    if (bad)
        fail_msg("option table: row '%s' out of order or twice for one command", bad);
}

/* The table's other commands: each option into its command's struct, the rest refused. */
static void test_commands(void **state)
{
    (void)state;
    char *v[] = {"validate", "--measured", "a.csv", "--measured=b.csv", "--summary",
                 "--fail-above", "12.5", "--catalog", "d", NULL};
    struct validate_args va = {0};
    const char *measured[10];
    va.measured = measured;
    assert_int_equal(options_parse_cmd(CMD_VALIDATE, 9, v, &va, NULL, NULL), 0);
    assert_int_equal(va.nmeasured, 2);
    assert_string_equal(measured[1], "b.csv");
    assert_true(va.summary_only && !va.paper);
    assert_true(va.fail_above == 12.5);
    assert_string_equal(va.data, "d");

    char *f[] = {"fit", "--features", "1,b*s", "--features", "act=b*s", "--with-model", "add",
                 "--append", NULL};
    struct fit_args *fa = calloc(1, sizeof *fa);
    assert_non_null(fa);
    assert_int_equal(options_parse_cmd(CMD_FIT, 8, f, fa, NULL, NULL), 0);
    assert_string_equal(fa->feat_all, "1,b*s");
    assert_int_equal(fa->nfeat_for, 1);
    assert_int_equal(fa->with_model, 2); /* RULES_ADD */
    assert_true(fa->append);
    free(fa);

    /* merge: positionals are shards, "-" among them; --format without text or auto */
    char *m[] = {"merge", "a.csv", "--top", "7", "-", "--format=json", NULL};
    struct options *o = new_options();
    const char *pos[6];
    int npos = 0;
    assert_int_equal(options_parse_cmd(CMD_MERGE, 6, m, o, pos, &npos), 0);
    assert_int_equal(npos, 2);
    assert_string_equal(pos[1], "-");
    assert_int_equal(o->top, 7);
    assert_int_equal(o->format, FORMAT_JSON);
    char *mt[] = {"merge", "--format", "text", NULL};
    assert_int_equal(options_parse_cmd(CMD_MERGE, 3, mt, o, pos, &npos), EXIT_USAGE);
    free(o);

    /* an option of another command, a flag with a value, help */
    int device = 0;
    char *p1[] = {"probe", "--gpu", "0", NULL}, *p2[] = {"probe", "--device=3", NULL};
    char *p3[] = {"probe", "-h", NULL}, *p4[] = {"probe", "--device", "3x", NULL};
    assert_int_equal(options_parse_cmd(CMD_PROBE, 3, p1, &device, NULL, NULL), EXIT_USAGE);
    assert_int_equal(options_parse_cmd(CMD_PROBE, 2, p2, &device, NULL, NULL), 0);
    assert_int_equal(device, 3);
    assert_int_equal(options_parse_cmd(CMD_PROBE, 2, p3, &device, NULL, NULL), -1);
    assert_int_equal(options_parse_cmd(CMD_PROBE, 3, p4, &device, NULL, NULL), EXIT_USAGE);
    struct options *so = new_options();
    char buf[64];
    assert_int_equal(parse_line("--all=yes", OPTIONS_SWEEP, so, buf, sizeof buf), EXIT_USAGE);
    assert_int_equal(parse_line("--measured a.csv", OPTIONS_SWEEP, so, buf, sizeof buf), EXIT_USAGE);
    free(so);
}

/* Every option of every command appears in that command's --help (aliases say "also works"):
 * the help cannot drift from the table. */
static void test_help_names_every_option(void **state)
{
    (void)state;
    static const struct {
        unsigned cmd;
        int (*fn)(int, char **);
        const char *line;
    } helps[] = {
        {CMD_SWEEP, cmd_sweep, "llmem-sweep --help"}, {CMD_EXPLAIN, cmd_explain, "explain --help"},
        {CMD_VALIDATE, cmd_validate, "validate --help"}, {CMD_FIT, cmd_fit, "fit --help"},
        {CMD_MERGE, cmd_merge, "merge --help"},          {CMD_CATALOG, cmd_models, "models --help"},
        {CMD_DEVICES, cmd_devices, "devices --help"},    {CMD_PROBE, cmd_probe, "probe --help"},
        {CMD_DIFF, cmd_diff, "diff --help"},
    };
    static char help[16384];
    for (size_t h = 0; h < sizeof helps / sizeof helps[0]; h++) {
        assert_int_equal(fixture_run_cmd(helps[h].fn, helps[h].line, help, sizeof help), 0);
        unsigned cmds;
        const char *name;
        for (size_t i = 0; (name = options_table_row(i, &cmds)); i++) {
            if (!(cmds & helps[h].cmd))
                continue;
            const char *at = help;
            size_t n = strlen(name);
            while ((at = strstr(at, name)) && (at[n] == '-' || (at[n] >= 'a' && at[n] <= 'z')))
                at += n; /* --gpus is not --gpus-per-node */
            if (!at)
                fail_msg("'%s' does not name %s", helps[h].line, name);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_list),
        cmocka_unit_test(test_int_list_junk),
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_defaults),
        cmocka_unit_test(test_equals_form),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_explain_mode),
        cmocka_unit_test(test_default_axes),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_help_names_every_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
