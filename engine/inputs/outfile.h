/* outfile.h: an output file that is written whole or not at all (DESIGN.md section 9).
 *
 * A regular target (or a new one) is written to a temporary file created exclusively with
 * mkstemp beside it, and renamed into place when complete, so a crash, a full disk or a
 * signal never leaves half a report and a planted `<out>.tmp` link is never followed. A
 * symbolic link is written through: the temporary file is made beside the file it points
 * to, which the rename replaces, and the link stays. A FIFO or a character device
 * (/dev/null, /dev/stdout on a terminal) is written directly: it cannot be renamed onto.
 * Any other kind of file (directory, block device, socket, dangling link) is refused with
 * EXIT_IO. While a temporary file exists, SIGINT and SIGTERM remove it before the process
 * dies of the signal. "-" (or NULL) is stdout. */
#ifndef LLMEM_OUTFILE_H
#define LLMEM_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"

#define OUTFILE_PATH_MAX 4096

struct outfile {
    FILE *f;                       /* write the output here */
    const char *path;              /* as given, for messages */
    char tmp[OUTFILE_PATH_MAX];    /* the temporary file; "" when writing directly */
    char target[OUTFILE_PATH_MAX]; /* what the rename replaces */
};

/* @return whether path names stdout: "-". */
static inline bool outfile_is_stdout(const char *path) { return path && path[0] == '-' && !path[1]; }

/* Opens path for writing. Returns 0, or -1 with e filled (EXIT_IO, naming path). */
int outfile_open(struct outfile *o, const char *path, struct input_error *e);

/* Checks, before the work that makes an output, that outfile_open will write path: the same
 * refusals and messages, and a temporary file created beside the target and removed again. A
 * FIFO or a character device is not opened (opening a FIFO waits for its reader); "-" and
 * NULL (stdout) pass. Returns 0, or -1 with e filled (EXIT_IO, naming path). */
int outfile_check(const char *path, struct input_error *e);

/* Checks that every byte was written and renames the temporary file into place. Returns
 * 0, or -1 with e filled (EXIT_IO); on failure the temporary file is gone. */
int outfile_commit(struct outfile *o, struct input_error *e);

/* Gives up: closes the file and removes the temporary one (stdout is left open). */
void outfile_abort(struct outfile *o);

/* Flushes stdout and reports a failed write to it (a full disk, a closed pipe). Returns 0,
 * or -1 with e filled (EXIT_IO). Every command that prints to stdout ends with this. */
int outfile_stdout_done(struct input_error *e);

#endif
