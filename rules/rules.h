/* rules.h: measured peak-type rules (rules/README.md): rule sets that match configurations
 * and predict their peak as the maximum over named peak candidates, each a formula over
 * documented features with fitted coefficients.
 *
 * Lifecycle: rules_load() parses the files once; rules_bind() selects, per model, the rule
 * sets that can match it; rules_prepare() narrows that to one rule set per configuration
 * (outside the micro-batch/sequence loop); rules_eval() is arithmetic only. */
#ifndef LLMEM_RULES_H
#define LLMEM_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "memmodel.h"
#include "plan.h"
#include "train.h"

struct rule_book;

/* Loads a rules CSV, or every *.csv of a folder (in name order). Returns 0, or -1 with e. */
int rules_load(const char *path, struct rule_book **out, struct input_error *e);
void rules_free(struct rule_book *rb);

/* Once per model, before any parallel region: a binding id (>= 0) or -1 when no rule set
 * of the book can match this model. */
int rules_bind(struct rule_book *rb, const struct model_plan *p);

/* Per configuration (batch and sequence excluded): the rule set that applies, or -1. */
int rules_prepare(const struct rule_book *rb, int binding, const struct model_plan *p,
                  const struct train_config *c);

/* Per point: when set >= 0, the rule prediction in bytes for the metric the rule set was
 * fitted on, converted to device bytes; *candidate names the binding peak type. Returns
 * true when the rule set's maximum replaces (or joins, per the set) the model's peak. */
bool rules_eval(const struct rule_book *rb, int set, const struct model_plan *p,
                const struct train_config *c, const struct mem_estimate *e, uint64_t *peak,
                int *candidate);

/* "set/candidate" label of a candidate, for reports and explain. */
const char *rules_label(const struct rule_book *rb, int candidate);

#endif
