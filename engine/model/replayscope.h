/* replayscope.h: which configurations the whole-step replays (stepreplay.h) cover, and
 * how, decided once per configuration in memmodel_prepare: the model family the op lists
 * follow, the parallel layout (one GPU, DDP, FSDP1, FSDP2), the loop and loss path
 * (stepreplay.c head), the base (16-bit, bitsandbytes 4-bit) and the adapters. */
#ifndef LLMEM_REPLAYSCOPE_H
#define LLMEM_REPLAYSCOPE_H

#include "memmodel.h"
#include "plan.h"
#include "train.h"

/* Sets mp's replay fields (replay_steps, replay_window, replay_shards, replay_fsdp1) for c,
 * or leaves them 0 where no replay covers it; opt->whole_steps asks for the run's steps
 * (validate, explain), never the sweep's points. */
void replayscope_setup(const struct model_plan *p, const struct train_config *c,
                       const struct mem_options *opt, struct mem_prepared *mp);

#endif
