/* test_devices.c: the local-GPU module behaves on any machine, with or without a GPU, a driver
 * or the CUDA runtime: it never crashes, always explains "no GPU", and the subcommands keep
 * their exit codes and output shapes. GPU-only checks live in gpu_devices.c. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno: to capture the subcommands' stdout */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "commands.h"
#include "devices.h"
#include "fixtures.h"

#define CAPTURE_MAX 8192

static int gpu_count(void)
{
    char note[256];
    int n = devices_count(note, sizeof note);
    assert_true(n >= 0);
    return n;
}

static void test_list_reports_gpus_or_reason(void **state)
{
    (void)state;
    struct device_info devs[16];
    char note[256] = "unchanged";
    int n = devices_list(devs, 16, note, sizeof note);
    assert_true(n >= 0);
    if (n == 0) {
        assert_true(strlen(note) > 0);
        assert_string_not_equal(note, "unchanged");
        return;
    }
    for (int i = 0; i < n && i < 16; i++) {
        assert_int_equal(devs[i].index, i);
        assert_true(strlen(devs[i].name) > 0);
        assert_true(devs[i].total_bytes >= devs[i].free_bytes);
    }
}

static void test_list_tolerates_null_and_small_buffers(void **state)
{
    (void)state;
    int n = gpu_count();
    assert_int_equal(devices_list(NULL, 0, NULL, 0), n);
    assert_int_equal(devices_list(NULL, 4, NULL, 0), n);

    char tiny[4];
    memset(tiny, 'x', sizeof tiny);
    struct device_info one;
    assert_int_equal(devices_list(&one, 1, tiny, sizeof tiny), n);
    assert_non_null(memchr(tiny, '\0', sizeof tiny)); /* truncated, still terminated */
}

static void test_count_agrees_with_list(void **state)
{
    (void)state;
    char a[256], b[256];
    int count = devices_count(a, sizeof a);
    int listed = devices_list(NULL, 0, b, sizeof b);
    assert_int_equal(count, listed);
    assert_string_equal(a, b);
}

static void test_probe_rejects_missing_device(void **state)
{
    (void)state;
    int n = gpu_count();
    uint64_t bytes = 12345;
    char note[256] = "";

    /* With no GPU, index 0 is missing too: probing must fail and say why. */
    assert_int_equal(devices_probe_context(n, &bytes, note, sizeof note), -1);
    assert_true(strlen(note) > 0);

    note[0] = '\0';
    assert_int_equal(devices_probe_context(-1, &bytes, note, sizeof note), -1);
    assert_true(strlen(note) > 0);

    assert_int_equal(devices_probe_context(0, NULL, NULL, 0), -1);
}

static void test_devices_text(void **state)
{
    (void)state;
    char out[CAPTURE_MAX];
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices", out, sizeof out), 0);
    if (gpu_count() == 0)
        assert_true(strncmp(out, "no GPU: ", 8) == 0 && strlen(out) > 9);
    else
        assert_true(strncmp(out, "0  ", 3) == 0 && strstr(out, " GiB  cc ") != NULL);
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --format text", out, sizeof out), 0);
}

static void test_devices_json(void **state)
{
    (void)state;
    char out[CAPTURE_MAX];
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --format json", out, sizeof out), 0);

    json_error_t err;
    json_t *root = json_loads(out, JSON_REJECT_DUPLICATES, &err);
    assert_non_null(root);
    json_t *list = json_object_get(root, "devices");
    json_t *note = json_object_get(root, "note");
    assert_true(json_is_array(list));
    assert_true(json_is_string(note));
    assert_int_equal((int)json_array_size(list), gpu_count());
    if (json_array_size(list) == 0)
        assert_true(json_string_length(note) > 0);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *d = json_array_get(list, i);
        assert_true(json_is_integer(json_object_get(d, "total_bytes")));
        assert_true(json_is_string(json_object_get(d, "compute_capability")));
    }
    json_decref(root);

    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --format=json", out, sizeof out), 0);
    assert_true(out[0] == '{');
}

static void test_devices_usage_errors(void **state)
{
    (void)state;
    char out[CAPTURE_MAX];
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --x", out, sizeof out), 2);
    assert_string_equal(out, ""); /* messages go to stderr only */
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --format", NULL, 0), 2);
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --format xml", NULL, 0), 2);
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices gpu0", NULL, 0), 2);
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --formats json", NULL, 0), 2);

    assert_int_equal(fixture_run_cmd(cmd_devices, "devices --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: llmem-sweep devices"));
    assert_int_equal(fixture_run_cmd(cmd_devices, "devices -h", NULL, 0), 0);
}

static void test_probe_command(void **state)
{
    (void)state;
    char out[CAPTURE_MAX];
    assert_int_equal(fixture_run_cmd(cmd_probe, "probe --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: llmem-sweep probe"));
    assert_non_null(strstr(out, "Exit codes"));

    static const char *const bad[] = {
        "probe --device abc", "probe --device -1",          "probe --device 1x",
        "probe --device",     "probe --device 99999999999", "probe --device= ",
        "probe --gpu 0",      "probe 0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(fixture_run_cmd(cmd_probe, bad[i], out, sizeof out), 2);

    if (gpu_count() == 0) {
        assert_int_equal(fixture_run_cmd(cmd_probe, "probe", out, sizeof out), 4);
        assert_string_equal(out, ""); /* nothing a script could mistake for a value */
        assert_int_equal(fixture_run_cmd(cmd_probe, "probe --device 3", NULL, 0), 4);
    } else {
        assert_int_equal(fixture_run_cmd(cmd_probe, "probe --device=4096", NULL, 0), 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_reports_gpus_or_reason),
        cmocka_unit_test(test_list_tolerates_null_and_small_buffers),
        cmocka_unit_test(test_count_agrees_with_list),
        cmocka_unit_test(test_probe_rejects_missing_device),
        cmocka_unit_test(test_devices_text),
        cmocka_unit_test(test_devices_json),
        cmocka_unit_test(test_devices_usage_errors),
        cmocka_unit_test(test_probe_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
