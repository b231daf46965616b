/* model_source.c: a model named on the command line or in a measured CSV (model_source.h). */
#include "model_source.h"

#include <stdbool.h>
#include <sys/stat.h>

#include "error.h"
#include "hf_config.h"

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int model_source_load(const struct catalog *cat, const char *name, struct model_spec *m,
                      struct input_error *e)
{
    const struct model_spec *c = catalog_find_model(cat, name);
    if (c && !exists(name)) {
        *m = *c;
        return 0;
    }
    if (!exists(name))
        return input_error_set(e, EXIT_USAGE, NULL, 0, NULL, "unknown model '%s': not in "
                               "%s/models.csv and no such file (see `llmem-sweep models`)",
                               name, cat->dir);
    return hf_config_load(name, m, e);
}
