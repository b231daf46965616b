/* rule_features.h: the features a rule formula can use (rules/README.md "Features").
 *
 * A feature's value is factor(model, configuration) x monomial(b, s), the monomial being 1,
 * b*s or b*s^2, so a rule set compiles, per configuration, into three coefficients per
 * candidate (rules_compile). */
#ifndef LLMEM_RULE_FEATURES_H
#define LLMEM_RULE_FEATURES_H

#include <stdint.h>

#include "plan.h"
#include "train.h"

/* LoRA on the token embedding (Salisbury's "Embedding" component). The memory model has no
 * such target; only rule features (trainable, r*h*L_targets) and rule matching know it. */
#define RULES_TARGET_EMBED TARGET_BIT(ROLE_EMBED)
#define RULES_MAX_FEATURES 32

enum rules_monomial { RULES_MONO_1, RULES_MONO_BS, RULES_MONO_BSS };

/* Ids are 0 .. rules_feature_count() - 1. */
int rules_feature_count(void);
int rules_feature_parse(const char *name); /* -1 when unknown */
const char *rules_feature_name(int feature);
/* The feature's factor for a model and configuration (without the b, s monomial). */
double rules_feature_factor(int feature, const struct model_plan *p, const struct train_config *c);
enum rules_monomial rules_feature_monomial(int feature);
/* The feature's value for the configuration, micro-batch and sequence length included. */
double rules_feature_value(int feature, const struct model_plan *p,
                           const struct train_config *c);
/* Trainable parameters: LoRA adapters (embedding target included), or all parameters. */
double rules_trainable(const struct model_plan *p, const struct train_config *c);

/* "a+b+c" LoRA targets as on the command line, plus "embed". Returns 0 or -1. */
int rules_targets_parse(const char *s, uint32_t *out);

#endif
