/* hf_reader.h: what hf_config.c (reading config.json robustly: the file, non-finite numbers,
 * key lines, the common dimensions, errors) and hf_families.c (each model_type's key table
 * and the reader of its extra keys) share. Internal to engine/inputs. */
#ifndef LLMEM_HF_READER_H
#define LLMEM_HF_READER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"
#include "model.h"

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

/* Same bound as model_check's DIM_MAX: larger dimensions are certainly a broken file. */
#define DIM_LIMIT (INT64_C(1) << 24)

enum field {
    F_LAYERS, F_HIDDEN, F_HEADS, F_KV_HEADS, F_HEAD_DIM, F_INTERMEDIATE, F_VOCAB, F_MAX_POS,
    F_EMB_DIM, F_NORMS, F_EXPERTS, F_TOPK, F_MOE_INTER, F_SHARED, F_DENSE, F_KV_LORA, F_COUNT
};


/* Where one dimension lives in a config class. name: the class attribute, named in a
 * "missing key" error. look: the keys tried, first hit wins; PretrainedConfig applies
 * attribute_map aliases (gpt2 "hidden_size" -> n_embd) and legacy kwargs (bloom and falcon
 * "n_embed") after the attribute itself, so those come first. An empty spec (name NULL)
 * means the class has no such key. */
struct keyspec {
    const char *name;
    const char *look[3];
};

#define K1(a) {a, {a, NULL, NULL}}
#define K2(attr, alias) {attr, {alias, attr, NULL}}
#define KSTD_HIDDEN K1("hidden_size")
#define KSTD_LAYERS K1("num_hidden_layers")
#define KSTD_HEADS K1("num_attention_heads")
#define KSTD_KV K1("num_key_value_heads")
#define KSTD_FFN K1("intermediate_size")
#define KSTD_POS K1("max_position_embeddings")
/* The six keys of the Llama-like config classes */
#define KSTD_DIMS                                                                          \
    .hidden = KSTD_HIDDEN, .layers = KSTD_LAYERS, .heads = KSTD_HEADS, .kv_heads = KSTD_KV, \
    .intermediate = KSTD_FFN, .max_pos = KSTD_POS

struct reader {
    json_t *root;
    struct model_spec *m;
    struct input_error *err;
    const char *src[F_COUNT]; /* the key each dimension came from, for model_check errors */
};

struct hf_class {
    const char *type;
    struct keyspec hidden, layers, heads, kv_heads, intermediate, max_pos, head_dim;
    bool ffn_4x;             /* intermediate absent or null means 4 * hidden */
    int64_t max_pos_default; /* the class default when the key is absent; -1: required */
    int64_t head_dim_default; /* when head_dim is absent or null; 0: hidden / heads */
    int (*extra)(struct reader *r);
};

/* The key table of one model_type (hf_families.c); NULL when the type is not supported. */
const struct hf_class *hf_class_find(const char *type);

/* Reads dimension f from k into *out. Absent or null: dflt, or an error when dflt < 0.
 * A spec with no key always gives dflt. @return 0, or -1 with r->err set. */
int hf_get_dim(struct reader *r, const struct keyspec *k, int64_t dflt, enum field f, int64_t *out);

/* A boolean key; absent or null gives dflt. @return 0, or -1 with r->err set. */
int hf_get_bool(struct reader *r, const char *key, bool dflt, bool *out);

/* Sets err's field (key) and message. */
void hf_set_err(struct input_error *err, const char *key, const char *fmt, ...) PRINTF_LIKE(3, 4);

#endif
