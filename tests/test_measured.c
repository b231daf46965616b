/* test_measured.c: measured-CSV rows as configurations (measured.h): the data and
 * alloc_conf extension columns with their defaults from seq_kind and the `packed` feature,
 * a bad value as an input error naming file, line and column, the features that change
 * the configuration, and the reasons that make a row unrepresentable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "csv_table.h"
#include "error.h"
#include "losspath.h"
#include "measured.h"
#include "train.h"

#define CONTRACT "model,method,gpus,tp,micro_batch,seq_len,precision,finetune,lora_r,lora_targets," \
                 "quant,grad_ckpt,optimizer,metric,measured_gib,gpu,framework,source"
/* the contract cells of a LoRA row: Qwen-7B-Chat, one A100, r=8 on c_attn (q+k+v) */
#define SWB_CELLS "Qwen/Qwen-7B-Chat,single,1,1,1,2048,bf16-pure,lora,8,q+k+v,none,on,adamw," \
                  "reserved,27.740,A100-SXM-80GB,ms-swift,https://example.org"

/* Parses a two-line CSV (header, one row) and configures its row. Returns what
 * measured_row_config returns; why gets the reason of a skip. */
static int config_of(const char *csv, struct train_config *c, char *why, size_t n,
                     struct input_error *e)
{
    struct csv_table t;
    assert_int_equal(csv_table_parse(csv, strlen(csv), "m.csv", &t, e), 0);
    int rc = measured_row_config(&t, 0, targets_parse, c, why, n, e);
    csv_table_free(&t);
    return rc;
}

static void test_data_and_alloc_columns(void **state)
{
    (void)state;
    struct train_config c;
    struct input_error e;
    char why[160];
    assert_int_equal(config_of(CONTRACT ",seq_kind,data,alloc_conf\n" SWB_CELLS ",exact,variable,"
                               "expandable\n", &c, why, sizeof why, &e), 0);
    assert_int_equal(c.data, DATA_VARIABLE); /* the column wins over seq_kind exact */
    assert_int_equal(c.alloc, ALLOC_EXPANDABLE);
    assert_int_equal(config_of(CONTRACT ",data,alloc_conf\n" SWB_CELLS ",packed,default\n", &c,
                               why, sizeof why, &e), 0);
    assert_int_equal(c.data, DATA_PACKED);
    assert_int_equal(c.alloc, ALLOC_DEFAULT);
}

/* Without the columns (public.csv): packed when every batch had seq_len tokens. */
static void test_data_defaults(void **state)
{
    (void)state;
    struct train_config c;
    struct input_error e;
    char why[160];
    assert_int_equal(config_of(CONTRACT ",seq_kind\n" SWB_CELLS ",exact\n", &c, why, sizeof why, &e), 0);
    assert_int_equal(c.data, DATA_PACKED);
    assert_int_equal(c.alloc, ALLOC_DEFAULT);
    assert_int_equal(config_of(CONTRACT ",seq_kind\n" SWB_CELLS ",cap\n", &c, why, sizeof why, &e), 0);
    assert_int_equal(c.data, DATA_VARIABLE);
    assert_int_equal(config_of(CONTRACT ",features,seq_kind\n" SWB_CELLS ",compile+packed+fsdp,cap\n",
                               &c, why, sizeof why, &e), 0);
    assert_int_equal(c.data, DATA_PACKED);
    /* a flag that merely contains the word is not the flag */
    assert_int_equal(config_of(CONTRACT ",features\n" SWB_CELLS ",unpacked\n", &c, why, sizeof why, &e), 0);
    assert_int_equal(c.data, DATA_VARIABLE);
}

static void test_bad_values(void **state)
{
    (void)state;
    struct train_config c;
    struct input_error e;
    char why[160];
    assert_int_equal(config_of(CONTRACT ",data\n" SWB_CELLS ",padded\n", &c, why, sizeof why, &e), -1);
    assert_string_equal(e.file, "m.csv");
    assert_int_equal(e.line, 2);
    assert_string_equal(e.field, "data");
    assert_non_null(strstr(e.msg, "'padded'"));
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_int_equal(config_of(CONTRACT ",alloc_conf\n" SWB_CELLS ",expandable_segments\n", &c,
                               why, sizeof why, &e), -1);
    assert_string_equal(e.field, "alloc_conf");
}

/* The `widths` column: a run's step widths in order; absent or empty gives none; a width
 * of 0, above seq_len (2048 here), a stray separator or too many steps is malformed input
 * naming file, line and column. */
static int widths_of(const char *cells, uint32_t *w, size_t max, struct input_error *e)
{
    struct csv_table t;
    char csv[512];
    snprintf(csv, sizeof csv, CONTRACT ",widths\n" SWB_CELLS ",%s\n", cells);
    assert_int_equal(csv_table_parse(csv, strlen(csv), "m.csv", &t, e), 0);
    int n = measured_row_widths(&t, 0, 2048, w, max, e);
    csv_table_free(&t);
    return n;
}

