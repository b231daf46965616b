/* outfile.c: outputs written whole or not at all (see outfile.h). */
#undef _POSIX_C_SOURCE
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: realpath */
#include "outfile.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary file a signal must remove. Outputs are written one after another, so one
 * slot suffices; the handler only reads it while `pending` is set, and unlink() is
 * async-signal-safe. */
static char pending_path[OUTFILE_PATH_MAX];
static volatile sig_atomic_t pending;

static void on_signal(int sig)
{
    if (pending)
        unlink(pending_path);
    raise(sig); /* SA_RESETHAND restored the default action: die of the same signal */
}

/* Installs the handler for SIGINT and SIGTERM once, unless the signal is ignored (nohup). */
static void install_handlers(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

static int fail(struct input_error *e, const char *path, const char *what, int err)
{
    if (err)
        return input_error_set(e, EXIT_IO, path, 0, NULL, "%s: %s", what, strerror(err));
    return input_error_set(e, EXIT_IO, path, 0, NULL, "%s", what);
}

/* Copies what the rename replaces into o->target. Returns 0, or -1 with e filled. */
static int set_target(struct outfile *o, const char *target, const char *path,
                      struct input_error *e)
{
    int w = snprintf(o->target, sizeof o->target, "%s", target);
    if (w < 0 || (size_t)w >= sizeof o->target)
        return fail(e, path, "path too long", 0);
    return 0;
}

/* What the rename must replace: path itself, or the file a symbolic link points to. */
static int resolve_target(struct outfile *o, const char *path, struct stat *st, int *exists,
                          struct input_error *e)
{
    *exists = 0;
    if (lstat(path, st) != 0) {
        if (errno != ENOENT)
            return fail(e, path, "cannot write", errno);
        return set_target(o, path, path, e);
    }
    *exists = 1;
    if (!S_ISLNK(st->st_mode))
        return set_target(o, path, path, e);
    char real[PATH_MAX];
    if (!realpath(path, real) || stat(real, st) != 0)
        return fail(e, path, "symbolic link to nothing: not written", 0);
    return set_target(o, real, path, e);
}

int outfile_open(struct outfile *o, const char *path, struct input_error *e)
{
    memset(o, 0, sizeof *o);
    o->path = path ? path : "stdout";
    if (!path || outfile_is_stdout(path)) {
        o->path = "stdout";
        o->f = stdout;
        return 0;
    }
    struct stat st;
    int exists;
    if (resolve_target(o, path, &st, &exists, e) != 0)
        return -1;
    if (exists && !S_ISREG(st.st_mode)) {
        if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
            return fail(e, path, "not a regular file, FIFO or character device: not written", 0);
        o->f = fopen(o->target, "w"); /* written through: a FIFO or device cannot be renamed onto */
        return o->f ? 0 : fail(e, path, "cannot write", errno);
    }
    if (snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", o->target) >= (int)sizeof o->tmp)
        return fail(e, path, "path too long", 0);
    install_handlers();
    pending = 0;
    memcpy(pending_path, o->tmp, sizeof pending_path);
    int fd = mkstemp(pending_path);
    if (fd < 0) {
        o->tmp[0] = '\0';
        return fail(e, path, "cannot create a temporary file beside it", errno);
    }
    pending = 1;
    memcpy(o->tmp, pending_path, sizeof o->tmp);
    /* mkstemp makes the file 0600; reports are ordinary files (the umask still applies) */
    mode_t mask = umask(0);
    umask(mask);
    o->f = fdopen(fd, "w");
    if (!o->f || fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~mask)) != 0) {
        int err = errno;
        if (o->f)
            fclose(o->f);
        else
            close(fd);
        o->f = NULL;
        outfile_abort(o);
        return fail(e, path, "cannot create a temporary file beside it", err);
    }
    return 0;
}

int outfile_check(const char *path, struct input_error *e)
{
    struct outfile o;
    struct stat st;
    int exists;
    if (!path || outfile_is_stdout(path))
        return 0;
    memset(&o, 0, sizeof o);
    if (resolve_target(&o, path, &st, &exists, e) != 0)
        return -1;
    if (exists && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
        return 0;
    if (outfile_open(&o, path, e) != 0)
        return -1;
    outfile_abort(&o);
    return 0;
}

int outfile_commit(struct outfile *o, struct input_error *e)
{
    if (o->f == stdout) {
        o->f = NULL;
        return outfile_stdout_done(e);
    }
    int bad = ferror(o->f);
    int err = 0;
    /* on disk before the rename, so a power loss leaves the old file or the new one */
    if (!bad && o->tmp[0] && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0))
        bad = 1, err = errno;
    if (fclose(o->f) != 0 && !bad)
        bad = 1, err = errno;
    o->f = NULL;
    if (!bad && o->tmp[0] && rename(o->tmp, o->target) != 0)
        bad = 1, err = errno;
    if (bad) {
        outfile_abort(o);
        return fail(e, o->path, "write failed", err ? err : EIO);
    }
    pending = 0;
    o->tmp[0] = '\0';
    return 0;
}

void outfile_abort(struct outfile *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) {
        unlink(o->tmp);
        pending = 0;
        o->tmp[0] = '\0';
    }
}

int outfile_stdout_done(struct input_error *e)
{
    errno = 0;
    int bad = fflush(stdout) != 0;
    int err = errno;
    if (bad || ferror(stdout))
        return fail(e, "stdout", "write failed", err ? err : EIO);
    return 0;
}
