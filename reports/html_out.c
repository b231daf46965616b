/* html_out.c: placeholder until the HTML report lands: refuses rather than writing a
 * half page. */
#include "report.h"

int report_write_html(const struct report *r, FILE *f)
{
    (void)r;
    (void)f;
    fputs("llmem-sweep: the HTML report is not available in this build\n", stderr);
    return -1;
}
