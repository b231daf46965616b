/* cmd_catalog.c: `llmem-sweep models` and `llmem-sweep gpus` list the catalogs. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "commands.h"
#include "options.h"
#include "units.h"

static int load(int argc, char **argv, struct catalog *c)
{
    const char *dir = NULL;
    int rc = options_parse_cmd(CMD_CATALOG, argc, argv, &dir, NULL, NULL);
    if (rc < 0)
        printf("usage: llmem-sweep %s [--catalog DIR]   (--data DIR also works)\n", argv[0]);
    if (rc)
        return rc;
    struct input_error e;
    if (catalog_load(dir ? dir : catalog_default_dir(), c, &e) != 0) {
        input_error_print(&e);
        return e.code;
    }
    return 0;
}

int cmd_models(int argc, char **argv)
{
    struct catalog c;
    int rc = load(argc, argv, &c);
    if (rc)
        return rc < 0 ? 0 : rc;
    printf("%-52s %-12s %6s %6s %5s %4s %7s %8s %14s\n", "model", "type", "layers", "hidden",
           "heads", "kv", "inter", "vocab", "params");
    for (size_t i = 0; i < c.nmodels; i++) {
        const struct model_spec *m = &c.models[i];
        printf("%-52s %-12s %6" PRId64 " %6" PRId64 " %5" PRId64 " %4" PRId64 " %7" PRId64
               " %8" PRId64 " %14" PRId64 "\n", m->name, m->model_type, m->layers, m->hidden,
               m->heads, m->kv_heads, m->intermediate, m->vocab, model_param_count(m));
    }
    catalog_free(&c);
    return 0; /* main() checks stdout */
}

int cmd_gpus(int argc, char **argv)
{
    struct catalog c;
    int rc = load(argc, argv, &c);
    if (rc)
        return rc < 0 ? 0 : rc;
    printf("%-18s %10s %9s %9s %9s %9s %9s %11s\n", "gpu", "memory GiB", "bf16 TF/s", "fp16 TF/s",
           "fp32 TF/s", "mem GB/s", "link GB/s", "context MiB");
    for (size_t i = 0; i < c.ngpus; i++) {
        const struct gpu_spec *g = &c.gpus[i];
        printf("%-18s %10.2f %9.1f %9.1f %9.1f %9.0f %9.0f %11.0f\n", g->name,
               units_gib(g->memory_bytes), g->bf16_tflops, g->fp16_tflops, g->fp32_tflops,
               g->mem_bw_gbs, g->interconnect_gbs, (double)g->context_bytes / 1048576.0);
    }
    catalog_free(&c);
    return 0; /* main() checks stdout */
}
