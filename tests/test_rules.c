/* test_rules.c: the rule format, its evaluator, the NNLS solver, the fitter and the shipped
 * Salisbury rules (rules/README.md).
 *
 * Models come from the catalog ($LLMEM_DATA, set by tests/CMakeLists.txt); the Salisbury
 * rows from datasets/measured/salisbury-table1.csv, whose extension column
 * paper_predicted_bytes holds the paper's own predictions for the comparison. */
#define _XOPEN_SOURCE 700 /* mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "commands.h"
#include "csv_table.h"
#include "fit.h"
#include "fixtures.h"
#include "nnls.h"
#include "rules.h"
#include "units.h"

#ifndef LLMEM_SOURCE_DIR
#define LLMEM_SOURCE_DIR "."
#endif
#define SHIPPED LLMEM_SOURCE_DIR "/rules/gemma-qlora-salisbury.csv"
#define TABLE1 LLMEM_SOURCE_DIR "/datasets/measured/salisbury-table1.csv"

static const char *data_dir(void)
{
    const char *d = getenv("LLMEM_DATA");
    return d ? d : LLMEM_SOURCE_DIR "/datasets";
}

/* ---- helpers ------------------------------------------------------------------------ */

static struct rule_book *parse_ok(const char *text)
{
    struct rule_book *rb = NULL;
    struct input_error e;
    int rc = rules_parse(text, strlen(text), "mem.csv", &rb, &e);
    if (rc != 0)
        print_error("%s:%ld: %s: %s\n", e.file, e.line, e.field, e.msg);
    assert_int_equal(rc, 0);
    return rb;
}

/* A parse that must fail at line/column; msg_part must occur in the message. */
static void parse_fails(const char *text, long line, const char *column, const char *msg_part)
{
    struct rule_book *rb = (struct rule_book *)1;
    struct input_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(rules_parse(text, strlen(text), "bad.csv", &rb, &e), -1);
    assert_null(rb);
    assert_string_equal(e.file, "bad.csv");
    if (e.line != line || strcmp(e.field, column) != 0 || !strstr(e.msg, msg_part))
        print_error("got %ld [%s] %s\n", e.line, e.field, e.msg);
    assert_int_equal(e.line, line);
    assert_string_equal(e.field, column);
    assert_non_null(strstr(e.msg, msg_part));
    assert_int_equal(e.code, EXIT_BAD_INPUT);
}

static struct catalog cat;
static bool cat_loaded;

static const struct catalog *catalog(void)
{
    if (!cat_loaded) {
        fixture_shipped_catalog(&cat);
        cat_loaded = true;
    }
    return &cat;
}

static void plan_of(const char *name, struct model_plan *p)
{
    const struct model_spec *m = catalog_find_model(catalog(), name);
    assert_non_null(m);
    assert_int_equal(plan_init(p, m), 0);
}

static struct train_config qlora(int32_t b, int32_t s, int32_t r, uint32_t targets)
{
    struct train_config c;
    memset(&c, 0, sizeof c);
    c.method = METHOD_SINGLE;
    c.gpus = c.tp = c.dp = 1;
    c.micro_batch = b;
    c.seq_len = s;
    c.precision = PREC_BF16;
    c.finetune = FT_QLORA;
    c.lora_r = r;
    c.lora_targets = targets;
    c.quant = QUANT_NF4_DQ;
    c.grad_ckpt = true;
    c.optimizer = OPT_ADAMW;
    c.stack = STACK_HF;
    return c;
}

/* grad_ckpt takes the command line's values through the one parser (ckpt_mode_parse), and
 * a selective-checkpointing configuration is neither an "on" nor an "off" one. */
static void test_ckpt_key(void **state)
{
    (void)state;
    static const char text[] = "set,candidate,key,value,note\n"
                               "off,,metric,reserved,\n"
                               "off,,with_model,no,\n"
                               "off,,grad_ckpt,off,\n"
                               "off,X,1,1000,\n"
                               "sel,,metric,reserved,\n"
                               "sel,,with_model,no,\n"
                               "sel,,grad_ckpt,selective,\n"
                               "sel,X,1,2000,\n";
    struct rule_book *rb = parse_ok(text);
    struct model_plan p;
    plan_of("google/gemma-2b", &p);
    struct train_config c = qlora(8, 512, 2, TARGETS_MLP);
    train_set_ckpt(&c, CKPT_OFF);
    assert_int_equal(rules_select(rb, &p, &c), rules_find_set(rb, "off"));
    train_set_ckpt(&c, CKPT_SELECTIVE);
    assert_int_equal(rules_select(rb, &p, &c), rules_find_set(rb, "sel"));
    train_set_ckpt(&c, CKPT_ON);
    assert_int_equal(rules_select(rb, &p, &c), -1);
    plan_free(&p);
    rules_free(rb);
    parse_fails("set,candidate,key,value,note\ns,,metric,reserved,\ns,,with_model,no,\n"
                "s,,grad_ckpt,sometimes,\ns,X,1,1,\n", 4, "value", "sometimes");
}

/* ---- format: good files ------------------------------------------------------------- */

