/* rule_load.c: rules CSV files and folders into a book (rules.h: rules_load, rules_parse). */
#include "rule_book.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "csv_table.h"

/* --- reading files ------------------------------------------------------------------- */

static int add_table(struct rule_book *rb, const struct csv_table *t, struct input_error *e)
{
    static const char *const need[] = {"set", "candidate", "key", "value", NULL};
    if (csv_table_require(t, need, e) != 0)
        return -1;
    for (size_t c = 0; c < t->ncols; c++) {
        const char *h = t->header[c];
        if (strcmp(h, "set") && strcmp(h, "candidate") && strcmp(h, "key") && strcmp(h, "value") &&
            strcmp(h, "note"))
            return input_error_set(e, EXIT_BAD_INPUT, t->path, 1, h,
                                   "unknown column (expected set,candidate,key,value[,note])");
    }
    int cs = csv_table_col(t, "set"), cc = csv_table_col(t, "candidate");
    int ck = csv_table_col(t, "key"), cv = csv_table_col(t, "value");
    for (size_t r = 0; r < t->nrows; r++) {
        char **row = t->cells[r];
        if (rules_add(rb, row[cs], row[cc], row[ck], row[cv], t->path, t->lines[r], e) != 0)
            return -1;
    }
    return 0;
}

static int load_file(struct rule_book *rb, const char *path, struct input_error *e)
{
    struct csv_table t;
    if (csv_table_read(path, &t, e) != 0)
        return -1;
    int rc = add_table(rb, &t, e);
    csv_table_free(&t);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_csv_name(const char *n)
{
    size_t len = strlen(n);
    return n[0] != '.' && len > 4 && strcmp(n + len - 4, ".csv") == 0;
}

/* Every *.csv of a folder, in byte order of the names so loading is reproducible. */
static int load_dir(struct rule_book *rb, const char *dir, struct input_error *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return input_error_set(e, EXIT_IO, dir, 0, NULL, "cannot open folder: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (!is_csv_name(de->d_name))
            continue;
        if (rule_grow((void **)&names, &cap, n, sizeof *names) != 0 || !(names[n] = strdup(de->d_name)))
            rc = input_error_set(e, EXIT_IO, dir, 0, NULL, "out of memory");
        else
            n++;
    }
    closedir(d);
    if (rc == 0 && n == 0)
        rc = input_error_set(e, EXIT_BAD_INPUT, dir, 0, NULL, "no *.csv rules files in the folder");
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[1024];
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (w < 0 || (size_t)w >= sizeof path)
            rc = input_error_set(e, EXIT_IO, dir, 0, NULL, "path too long");
        else
            rc = load_file(rb, path, e);
    }
    rule_free_strings(names, n);
    return rc;
}

static int finish(struct rule_book *rb, int rc, struct rule_book **out, struct input_error *e)
{
    if (rc == 0)
        rc = rules_check(rb, e);
    if (rc != 0) {
        rules_free(rb);
        return -1;
    }
    *out = rb;
    return 0;
}

int rules_load(const char *path, struct rule_book **out, struct input_error *e)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return input_error_set(e, EXIT_IO, path, 0, NULL, "cannot open: %s", strerror(errno));
    struct rule_book *rb = rules_new();
    if (!rb)
        return input_error_set(e, EXIT_IO, path, 0, NULL, "out of memory");
    int rc = S_ISDIR(st.st_mode) ? load_dir(rb, path, e) : load_file(rb, path, e);
    if (rc == 0 && rb->nsets == 0)
        rc = input_error_set(e, EXIT_BAD_INPUT, path, 0, NULL, "no rule sets");
    return finish(rb, rc, out, e);
}

int rules_parse(const char *buf, size_t len, const char *name, struct rule_book **out,
                struct input_error *e)
{
    *out = NULL;
    struct csv_table t;
    if (csv_table_parse(buf, len, name, &t, e) != 0)
        return -1;
    struct rule_book *rb = rules_new();
    int rc = rb ? add_table(rb, &t, e)
                : input_error_set(e, EXIT_IO, name, 0, NULL, "out of memory");
    csv_table_free(&t);
    if (!rb)
        return -1;
    if (rc == 0 && rb->nsets == 0)
        rc = input_error_set(e, EXIT_BAD_INPUT, name, 0, NULL, "no rule sets");
    return finish(rb, rc, out, e);
}

