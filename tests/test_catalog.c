/* test_catalog.c: models.csv / gpus.csv loading (catalog.h), its errors (file, line,
 * field), and the look-ups by model name and CUDA device name. Fixtures under
 * tests/data/catalog/; the shipped catalog comes from $LLMEM_DATA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog.h"
#include "error.h"
#include "fixtures.h"
#include "model.h"

#define CAT_DIR TEST_DATA_DIR "/catalog/"

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Loads a models.csv fixture that must fail and returns the error. */
static struct input_error models_bad(const char *path)
{
    struct catalog c;
    struct input_error e;
    memset(&c, 0, sizeof c);
    memset(&e, 0, sizeof e);
    assert_int_equal(catalog_load_models(path, &c, &e), -1);
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "models.csv"));
    catalog_free(&c);
    return e;
}

static void test_load_fixture(void **state)
{
    (void)state;
    struct catalog c;
    struct input_error e;
    if (catalog_load(CAT_DIR "good", &c, &e) != 0)
        fail_msg("%s:%ld: %s: %s", e.file, e.line, e.field, e.msg);
    assert_int_equal(c.nmodels, 4);
    assert_int_equal(c.ngpus, 3);
    assert_true(ends_with(c.dir, "good"));

    const struct model_spec *m = &c.models[0];
    assert_string_equal(m->name, "test-org/Tiny-Llama");
    assert_string_equal(m->model_type, "llama");
    assert_int_equal(m->layers, 2);
    assert_int_equal(m->hidden, 64);
    assert_int_equal(m->kv_heads, 2);
    assert_int_equal(m->norm, NORM_RMSNORM);
    assert_int_equal(m->mlp, MLP_GATED);
    assert_int_equal(m->pos, POS_ROTARY);
    assert_false(m->tied);
    assert_int_equal(m->published_params, 202048);
    /* the hand count of tests/test_tensors.c matches the catalog's */
    assert_int_equal(model_param_count(m), 202048);

    m = &c.models[1];
    assert_string_equal(m->name, "other-org/tiny-opt");
    assert_int_equal(m->pos, POS_LEARNED);
    assert_int_equal(m->pos_offset, 2);
    assert_true(m->tied);
    assert_true(m->qkv_bias);
    assert_int_equal(model_param_count(m), 172416);

    const struct gpu_spec *g = &c.gpus[1];
    assert_string_equal(g->name, "L40S-48GB");
    assert_int_equal(g->memory_bytes, UINT64_C(47697362944));
    assert_int_equal(g->context_bytes, UINT64_C(450887680));
    assert_string_equal(g->match, "nvidia l40s"); /* lower-cased on load */
    assert_true(g->bf16_tflops == 362.05);
    assert_true(c.gpus[2].bf16_tflops == 0); /* T4: no bf16 */
    assert_true(g->fp8_tflops == 733);            /* optional column (--precision fp8) */
    assert_true(c.gpus[2].fp8_tflops == 0);       /* T4: empty cell, no float8 */
    catalog_free(&c);
    assert_null(c.models);
}

/* bad-hidden/models.csv line 3: hidden = "6x4" */
static void test_bad_integer(void **state)
{
    (void)state;
    struct input_error e = models_bad(CAT_DIR "bad-hidden/models.csv");
    assert_int_equal(e.line, 3);
    assert_string_equal(e.field, "hidden");
    assert_non_null(strstr(e.msg, "6x4"));
}

static void test_unknown_model_type(void **state)
{
    (void)state;
    struct input_error e = models_bad(CAT_DIR "unknown-type/models.csv");
    assert_int_equal(e.line, 2);
    assert_string_equal(e.field, "model_type");
    assert_non_null(strstr(e.msg, "t5"));
}

static void test_duplicate_model(void **state)
{
    (void)state;
    struct input_error e = models_bad(CAT_DIR "duplicate/models.csv");
    assert_int_equal(e.line, 3); /* the second occurrence */
    assert_string_equal(e.field, "model");
    assert_non_null(strstr(e.msg, "test-org/Tiny-Llama"));
}

/* kv_heads 3 does not divide heads 4: model_check's field is named */
static void test_inconsistent_dims(void **state)
{
    (void)state;
    struct input_error e = models_bad(CAT_DIR "inconsistent/models.csv");
    assert_int_equal(e.line, 2);
    assert_string_equal(e.field, "kv_heads");
}

static void test_missing_column(void **state)
{
    (void)state;
    struct input_error e = models_bad(CAT_DIR "missing-column/models.csv");
    assert_string_equal(e.field, "vocab");
}

static void test_gpu_negative_memory(void **state)
{
    (void)state;
    struct catalog c;
    struct input_error e;
    memset(&c, 0, sizeof c);
    memset(&e, 0, sizeof e);
    assert_int_equal(catalog_load_gpus(CAT_DIR "gpus-negative/gpus.csv", &c, &e), -1);
    assert_int_equal(e.code, EXIT_BAD_INPUT);
    assert_true(ends_with(e.file, "gpus.csv"));
    assert_int_equal(e.line, 3);
    assert_string_equal(e.field, "memory_bytes");
    catalog_free(&c);
}

