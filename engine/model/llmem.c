/* llmem.c: the LLMem equations (see llmem.h). Equation names follow the paper. */
#include "llmem.h"

#include "chunk.h"
#include "units.h"

#define B16 UINT64_C(2)
#define B32 UINT64_C(4)

int llmem_chunk_dp(const struct train_config *c)
{
    switch (c->method) {
    case METHOD_ADP:
        return c->gpus;
    case METHOD_DPTP:
        return c->dp;
    default:
        return 1;
    }
}

void llmem_static(const struct model_plan *p, const struct train_config *c, uint64_t m_base,
                  bool paper, struct llmem_terms *t)
{
    int64_t cs = chunk_for_dp(p->chunk_searched, llmem_chunk_dp(c));
    /* m_p = ceil((embed_p + ceil(other_p / cs) * cs) * (B16 + B32) / cu_p) * cu_p; the
     * embedding gets a chunk of its own size, the body whole chunks (section 4.2). The
     * paper's other_p leaves out an untied lm_head; it is a real parameter with an fp32
     * master copy, so the corrected form adds it, unrounded like the embedding. */
    uint64_t body = (uint64_t)((p->other_p + cs - 1) / cs * cs);
    uint64_t elems = (uint64_t)(p->embed_p + (paper ? 0 : p->head_p)) + body;
    t->chunk_elems = cs;
    t->m_base = m_base;
    t->m_p = llmem_ceil_page(elems * (B16 + B32));
    t->m_p16 = llmem_ceil_page(elems * B16);
    t->m_p32 = llmem_ceil_page(elems * B32);
    /* m_os = sum over t in {E, L} of ceil(t_p * (B32 + B32) / cu_p) * cu_p (section 4.3):
     * Adam momentum and variance of Embedding and Linear weights, rounded per type. */
    t->m_os = llmem_ceil_page((uint64_t)p->embedding_w * 2 * B32) +
              llmem_ceil_page((uint64_t)p->linear_w * 2 * B32);
    t->e_n = p->emb_modules;
}

void llmem_eval(const struct model_plan *p, const struct train_config *c, bool paper,
                struct llmem_terms *t)
{
    const uint64_t bs = (uint64_t)c->micro_batch, sl = (uint64_t)c->seq_len;
    const uint64_t h = (uint64_t)p->spec.hidden, v = (uint64_t)p->spec.vocab;
    const uint64_t l_n = (uint64_t)p->spec.layers;
    const uint64_t B = p->spec.logits_fp32 ? B32 : B16;
    const uint64_t gpu_n = (uint64_t)c->gpus, tp_n = (uint64_t)c->tp;

    /* m_out = ceil((e_n + l_n) * bs * sl * o_n * B16 / cu_p) * cu_p (section 4.4): the
     * layer-boundary tensors gradient checkpointing keeps. */
    const uint64_t tok = bytes_mul(bs, sl); /* saturating (units.h): a 405B model at 1M tokens */
    t->m_out = llmem_ceil_page(bytes_mul(bytes_mul((uint64_t)t->e_n + l_n, tok), h * B16));
    /* m_lm: logits [bs, sl, v] plus two shifted [bs, sl-1, v] copies for the loss, plus
     * lm_p, the fp16 lm_head weight (section 4.5). */
    const int64_t e = p->spec.emb_dim ? p->spec.emb_dim : p->spec.hidden; /* lm_head width */
    uint64_t lm_p = llmem_ceil_page((uint64_t)p->spec.vocab * (uint64_t)e * B16);
    const uint64_t shifted = llmem_ceil_page(bytes_mul(bytes_mul(bs, sl - 1), v * B));
    t->m_lm = bytes_add(bytes_add(llmem_ceil_page(bytes_mul(tok, v * B)), bytes_mul(2, shifted)), lm_p);
    /* m_back^tp = ceil(l_n * bs * sl * o_n * (tp_n - 1) / tp_n * B16 / cu_p) * cu_p (5.3) */
    t->m_back = 0;
    if (c->method == METHOD_TP || c->method == METHOD_DPTP) {
        const uint64_t x = bytes_mul(bytes_mul(bytes_mul(l_n, tok), h), tp_n - 1);
        t->m_back = x >= BYTES_SAT ? BYTES_SAT : llmem_ceil_page(x / tp_n * B16);
    }

    const uint64_t act = bytes_add(t->m_out, t->m_lm);
    const uint64_t states = bytes_add(t->m_base, t->m_p16);
    switch (c->method) {
    case METHOD_SINGLE:
    case METHOD_CDP: /* m_peak^cdp = m_peak^s */
        t->peak = bytes_add(bytes_add(t->m_base, t->m_p), bytes_add(t->m_os, act));
        break;
    case METHOD_ADP: /* the whole m_p16 is gathered; fp32 copy and Adam states sharded */
        t->peak = bytes_add(bytes_add(states, (t->m_p32 + t->m_os) / gpu_n), act);
        break;
    case METHOD_TP:
        t->peak = bytes_add(bytes_add(t->m_base, (t->m_p + t->m_os) / gpu_n), bytes_add(act, t->m_back));
        break;
    case METHOD_DPTP: {
        uint64_t adp = bytes_add(bytes_add(states, (t->m_p32 + t->m_os) / gpu_n), act);
        /* The paper subtracts m_p16 * tp_n / gpu_n, leaving m_p16 * (1 - 1/dp_n); that is
         * the physical TP shard m_p16 / tp_n only at 2DP x 2TP (reference 5.4). */
        uint64_t p16_drop = paper ? t->m_p16 * tp_n / gpu_n : t->m_p16 - t->m_p16 / tp_n;
        t->peak = adp >= BYTES_SAT ? BYTES_SAT : bytes_add(adp - p16_drop, t->m_back);
        break;
    }
    default:
        t->peak = 0;
    }
}
