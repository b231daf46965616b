/* lengths.h: a dataset's sample lengths (--lengths FILE), for the variable-length replay of
 * the loss path on the user's own data (losspath.h losspath_lengths_cost).
 *
 * The file is a CSV with a header and a column `tokens`: one row per training sample, its
 * token count as the tokenizer gives it before the trainer cuts it to --seq (other columns
 * are ignored). A trainer that drops samples longer than the cap instead of cutting them
 * (ms-swift's truncation_strategy 'delete') is described by leaving them out of the file. */
#ifndef LLMEM_LENGTHS_H
#define LLMEM_LENGTHS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define LENGTHS_MAX_ROWS 10000000u /* ten million samples: far above a fine-tuning set */

struct lengths {
    uint32_t *tokens; /* n sample lengths, each 1 .. INT32_MAX, in the file's order */
    size_t n;
    uint32_t longest;
};

/* Reads path into l. @return 0, or -1 with e naming file, line and column (EXIT_IO when it
 * cannot be read, EXIT_BAD_INPUT for a missing `tokens` column, no rows, more than
 * LENGTHS_MAX_ROWS rows, or a cell that is not an integer in 1 .. 2^31 - 1). */
int lengths_read(const char *path, struct lengths *l, struct input_error *e);
/* The same over a buffer; name is used in messages. */
int lengths_parse(const char *buf, size_t len, const char *name, struct lengths *l,
                  struct input_error *e);
void lengths_free(struct lengths *l);

#endif