static void test_widths(void **state)
{
    (void)state;
    uint32_t w[4];
    struct input_error e;
    assert_int_equal(widths_of("17/2048/3", w, 4, &e), 3);
    assert_int_equal(w[0], 17);
    assert_int_equal(w[1], 2048);
    assert_int_equal(w[2], 3);
    assert_int_equal(widths_of("", w, 4, &e), 0);
    /* a packed row has no step widths of its own: contradictory input */
    struct csv_table t;
    struct train_config c;
    char why[160], csv[512];
    snprintf(csv, sizeof csv, CONTRACT ",data,widths\n" SWB_CELLS ",packed,17/3\n");
    assert_int_equal(csv_table_parse(csv, strlen(csv), "m.csv", &t, &e), 0);
    assert_int_equal(measured_row_config(&t, 0, targets_parse, &c, why, sizeof why, &e), 0);
    assert_int_equal(measured_row_run(&t, 0, &c, w, 4, &e), -1);
    assert_string_equal(e.field, "widths");
    assert_non_null(strstr(e.msg, "packed"));
    csv_table_free(&t);
    const char *bad[] = {"0/5", "2049", "5/", "/5", "5//6", "5/x", "-5", "5 6", "1/2/3/4/5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(widths_of(bad[i], w, 4, &e), -1);
        assert_string_equal(e.field, "widths");
        assert_int_equal(e.line, 2);
        assert_int_equal(e.code, EXIT_BAD_INPUT);
    }
}

/* swift 1.5's LoRA (PEFT 0.7 layers) keeps bf16 adapters: adapter-bf16 clears the HF stack's
 * fp32 adapters; lora-dropout and grad-accum add theirs. */
static void test_lora_features(void **state)
{
    (void)state;
    struct train_config c;
    struct input_error e;
    char why[160];
    assert_int_equal(config_of(CONTRACT ",stack\n" SWB_CELLS ",hf\n", &c, why, sizeof why, &e), 0);
    assert_true(c.features & FEAT_ADAPTER_FP32);
    assert_false(c.features & FEAT_LORA_DROPOUT);
    assert_int_equal(config_of(CONTRACT ",stack,features\n" SWB_CELLS
                               ",hf,flash-attn+adapter-bf16+lora-dropout+grad-accum\n",
                               &c, why, sizeof why, &e), 0);
    assert_false(c.features & FEAT_ADAPTER_FP32);
    assert_true(c.features & FEAT_LORA_DROPOUT);
    assert_true(c.features & FEAT_GRAD_ACCUM);
    assert_int_equal(c.lora_targets,
                     TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_K) | TARGET_BIT(ROLE_V));
}

/* A loop that keeps `outputs` is modelled on the transformers stacks' own paths (16-bit
 * logits from 4.46, fp32 before), both loops' features; a skip with its reason under TRL,
 * whose compute_loss holds other tensors, never a silently dropped feature. */
static void test_outputs_kept_stacks(void **state)
{
    (void)state;
    struct train_config c;
    struct input_error e;
    char why[160];
    static const struct {
        const char *stack, *feature;
        enum loss_path lp;
    } kept[] = {{"hf", "outputs-kept", LOSS_OUTPUTS_KEPT}, {"hf-4.49", "outputs-until-step", LOSS_OUTPUTS_KEPT},
                {"hf-4.46", "outputs-kept", LOSS_HF446_KEPT}, {"hf-4.31", "outputs-until-step", LOSS_HF431_KEPT}};
    char csv[1024];
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        snprintf(csv, sizeof csv, CONTRACT ",stack,features\n" SWB_CELLS ",%s,%s\n", kept[i].stack,
                 kept[i].feature);
        assert_int_equal(config_of(csv, &c, why, sizeof why, &e), 0);
        assert_true(c.features & (FEAT_OUTPUTS_KEPT | FEAT_OUTPUTS_UNTIL_STEP));
        assert_int_equal(losspath_select(&c, "llama"), kept[i].lp);
    }
    assert_int_equal(config_of(CONTRACT ",stack,features\n" SWB_CELLS ",trl,outputs-until-step\n",
                               &c, why, sizeof why, &e), 1);
    assert_string_equal(why, "outputs-until-step is modelled on the transformers stacks without TRL "
                             "(hf, hf-4.xx) only, not 'trl'");
}

/* torchtitan rows: the technique the model lacks is the reason, before the unknown stack. */
static void test_unrepresentable(void **state)
{
    (void)state;
    struct train_config c;
    struct input_error e;
    char why[160];
    const char *titan = "meta-llama/Llama-3.1-8B,adp,8,1,2,8192,bf16,full,,,none,on,adamw,"
                        "reserved,82.400,,torchtitan,https://example.org,torchtitan,";
    char csv[1024];
    static const struct {
        const char *features, *reason;
    } cases[] = {
        {"fsdp+selective-ac", "selective (per-op) activation checkpointing is not modelled"},
        {"compile+fsdp+float8", "float8 linears are not modelled"},
        {"fsdp+context-parallel", "context parallelism is not modelled"},
        {"fsdp+pipeline-parallel", "pipeline parallelism is not modelled"},
        {"fsdp+rocm", "AMD GPUs (ROCm's allocator and kernels) are not modelled"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(csv, sizeof csv, CONTRACT ",stack,features\n%s%s\n", titan, cases[i].features);
        assert_int_equal(config_of(csv, &c, why, sizeof why, &e), 1);
        assert_string_equal(why, cases[i].reason);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_and_alloc_columns),
        cmocka_unit_test(test_data_defaults),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_widths),
        cmocka_unit_test(test_lora_features),
        cmocka_unit_test(test_outputs_kept_stacks),
        cmocka_unit_test(test_unrepresentable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
