/* fuzz_rules.c: libFuzzer target for the rules reader and evaluator.
 *
 * Any input must give 0 or -1 with a terminated error, never a crash, leak or hang. When
 * the input parses, every set is also bound, prepared and evaluated on a small synthetic
 * model, so hostile coefficients (huge, negative, cancelling) reach the arithmetic too.
 * Seeds: tests/fuzz/corpus/rules/. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model.h"
#include "plan.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A small Llama-like model; built once. */
static const struct model_plan *fuzz_plan(void)
{
    static struct model_plan p;
    static int ready;
    if (!ready) {
        struct model_spec m;
        memset(&m, 0, sizeof m);
        model_family_defaults("llama", &m);
        memcpy(m.name, "fuzz/tiny", 10);
        memcpy(m.model_type, "llama", 6);
        m.layers = 2, m.hidden = 64, m.heads = 4, m.kv_heads = 2, m.head_dim = 16;
        m.intermediate = 128, m.vocab = 1000, m.max_pos = 512, m.norms_per_layer = 2;
        if (plan_init(&p, &m) != 0)
            return NULL;
        ready = 1;
    }
    return &p;
}

static void evaluate(struct rule_book *rb)
{
    const struct model_plan *p = fuzz_plan();
    if (!p)
        return;
    int bind = rules_bind(rb, p);
    struct train_config c;
    memset(&c, 0, sizeof c);
    c.method = METHOD_SINGLE;
    c.gpus = c.tp = c.dp = 1;
    c.precision = PREC_BF16;
    c.grad_ckpt = true;
    struct mem_estimate e;
    memset(&e, 0, sizeof e);
    e.allocated = 1u << 30, e.reserved = 3u << 29, e.device = 1u << 31;
    for (int ft = 0; ft < FT_COUNT; ft++) {
        c.finetune = (enum finetune)ft;
        c.lora_r = ft == FT_FULL ? 0 : 16;
        c.lora_targets = ft == FT_FULL ? 0 : TARGETS_ALL | RULES_TARGET_EMBED;
        c.quant = ft == FT_QLORA ? QUANT_NF4 : QUANT_NONE;
        int set = rules_prepare(rb, bind, p, &c);
        for (int32_t b = 1; b <= 64; b *= 8) {
            c.micro_batch = b;
            c.seq_len = 4096 / b;
            uint64_t peak;
            int cand;
            rules_eval(rb, set, p, &c, &e, &peak, &cand);
            (void)rules_label(rb, cand);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rule_book *rb;
    struct input_error err;
    if (rules_parse((const char *)data, size, "fuzz.csv", &rb, &err) == 0) {
        evaluate(rb);
        rules_free(rb);
    }
    return 0;
}
