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

#include "error.h"
#include "model.h"

/* Max size of a config.json; real ones are a few KiB. */
#define HF_CONFIG_MAX_BYTES ((size_t)16 << 20)

/* Reads path (a config.json file, or a folder containing config.json) into *m.
 * Returns 0; or -1 with *err filled (code EXIT_BAD_INPUT): file always; field the key of a
 * missing or bad key; line that of the JSON syntax error or of the bad key's first
 * `"key":` (0 for a missing key or an I/O error); msg a sentence such as
 * "unsupported model_type \"t5\" (supported: opt, bloom, ...)" or
 * "missing key \"hidden_size\"". Writes nothing to stdout or stderr.
 * m->name is ORG/NAME for a Hugging Face hub cache snapshot (.../models--ORG--NAME/
 * snapshots/<commit>/), else the config's "_name_or_path" when that is a non-empty string,
 * else the name of the folder holding the file. */
int hf_config_load(const char *path, struct model_spec *m, struct input_error *err);

/* Same, from a buffer of len bytes (need not be NUL-terminated). name is used as err->file
 * and as the fallback m->name; NULL means "<buffer>". */
int hf_config_parse(const char *buf, size_t len, const char *name, struct model_spec *m,
                    struct input_error *err);

#endif
