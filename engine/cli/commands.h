/* commands.h: the subcommands of llmem-sweep. Each takes the arguments after its name
 * (argv[0] is the command name) and returns the process exit code (DESIGN.md section 4). */
#ifndef LLMEM_COMMANDS_H
#define LLMEM_COMMANDS_H

int cmd_sweep(int argc, char **argv);    /* the main job: argv[0] is the program */
int cmd_explain(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_diff(int argc, char **argv);      /* two ranked CSVs: what changed */
int cmd_validate(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_devices(int argc, char **argv);  /* GPUs seen through the CUDA runtime (devices.h) */
int cmd_probe(int argc, char **argv);    /* one GPU's CUDA context size, as --base */

#endif
