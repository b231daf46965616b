/* explain_out.h: the explain command's writers over a finished explanation
 * (explanation.h): text for a terminal, JSON for scripts. They call nothing of the model. */
#ifndef LLMEM_EXPLAIN_OUT_H
#define LLMEM_EXPLAIN_OUT_H

#include <stdio.h>

#include "explanation.h"

/* Each writes x to f; the caller checks f for write errors.
 * @return 0, or -1 when memory runs out (JSON). */
int explain_write_text(const struct explanation *x, FILE *f);
int explain_write_json(const struct explanation *x, FILE *f);

#endif
