/* rule_features.c: the features of rule formulas (see rule_features.h). */
#include "rule_features.h"

#include <string.h>

typedef double (*mult_fn)(const struct model_plan *p, const struct train_config *c);

static double spec_h(const struct model_plan *p) { return (double)p->spec.hidden; }
static double spec_l(const struct model_plan *p) { return (double)p->spec.layers; }

/* Adapted weight matrices: one per block for each targeted block role, plus the lm_head and
 * the embedding when targeted. Roles the model lacks (a plain MLP has no gate) count 0. */
static double target_matrices(const struct model_plan *p, uint32_t targets)
{
    double n = 0;
    for (int r = ROLE_Q; r <= ROLE_DOWN; r++)
        if ((targets & TARGET_BIT(r)) && p->lora_io[r] > 0)
            n += spec_l(p);
    if ((targets & TARGET_BIT(ROLE_LM_HEAD)) && p->lora_io[ROLE_LM_HEAD] > 0)
        n += 1;
    if (targets & RULES_TARGET_EMBED)
        n += 1;
    return n;
}

double rules_trainable(const struct model_plan *p, const struct train_config *c)
{
    if (c->finetune == FT_FULL)
        return (double)p->params;
    double t = (double)plan_lora_params(p, c->lora_targets & ~RULES_TARGET_EMBED, c->lora_r);
    if (c->lora_targets & RULES_TARGET_EMBED) { /* PEFT: A is r x vocab, B is dim x r */
        int64_t dim = p->spec.emb_dim ? p->spec.emb_dim : p->spec.hidden;
        t += (double)c->lora_r * (double)(p->spec.vocab + dim);
    }
    return t;
}

static double f_one(const struct model_plan *p, const struct train_config *c)
{
    (void)p, (void)c;
    return 1.0;
}
static double f_h(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return spec_h(p);
}
static double f_hl(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return spec_h(p) * spec_l(p);
}
static double f_v(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return (double)p->spec.vocab;
}
static double f_i(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return (double)p->spec.intermediate;
}
static double f_il(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return (double)p->spec.intermediate * spec_l(p);
}
static double f_heads(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return (double)p->spec.heads;
}
static double f_headsl(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return (double)p->spec.heads * spec_l(p);
}
static double f_rn(const struct model_plan *p, const struct train_config *c)
{
    return c->finetune == FT_FULL ? 0.0 : (double)c->lora_r * target_matrices(p, c->lora_targets);
}
static double f_rhn(const struct model_plan *p, const struct train_config *c)
{
    return f_rn(p, c) * spec_h(p);
}
static double f_params(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return (double)p->params;
}
static double f_layers(const struct model_plan *p, const struct train_config *c)
{
    (void)c;
    return spec_l(p);
}

/* The documented features (README "Features"); names are what rule files write. */
static const struct feature_def {
    const char *name;
    enum rules_monomial mono;
    mult_fn mult;
} features[] = {
    {"1", RULES_MONO_1, f_one},
    {"b*s", RULES_MONO_BS, f_one},
    {"b*s*h", RULES_MONO_BS, f_h},
    {"b*s*h*L", RULES_MONO_BS, f_hl},
    {"b*s*v", RULES_MONO_BS, f_v},
    {"b*s*i", RULES_MONO_BS, f_i},
    {"b*s*i*L", RULES_MONO_BS, f_il},
    {"b*s^2*heads", RULES_MONO_BSS, f_heads},
    {"b*s^2*heads*L", RULES_MONO_BSS, f_headsl},
    {"b*s*r*L_targets", RULES_MONO_BS, f_rn},
    {"trainable", RULES_MONO_1, rules_trainable},
    {"r*h*L_targets", RULES_MONO_1, f_rhn},
    {"params", RULES_MONO_1, f_params},
    {"layers", RULES_MONO_1, f_layers},
};
#define FEATURE_COUNT ((int)(sizeof features / sizeof features[0]))
_Static_assert(sizeof features / sizeof features[0] <= RULES_MAX_FEATURES,
               "a candidate holds at most RULES_MAX_FEATURES terms");

int rules_feature_count(void) { return FEATURE_COUNT; }

int rules_feature_parse(const char *name)
{
    for (int i = 0; i < FEATURE_COUNT; i++)
        if (strcmp(features[i].name, name) == 0)
            return i;
    return -1;
}

const char *rules_feature_name(int f)
{
    return f >= 0 && f < FEATURE_COUNT ? features[f].name : "?";
}

static double monomial(enum rules_monomial m, const struct train_config *c)
{
    double bs = (double)c->micro_batch * (double)c->seq_len;
    return m == RULES_MONO_1 ? 1.0 : m == RULES_MONO_BS ? bs : bs * (double)c->seq_len;
}

double rules_feature_value(int f, const struct model_plan *p, const struct train_config *c)
{
    if (f < 0 || f >= FEATURE_COUNT)
        return 0.0;
    return features[f].mult(p, c) * monomial(features[f].mono, c);
}

int rules_targets_parse(const char *s, uint32_t *out)
{
    return targets_parse_with(s, "embed", RULES_TARGET_EMBED, out);
}

double rules_feature_factor(int f, const struct model_plan *p, const struct train_config *c)
{
    return f >= 0 && f < FEATURE_COUNT ? features[f].mult(p, c) : 0.0;
}

enum rules_monomial rules_feature_monomial(int f)
{
    return f >= 0 && f < FEATURE_COUNT ? features[f].mono : RULES_MONO_1;
}
