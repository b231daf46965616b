/* placeholder, replaced by the validate command */
#include <stdio.h>
#include "commands.h"
int cmd_validate(int argc, char **argv) { (void)argc; (void)argv; fputs("llmem-sweep: validate: not yet available\n", stderr); return 2; }
