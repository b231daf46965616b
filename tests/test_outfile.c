/* test_outfile.c: outputs written whole or not at all (outfile.h): the temporary file is
 * created beside the target and renamed into place, an abort leaves the old file, and
 * SIGINT/SIGTERM remove the temporary file before the process dies of the signal, and
 * outfile_check tries a target without writing it. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "outfile.h"

struct dir {
    char path[64];
};

static int setup(void **state)
{
    static struct dir d;
    snprintf(d.path, sizeof d.path, "%s", "/tmp/llmem-outfile-XXXXXX");
    assert_non_null(mkdtemp(d.path));
    *state = &d;
    return 0;
}

static int teardown(void **state)
{
    struct dir *d = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->path);
    return system(cmd) == 0 ? 0 : -1;
}

/* Entries of the folder, "." and ".." left out. */
static int entries(const char *path)
{
    DIR *dir = opendir(path);
    assert_non_null(dir);
    int n = 0;
    for (struct dirent *de; (de = readdir(dir));)
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(dir);
    return n;
}

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

static void test_commit_and_abort(void **state)
{
    struct dir *d = *state;
    char out[128], buf[64];
    snprintf(out, sizeof out, "%s/r.csv", d->path);
    struct outfile o;
    struct input_error e;
    assert_int_equal(outfile_open(&o, out, &e), 0);
    assert_int_equal(strncmp(o.tmp, out, strlen(out)), 0); /* beside the target */
    fputs("new\n", o.f);
    assert_int_equal(access(out, F_OK), -1);              /* not there until complete */
    assert_int_equal(outfile_commit(&o, &e), 0);
    slurp(out, buf, sizeof buf);
    assert_string_equal(buf, "new\n");
    assert_int_equal(outfile_open(&o, out, &e), 0);
    fputs("half", o.f);
    outfile_abort(&o);
    slurp(out, buf, sizeof buf);
    assert_string_equal(buf, "new\n"); /* the old file stays whole */
    assert_int_equal(entries(d->path), 1);
}

/* A child opens an output, then gets sig: it must die of sig with no temporary file left. */
static void die_of(const char *folder, int sig)
{
    char out[128];
    snprintf(out, sizeof out, "%s/r.csv", folder);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct outfile o;
        struct input_error e;
        if (outfile_open(&o, out, &e) != 0)
            _exit(3);
        fputs("partial", o.f);
        fflush(o.f);
        if (access(o.tmp, F_OK) != 0)
            _exit(4);
        kill(getpid(), sig);
        _exit(5); /* not reached */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_int_equal(entries(folder), 0);
}

static void test_sigterm_removes_tmp(void **state) { die_of(((struct dir *)*state)->path, SIGTERM); }
static void test_sigint_removes_tmp(void **state) { die_of(((struct dir *)*state)->path, SIGINT); }

static void test_missing_folder(void **state)
{
    (void)state;
    struct outfile o;
    struct input_error e;
    assert_int_equal(outfile_open(&o, "/nonexistent-llmem/r.csv", &e), -1);
    assert_int_equal(e.code, EXIT_IO);
    assert_string_equal(e.file, "/nonexistent-llmem/r.csv");
}

/* outfile_check: a new file's folder is tried and left as it was; a FIFO passes without being
 * opened (opening it would wait here for a reader: the test would hang); stdout passes; a
 * missing folder and a directory fail as outfile_open does. */
static void test_check(void **state)
{
    const char *dir = ((struct dir *)*state)->path;
    char path[128];
    struct input_error e;
    snprintf(path, sizeof path, "%s/new.csv", dir);
    assert_int_equal(outfile_check(path, &e), 0);
    assert_int_equal(entries(dir), 0);
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(outfile_check(path, &e), 0);
    assert_int_equal(outfile_check("-", &e), 0);
    assert_int_equal(outfile_check(NULL, &e), 0);
    assert_int_equal(outfile_check(dir, &e), -1);
    assert_int_equal(e.code, EXIT_IO);
    assert_int_equal(outfile_check("/nonexistent-llmem/r.csv", &e), -1);
    assert_int_equal(e.code, EXIT_IO);
    assert_string_equal(e.file, "/nonexistent-llmem/r.csv");
    assert_int_equal(entries(dir), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_and_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_removes_tmp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigint_removes_tmp, setup, teardown),
        cmocka_unit_test(test_missing_folder),
        cmocka_unit_test_setup_teardown(test_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
