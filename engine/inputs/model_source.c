/* model_source.c: a model named on the command line or in a measured CSV (model_source.h). */
#include "model_source.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "error.h"
#include "hf_config.h"

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int model_source_load(const struct catalog *cat, const char *name, struct model_spec *m)
{
    const struct model_spec *c = catalog_find_model(cat, name);
    if (c && !exists(name)) {
        *m = *c;
        return 0;
    }
    if (!exists(name)) {
        fprintf(stderr, "llmem-sweep: unknown model '%s': not in %s/models.csv and no such "
                        "file (see `llmem-sweep models`)\n", name, cat->dir);
        return EXIT_USAGE;
    }
    struct hf_error err;
    if (hf_config_load(name, m, &err) != 0) {
        fprintf(stderr, "llmem-sweep: %s", err.file);
        if (err.line > 0)
            fprintf(stderr, ":%d:%d", err.line, err.column);
        if (err.key[0])
            fprintf(stderr, ": %s", err.key);
        fprintf(stderr, ": %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    return 0;
}
