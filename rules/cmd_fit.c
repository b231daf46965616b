/* placeholder, replaced by the rules fitter */
#include <stdio.h>
#include "commands.h"
int cmd_fit(int argc, char **argv) { (void)argc; (void)argv; fputs("llmem-sweep: fit: not yet available\n", stderr); return 2; }
