/* hf_config.h: reads a HuggingFace config.json into a model_spec.
 *
 * The reader knows the key names of each supported HF config class (model.h's
 * model_supported_types) and the class defaults for keys a file leaves out. What the
 * modelling code fixes regardless of the file (norm kind, fusions, ...) comes from
 * model_family_defaults(). Reading is pure: no output, no global state, so configs may be
 * loaded from several threads at once. */
#ifndef LLMEM_HF_CONFIG_H
#define LLMEM_HF_CONFIG_H

#include <stddef.h>

#include "model.h"

/* Max size of a config.json; real ones are a few KiB. */
#define HF_CONFIG_MAX_BYTES ((size_t)16 << 20)

struct hf_error {
    char file[512]; /* the file read (or the name given to hf_config_parse); always set */
    char key[64];   /* the config key at fault; "" when none (I/O or JSON syntax) */
    int line;       /* JSON syntax errors: 1-based line; 0 otherwise */
    int column;     /* JSON syntax errors: column as jansson reports it; 0 otherwise */
    char msg[512];  /* one human sentence, without the file name */
};

/* Reads path (a config.json file, or a folder containing config.json) into *m.
 * Returns 0; or -1 with *err filled: file always; key for a missing or bad key; line and
 * column for JSON syntax errors; msg a sentence such as
 * "unsupported model_type \"t5\" (supported: opt, bloom, ...)" or
 * "missing key \"hidden_size\"". Writes nothing to stdout or stderr.
 * m->name is the config's "_name_or_path" when that is a non-empty string, else the name
 * of the folder holding the file. */
int hf_config_load(const char *path, struct model_spec *m, struct hf_error *err);

/* Same, from a buffer of len bytes (need not be NUL-terminated). name is used as err->file
 * and as the fallback m->name; NULL means "<buffer>". */
int hf_config_parse(const char *buf, size_t len, const char *name, struct model_spec *m,
                    struct hf_error *err);

#endif
