/* main.c: llmem-sweep's entry point; dispatches to the subcommands. */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "outfile.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"explain", cmd_explain}, {"validate", cmd_validate}, {"fit", cmd_fit},
    {"models", cmd_models},   {"gpus", cmd_gpus},         {"devices", cmd_devices},
    {"probe", cmd_probe},     {"merge", cmd_merge},       {"diff", cmd_diff},
};

static int run(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("llmem-sweep %s\n", LLMEM_VERSION);
        return 0;
    }
    for (size_t i = 0; argc > 1 && i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0 && strcmp(argv[1], "-h") != 0) {
        fprintf(stderr, "llmem-sweep: unknown command '%s' (commands: explain, validate, fit, "
                        "models, gpus, devices, probe, merge, diff; or sweep options)\n", argv[1]);
        return 2;
    }
    return cmd_sweep(argc, argv);
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "C"); /* numbers in reports are always printed in the C locale */
    int rc = run(argc, argv);
    /* Every command's stdout is checked here, once: a full disk or a closed pipe is exit 4
     * with a message, never a silent 0 (a command that already failed said why). */
    struct input_error e;
    if ((rc == EXIT_OK || rc == EXIT_NOTHING_FITS) && outfile_stdout_done(&e) != 0) {
        input_error_print(&e);
        rc = e.code;
    }
    return rc;
}
