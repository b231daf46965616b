/* float8.h: float8 training (--precision fp8): which of torchao Float8Linear's paths a
 * configuration takes, and what its Linears save (float8.c cites torchao and torchtitan). */
#ifndef LLMEM_FLOAT8_H
#define LLMEM_FLOAT8_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "train.h"

/* @return whether c trains with float8 block Linears (--precision fp8) */
bool float8_on(const struct train_config *c);
/* @return whether c takes the tensorwise path, which saves the float8 casts (not rowwise) */
bool float8_tensorwise(const struct train_config *c);
/* @return whether FSDP all-gathers c's block Linear weights in float8 (tensorwise, FSDP) */
bool float8_allgather(const struct train_config *c);
/* @return whether torchtitan's float8 TP shares one gathered float8 input (tp > 1 with
 * sequence parallelism) */
bool float8_tp(const struct train_config *c);
/* @return the elements a token of one block's converted Linears save as inputs (one copy
 * a Linear unless the float8 TP shares them), per TP rank */
uint64_t float8_linear_inputs(const struct model_plan *p, const struct train_config *c);

#endif
