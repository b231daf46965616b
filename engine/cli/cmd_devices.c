/* cmd_devices.c: the `devices` and `probe` subcommands (DESIGN.md section 4). They only format
 * what devices.c reports; all CUDA knowledge stays there. */
#include "commands.h"
#include "devices.h"
#include "error.h"
#include "options.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEVICES_SHOWN_MAX 64 /* more GPUs than any single node has */
#define NOTE_MAX 256

static const double gib = 1024.0 * 1024.0 * 1024.0;
static const uint64_t mib = 1024u * 1024u;

/* ---- devices ---------------------------------------------------------------------------- */

static void devices_usage(void)
{
    fputs("usage: llmem-sweep devices [--format text|json]\n"
          "\n"
          "List the GPUs the CUDA runtime sees on this machine: index, name, total and free\n"
          "memory, compute capability. Free memory is read through a short-lived CUDA context\n"
          "and already excludes that context. With no usable GPU (no driver, no device, or a\n"
          "build without the CUDA runtime) it prints 'no GPU: <reason>' and exits 0.\n"
          "\n"
          "  --format text|json   output format (default: text); json is one object:\n"
          "                       \"devices\": [{index, name, total_bytes, free_bytes,\n"
          "                       compute_capability}], \"note\": why none (or \"\")\n"
          "  -h, --help           show this help\n"
          "\n"
          "Exit codes: 0 success (also with no GPU), 2 usage error, 4 unexpected CUDA error or\n"
          "output error.\n",
          stdout);
}

static void print_devices_text(const struct device_info *devs, int n, const char *note)
{
    if (n == 0) {
        printf("no GPU: %s\n", note);
        return;
    }
    for (int i = 0; i < n; i++) {
        const struct device_info *d = &devs[i];
        printf("%d  %s  total %.2f GiB  free %.2f GiB  cc %d.%d\n", d->index, d->name,
               (double)d->total_bytes / gib, (double)d->free_bytes / gib, d->cc_major,
               d->cc_minor);
    }
}

static json_t *device_json(const struct device_info *d)
{
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    /* Byte counts of real GPUs are far below 2^63, so json_int_t holds them. */
    return json_pack("{s:i, s:s, s:I, s:I, s:s}", "index", d->index, "name", d->name,
                     "total_bytes", (json_int_t)d->total_bytes, "free_bytes",
                     (json_int_t)d->free_bytes, "compute_capability", cc);
}

static int print_devices_json(const struct device_info *devs, int n, const char *note)
{
    json_t *list = json_array();
    for (int i = 0; list != NULL && i < n; i++) {
        if (json_array_append_new(list, device_json(&devs[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    /* "o" steals the reference to list, and json_pack frees it on failure. */
    json_t *root = list ? json_pack("{s:o, s:s}", "devices", list, "note", note) : NULL;
    if (root == NULL) {
        fprintf(stderr, "llmem-sweep: devices: out of memory building JSON\n");
        return EXIT_IO;
    }
    int rc = json_dumpf(root, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc != 0)
        return EXIT_IO;
    fputc('\n', stdout);
    return EXIT_OK;
}

int cmd_devices(int argc, char **argv)
{
    int json = 0; /* --format: 0 text, 1 json */
    int rc = options_parse_cmd(CMD_DEVICES, argc, argv, &json, NULL, NULL);
    if (rc < 0) {
        devices_usage();
        return EXIT_OK; /* main() checks stdout */
    }
    if (rc != EXIT_OK)
        return rc;

    struct device_info devs[DEVICES_SHOWN_MAX];
    char note[NOTE_MAX] = "";
    int n = devices_list(devs, DEVICES_SHOWN_MAX, note, sizeof note);
    if (n < 0) {
        fprintf(stderr, "llmem-sweep: devices: %s\n", note);
        return EXIT_IO;
    }
    if (n > DEVICES_SHOWN_MAX)
        n = DEVICES_SHOWN_MAX;

    if (json)
        rc = print_devices_json(devs, n, note);
    else
        print_devices_text(devs, n, note);
    return rc; /* main() checks stdout */
}

/* ---- probe ------------------------------------------------------------------------------ */

static void probe_usage(void)
{
    fputs("usage: llmem-sweep probe [--device N]\n"
          "\n"
          "Measure the CUDA context overhead on one local GPU (LLMem's m_base): the memory in use\n"
          "(total - free) right after a CUDA context is created. Prints '--base <N>MiB' (rounded\n"
          "up) on standard output, ready to pass to a sweep, and a one-line explanation on\n"
          "standard error. Memory other processes hold on that GPU is included, so probe an idle\n"
          "GPU. PyTorch adds its own kernels and library workspaces on top of this floor.\n"
          "\n"
          "  --device N   CUDA device index (default: 0; honours CUDA_VISIBLE_DEVICES)\n"
          "  -h, --help   show this help\n"
          "\n"
          "Exit codes: 0 measured, 2 usage error (also a device index that is not present),\n"
          "4 no GPU, CUDA error or output error.\n",
          stdout);
}

int cmd_probe(int argc, char **argv)
{
    int device = 0;
    int rc = options_parse_cmd(CMD_PROBE, argc, argv, &device, NULL, NULL);
    if (rc < 0) {
        probe_usage();
        return EXIT_OK; /* main() checks stdout */
    }
    if (rc != EXIT_OK)
        return rc;

    /* Count first: "no GPU" (exit 4) and "no such index" (exit 2) must be told apart. */
    char note[NOTE_MAX] = "";
    int count = devices_count(note, sizeof note);
    if (count < 0) {
        fprintf(stderr, "llmem-sweep: probe: %s\n", note);
        return EXIT_IO;
    }
    if (count == 0) {
        fprintf(stderr, "llmem-sweep: probe: no GPU: %s\n", note);
        return EXIT_IO;
    }
    if (device >= count) {
        fprintf(stderr, "llmem-sweep: probe: no CUDA device %d (devices 0..%d present)\n",
                device, count - 1);
        return EXIT_USAGE;
    }

    uint64_t bytes = 0;
    if (devices_probe_context(device, &bytes, note, sizeof note) != 0) {
        fprintf(stderr, "llmem-sweep: probe: %s\n", note);
        return EXIT_IO;
    }
    uint64_t base_mib = bytes / mib + (bytes % mib != 0);
    printf("--base %" PRIu64 "MiB\n", base_mib);
    fprintf(stderr,
            "llmem-sweep: probe: device %d: %" PRIu64 " bytes in use right after creating a "
            "CUDA context (includes other processes on this GPU)\n",
            device, bytes);
    return EXIT_OK; /* main() checks stdout */
}
