/* catalog.h: the model and GPU catalogs (datasets/models.csv, datasets/gpus.csv). */
#ifndef LLMEM_CATALOG_H
#define LLMEM_CATALOG_H

#include <stddef.h>

#include "error.h"
#include "gpu.h"
#include "model.h"

/* The GPU of a sweep without --gpu and without a local GPU (DESIGN.md section 4). */
#define CATALOG_DEFAULT_GPU "H100-SXM-80GB"

struct catalog {
    struct model_spec *models;
    size_t nmodels;
    struct gpu_spec *gpus;
    size_t ngpus;
    char dir[512]; /* where the files were found */
};

/* The datasets folder: $LLMEM_DATA, else the source tree's datasets/ (a build run in
 * place), else <prefix>/share/llmem-sweep next to the installed binary. */
const char *catalog_default_dir(void);

/* Loads dir/models.csv and dir/gpus.csv. Returns 0, or -1 with e filled and c empty. */
int catalog_load(const char *dir, struct catalog *c, struct input_error *e);
int catalog_load_models(const char *path, struct catalog *c, struct input_error *e);
int catalog_load_gpus(const char *path, struct catalog *c, struct input_error *e);
void catalog_free(struct catalog *c);

/* Exact HF id, then a case-insensitive match of the id or of its part after '/'. */
const struct model_spec *catalog_find_model(const struct catalog *c, const char *name);
/* Exact name (case-insensitive). */
const struct gpu_spec *catalog_find_gpu(const struct catalog *c, const char *name);
/* The entry whose `match` is the longest substring of a CUDA device name. */
const struct gpu_spec *catalog_match_device(const struct catalog *c, const char *device_name);

#endif
