/* explanation.h: one configuration explained, as data (`llmem-sweep explain`).
 *
 * explanation_build evaluates the point the way the sweep does (the model's plan, the
 * rules, the band, the speed model) and gathers everything the explain writer prints: the
 * phase timeline and its terms, the band, the loss path's cost, the step time, what to
 * change when it does not fit, LLMem's terms, and, when asked, the tensors behind every
 * term (memdetail.h). reports/explain_out.c writes it as text or JSON and calls nothing of
 * the model. */
#ifndef LLMEM_EXPLANATION_H
#define LLMEM_EXPLANATION_H

#include <stdbool.h>
#include <stdint.h>

#include "answer.h"
#include "memdetail.h"
#include "sweep.h"

/* What explain asks beside the configuration (the CLI fills it from its options). */
struct explain_params {
    bool paper;        /* --paper: LLMem's equations and terms */
    bool detail;       /* --detail: the tensors behind each term */
    double margin_pct; /* < 0: auto (the band's upper end must fit) */
    const uint32_t *widths; /* explain --measured: the row's variable-length run, if given */
    size_t nwidths;         /* (sweep_eval_run); 0: the model's run */
};

/* explain --measured: the row the configuration comes from, and the model's value for its
 * metric beside the measurement. */
struct explain_measured {
    bool has;
    char id[32], metric[16], file[256];
    long line;
    double gib;           /* measured */
    double predicted_gib; /* the model's value of the same metric; < 0: not comparable */
};

struct explanation {
    struct explain_params par;
    struct sweep_point pt;          /* the point as the sweep evaluates it, LLMem's terms filled */
    const struct model_plan *plan;  /* the model (names, sizes) */
    char gpu[GPU_NAME_MAX];
    int32_t gpus_per_node;
    uint64_t budget, base_bytes;    /* the budget and m_base */
    uint64_t host_budget;           /* --host-memory; 0 = unchecked */
    char rule[ANSWER_TEXT_MAX];     /* the measured rule that binds; "" when none */
    char band_group[64];
    bool band_table;                /* a band.csv was read (else: the data folder has none) */
    char targets[96];               /* the LoRA targets, formatted */
    bool moe;
    double active_params;           /* parameters a token passes */
    bool has_loss;                  /* the loss path's cost (not for the LLMem equations) */
    char loss_path[32];
    double loss_allocated, loss_reserved, loss_needed; /* bytes per token and vocab entry */
    bool loss_on_lengths;           /* reserved and needed replayed on --lengths data */
    uint64_t side_pool;             /* reserved by FSDP2's all-gather copy-in stream or
                                       FSDP1's pre-unshard one (in the phases' reserved;
                                       memmodel.h mem_prepared) */
    const char *side_pool_stream;   /* which of the two, in words */
    uint64_t wrap_reserved, wrap_allocated; /* what FSDP1's wrap left reserved and in use
                                       (feature cpu-init; memmodel.h mem_prepared); 0: none */
    uint64_t paged, paged_one;      /* paged optimizer states: all, the largest parameter's */
    int nchanges;                   /* what to change when it does not fit */
    struct answer_change changes[ANSWER_SUGGEST_MAX];
    struct mem_detail detail;       /* the tensors behind each term; filled with par.detail */
    struct explain_measured measured; /* explain --measured; has = false otherwise */
};

/* Explains configuration c of model `model` of s (the configuration already checked with
 * train_config_check). Searches the model's Gemini chunk size (LLMem's terms report it).
 * @return 0. */
int explanation_build(struct explanation *x, struct sweep *s, uint32_t model,
                      const struct train_config *c, const struct explain_params *par);

/* Records the measured row x explains (after explanation_build): its id, metric (allocated,
 * reserved or device) and value, and the model's value of that metric, as validate
 * computes it (rules not applied). */
void explanation_set_measured(struct explanation *x, const char *file, long line, const char *id,
                              const char *metric, double gib);

#endif
