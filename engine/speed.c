/* speed.c: the step-time model (see speed.h). */
#include "speed.h"

static double dense_rate(const struct gpu_spec *g, enum precision p)
{
    double r = g->fp32_tflops;
    if (p == PREC_FP16)
        r = g->fp16_tflops;
    else if (p == PREC_BF16 || p == PREC_BF16_PURE)
        r = g->bf16_tflops > 0 ? g->bf16_tflops : g->fp32_tflops; /* emulated: fp32 speed */
    if (r <= 0)
        r = g->fp32_tflops;
    return r * 1e12;
}

/* Ring all-reduce moves 2 (n-1)/n of the data per GPU, all-gather and reduce-scatter
 * (n-1)/n each (Patarasuk & Yuan 2009; NCCL performance notes). */
static double ring(double bytes, int n, double passes, const struct gpu_spec *g)
{
    if (n < 2)
        return 0;
    return passes * bytes * (double)(n - 1) / (double)n / (g->interconnect_gbs * 1e9 * SPEED_LINK_EFF);
}

void speed_prepare(const struct model_plan *p, const struct train_config *c,
                   const struct gpu_spec *g, struct speed_prepared *sp)
{
    const double tp = (double)c->tp;
    const double bw = g->mem_bw_gbs * 1e9;
    const bool full = c->finetune == FT_FULL;
    /* every Linear weight (the tied lm_head too) does 2 FLOPs per token forward */
    double head = p->head_p ? 0 : (double)p->embed_p;
    double lora = full ? 0 : (double)plan_lora_params(p, c->lora_targets, c->lora_r);
    sp->matmul_params = ((double)p->linear_w + head + lora) / tp;
    /* causal attention: QK^T and AV are 2 * s * q FLOPs each per token, halved by the mask */
    sp->attn_flops_tok = 2.0 * (double)(p->spec.heads * p->spec.head_dim) * (double)p->spec.layers / tp;
    /* backward: input gradients (1x forward) plus weight gradients (1x) when trained */
    sp->bwd_factor = full ? 2.0 : 1.0 + lora / (sp->matmul_params * tp);
    sp->fwd_passes = c->grad_ckpt ? 2.0 : 1.0;
    sp->rate = dense_rate(g, c->precision) * SPEED_MFU;

    /* optimizer step: read weights, grads and two states, write weights and states */
    double trained = full ? (double)p->params : lora;
    double shard = (c->method == METHOD_ADP || c->method == METHOD_DPTP) ? (double)c->dp : 1.0;
    double wt = c->precision == PREC_BF16_PURE ? 2.0 : 4.0;
    double opt_bytes = trained / tp / shard * wt * (c->optimizer == OPT_SGD ? 3.0 : 7.0);
    sp->fixed_s = opt_bytes / bw;
    /* quantized base: each matmul reads the packed weight and writes/reads a 16-bit copy */
    double dq = 0;
    if (!full && c->quant != QUANT_NONE)
        dq = (double)(p->linear_w - p->head_p) / tp * (c->quant == QUANT_INT8 ? 5.0 : 4.5) *
             (1.0 + sp->fwd_passes) / bw;
    sp->fixed_s += dq;
    /* kernel launches: forward passes plus a backward of twice as many kernels */
    sp->fixed_s += (double)p->spec.layers * SPEED_KERNELS_PER_BLOCK * (sp->fwd_passes + 2.0) *
                   SPEED_LAUNCH_S;

    double grad_bytes = trained / tp * (c->precision == PREC_FP32 ? 4.0 : 2.0);
    double p16 = (double)p->params / tp * (c->precision == PREC_FP32 ? 4.0 : 2.0);
    sp->comm_fixed_s = 0;
    switch (c->method) {
    case METHOD_CDP: /* DDP: one all-reduce of the gradients */
        sp->comm_fixed_s = ring(grad_bytes, c->dp, 2.0, g);
        break;
    case METHOD_ADP:
    case METHOD_DPTP: /* ZeRO-3: gather for forward and backward, reduce-scatter grads */
        sp->comm_fixed_s = ring(p16, c->dp, 2.0, g) + ring(grad_bytes, c->dp, 1.0, g);
        break;
    default:
        break;
    }
    /* TP: two all-reduces of a [tokens, h] activation per block forward, two backward */
    sp->act_comm_tok = 0;
    if (c->tp > 1) {
        double e = c->precision == PREC_FP32 ? 4.0 : 2.0;
        double per_tok = (double)p->spec.hidden * e * (double)p->spec.layers * 2.0 * (sp->fwd_passes + 1.0);
        sp->act_comm_tok = ring(per_tok, c->tp, 2.0, g);
    }
}

void speed_eval(const struct train_config *c, const struct speed_prepared *sp,
                struct speed_estimate *s)
{
    const double b = (double)c->micro_batch, seq = (double)c->seq_len, tok = b * seq;
    double fwd = 2.0 * sp->matmul_params * tok + sp->attn_flops_tok * tok * seq;
    /* attention has no weight gradient: its backward is 2x its forward in any mode */
    double attn = sp->attn_flops_tok * tok * seq;
    double bwd = (fwd - attn) * sp->bwd_factor + 2.0 * attn;
    s->flops = fwd * sp->fwd_passes + bwd;
    s->compute_s = s->flops / sp->rate;
    s->memory_s = sp->fixed_s;
    s->comm_s = sp->comm_fixed_s + sp->act_comm_tok * tok;
    /* summed in the order the ranking always used, so scores stay bit-identical */
    s->step_time_s = s->compute_s + (sp->fixed_s + sp->comm_fixed_s) + sp->act_comm_tok * tok;
    double global = b * (double)c->dp;
    s->samples_per_s = global / s->step_time_s;
    s->tokens_per_s = s->samples_per_s * seq;
}
