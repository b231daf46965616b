/* test_html.c: the HTML report's escaping per context (text, attribute, JSON in a
 * script data block, URL segment), the chart number helpers, and the writer on a small
 * hand-built report (no live sweep, as after `merge`): CSP, no URLs, rows, escaping,
 * same bytes twice, and a write error reported as -1. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "html_escape.h"
#include "html_page.h"
#include "report.h"
#include "speed.h"
#include "svg_chart.h"

/* Runs fn(f, s) on a memory stream and returns what it wrote (free it). */
static char *capture(int (*fn)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(f, s), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void expect(int (*fn)(FILE *, const char *), const char *in, const char *want)
{
    char *got = capture(fn, in);
    if (strcmp(got, want) != 0)
        fail_msg("escaping '%s': got '%s', want '%s'", in, got, want);
    free(got);
}

static void test_text_hostile(void **state)
{
    (void)state;
    expect(html_text, "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html_text, "a & b \"q\" 'x'", "a &amp; b &quot;q&quot; &#39;x&#39;");
    expect(html_text, "&lt;", "&amp;lt;"); /* entities in input stay literal text */
    expect(html_text, "<!-- x -->", "&lt;!-- x --&gt;");
    expect(html_text, "", "");
    expect(html_text, NULL, "");
}

static void test_text_utf8(void **state)
{
    (void)state;
    expect(html_text, "Qwen \xE6\xA8\xA1\xE5\x9E\x8B \xC3\xBC", "Qwen \xE6\xA8\xA1\xE5\x9E\x8B \xC3\xBC");
    /* invalid: stray byte, overlong '/', surrogate, truncated sequence, above U+10FFFF */
    expect(html_text, "a\xFF" "b", "a\xEF\xBF\xBD" "b");
    expect(html_text, "\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD");
    expect(html_text, "\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    expect(html_text, "x\xE6\xA8", "x\xEF\xBF\xBD\xEF\xBF\xBD");
    expect(html_text, "\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    /* control characters other than tab and newlines */
    expect(html_text, "a\x01\x7F" "b\tc", "a\xEF\xBF\xBD\xEF\xBF\xBD" "b\tc");
    expect(html_text, "\xC2\x85", "\xEF\xBF\xBD"); /* C1 NEL */
}

static void test_attribute(void **state)
{
    (void)state;
    expect(html_attr, "\" onmouseover=\"alert(1)", "&quot; onmouseover=&quot;alert(1)");
    expect(html_attr, "' onfocus='x", "&#39; onfocus=&#39;x");
    expect(html_attr, "a\nb\tc", "a&#10;b&#9;c");
    expect(html_attr, "<>&", "&lt;&gt;&amp;");
}

static void test_script_json(void **state)
{
    (void)state;
    expect(html_json_string, "</script><script>alert(1)</script>",
           "\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\"");
    expect(html_json_string, "<!--", "\"\\u003c!--\"");
    expect(html_json_string, "a\"b\\c", "\"a\\\"b\\\\c\"");
    expect(html_json_string, "l1\nl2\t\x01", "\"l1\\nl2\\t\\u0001\"");
    expect(html_json_string, "&", "\"\\u0026\"");
    /* U+2028 and U+2029 end a line in JavaScript */
    expect(html_json_string, "\xE2\x80\xA8\xE2\x80\xA9", "\"\\u2028\\u2029\"");
    expect(html_json_string, "\xFF", "\"\xEF\xBF\xBD\"");
    /* whatever the input, no '<' survives, so no "</script" and no "<!--" */
    char *got = capture(html_json_string, "<<</ScRiPt>><!--<");
    assert_null(strchr(got, '<'));
    free(got);
}

static int text_max_4(FILE *f, const char *s)
{
    return html_text_max(f, s, 4);
}

static void test_text_max(void **state)
{
    (void)state;
    expect(text_max_4, "abcdef", "abc\xE2\x80\xA6");
    expect(text_max_4, "abcd", "abcd");
    expect(text_max_4, "<<<<<", "&lt;&lt;&lt;\xE2\x80\xA6");
    /* counts code points, never cuts inside one */
    expect(text_max_4, "\xE6\xA8\xA1\xE6\xA8\xA1\xE6\xA8\xA1\xE6\xA8\xA1\xE6\xA8\xA1",
           "\xE6\xA8\xA1\xE6\xA8\xA1\xE6\xA8\xA1\xE2\x80\xA6");
    assert_int_equal(html_utf8_len("a\xE6\xA8\xA1\xFF"), 3);
}

static void test_url_segment(void **state)
{
    (void)state;
    expect(html_url_segment, "report-1_a.csv", "report-1_a.csv");
    expect(html_url_segment, "my report #1?.csv", "my%20report%20%231%3F.csv");
    expect(html_url_segment, "javascript:x\"", "javascript%3Ax%22");
}

static void test_chart_numbers(void **state)
{
    (void)state;
    double t[SVG_TICKS_MAX];
    int n = svg_nice_ticks(0, 25, 5, t, SVG_TICKS_MAX);
    assert_int_equal(n, 6);
    assert_true(t[0] == 0 && t[5] == 25);
    assert_true(svg_nice_ceil(22.206, 5) == 25);
    assert_true(svg_nice_ceil(80, 8) == 80);
    assert_true(svg_nice_ceil(0, 5) == 1);
    char b[32];
    svg_format(b, sizeof b, 15000, 5000, SVG_NUM_SI);
    assert_string_equal(b, "15k");
    svg_format(b, sizeof b, 7.5, 2.5, SVG_NUM_PLAIN);
    assert_string_equal(b, "7.5");
    svg_format(b, sizeof b, 1250000, 250000, SVG_NUM_SI);
    assert_string_equal(b, "1.25M");
    assert_true(svg_clamp((double)NAN) == 0);
    assert_true(svg_clamp((double)INFINITY) == 1e6);
    html_grouped(17825.3, b, sizeof b);
    assert_string_equal(b, "17,825");
    html_grouped(999, b, sizeof b);
    assert_string_equal(b, "999");
    html_grouped(1234567, b, sizeof b);
    assert_string_equal(b, "1,234,567");
}

/* --- the writer ----------------------------------------------------------------------- */

static void fill_row(struct report_row *w, long rank, const char *model, enum method m,
                     int gpus, double peak, double tok)
{
    memset(w, 0, sizeof *w);
    w->rank = rank;
    snprintf(w->model, sizeof w->model, "%s", model);
    w->cfg = (struct train_config){.method = m, .gpus = gpus, .tp = 1, .dp = gpus,
                                   .micro_batch = 4, .seq_len = 512, .precision = PREC_BF16,
                                   .finetune = FT_LORA, .lora_r = 16, .lora_targets = TARGETS_ALL,
                                   .grad_ckpt = true, .optimizer = OPT_ADAMW};
    w->global_batch = 4 * gpus;
    w->peak_gib = peak;
    w->budget_gib = 22.206;
    w->headroom_gib = w->budget_gib - peak;
    snprintf(w->peak_phase, sizeof w->peak_phase, "lm_head+loss");
    w->term_gib[TERM_BASE] = 0.641;
    w->term_gib[TERM_PARAMS] = 0.953;
    w->term_gib[TERM_LOGITS] = peak - 0.641 - 0.953;
    w->step_time_s = 0.23;
    w->samples_per_s = tok / 512;
    w->tokens_per_s = tok;
    w->fits = true;
    w->index = (uint64_t)rank;
    w->score = tok;
}

#define HOSTILE "<script>alert(1)</script>"

static void tiny_report(struct report *r, struct report_row rows[2])
{
    memset(r, 0, sizeof *r);
    r->meta.version = "0.1.0";
    snprintf(r->meta.gpu, sizeof r->meta.gpu, "<b onclick=\"x\">A10G</b>");
    snprintf(r->meta.stack, sizeof r->meta.stack, "hf");
    snprintf(r->meta.rank_mode, sizeof r->meta.rank_mode, "speed");
    r->meta.budget_gib = 22.206;
    fill_row(&rows[0], 1, HOSTILE, METHOD_CDP, 2, 5.266, 17825.3);
    fill_row(&rows[1], 2, "\"><img src=x onerror=alert(2)>", METHOD_SINGLE, 1, 4.982, 8951.8);
    snprintf(rows[1].rule, sizeof rows[1].rule, "</td><script>alert(3)</script>");
    snprintf(rows[1].peak_phase, sizeof rows[1].peak_phase, "<i>phase</i>");
    r->rows = rows;
    r->nrows = 2;
}

static char *write_html(const struct report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(report_write_html(r, f), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_writer_tiny_report(void **state)
{
    (void)state;
    struct report r;
    struct report_row rows[2];
    tiny_report(&r, rows);
    char *html = write_html(&r);
    assert_non_null(strstr(html, "<!DOCTYPE html>"));
    assert_non_null(strstr(html, "<meta http-equiv=\"Content-Security-Policy\" "
                                 "content=\"default-src 'none'; style-src 'unsafe-inline'; "
                                 "script-src 'sha256-"));
    assert_non_null(strstr(html, "img-src data:;"));
    /* no URL of any scheme: nothing to fetch */
    assert_null(strstr(html, "http://"));
    assert_null(strstr(html, "https://"));
    assert_null(strstr(html, "src=\""));
    /* the table rows, in rank order, with both models escaped */
    const char *r1 = strstr(html, "<tr data-rank=\"1\">"), *r2 = strstr(html, "<tr data-rank=\"2\">");
    assert_non_null(r1);
    assert_non_null(r2);
    assert_true(r1 < r2);
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(html, "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
    assert_non_null(strstr(html, "&lt;/td&gt;&lt;script&gt;alert(3)"));
    assert_non_null(strstr(html, "&lt;b onclick=&quot;x&quot;&gt;A10G&lt;/b&gt;"));
    /* only our two script elements (the data block and the sorter), and no raw markup
     * from the input anywhere */
    assert_int_equal(count(html, "<script"), 2);
    assert_null(strstr(html, "<img"));
    assert_null(strstr(html, "<i>phase"));
    assert_null(strstr(html, "<b onclick"));
    /* charts from the rows, and the note that live sections are left out */
    assert_non_null(strstr(html, "<svg class=\"chart\""));
    assert_non_null(strstr(html, "merged from shard CSVs"));
    assert_non_null(strstr(html, "17,825"));
    assert_non_null(strstr(html, "GiB = 2<sup>30</sup> bytes"));
    /* coordinates are clamped: never nan or inf in an attribute */
    assert_null(strstr(html, "nan\""));
    assert_null(strstr(html, "inf\""));
    free(html);
}

static void test_writer_same_bytes(void **state)
{
    (void)state;
    struct report r;
    struct report_row rows[2];
    tiny_report(&r, rows);
    char *a = write_html(&r), *b = write_html(&r);
    assert_string_equal(a, b);
    assert_null(strstr(a, "Generated ")); /* no timestamp without --stamp */
    free(a);
    free(b);
    r.meta.stamp = true;
    a = write_html(&r);
    assert_int_equal(count(a, "Generated "), 1);
    assert_non_null(strstr(a, " UTC."));
    free(a);
}

static void test_writer_empty(void **state)
{
    (void)state;
    struct report r;
    struct report_row rows[2];
    tiny_report(&r, rows);
    r.nrows = 0;
    char *html = write_html(&r);
    assert_non_null(strstr(html, "No configuration fits the budget."));
    assert_non_null(strstr(html, "</html>\n"));
    free(html);
}

static void test_writer_write_error(void **state)
{
    (void)state;
    struct report r;
    struct report_row rows[2];
    tiny_report(&r, rows);
    FILE *f = fopen("/dev/null", "r"); /* every write fails and sets the error flag */
    assert_non_null(f);
    assert_int_equal(report_write_html(&r, f), -1);
    fclose(f);
}

/* Ties: layouts of one recipe within SPEED_ERROR_PCT of the fastest are marked, the
 * fastest too; a slower one, another recipe and a row that does not fit are not. */
static void test_speed_ties(void **state)
{
    (void)state;
    struct report r;
    struct report_row rows[5];
    const double keep = 1.0 - SPEED_ERROR_PCT / 100.0;
    memset(&r, 0, sizeof r);
    fill_row(&rows[0], 1, "m", METHOD_CDP, 2, 5.0, 1000.0);
    fill_row(&rows[1], 2, "m", METHOD_SINGLE, 1, 5.0, 1000.0 * keep + 1.0); /* within */
    fill_row(&rows[2], 3, "m", METHOD_SINGLE, 1, 5.0, 1000.0 * keep - 1.0); /* beyond */
    fill_row(&rows[3], 4, "m", METHOD_SINGLE, 1, 5.0, 999.0);
    rows[3].cfg.lora_r = 8; /* another recipe, alone in it */
    fill_row(&rows[4], 5, "m", METHOD_SINGLE, 1, 5.0, 999.0);
    rows[4].fits = false;
    r.rows = rows;
    r.nrows = 5;
    answer_mark_ties(&r);
    assert_true(rows[0].speed_tie && rows[1].speed_tie);
    assert_false(rows[2].speed_tie || rows[3].speed_tie || rows[4].speed_tie);
    char *html = write_html(&r);
    assert_int_equal(count(html, ">within the error<"), 2);
    free(html);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_hostile),       cmocka_unit_test(test_text_utf8),
        cmocka_unit_test(test_attribute),          cmocka_unit_test(test_script_json),
        cmocka_unit_test(test_text_max),           cmocka_unit_test(test_url_segment),
        cmocka_unit_test(test_chart_numbers),      cmocka_unit_test(test_writer_tiny_report),
        cmocka_unit_test(test_writer_same_bytes),  cmocka_unit_test(test_writer_empty),
        cmocka_unit_test(test_writer_write_error), cmocka_unit_test(test_speed_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