static const char tiny[] =
    "set,candidate,key,value,note\n"
    "tiny,,metric,reserved,\n"
    "tiny,,with_model,no,\n"
    "tiny,,model,google/gemma-2b,\n"
    "tiny,,finetune,qlora,\n"
    "tiny,,finetune,lora,\"two rows of one key: either value\"\n"
    "tiny,,micro_batch.max,16,\n"
    "tiny,X,1,1000,bytes\n"
    "tiny,X,b*s*h,2,\n"
    "tiny,Y,b*s*v,0.5,\n"
    "tiny,Y,fit.rows,4,\n";

static void test_parse_good(void **state)
{
    (void)state;
    struct rule_book *rb = parse_ok(tiny);
    assert_int_equal(rules_set_count(rb), 1);
    assert_int_equal(rules_find_set(rb, "tiny"), 0);
    assert_string_equal(rules_set_name(rb, 0), "tiny");
    assert_int_equal(rules_set_metric(rb, 0), RULES_RESERVED);
    assert_false(rules_set_with_model(rb, 0));
    const int *ids;
    assert_int_equal(rules_set_candidates(rb, 0, &ids), 2);
    assert_string_equal(rules_label(rb, ids[0]), "tiny/X");
    assert_string_equal(rules_label(rb, ids[1]), "tiny/Y");
    assert_string_equal(rules_candidate_name(rb, ids[1]), "Y");
    assert_string_equal(rules_label(rb, 99), "");
    rules_free(rb);

    /* no note column, CRLF line ends, quoted cells, no final newline */
    rb = parse_ok("set,candidate,key,value\r\n"
                  "\"a\",,metric,device\r\n"
                  "a,,with_model,yes\r\n"
                  "a,,lora_targets,q+v\r\n"
                  "a,,lora_targets,embed\r\n"
                  "a,p,trainable,\"12\"");
    assert_true(rules_set_with_model(rb, 0));
    rules_free(rb);
}

static void test_features_named(void **state)
{
    (void)state;
    static const char *const required[] = {"1", "b*s", "b*s*h", "b*s*h*L", "b*s*v",
                                           "b*s^2*heads", "b*s*i", "trainable",
                                           "r*h*L_targets", "params", "layers"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        int f = rules_feature_parse(required[i]);
        assert_true(f >= 0);
        assert_string_equal(rules_feature_name(f), required[i]);
    }
    assert_int_equal(rules_feature_parse("b*s*x"), -1);
    assert_string_equal(rules_feature_name(-1), "?");
}

/* ---- format: malformed files with file/line/column ---------------------------------- */

#define HEAD "set,candidate,key,value\n"
#define SET_OK "s,,metric,allocated\ns,,with_model,no\n"

static void test_parse_malformed(void **state)
{
    (void)state;
    parse_fails("set,candidate,key\n", 1, "value", "missing column");
    parse_fails("set,candidate,key,value,colour\n", 1, "colour", "unknown column");
    parse_fails(HEAD SET_OK "s,,flavour,x\n", 4, "key", "unknown set-level key");
    parse_fails(HEAD SET_OK "s,,metric,device\n", 4, "key", "duplicate");
    parse_fails(HEAD "s,,metric,peak\n", 2, "value", "not a valid metric");
    parse_fails(HEAD SET_OK "s,,with_model,maybe\n", 4, "key", "duplicate");
    parse_fails(HEAD "s,,with_model,maybe\n", 2, "value", "not a valid with_model");
    parse_fails(HEAD SET_OK "s,,finetune,half\n", 4, "value", "not a valid finetune");
    parse_fails(HEAD SET_OK "s,,lora_targets,q+x\n", 4, "value", "LoRA target");
    parse_fails(HEAD SET_OK "s,,micro_batch.max,-1\n", 4, "value", "not an integer");
    parse_fails(HEAD SET_OK "s,,seq_len.mid,4\n", 4, "key", "unknown set-level key");
    parse_fails(HEAD SET_OK "s,,trainable,4\n", 4, "candidate", "belongs to a candidate");
    parse_fails(HEAD SET_OK "s,C,metric,device\n", 4, "candidate", "set-level key");
    parse_fails(HEAD SET_OK "s,C,b*s*q,1\n", 4, "key", "unknown feature");
    parse_fails(HEAD SET_OK "s,C,1,abc\n", 4, "value", "not a finite number");
    parse_fails(HEAD SET_OK "s,C,1,1e999\n", 4, "value", "not a finite number");
    parse_fails(HEAD SET_OK "s,C,1,nan\n", 4, "value", "not a finite number");
    parse_fails(HEAD SET_OK "s,C,1,1\ns,C,1,2\n", 5, "key", "duplicate feature");
    parse_fails(HEAD SET_OK "s,C,fit.foo,1\n", 4, "key", "unknown fit statistic");
    parse_fails(HEAD SET_OK "s,C/D,1,1\n", 4, "candidate", "use only letters");
    parse_fails(HEAD "s t,,metric,device\n", 2, "set", "use only letters");
    parse_fails(HEAD ",,metric,device\n", 2, "set", "name of 1 to");
    parse_fails(HEAD SET_OK "s,,,x\n", 4, "key", "empty key");
    parse_fails(HEAD SET_OK "s,C,1,1,extra\n", 4, "", "fields where the header has");
    parse_fails(HEAD SET_OK "s,C,1,\"1\n", 4, "", "unterminated");
    parse_fails(HEAD SET_OK "s,C,1,\"1\"x\n", 4, "", "malformed CSV");
    /* set-level completeness, reported at the set's first row */
    parse_fails(HEAD "s,,with_model,no\ns,C,1,1\n", 2, "key", "no 'metric' row");
    parse_fails(HEAD "s,,metric,device\ns,C,1,1\n", 2, "key", "no 'with_model' row");
    parse_fails(HEAD SET_OK, 2, "candidate", "no candidates");
    parse_fails(HEAD SET_OK "s,C,note,only a note\n", 4, "candidate", "no feature row");
    parse_fails(HEAD SET_OK "s,,lora_r.min,8\ns,,lora_r.max,4\ns,C,1,1\n", 2, "value",
                "above");
    parse_fails(HEAD, 0, "", "no rule sets");
}