static void test_missing_dir(void **state)
{
    (void)state;
    struct catalog c;
    struct input_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(catalog_load(CAT_DIR "no-such-dir", &c, &e), -1);
    assert_int_equal(e.code, EXIT_IO);
    assert_true(ends_with(e.file, "models.csv"));
    catalog_free(&c);
}

static void test_find_model_fixture(void **state)
{
    (void)state;
    struct catalog c;
    struct input_error e;
    assert_int_equal(catalog_load(CAT_DIR "good", &c, &e), 0);
    /* an exact id wins over an earlier case-insensitive match */
    const struct model_spec *m = catalog_find_model(&c, "ACME/foo");
    assert_non_null(m);
    assert_string_equal(m->name, "ACME/foo");
    m = catalog_find_model(&c, "acme/Foo");
    assert_string_equal(m->name, "acme/Foo");
    /* no exact match: the first case-insensitive one */
    m = catalog_find_model(&c, "Acme/FOO");
    assert_string_equal(m->name, "acme/Foo");
    /* the part after '/' */
    m = catalog_find_model(&c, "tiny-llama");
    assert_non_null(m);
    assert_string_equal(m->name, "test-org/Tiny-Llama");
    assert_null(catalog_find_model(&c, "Tiny"));
    assert_null(catalog_find_model(&c, "test-org"));
    assert_null(catalog_find_model(&c, ""));
    catalog_free(&c);
}

static void test_find_model_shipped(void **state)
{
    (void)state;
    struct catalog c;
    fixture_shipped_catalog(&c);
    const struct model_spec *m = catalog_find_model(&c, "meta-llama/Llama-3.1-8B");
    assert_non_null(m);
    assert_string_equal(m->name, "meta-llama/Llama-3.1-8B");
    m = catalog_find_model(&c, "META-LLAMA/llama-3.1-8b");
    assert_non_null(m);
    assert_string_equal(m->name, "meta-llama/Llama-3.1-8B");
    /* short name: not "Llama-3.1-8B-Instruct" */
    m = catalog_find_model(&c, "Llama-3.1-8B");
    assert_non_null(m);
    assert_string_equal(m->name, "meta-llama/Llama-3.1-8B");
    m = catalog_find_model(&c, "llama-3.1-8b-instruct");
    assert_non_null(m);
    assert_string_equal(m->name, "meta-llama/Llama-3.1-8B-Instruct");
    m = catalog_find_model(&c, "gpt2"); /* an id without an organisation */
    assert_non_null(m);
    assert_string_equal(m->name, "gpt2");
    assert_null(catalog_find_model(&c, "Llama-3.1"));
    assert_null(catalog_find_model(&c, "no/such-model"));
    catalog_free(&c);
}

static void test_find_gpu_and_match_device(void **state)
{
    (void)state;
    struct catalog c;
    fixture_shipped_catalog(&c);
    const struct gpu_spec *g = catalog_find_gpu(&c, "h100-sxm-80gb");
    assert_non_null(g);
    assert_string_equal(g->name, "H100-SXM-80GB");
    assert_null(catalog_find_gpu(&c, "H100"));

    /* "nvidia l4" is a substring of "nvidia l40s": the longest match wins */
    g = catalog_match_device(&c, "NVIDIA L40S");
    assert_non_null(g);
    assert_string_equal(g->name, "L40S-48GB");
    g = catalog_match_device(&c, "NVIDIA L4");
    assert_non_null(g);
    assert_string_equal(g->name, "L4-24GB");
    g = catalog_match_device(&c, "NVIDIA H100 80GB HBM3");
    assert_non_null(g);
    assert_string_equal(g->name, "H100-SXM-80GB");
    g = catalog_match_device(&c, "NVIDIA A100-SXM4-80GB");
    assert_non_null(g);
    assert_string_equal(g->name, "A100-SXM-80GB");
    assert_null(catalog_match_device(&c, "AMD Instinct MI300X"));
    assert_null(catalog_match_device(&c, ""));
    catalog_free(&c);
}

static void test_match_device_fixture(void **state)
{
    (void)state;
    struct catalog c;
    struct input_error e;
    assert_int_equal(catalog_load(CAT_DIR "good", &c, &e), 0);
    /* L4 comes first in the file; L40S still wins for an L40S, whatever the case */
    const struct gpu_spec *g = catalog_match_device(&c, "nvidia l40s");
    assert_string_equal(g->name, "L40S-48GB");
    g = catalog_match_device(&c, "NVIDIA L4");
    assert_string_equal(g->name, "L4-24GB");
    g = catalog_match_device(&c, "Tesla T4");
    assert_string_equal(g->name, "T4-16GB");
    catalog_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_fixture),
        cmocka_unit_test(test_bad_integer),
        cmocka_unit_test(test_unknown_model_type),
        cmocka_unit_test(test_duplicate_model),
        cmocka_unit_test(test_inconsistent_dims),
        cmocka_unit_test(test_missing_column),
        cmocka_unit_test(test_gpu_negative_memory),
        cmocka_unit_test(test_missing_dir),
        cmocka_unit_test(test_find_model_fixture),
        cmocka_unit_test(test_find_model_shipped),
        cmocka_unit_test(test_find_gpu_and_match_device),
        cmocka_unit_test(test_match_device_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
