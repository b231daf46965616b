/* mempoint.h: one point of the memory model (memmodel.h prepares a configuration): the
 * prediction for a micro-batch and sequence length, and the sweep's peak-only path.
 * Pure functions, no I/O. memmodel_peak allocates nothing; memmodel_eval only for a loop that
 * empties the cache (feature empty-cache: its whole-step replay, stepreplay.h), which the
 * sweep's points never are. */
#ifndef LLMEM_MEMPOINT_H
#define LLMEM_MEMPOINT_H

#include "memmodel.h"

/* The activations per token of each phase at one sequence length: the sweep computes them
 * once per sequence length, memmodel_peak multiplies them by micro-batch x sequence. act[1]
 * holds what a padded batch of several samples adds (K and V repeated before SDPA, SDPA's
 * copy of the mask), act[0] not (a batch of one sample, see kv_rep_padded). */
struct mem_seq {
    int32_t seq_len;
    uint64_t act[2][PHASE_COUNT];
    uint64_t t_plain; /* tokens a micro-batch may hold for memmodel_peak's plain arithmetic
                         (beyond, it evaluates in full with saturating sums) */
    uint8_t phases[2][PHASE_COUNT]; /* per act: the phases that can hold the peak (those
                                       another phase does not dominate term by term) */
    int nphases[2];
};

void memmodel_seq(const struct mem_prepared *mp, int32_t seq_len, struct mem_seq *ms);

/* The prediction for micro-batch b and sequence length s. */
void memmodel_eval(const struct model_plan *p, const struct train_config *c,
                   const struct mem_options *opt, const struct mem_prepared *mp,
                   struct mem_estimate *e);

/* memmodel_eval's `device` alone, without the per-phase breakdown (ms: memmodel_seq at
 * c->seq_len): what the sweep's point loop needs to decide "fits" (the kept points are
 * evaluated in full afterwards).
 * @return the same bytes as memmodel_eval's e->device (tests/test_memdetail.c checks it). */
uint64_t memmodel_peak(const struct model_plan *p, const struct train_config *c,
                       const struct mem_options *opt, const struct mem_prepared *mp,
                       const struct mem_seq *ms);

/* @return what Liger's fused loss holds at the loss for t tokens (memmodel.c liger_coeffs):
 *         the lm_head input's gradient, one chunk's logits and one chunk's input gradient,
 *         allocated or each rounded as the allocator rounds it; 0 for another loss path. */
uint64_t memmodel_liger_bytes(const struct mem_prepared *mp, uint64_t t, bool rounded);

/* @return what the loss's forward under autocast's cache (memmodel.c amp_cache) adds to the
 *         loss phase's allocated logits term at `entries` tokens x vocabulary entries:
 *         the cache and the in-forward part of the loss path, less the path's own peak,
 *         or 0 when that is the larger (or there is no cache). */
uint64_t memmodel_amp_cache_extra(const struct mem_prepared *mp, uint64_t entries, unsigned bk);

/* A measured variable-length run of n steps whose padded widths w[] (tokens, the longest
 * of them c->seq_len) are known: the loss path's reserved and needed bytes become that
 * run's allocator replay (losspath_replay) instead of the LP_RUN_STEPS-step median the
 * model stands for. For validate and explain --measured, on a prepared mp of c.
 * @return 0; -1 when the path has no events to replay (Liger), the data are not variable,
 *         or an argument is out of range. */
int memmodel_replay_run(const struct model_plan *p, const struct train_config *c, const uint32_t *w,
                        size_t n, struct mem_prepared *mp);

/* Convenience: prepare and evaluate c->micro_batch and c->seq_len. */
void memmodel_predict(const struct model_plan *p, const struct train_config *c,
                      const struct mem_options *opt, struct mem_estimate *e);

#endif
