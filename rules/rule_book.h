/* rule_book.h: inside the rules layer only: the book's structures, shared by the
 * builder (rule_book.c), the loader (rule_load.c) and the evaluator (rule_eval.c).
 * Everything outside rules/ goes through rules.h. */
#ifndef LLMEM_RULE_BOOK_H
#define LLMEM_RULE_BOOK_H

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

/* Configuration fields a set can restrict to a list of values (rows of one key are OR'ed). */
enum enum_key { K_FINETUNE, K_QUANT, K_STACK, K_PRECISION, K_METHOD, K_OPTIMIZER, K_CKPT, K_COUNT };

static inline int rule_enum_value(enum enum_key k, const struct train_config *c)
{
    switch (k) {
    case K_FINETUNE: return (int)c->finetune;
    case K_QUANT: return (int)c->quant;
    case K_STACK: return (int)c->stack;
    case K_PRECISION: return (int)c->precision;
    case K_METHOD: return (int)c->method;
    case K_OPTIMIZER: return (int)c->optimizer;
    case K_CKPT: return (int)train_ckpt_mode(c); /* selective is neither on nor off */
    default: return -1;
    }
}

/* Integer ranges; micro_batch and seq_len are checked per point, the others per config. */
enum range_key { R_MICRO_BATCH, R_SEQ_LEN, R_LORA_R, R_GPUS, R_COUNT };

static inline int64_t rule_range_value(enum range_key k, const struct train_config *c)
{
    switch (k) {
    case R_MICRO_BATCH: return c->micro_batch;
    case R_SEQ_LEN: return c->seq_len;
    case R_LORA_R: return c->lora_r;
    default: return c->gpus;
    }
}

#define MAX_TARGET_LISTS 16
#define CAND_NAME_MAX 32

struct rule_term {
    int feature;
    double coef;
    long line; /* where it is defined, for rules_check */
};

struct rule_cand {
    char name[CAND_NAME_MAX];
    char label[RULES_NAME_MAX + CAND_NAME_MAX];
    int set;
    long line;
    struct rule_term terms[RULES_MAX_FEATURES];
    int nterms;
};

struct rule_set {
    char name[RULES_NAME_MAX];
    char file[512];
    long line;
    int metric, with_model; /* -1 until their rows are read; with_model 2 = add */
    double band_lo, band_hi; /* band.lo / band.hi: the set's error band; 0 = none */
    char **models, **families;
    size_t nmodels, nfamilies;
    uint32_t allow[K_COUNT]; /* bit v: value v allowed; 0: any */
    uint32_t targets[MAX_TARGET_LISTS];
    int ntargets;
    int64_t lo[R_COUNT], hi[R_COUNT];
    uint32_t has_lo, has_hi; /* bit per range key, to reject duplicate rows */
    int cand[RULES_MAX_CANDIDATES];
    int ncand;
};

struct rule_binding {
    int *sets;
    int n;
};

struct rule_book {
    struct rule_set *sets;
    size_t nsets, capsets;
    struct rule_cand *cands;
    size_t ncands, capcands;
    struct rule_binding *binds;
    size_t nbinds, capbinds;
};

/* Grows *p (of *cap elements of size sz) to hold n + 1; returns 0 or -1. */
int rule_grow(void **p, size_t *cap, size_t n, size_t sz);
/* Frees n strings and their array. */
void rule_free_strings(char **v, size_t n);
/* The set with this index, or NULL. */
const struct rule_set *rule_book_set(const struct rule_book *rb, int set);

#endif
