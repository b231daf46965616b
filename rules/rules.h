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
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "memmodel.h"
#include "plan.h"
#include "rule_features.h"
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

/* --- additions ------------------------------------------------------------------------ */

/* Limits of one rule set (a loaded file that exceeds them is rejected with a message). */
#define RULES_MAX_CANDIDATES 16
#define RULES_NAME_MAX 64

enum rules_metric { RULES_ALLOCATED, RULES_RESERVED, RULES_DEVICE, RULES_METRIC_COUNT };

/* Parses "allocated" | "reserved" | "device"; -1 otherwise. */
int rules_metric_parse(const char *s);
/* @return the memory model's prediction e in metric m (enum rules_metric): allocated,
 *         reserved, or for `device` what nvidia-smi shows (mem_estimate.shown). */
double rules_model_metric(int metric, const struct mem_estimate *e);
const char *rules_metric_name(enum rules_metric m);

/* Parses a rules CSV held in memory; name is used in messages (the fuzz target's entry). */
int rules_parse(const char *buf, size_t len, const char *name, struct rule_book **out,
                struct input_error *e);

/* Builds a book row by row, as the loader does from each CSV row (README "Format"); then
 * rules_check() verifies that every set is complete. Used by the fitter for --match. */
struct rule_book *rules_new(void);
int rules_add(struct rule_book *rb, const char *set, const char *candidate, const char *key,
              const char *value, const char *file, long line, struct input_error *e);
int rules_check(struct rule_book *rb, struct input_error *e);

/* Sets and candidates of a book. Candidate ids are global to the book. */
int rules_set_count(const struct rule_book *rb);
int rules_find_set(const struct rule_book *rb, const char *name);
const char *rules_set_name(const struct rule_book *rb, int set);
enum rules_metric rules_set_metric(const struct rule_book *rb, int set);
bool rules_set_with_model(const struct rule_book *rb, int set);
/* with_model add: the prediction is the memory model (in the set's metric) plus the
 * candidates' maximum, which may be negative (an additive calibration, DESIGN.md 6.4). */
#define RULES_ADD 2
bool rules_set_additive(const struct rule_book *rb, int set);
/* The set's own error band (band.lo, band.hi: factors of its prediction, from the fit's
 * held-out residuals); false when the set has none. */
bool rules_set_band(const struct rule_book *rb, int set, double *lo, double *hi);
int rules_set_candidates(const struct rule_book *rb, int set, const int **ids);
const char *rules_candidate_name(const struct rule_book *rb, int candidate);
/* The candidate's terms: up to max (feature id, coefficient) pairs; returns their count. */
int rules_candidate_terms(const struct rule_book *rb, int candidate, int *features,
                          double *coefs, int max);

/* The set that applies to one point (model, configuration, micro-batch and sequence
 * ranges), or -1. Binds the model, so it is not for parallel regions. */
int rules_select(struct rule_book *rb, const struct model_plan *p, const struct train_config *c);

/* The hot path without per-point compilation: rules_compile() once per configuration folds
 * every feature's model and configuration factors into three coefficients per candidate,
 * so rules_eval_point() is a dot product with (1, b*s, b*s^2) and a maximum. */
struct rules_point {
    int set;                                /* -1: no rule set applies */
    int ncand;
    double k[RULES_MAX_CANDIDATES][3];      /* bytes per 1, per b*s, per b*s^2 */
};
void rules_compile(const struct rule_book *rb, int set, const struct model_plan *p,
                   const struct train_config *c, struct rules_point *pt);
/* Like rules_eval, for c->micro_batch and c->seq_len. */
bool rules_eval_point(const struct rule_book *rb, const struct rules_point *pt,
                      const struct train_config *c, const struct mem_estimate *e,
                      uint64_t *peak, int *candidate);
/* The raw maximum over the candidates in the set's metric (no device conversion, no
 * with_model), for validation against measurements of that metric. Returns the candidate
 * id, or -1 when the point is outside the set's micro-batch/sequence ranges. */
int rules_eval_metric(const struct rule_book *rb, const struct rules_point *pt,
                      const struct train_config *c, double *bytes);

#endif