static void test_parse_limits(void **state)
{
    (void)state;
    char buf[4096];
    int n = snprintf(buf, sizeof buf, HEAD SET_OK);
    for (int c = 0; c <= RULES_MAX_CANDIDATES; c++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "s,c%d,1,1\n", c);
    parse_fails(buf, 4 + RULES_MAX_CANDIDATES, "candidate", "more than");

    /* one set may not continue in a second file */
    struct rule_book *rb = rules_new();
    struct input_error e;
    assert_int_equal(rules_add(rb, "s", "", "metric", "device", "a.csv", 2, &e), 0);
    assert_int_equal(rules_add(rb, "s", "C", "1", "5", "b.csv", 7, &e), -1);
    assert_string_equal(e.file, "b.csv");
    assert_int_equal(e.line, 7);
    assert_string_equal(e.field, "set");
    assert_non_null(strstr(e.msg, "already defined in a.csv"));
    rules_free(rb);
}

static void test_load_folder(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_rules.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[300], b[300], junk[300];
    snprintf(a, sizeof a, "%s/b-second.csv", dir);
    snprintf(b, sizeof b, "%s/a-first.csv", dir);
    snprintf(junk, sizeof junk, "%s/notes.txt", dir);
    FILE *f = fopen(a, "w");
    fputs(HEAD "second,,metric,device\nsecond,,with_model,no\nsecond,P,1,2\n", f);
    fclose(f);
    f = fopen(b, "w");
    fputs(HEAD "first,,metric,device\nfirst,,with_model,no\nfirst,P,1,1\n", f);
    fclose(f);
    f = fopen(junk, "w");
    fputs("not a rules file\n", f);
    fclose(f);
    struct rule_book *rb;
    struct input_error e;
    assert_int_equal(rules_load(dir, &rb, &e), 0);
    assert_int_equal(rules_set_count(rb), 2);
    assert_string_equal(rules_set_name(rb, 0), "first"); /* name order, not directory order */
    assert_string_equal(rules_set_name(rb, 1), "second");
    rules_free(rb);

    f = fopen(a, "w"); /* a bad row in the second file names that file */
    fputs(HEAD "second,,metric,device\nsecond,,with_model,no\nsecond,P,1,x\n", f);
    fclose(f);
    assert_int_equal(rules_load(dir, &rb, &e), -1);
    assert_string_equal(e.file, a);
    assert_int_equal(e.line, 4);
    assert_string_equal(e.field, "value");

    assert_int_equal(rules_load("/nonexistent/rules.csv", &rb, &e), -1);
    assert_int_equal(e.code, EXIT_IO);
    unlink(a), unlink(b), unlink(junk);
    assert_int_equal(rules_load(dir, &rb, &e), -1);
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_non_null(strstr(e.msg, "no *.csv"));
    rmdir(dir);
}

/* ---- evaluation by hand ------------------------------------------------------------- */

