/* rules.c: placeholder until the rule engine lands; loading any rules file fails with a
 * clear message so --rules never silently does nothing. */
#include "rules.h"

#include <stddef.h>

int rules_load(const char *path, struct rule_book **out, struct input_error *e)
{
    *out = NULL;
    return input_error_set(e, EXIT_BAD_INPUT, path, 0, NULL, "rules are not supported yet");
}

void rules_free(struct rule_book *rb) { (void)rb; }

int rules_bind(struct rule_book *rb, const struct model_plan *p)
{
    (void)rb;
    (void)p;
    return -1;
}

int rules_prepare(const struct rule_book *rb, int binding, const struct model_plan *p,
                  const struct train_config *c)
{
    (void)rb, (void)binding, (void)p, (void)c;
    return -1;
}

bool rules_eval(const struct rule_book *rb, int set, const struct model_plan *p,
                const struct train_config *c, const struct mem_estimate *e, uint64_t *peak,
                int *candidate)
{
    (void)rb, (void)set, (void)p, (void)c, (void)e, (void)peak, (void)candidate;
    return false;
}

const char *rules_label(const struct rule_book *rb, int candidate)
{
    (void)rb, (void)candidate;
    return "";
}
