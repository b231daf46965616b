/* stepamp.h: the whole-step replay's op list for full fine-tuning under bf16 autocast over
 * fp32 weights (stepamp.c); private to engine/model, called by stepreplay.c. */
#ifndef LLMEM_STEPAMP_H
#define LLMEM_STEPAMP_H

#include "steptrace.h"

/* One step of `tok` tokens (t->seq wide): forward, loss, backward, the optimizer's step
 * (its states at the first, *have_states after) and zero_grad. */
void stepamp_step(struct tracer *t, const struct stepreplay_shape *sh, const struct roles *r,
                  uint64_t tok, bool *have_states);

#endif