static void test_eval_by_hand(void **state)
{
    (void)state;
    struct rule_book *rb = parse_ok(tiny);
    struct model_plan gemma, llama;
    plan_of("google/gemma-2b", &gemma); /* h 2048, v 256000 */
    plan_of("meta-llama/Llama-2-7b-hf", &llama);
    assert_int_equal(rules_bind(rb, &llama), -1);
    int bind = rules_bind(rb, &gemma);
    assert_true(bind >= 0);
    assert_int_equal(rules_bind(rb, &gemma), bind); /* bound again: the same binding */

    struct train_config c = qlora(2, 10, 8, TARGETS_ATTN);
    int set = rules_prepare(rb, bind, &gemma, &c);
    assert_int_equal(set, 0);
    /* X = 1000 + 2 * (2*10*2048) = 82920; Y = 0.5 * (2*10*256000) = 2560000: Y binds.
     * reserved rule: device = 2560000 + (device - reserved) = 2560000 + 1000000 */
    struct mem_estimate e;
    memset(&e, 0, sizeof e);
    e.allocated = 3000000;
    e.reserved = 4000000;
    e.device = 5000000;
    uint64_t peak;
    int cand;
    assert_true(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
    assert_int_equal(peak, 3560000);
    assert_string_equal(rules_label(rb, cand), "tiny/Y");

    struct rules_point pt;
    rules_compile(rb, set, &gemma, &c, &pt);
    assert_int_equal(pt.ncand, 2);
    assert_true(fabs(pt.k[0][0] - 1000.0) < 1e-9 && fabs(pt.k[0][1] - 4096.0) < 1e-9);
    assert_true(fabs(pt.k[1][1] - 128000.0) < 1e-9 && pt.k[1][2] == 0.0);
    uint64_t peak2;
    int cand2;
    assert_true(rules_eval_point(rb, &pt, &c, &e, &peak2, &cand2));
    assert_int_equal(peak2, peak);
    assert_int_equal(cand2, cand);
    double raw;
    assert_int_equal(rules_eval_metric(rb, &pt, &c, &raw), cand);
    assert_true(fabs(raw - 2560000.0) < 1e-6);

    /* micro-batch above micro_batch.max: the set declines, the model's peak stands */
    c.micro_batch = 17;
    assert_false(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
    assert_int_equal(peak, e.device);
    assert_int_equal(cand, -1);
    /* full fine-tuning is not among the set's finetune values */
    c = qlora(2, 10, 8, TARGETS_ATTN);
    c.finetune = FT_FULL;
    assert_int_equal(rules_prepare(rb, bind, &gemma, &c), -1);
    assert_false(rules_eval(rb, -1, &gemma, &c, &e, &peak, &cand));
    rules_free(rb);

    /* with_model yes on an allocated rule: max(rule converted to device, model device) */
    rb = parse_ok(HEAD "w,,metric,allocated\nw,,with_model,yes\nw,R,b*s,100\n");
    bind = rules_bind(rb, &gemma);
    c = qlora(1, 100, 8, TARGETS_ATTN);
    set = rules_prepare(rb, bind, &gemma, &c);
    assert_int_equal(set, 0);
    e.allocated = 1000;
    e.reserved = 2000;
    e.device = 5000; /* rule: 100 * 100 + (5000 - 1000) = 14000 > 5000: the rule binds */
    assert_true(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
    assert_int_equal(peak, 14000);
    e.device = 20000; /* rule 10000 + 19000 = 29000 */
    assert_true(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
    assert_int_equal(peak, 29000);
    e.allocated = 19000; /* rule 10000 + 1000 = 11000 < 20000: the model binds */
    assert_false(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
    assert_int_equal(peak, 20000);
    assert_int_equal(cand, -1);
    rules_free(rb);
    plan_free(&gemma);
    plan_free(&llama);
}

static void test_feature_values(void **state)
{
    (void)state;
    struct model_plan p;
    plan_of("google/gemma-2b", &p); /* L 18, h 2048, heads 8, i 16384, v 256000 */
    struct train_config c = qlora(3, 100, 8, TARGETS_ATTN);
    double bs = 300.0;
    assert_true(rules_feature_value(rules_feature_parse("1"), &p, &c) == 1.0);
    assert_true(rules_feature_value(rules_feature_parse("b*s*h*L"), &p, &c) == bs * 2048 * 18);
    assert_true(rules_feature_value(rules_feature_parse("b*s^2*heads"), &p, &c) == bs * 100 * 8);
    assert_true(rules_feature_value(rules_feature_parse("b*s*i"), &p, &c) == bs * 16384);
    assert_true(rules_feature_value(rules_feature_parse("layers"), &p, &c) == 18.0);
    assert_true(rules_feature_value(rules_feature_parse("params"), &p, &c) == (double)p.params);
    /* gemma-2b attention: q 2048->2048, k and v 2048->256 (1 KV head), o 2048->2048 */
    double attn = 8.0 * 18 * ((2048 + 2048) + 2 * (2048 + 256) + (2048 + 2048));
    assert_true(rules_trainable(&p, &c) == attn);
    assert_true(rules_feature_value(rules_feature_parse("r*h*L_targets"), &p, &c) ==
                8.0 * 2048 * 4 * 18);
    c.lora_targets = RULES_TARGET_EMBED; /* PEFT embedding LoRA: r x (vocab + dim) */
    assert_true(rules_trainable(&p, &c) == 8.0 * (256000 + 2048));
    c.finetune = FT_FULL;
    assert_true(rules_trainable(&p, &c) == (double)p.params);
    uint32_t t;
    assert_int_equal(rules_targets_parse("q+v+embed", &t), 0);
    assert_int_equal(t, TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V) | RULES_TARGET_EMBED);
    assert_int_equal(rules_targets_parse("q+", &t), -1);
    assert_int_equal(rules_targets_parse("", &t), -1);
    plan_free(&p);
}

/* ---- NNLS --------------------------------------------------------------------------- */

static void test_nnls_negative_unconstrained(void **state)
{
    (void)state;
    /* b = A (2, -1) exactly, so least squares gives x2 = -1; with x >= 0 the answer is
     * x2 = 0 and x1 = (a1 . b) / (a1 . a1) = 3 / 3 = 1. */
    const double a[] = {1, 0, 1, 1, 1, 2};
    const double b[] = {2, 1, 0};
    double x[2], r;
    unsigned char all[2] = {1, 1};
    assert_int_equal(nnls_lsq(a, 3, 2, all, b, x), 0);
    assert_true(fabs(x[0] - 2) < 1e-12 && fabs(x[1] + 1) < 1e-12);
    assert_int_equal(nnls(a, 3, 2, b, x, &r), 0);
    assert_true(fabs(x[0] - 1) < 1e-12);
    assert_true(x[1] == 0.0);
    assert_true(fabs(r - sqrt(2.0)) < 1e-12); /* residual (1, 0, -1) */
}

static void test_nnls_exact_and_kkt(void **state)
{
    (void)state;
    /* a positive exact solution is recovered */
    const double a[] = {1, 2, 0, 0, 1, 1, 1, 0, 3, 2, 2, 2};
    const double want[] = {0.5, 2, 1};
    double b[4], x[3], r;
    for (int i = 0; i < 4; i++)
        b[i] = a[i * 3] * want[0] + a[i * 3 + 1] * want[1] + a[i * 3 + 2] * want[2];
    assert_int_equal(nnls(a, 4, 3, b, x, &r), 0);
    for (int j = 0; j < 3; j++)
        assert_true(fabs(x[j] - want[j]) < 1e-10);
    assert_true(r < 1e-10);

    /* random problems: Karush-Kuhn-Tucker conditions hold at the answer */
    unsigned s = 12345;
    for (int trial = 0; trial < 200; trial++) {
        enum { M = 9, N = 5 };
        double A[M * N], B[M], X[N], w[N];
        for (int i = 0; i < M * N; i++)
            A[i] = (double)((s = s * 1103515245u + 12345u) >> 16 & 0x7fff) / 16384.0 - 1.0;
        for (int i = 0; i < M; i++)
            B[i] = (double)((s = s * 1103515245u + 12345u) >> 16 & 0x7fff) / 8192.0 - 2.0;
        assert_int_equal(nnls(A, M, N, B, X, NULL), 0);
        for (int j = 0; j < N; j++) {
            w[j] = 0;
            for (int i = 0; i < M; i++) {
                double res = B[i];
                for (int k = 0; k < N; k++)
                    res -= A[i * N + k] * X[k];
                w[j] += A[i * N + j] * res;
            }
            assert_true(X[j] >= 0.0);
            if (X[j] > 0)
                assert_true(fabs(w[j]) < 1e-9); /* free: gradient zero */
            else
                assert_true(w[j] < 1e-9); /* at the bound: gradient points outward */
        }
    }
}

static void test_nnls_degenerate(void **state)
{
    (void)state;
    /* duplicate column and zero column: a finite, feasible, optimal answer */
    const double a[] = {1, 1, 0, 2, 2, 0, 3, 3, 0};
    const double b[] = {2, 4, 6};
    double x[3], r;
    assert_int_equal(nnls(a, 3, 3, b, x, &r), 0);
    assert_true(x[0] >= 0 && x[1] >= 0 && x[2] == 0.0);
    assert_true(fabs(x[0] + x[1] - 2) < 1e-10);
    assert_true(r < 1e-10);
    /* all-negative correlation: x = 0 */
    const double c[] = {1, 2};
    const double d[] = {-1, -2};
    assert_int_equal(nnls(c, 2, 1, d, x, &r), 0);
    assert_true(x[0] == 0.0);
}

/* ---- the fit command ---------------------------------------------------------------- */

static const char measured_head[] =
    "model,method,gpus,tp,micro_batch,seq_len,precision,finetune,lora_r,lora_targets,quant,"
    "grad_ckpt,optimizer,metric,measured_gib,gpu,framework,source,peak_type,features\n";

static void write_measured(const char *path, const char *rows)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(measured_head, f);
    fputs(rows, f);
    fclose(f);
}

static int run_fit(const char *const *args, int n)
{
    char *argv[32];
    argv[0] = (char *)"fit";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    return cmd_fit(n + 1, argv);
}

/* synthetic gemma-2b QLoRA rows of a script that does not prepare the k-bit base (whose fp32
 * embedding alone, 2 GiB, would put them below their floor) */
#define ROW(b, r, gib, pt)                                                                   \
    "google/gemma-2b,single,1,1," #b ",512,bf16,qlora," #r ",attn,nf4-dq,on,adamw,allocated," \
    #gib ",,x,test," pt ",no-kbit-prep\n"

static void test_fit_command(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_fit.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[300], out[300], bad_out[300];
    snprintf(in, sizeof in, "%s/m.csv", dir);
    snprintf(out, sizeof out, "%s/rules.csv", dir);
    snprintf(bad_out, sizeof bad_out, "%s/missing/rules.csv", dir);
    /* 4 rows of P built from 2 GiB + 4 B/trainable + 0.1 B per b*s*v: an exact fit;
     * 3 rows of Q: 3 coefficients would need 4 rows */
    write_measured(in, ROW(1, 8, 2.1, "P") ROW(2, 8, 2.2, "P") ROW(4, 16, 2.45, "P")
                       ROW(8, 64, 2.9, "P") ROW(1, 8, 3, "Q") ROW(2, 8, 3.1, "Q")
                       ROW(3, 8, 3.2, "Q"));
    const char *over[] = {"--measured", in, "--out", out, "--set", "t"};
    assert_int_equal(run_fit(over, 6), EXIT_BAD_INPUT);
    assert_int_not_equal(access(out, F_OK), 0); /* nothing written on refusal */

    const char *ok[] = {"--measured", in, "--out", out, "--set", "t",
                        "--features", "P=1,trainable,b*s*v", "--features", "1,b*s"};
    assert_int_equal(run_fit(ok, 10), 0);
    struct rule_book *rb;
    struct input_error e;
    assert_int_equal(rules_load(out, &rb, &e), 0);
    assert_int_equal(rules_set_count(rb), 1);
    rules_free(rb);

    /* --append keeps other sets and replaces its own */
    const char *app[] = {"--measured", in, "--out", out, "--set", "u", "--features", "1,b*s",
                         "--append", "--match", "lora_r.max=16"};
    assert_int_equal(run_fit(app, 11), 0);
    assert_int_equal(run_fit(app, 11), 0);
    assert_int_equal(rules_load(out, &rb, &e), 0);
    assert_int_equal(rules_set_count(rb), 2);
    assert_string_equal(rules_set_name(rb, 0), "t");
    rules_free(rb);

    const char *usage1[] = {"--measured", in};
    assert_int_equal(run_fit(usage1, 2), EXIT_USAGE);
    const char *usage2[] = {"--measured", in, "--out", out, "--features", "1,nope"};
    assert_int_equal(run_fit(usage2, 6), EXIT_USAGE);
    const char *usage3[] = {"--measured", in, "--out", out, "--match", "colour=red"};
    assert_int_equal(run_fit(usage3, 6), EXIT_USAGE);
    const char *nomatch[] = {"--measured", in, "--out", out, "--match", "finetune=full"};
    assert_int_equal(run_fit(nomatch, 6), EXIT_BAD_INPUT);
    const char *io[] = {"--measured", in, "--out", bad_out, "--features", "1,b*s"};
    assert_int_equal(run_fit(io, 6), EXIT_IO);
    const char *missing[] = {"--measured", bad_out, "--out", out};
    assert_int_equal(run_fit(missing, 4), EXIT_IO);
    unlink(in), unlink(out);
    rmdir(dir);
}

/* Five gemma-2b QLoRA rows (batch and rank vary) loaded as fitting data; the file is
 * removed again. */
static void load_five(struct fit_data *d)
{
    struct input_error e;
    char dir[] = "/tmp/test_fit5.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[300];
    snprintf(in, sizeof in, "%s/m.csv", dir);
    write_measured(in, ROW(1, 8, 2.1, "P") ROW(2, 8, 2.2, "P") ROW(4, 16, 2.45, "P")
                       ROW(8, 64, 2.9, "P") ROW(2, 32, 2.6, "P"));
    assert_int_equal(fit_data_load(d, in, catalog(), &e), 0);
    assert_int_equal(d->nrows, 5);
    unlink(in);
    rmdir(dir);
}

static void test_fit_exact(void **state)
{
    (void)state;
    struct fit_data d = {0};
    load_five(&d);
    /* synthesize y from known coefficients, then recover them */
    const int feat[3] = {rules_feature_parse("1"), rules_feature_parse("trainable"),
                         rules_feature_parse("b*s*v")};
    const double want[3] = {2e9, 4.0, 0.1};
    size_t idx[5] = {0, 1, 2, 3, 4};
    for (size_t i = 0; i < 5; i++)
        d.rows[i].y = fit_predict(&d, i, feat, 3, FIT_REPLACE, want);
    double coef[3];
    struct fit_stats st;
    assert_int_equal(fit_candidate(&d, idx, 5, feat, 3, FIT_REPLACE, coef, &st), 0);
    for (int j = 0; j < 3; j++)
        assert_true(fabs(coef[j] - want[j]) < 1e-6 * want[j]);
    assert_true(st.rms_pct < 1e-6 && st.loo_max_pct < 1e-6);
    assert_int_equal(fit_candidate(&d, idx, 3, feat, 3, FIT_REPLACE, coef, &st), -1); /* n <= k */
    fit_data_free(&d);
}

/* with_model add: y = memory model + a signed correction; the fit recovers the signed
 * coefficients (NNLS over [A, -A]), its held-out errors vanish and the band is the point. */
static void test_fit_additive(void **state)
{
    (void)state;
    struct fit_data d = {0};
    load_five(&d);
    const int feat[2] = {rules_feature_parse("1"), rules_feature_parse("b*s*h*L")};
    const double want[2] = {-3e8, 5.0}; /* the model is 300 MB high, then grows slower */
    size_t idx[5] = {0, 1, 2, 3, 4};
    for (size_t i = 0; i < 5; i++) {
        assert_true(d.rows[i].model_bytes > 1e9); /* gemma-2b QLoRA: the model's allocated */
        d.rows[i].y = fit_predict(&d, i, feat, 2, FIT_ADD, want);
        assert_true(fabs(d.rows[i].y - d.rows[i].model_bytes - want[0] -
                         want[1] * fit_feature(&d, i, feat[1])) < 1.0);
    }
    double coef[2];
    struct fit_stats st;
    assert_int_equal(fit_candidate(&d, idx, 5, feat, 2, FIT_ADD, coef, &st), 0);
    assert_true(fabs(coef[0] - want[0]) < 1e-6 * fabs(want[0]));
    assert_true(fabs(coef[1] - want[1]) < 1e-6 * want[1]);
    assert_true(st.rms_pct < 1e-6 && st.loo_max_pct < 1e-6);
    assert_int_equal(st.lomo_models, 0); /* one model: nothing to leave out */
    assert_true(fabs(st.band_lo - 1.0) < 1e-6 && fabs(st.band_hi - 1.0) < 1e-6);
    /* defaults: 1, b*s*h*L, b*s*v, b*s, no more than rows - 1 */
    int def[8];
    assert_int_equal(fit_default_add_features(3, def), 2);
    assert_int_equal(fit_default_add_features(9, def), 4);
    assert_int_equal(def[3], rules_feature_parse("b*s"));
    fit_data_free(&d);
}

/* ---- the shipped Salisbury rules against Table I ------------------------------------ */

struct comparison {
    double rule_ape, paper_ape, rule_peak_ape, paper_peak_ape, loo_ape;
    int rows, peaks;
};

static bool row_in(const struct fit_data *d, size_t i, const char *model)
{
    return strcmp(model, "*") == 0 || strcmp(d->model_names[d->rows[i].model], model) == 0;
}

/* Refits each candidate of the set from the Table I rows it was fitted on, with the
 * features the shipped file lists: the coefficients must come back (the file is what the
 * fitter makes of the CSV), and the leave-one-out errors are returned as a mean. */
static double refit_set(struct rule_book *rb, int set, const struct fit_data *d, const char *model)
{
    const int *ids;
    int n = rules_set_candidates(rb, set, &ids);
    double ape = 0;
    size_t rows = 0;
    for (int k = 0; k < n; k++) {
        int feat[16];
        double coef[16], refit[16];
        int nf = rules_candidate_terms(rb, ids[k], feat, coef, 16);
        size_t idx[64], m = 0;
        for (size_t i = 0; i < d->nrows && m < 64; i++)
            if (row_in(d, i, model) &&
                strcmp(d->rows[i].cand, rules_candidate_name(rb, ids[k])) == 0)
                idx[m++] = i;
        struct fit_stats st;
        assert_int_equal(fit_candidate(d, idx, m, feat, (size_t)nf, FIT_REPLACE, refit, &st), 0);
        for (int j = 0; j < nf; j++)
            assert_true(fabs(refit[j] - coef[j]) <= 1e-8 * fmax(fabs(coef[j]), 1e-3));
        ape += st.loo_mean_pct * (double)m;
        rows += m;
    }
    return ape / (double)rows;
}

/* Per row: the prediction of the row's own peak type (candidate of that name) by the set;
 * per configuration (3 consecutive rows C, D, G): the maximum over candidates against the
 * largest measured peak, as a sweep would use it. */
static void compare_set(struct rule_book *rb, const char *set_name, const char *model,
                        struct comparison *out)
{
    struct fit_data d = {0};
    struct input_error e;
    struct csv_table t;
    assert_int_equal(fit_data_load(&d, TABLE1, catalog(), &e), 0);
    assert_int_equal(csv_table_read(TABLE1, &t, &e), 0);
    assert_int_equal(d.nrows, t.nrows);
    int set = rules_find_set(rb, set_name);
    assert_true(set >= 0);
    const int *ids;
    int n = rules_set_candidates(rb, set, &ids);
    int pcol = csv_table_col(&t, "paper_predicted_bytes");
    int mcol = csv_table_col(&t, "measured_bytes");
    memset(out, 0, sizeof *out);
    double top_rule = 0, top_paper = 0, top_meas = 0;
    for (size_t i = 0; i < d.nrows; i++) {
        const struct fit_row *r = &d.rows[i];
        if (!row_in(&d, i, model))
            continue;
        struct rules_point pt;
        rules_compile(rb, set, &d.plans[r->model], &r->c, &pt);
        double bytes, paper = strtod(t.cells[i][pcol], NULL);
        double meas = strtod(t.cells[i][mcol], NULL);
        assert_true(fabs(meas - r->y) < 8.0); /* measured_gib and measured_bytes agree */
        assert_true(rules_eval_metric(rb, &pt, &r->c, &bytes) >= 0);
        int k = 0;
        while (k < n && strcmp(rules_candidate_name(rb, ids[k]), r->cand) != 0)
            k++;
        assert_true(k < n);
        double bs = (double)r->c.micro_batch * (double)r->c.seq_len;
        double own = pt.k[k][0] + pt.k[k][1] * bs + pt.k[k][2] * bs * (double)r->c.seq_len;
        out->rule_ape += fabs(own - meas) / meas;
        out->paper_ape += fabs(paper - meas) / meas;
        out->rows++;
        top_rule = fmax(top_rule, bytes);
        top_paper = fmax(top_paper, paper);
        top_meas = fmax(top_meas, meas);
        if (strcmp(r->cand, "G") == 0) { /* last peak type of a configuration */
            out->rule_peak_ape += fabs(top_rule - top_meas) / top_meas;
            out->paper_peak_ape += fabs(top_paper - top_meas) / top_meas;
            out->peaks++;
            top_rule = top_paper = top_meas = 0;
        }
    }
    out->rule_ape *= 100.0 / out->rows;
    out->paper_ape *= 100.0 / out->rows;
    out->rule_peak_ape *= 100.0 / out->peaks;
    out->paper_peak_ape *= 100.0 / out->peaks;
    out->loo_ape = refit_set(rb, set, &d, model);
    printf("salisbury %-15s %-16s rows %2d: MAPE rules %.3f%% (leave-one-out %.3f%%) paper "
           "%.3f%%; peak of %d configs: rules %.3f%% paper %.3f%%\n",
           set_name, model, out->rows, out->rule_ape, out->loo_ape, out->paper_ape, out->peaks,
           out->rule_peak_ape, out->paper_peak_ape);
    csv_table_free(&t);
    fit_data_free(&d);
}

static void test_salisbury(void **state)
{
    (void)state;
    struct rule_book *rb;
    struct input_error e;
    if (rules_load(SHIPPED, &rb, &e) != 0)
        input_error_print(&e);
    assert_non_null(rb);
    struct comparison c2, c7, cf;
    compare_set(rb, "gemma-2b-qlora", "google/gemma-2b", &c2);
    compare_set(rb, "gemma-7b-qlora", "google/gemma-7b", &c7);
    compare_set(rb, "gemma-qlora", "*", &cf);
    assert_int_equal(c2.rows, 12);
    assert_int_equal(cf.rows, 24);
    /* at least as good as the paper's own predictor, over the same rows */
    assert_true(c2.rule_ape <= c2.paper_ape);
    assert_true(c7.rule_ape <= c7.paper_ape);
    assert_true(cf.rule_ape <= cf.paper_ape);
    assert_true(c2.rule_peak_ape <= c2.paper_peak_ape);
    assert_true(c7.rule_peak_ape <= c7.paper_peak_ape);
    assert_true(cf.rule_peak_ape <= cf.paper_peak_ape);
    /* out of sample, only the family set (8 rows per candidate) beats the paper; the
     * per-model sets (4 rows, 3 coefficients) do not, as rules/README.md reports */
    assert_true(cf.loo_ape <= cf.paper_ape);

    /* the sweep's path picks the per-model set for each Table I configuration */
    struct model_plan p2;
    plan_of("google/gemma-2b", &p2);
    struct train_config c = qlora(8, 512, 2, TARGETS_MLP);
    assert_int_equal(rules_select(rb, &p2, &c), rules_find_set(rb, "gemma-2b-qlora"));
    c.quant = QUANT_NF4; /* fitted on double quantization only */
    assert_int_equal(rules_select(rb, &p2, &c), -1);
    c = qlora(16, 512, 2, TARGETS_MLP); /* outside the measured micro-batches */
    assert_int_equal(rules_select(rb, &p2, &c), -1);
    plan_free(&p2);
    rules_free(rb);

    /* the shipped folder loads as one book, Salisbury sets first (file name order) */
    assert_int_equal(rules_load(LLMEM_SOURCE_DIR "/rules", &rb, &e), 0);
    assert_int_equal(rules_set_count(rb), 4);
    assert_string_equal(rules_set_name(rb, 0), "gemma-2b-qlora");
    assert_string_equal(rules_set_name(rb, 3), "litgpt-qlora-lgch");
    rules_free(rb);
}

static int teardown(void **state)
{
    (void)state;
    if (cat_loaded)
        catalog_free(&cat);
    return 0;
}

/* Hostile coefficients (issue 14): a negative one outside a calibration is refused at its
 * line; one of 1e300 saturates (never fits); a calibration cannot take the prediction below
 * the weights, gradients and states of the optimizer step. */
static void test_hostile_coefficients(void **state)
{
    (void)state;
    parse_fails("set,candidate,key,value,note\n"
                "neg,,metric,reserved,\n"
                "neg,X,1,1000,\n"
                "neg,X,b*s*v,-0.5,\n"
                "neg,,with_model,no,\n",
                4, "value", "negative coefficient");
    struct model_plan gemma;
    plan_of("google/gemma-2b", &gemma);
    struct train_config c = qlora(2, 10, 8, TARGETS_ATTN);
    struct mem_estimate e;
    memset(&e, 0, sizeof e);
    e.allocated = 3000000, e.reserved = 4000000, e.device = 5000000, e.shown = 4500000;
    e.phase[PHASE_OPTIMIZER][TERM_PARAMS] = 1000000;
    e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER] = 500000;
    const char *const books[2] = {
        "set,candidate,key,value,note\nbig,,metric,reserved,\nbig,,with_model,yes,\n"
        "big,X,b*s*v,1e300,\nbig,X,b*s^2*heads,1e300,\n",
        "set,candidate,key,value,note\nbig,,metric,reserved,\nbig,,with_model,add,\n"
        "big,X,b*s*v,1e300,\nbig,X,1,-1e300,\n"};
    for (int i = 0; i < 2; i++) {
        struct rule_book *rb = parse_ok(books[i]);
        int set = rules_prepare(rb, rules_bind(rb, &gemma), &gemma, &c);
        uint64_t peak;
        int cand;
        assert_true(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
        assert_true(peak == BYTES_SAT);
        rules_free(rb);
    }
    struct rule_book *rb = parse_ok("set,candidate,key,value,note\nlow,,metric,allocated,\n"
                                    "low,,with_model,add,\nlow,X,1,-1e300,\n");
    int set = rules_prepare(rb, rules_bind(rb, &gemma), &gemma, &c);
    uint64_t peak;
    int cand;
    assert_true(rules_eval(rb, set, &gemma, &c, &e, &peak, &cand));
    /* the floor 1.5 MB, + (device - allocated) 2 MB */
    assert_int_equal(peak, 3500000);
    rules_free(rb);
    plan_free(&gemma);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_ckpt_key),
        cmocka_unit_test(test_features_named),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_load_folder),
        cmocka_unit_test(test_eval_by_hand),
        cmocka_unit_test(test_hostile_coefficients),
        cmocka_unit_test(test_feature_values),
        cmocka_unit_test(test_nnls_negative_unconstrained),
        cmocka_unit_test(test_nnls_exact_and_kkt),
        cmocka_unit_test(test_nnls_degenerate),
        cmocka_unit_test(test_fit_command),
        cmocka_unit_test(test_fit_exact),
        cmocka_unit_test(test_fit_additive),
        cmocka_unit_test(test_salisbury),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
