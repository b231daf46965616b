/* model_source.h: where a model comes from: a catalog id (models.csv) or a config.json
 * path. A path that exists wins over a catalog id of the same spelling. */
#ifndef LLMEM_MODEL_SOURCE_H
#define LLMEM_MODEL_SOURCE_H

#include "catalog.h"
#include "error.h"
#include "model.h"

/* Loads one model by catalog name or config.json path into *m. Prints nothing.
 * @return 0, or -1 with e filled (code EXIT_USAGE: unknown name; EXIT_BAD_INPUT: a broken
 *         config.json, with its line). */
int model_source_load(const struct catalog *cat, const char *name, struct model_spec *m,
                      struct input_error *e);

#endif
