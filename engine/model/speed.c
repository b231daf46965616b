/* speed.c: the step-time model (see speed.h). */
#include "speed.h"

#include <math.h>
#include <string.h>

#include "comm.h"
#include "float8.h"
#include "losspath.h"

static double dense_rate(const struct gpu_spec *g, enum precision p)
{
    double r = g->fp32_tflops;
    if (p == PREC_FP16)
        r = g->fp16_tflops;
    else if (p == PREC_BF16 || p == PREC_BF16_PURE || p == PREC_FP8) /* fp8: what is not a
                                                                        float8 GEMM (fp8_speedup) */
        r = g->bf16_tflops > 0 ? g->bf16_tflops : g->fp32_tflops; /* emulated: fp32 speed */
    if (r <= 0)
        r = g->fp32_tflops;
    return r * 1e12;
}

/* --precision fp8: the block Linears' GEMMs (torchao Float8Linear, memmodel.c cites which)
 * run torch._scaled_mm at the GPU's dense float8 rate (gpus.csv fp8_tflops, the datasheets'
 * dense FP8 tensor-core figure); taken at the same achievable share of the peak as bf16
 * (no float8 MAMF figure is in the tables cited below): the bf16 rate times this. */
static double fp8_speedup(const struct gpu_spec *g, const struct train_config *c)
{
    if (!float8_on(c) || !(g->fp8_tflops > 0) || !(g->bf16_tflops > 0))
        return 1.0;
    return g->fp8_tflops / g->bf16_tflops;
}

/* Matmul: Maximum Achievable Matmul FLOPS over the dense peak, bf16, from the MAMF table of
 * github.com/stas00/ml-engineering compute/accelerator/README.md (mamf-finder.py, torch
 * 2.5-2.7): A100 SXM 271.2/312 = 0.869, A100 PCIe 252.9/312 = 0.811, H100 SXM 794.5/989 =
 * 0.803, GH200 (the H200's die and HBM3e) 828.6/989 = 0.836. GPUs without a published MAMF
 * take 0.80, the low end of the NVIDIA rows (the H100 PCIe takes the SXM's figure).
 * Attention: FlashAttention-2 forward+backward (causal, head dim 128) at long sequences:
 * on A100 about 0.60 of the peak (Dao 2023, arXiv:2307.08691, fig. 4: ~190 TFLOP/s; the
 * paper's 50-73 % is the forward, backward is slower); on H100 "up to 335 TFLOP/s" =
 * 0.34 (same paper, section 4.1: FA2 uses no Hopper instructions). GPUs without a figure
 * take 0.50, between the two.
 * SMs: NVIDIA's architecture whitepapers (Volta GV100 80; Turing TU104 T4 40, TU106 RTX
 * 2060 30; Ampere GA100 A100 108, GA102 RTX 3090 82, RTX A6000 84, A10G 80; Ada AD102
 * RTX 4090 128, L40S 142, AD104 L4 58; Hopper H100 SXM5 132, H100 PCIe 114, H200 132).
 * NCCL channels of a large collective: the counts datasets/gpus.csv's nccl_bytes uses
 * (8 x A100 on NVSwitch 24: nccl-tests issue #100; H100/H200 32: nccl issues #1259 and
 * #1685; NVLink hybrid cube mesh 12; PCIe 4). A GPU not in the table has sms 0: no SM
 * accounting (speed_nccl_sm_share 0, no tile quantization).
 * Tiles: NVIDIA's "Matrix Multiplication Background User's Guide" (docs.nvidia.com/
 * deeplearning/performance/dl-performance-matrix-multiplication, "Dimension Quantization
 * Effects") names 256x128 and 128x256 the most efficient cuBLAS tiles, 128x128 the next;
 * Hopper's bf16 GEMMs run 128x256 or 256x128 tiles, earlier GPUs 128x128 or 256x128. */
void speed_gpu_eff(const struct gpu_spec *g, struct speed_gpu_eff *e)
{
    static const struct {
        const char *prefix;
        double matmul, attn; /* 0: the defaults */
        int sms, channels;
    } table[] = {
        {"V100", 0, 0, 80, 12},          {"T4", 0, 0, 40, 4},
        {"RTX2060", 0, 0, 30, 4},        {"RTX3090", 0, 0, 82, 4},
        {"RTX4090", 0, 0, 128, 4},       {"A10G", 0, 0, 80, 4},
        {"L4-", 0, 0, 58, 4},            {"L40S", 0, 0, 142, 4},
        {"A6000", 0, 0, 84, 4},          {"A100-SXM", 0.869, 0.60, 108, 24},
        {"A100-PCIe", 0.811, 0.60, 108, 4}, {"H100-SXM", 0.803, 0.34, 132, 32},
        {"H100-PCIe", 0.803, 0.34, 114, 4}, {"H200", 0.836, 0.34, 132, 32},
    };
    e->matmul = 0.80;
    e->attn = 0.50;
    e->sms = e->nccl_channels = 0;
    const bool hopper = !strncmp(g->name, "H100", 4) || !strncmp(g->name, "H200", 4);
    e->tile_m[0] = 128, e->tile_n[0] = hopper ? 256 : 128;
    e->tile_m[1] = 256, e->tile_n[1] = 128;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strncmp(g->name, table[i].prefix, strlen(table[i].prefix))) {
            if (table[i].matmul > 0)
                e->matmul = table[i].matmul;
            if (table[i].attn > 0)
                e->attn = table[i].attn;
            e->sms = table[i].sms;
            e->nccl_channels = table[i].channels;
        }
}

double speed_wave_efficiency(const struct speed_gpu_eff *e, double m, double n)
{
    if (e->sms <= 0 || m <= 0 || n <= 0)
        return 1.0;
    double best = 0;
    for (int t = 0; t < SPEED_TILES; t++) {
        const double tm = (double)e->tile_m[t], tn = (double)e->tile_n[t];
        const double tiles = ceil(m / tm) * ceil(n / tn);
        const double waves = ceil(tiles / (double)e->sms);
        const double eff = m * n / (waves * (double)e->sms * tm * tn);
        best = eff > best ? eff : best;
    }
    return best;
}

/* NCCL runs a collective as one CTA per channel (src/enqueue.cc @5067397c, ncclGetAlgoInfo:
 * ring channel tuning) and drops channels while the larger buffer is below nc x nt x
 * threadThreshold: nt = 512 threads (NCCL_SIMPLE_MAX_NTHREADS) x 64 bytes
 * (NCCL_SIMPLE_THREAD_THRESHOLD) = 32 KiB a channel with the Simple protocol large
 * collectives use. A CTA of NCCL's kernel does not share its SM with a GEMM CTA (cuBLAS's
 * Ampere and Hopper GEMMs take most of an SM's shared memory), so while it runs the
 * overlapped compute has sms - channels SMs. Lee et al. (arXiv:2507.03114, 2025) measure
 * compute slowed by 18.9 % on average under overlap, the size of the 22-24 % this gives
 * on A100 and H100 nodes. */
#define NCCL_SIMPLE_CHANNEL_BYTES (512.0 * 64.0)

double speed_nccl_sm_share(const struct speed_gpu_eff *e, double bytes)
{
    if (e->sms <= 0 || e->nccl_channels <= 0 || bytes <= 0)
        return 0;
    double nc = floor(bytes / NCCL_SIMPLE_CHANNEL_BYTES);
    if (nc > (double)e->nccl_channels)
        nc = (double)e->nccl_channels;
    if (nc < 1)
        nc = 1;
    return nc / (double)e->sms;
}

double speed_overlap_cost(double comm, double hidden, double share)
{
    if (comm <= 0)
        return 0;
    const double slowed = share * comm, tail = comm - hidden;
    return slowed > tail ? slowed : tail;
}

/* Selective checkpointing recomputes a block's 2nd, 4th, ... matmul in call order
 * (torchtitan's op-level SAC policy: activations.c act_sac_tok): q, k, v (one call when fused),
 * o, gate, up (one when fused), down. */
static bool sac_recomputes(const struct model_spec *m, int role)
{
    int idx;
    const int qkv = m->fused_qkv ? 1 : 3, mlp_in = (m->mlp == MLP_GATED && !m->fused_gate_up) ? 2 : 1;
    switch (role) {
    case ROLE_Q: idx = 1; break;
    case ROLE_K: idx = m->fused_qkv ? 1 : 2; break;
    case ROLE_V: idx = m->fused_qkv ? 1 : 3; break;
    case ROLE_O: idx = qkv + 1; break;
    case ROLE_GATE: idx = qkv + 2; break;
    case ROLE_UP: idx = qkv + 1 + mlp_in; break;
    case ROLE_DOWN: idx = qkv + 2 + mlp_in; break;
    default: return false;
    }
    return idx % 2 == 0;
}

/* Forward passes of a role's GEMMs in one step: 1, plus the recomputation. */
static double gemm_fwd_passes(const struct model_spec *m, const struct train_config *c, int role)
{
    if (role == ROLE_LM_HEAD) /* checkpointing does not recompute the lm_head */
        return 1.0;
    return 1.0 + (c->grad_ckpt || (c->ckpt_selective && sac_recomputes(m, role)) ? 1.0 : 0.0);
}

/* The shape of a dense Linear role's matrices on one GPU: Megatron's column-parallel
 * layers (q, k, v, gate, up, lm_head) split the output features over TP, the row-parallel
 * ones (o, down) the input features. Routed experts (each sees a share of the tokens),
 * OPT's projections and the router keep no shape: they run at the matmul rate. */
static void gemm_shape(const struct model_plan *p, const struct train_config *c, int role,
                       struct speed_gemm *k)
{
    k->in = k->out = k->mods = k->wgrad = 0;
    const double mods = p->lora_mods_active[role];
    if (p->role_expert_w[role] > 0 || mods <= 0 || role < ROLE_Q || role == ROLE_ROUTER)
        return;
    const double tp = (double)c->tp, in = p->lora_in_active[role] / mods;
    const double out = (p->lora_io_active[role] - p->lora_in_active[role]) / mods;
    const bool row = role == ROLE_O || role == ROLE_DOWN;
    k->in = row ? in / tp : in;
    k->out = row ? out : out / tp;
    k->mods = mods;
    k->wgrad = c->finetune == FT_FULL ? 1.0 : 0.0;
}

/* One GEMM class per Linear role: forward 2*w FLOPs per token; bytes per token read input
 * and write output (rows + cols per matrix, lora_io); the weight is read once per pass
 * (bytes_fixed). Backward: the input gradient always, the weight gradient when trained.
 * Returns the GEMM kernels of one block's forward. */
static int prepare_gemms(const struct model_plan *p, const struct train_config *c, double e,
                         double fast, struct speed_prepared *sp)
{
    const double tp = (double)c->tp;
    const bool full = c->finetune == FT_FULL;
    double wbytes = c->quant == QUANT_NONE || full ? e : (c->quant == QUANT_INT8 ? 1.0 : 0.5);
    /* MoE: FLOPs and activation bytes for the experts a token passes (role_active); the
     * weights of the rank's own experts are read once a pass (experts / ep of them) */
    const double ep_keep = 1.0 - 1.0 / (double)train_ep(c);
    int kernels = 0;
    sp->ngemm = 0;
    sp->flops_tok = 0;
    for (int role = ROLE_PROJ; role < ROLE_COUNT; role++) {
        double w = (double)p->role_w[role];
        if (role == ROLE_NORM || w <= 0)
            continue;
        bool head = role == ROLE_LM_HEAD;
        struct speed_gemm *k = &sp->gemm[sp->ngemm++];
        *k = (struct speed_gemm){0};
        k->flops_tok = 2.0 * p->role_active[role] / tp;
        k->bytes_tok = p->lora_io_active[role] * e / tp;
        k->bytes_fixed = (w - (double)p->role_expert_w[role] * ep_keep) / tp * (head ? e : wbytes);
        k->passes = gemm_fwd_passes(&p->spec, c, role) + 1.0 + (full ? 1.0 : 0.0);
        gemm_shape(p, c, role, k);
        if (fast > 1.0 && role >= ROLE_Q && role <= ROLE_DOWN) { /* a float8 GEMM: e4m3 weight */
            k->fast = fast;
            k->bytes_fixed = (w - (double)p->role_expert_w[role] * ep_keep) / tp;
        }
        kernels += head ? 0 : 1;
    }
    if (!p->head_p) { /* a tied head is the embedding matrix used as a Linear, split as it is
                         (train_embed_tp: whole on every rank under the HF stacks' TP) */
        const double w = (double)p->embed_p, etp = (double)train_embed_tp(c);
        struct speed_gemm *k = &sp->gemm[sp->ngemm++];
        *k = (struct speed_gemm){0};
        k->flops_tok = 2.0 * w / etp;
        k->bytes_tok = (double)(p->spec.hidden + p->spec.vocab) * e / etp;
        k->bytes_fixed = w / etp * e;
        k->passes = 2.0 + (full ? 1.0 : 0.0);
        k->in = (double)p->spec.hidden, k->out = (double)p->spec.vocab / etp, k->mods = 1;
        k->wgrad = full ? 1.0 : 0.0;
    }
    /* LoRA: A (in -> r) and B (r -> out) per target matrix: 2 r (in + out) FLOPs per token;
     * they read the layer input and write/add to its output (PEFT: dropout, A, B, scaling,
     * add): about three passes over in + out. Always trained. */
    const uint32_t targets = full ? 0 : plan_lora_targets(p, c);
    for (int role = ROLE_PROJ; !full && role < ROLE_COUNT; role++) {
        if (!(targets & TARGET_BIT(role)) || p->lora_io[role] <= 0)
            continue;
        /* a PEFT adapter on a fused module reads the shared input once */
        const double io = p->lora_io_active[role] -
                          (plan_peft_fused(c) ? (double)p->lora_shared_in[role] : 0.0);
        struct speed_gemm *k = &sp->gemm[sp->ngemm++];
        *k = (struct speed_gemm){0};
        k->flops_tok = 2.0 * (double)c->lora_r * io / tp;
        k->bytes_tok = 3.0 * io * e / tp;
        k->bytes_fixed = 0;
        k->passes = gemm_fwd_passes(&p->spec, c, role) + 2.0;
        if (!(plan_peft_fused(c) && p->lora_shared_mods[role])) /* one adapter a fused module */
            kernels += 4; /* dropout, A, B, scaled add */
    }
    for (int i = 0; i < sp->ngemm; i++)
        sp->flops_tok += sp->gemm[i].flops_tok * sp->gemm[i].passes;
    return kernels;
}

/* The routing work of transformers' eager MoE blocks per token and forward pass
 * (MixtralSparseMoeBlock.forward, activations.c moe_tok): per routed token the gathered input
 * (read and write, 2e h), the routing-weight multiply (3e h) and index_add_ (3e h); per
 * token the router's fp32 softmax and top-k (~12 bytes an expert) and the int64 one-hot
 * expert mask, written and summed (16 bytes an expert and routed token). */
static double moe_elementwise_fwd(const struct model_plan *p, double e)
{
    const struct model_spec *m = &p->spec;
    if (!p->moe_layers)
        return 0;
    const double k = (double)m->experts_per_tok, ex = (double)m->experts;
    return (double)p->moe_layers * (k * 8.0 * e * (double)m->hidden + 12.0 * ex + 16.0 * ex * k);
}

/* Memory-bound bytes per token of one forward pass through the blocks, e bytes an
 * element. Eager PyTorch: a fused LayerNorm reads and writes the hidden state (2e); HF's
 * and torchtune's RMSNorm upcast to fp32 in ~8 kernels (to(fp32), pow, mean, rsqrt, mul,
 * to(dtype), weight mul: ~36 bytes an element in bf16); two residual adds (3e each); GELU
 * reads and writes the intermediate (2e), SwiGLU silu + mul (5e); rotary on q and k
 * (rotate_half, cat, two muls, add: ~10e); the attention output transpose (2e).
 * torch.compile fuses each group into one read and one write. */
static double elementwise_fwd(const struct model_plan *p, const struct train_config *c, double e)
{
    const struct model_spec *m = &p->spec;
    const bool compiled = (c->features & FEAT_COMPILE) != 0;
    const double tp = (double)c->tp, h = (double)m->hidden;
    const double inter = p->inter_active / tp;
    const double qk = (double)((m->heads + m->kv_heads) * m->head_dim) / tp;
    double norm = (m->norm == NORM_RMSNORM && !compiled) ? 18.0 * e : 2.0 * e;
    double bytes = (double)m->norms_per_layer * norm * h + 2.0 * 3.0 * e * h + 2.0 * e * h;
    if (m->mlp == MLP_GATED)
        bytes += (compiled ? 3.0 : 5.0) * e * inter;
    else
        bytes += 2.0 * e * inter;
    if (m->pos == POS_ROTARY)
        bytes += (compiled ? 2.0 : 10.0) * e * qk;
    return bytes * (double)m->layers + moe_elementwise_fwd(p, e);
}

/* Memory-bound bytes per token of one backward pass that the forward-times-two rule of
 * elementwise_fwd does not see, e bytes an element:
 *  - bias gradients. torch.nn.functional.linear runs a biased Linear as one addmm
 *    (aten/src/ATen/native/Linear.cpp @81735ee6, linear -> _flatten_nd_linear -> addmm: the
 *    forward bias add is the GEMM's epilogue), whose derivative for the broadcast bias is the
 *    output gradient itself (tools/autograd/derivatives.yaml @d327a787, addmm: "self:
 *    maybe_multiply(grad, beta.conj())"); the autograd engine then sums it to the bias's shape
 *    (torch/csrc/autograd/engine.cpp @e1253a95, validate_outputs -> reduce_grad -> sum_to): a
 *    reduction kernel reading the [tokens, out] gradient once, e bytes per output element of
 *    every trained biased Linear. Column-parallel outputs (q, k, v, gate, up) are split over
 *    TP; the row-parallel o and down add their bias to the reduced [tokens, h] output.
 *  - LayerNorm's weight and bias gradients: PyTorch's CUDA layer_norm backward
 *    (aten/src/ATen/native/cuda/layer_norm_kernel.cu, LayerNormBackwardKernelImplInternal)
 *    computes dX in one kernel (reads dY and X, writes dX: 3e) and gamma/beta in a second
 *    (GammaBetaBackward: reads dY and X again, 2e): 5e an element against the 4e that
 *    "twice the forward's 2e" counts, so e more. Only when the norm's weights are trained:
 *    the second kernel runs only for the gradients autograd asks for (grad_input_mask). */
static double elementwise_bwd_extra(const struct model_plan *p, const struct train_config *c, double e)
{
    const struct model_spec *m = &p->spec;
    const double tp = (double)c->tp, h = (double)m->hidden;
    if (c->finetune != FT_FULL)
        return 0; /* adapters train no bias (PEFT bias="none") and no norm */
    double bytes = 0;
    if (m->norm == NORM_LAYERNORM && !(c->features & FEAT_COMPILE))
        bytes += (double)m->norms_per_layer * e * h * (double)m->layers;
    double out = 0;
    if (m->qkv_bias)
        out += (double)((m->heads + 2 * m->kv_heads) * m->head_dim) / tp;
    if (m->o_bias)
        out += h;
    if (m->mlp_bias)
        out += (m->mlp == MLP_GATED ? 2.0 : 1.0) * p->inter_active / tp + h;
    bytes += e * out * (double)m->layers;
    if (m->lm_head_bias)
        bytes += e * (double)m->vocab / tp;
    return bytes;
}

/* The eager MoE block launches its kernels per expert that received tokens (all of them,
 * at training batch sizes): index the tokens, gate, activation, up, multiply, down, index
 * the routing weights, multiply, cast, index_add_ and the expert GEMMs' own: ~12; the
 * router ~12 (Linear, softmax, top-k, renormalise, one-hot, permute, sum, nonzero, ...).
 * Under expert parallelism a rank runs its experts / ep. */
static double moe_kernels_fwd(const struct model_spec *m, const struct train_config *c)
{
    if (!model_is_moe(m))
        return 0;
    const double moe_layers = (double)(m->layers - m->dense_layers);
    return moe_layers * (12.0 * (double)m->experts / (double)train_ep(c) + 12.0);
}

/* Kernels of one forward pass (launch cost): per block the GEMMs, norms (8 when RMSNorm runs
 * unfused), two residual adds, the activation, rotary (~6), attention; backward about twice. */
static double kernels_fwd(const struct model_spec *m, const struct train_config *c, int gemms)
{
    const bool compiled = (c->features & FEAT_COMPILE) != 0;
    double per = (double)gemms;
    if (compiled)
        return (double)m->layers * (per + 6.0);
    per += (double)m->norms_per_layer * (m->norm == NORM_RMSNORM ? 8.0 : 1.0) + 2.0 +
           (m->mlp == MLP_GATED ? 2.0 : 1.0) + (m->pos == POS_ROTARY ? 6.0 : 0.0) + 3.0;
    return (double)m->layers * per + moe_kernels_fwd(m, c);
}

/* Expert parallelism: each MoE block sends every routed token's hidden state to the rank
 * holding its expert and the result back (dispatch and combine all-to-alls), in each
 * forward pass and again for the gradients in backward; on the critical path (the experts
 * wait for their tokens). An all-to-all moves (ep - 1) / ep of a rank's data once, the
 * cost comm_collective() gives one step. */
static void expert_all_to_all(const struct model_plan *p, const struct train_config *c,
                              const struct gpu_spec *g, double fwd_passes, struct speed_prepared *sp)
{
    const double e = c->precision == PREC_FP32 ? 4.0 : 2.0;
    const double count = 2.0 * (double)p->moe_layers * (fwd_passes + 1.0);
    const double per_tok = (double)p->spec.experts_per_tok * (double)p->spec.hidden * e * count;
    /* the EP ranks are DP neighbours: laid out like the DP group, ep of them */
    struct comm_group epg = comm_dp_group(c, g);
    epg.n = train_ep(c);
    epg.ppn = epg.ppn < epg.n ? epg.ppn : epg.n;
    sp->act_comm_tok += comm_collective(per_tok, epg, 1.0, 0, g);
    sp->act_comm_fixed_s += comm_collective(0, epg, 1.0, count, g);
}

/* Megatron's pipeline: each stage sends its output forward and receives a gradient back
 * per micro-batch, [s, b, h] split over the TP ranks (p2p_communication.py,
 * scatter_gather_tensors_in_pipeline), blocking (its 1F1B waits on each transfer), over
 * the network when a stage fills a node (tp x dp >= GPUs a node), else the node's link. */
static void prepare_p2p(const struct model_plan *p, const struct train_config *c,
                        const struct gpu_spec *g, struct speed_prepared *sp)
{
    sp->p2p_tok = sp->p2p_fixed_s = 0;
    if (train_pp(c) < 2)
        return;
    const double e = c->precision == PREC_FP32 ? 4.0 : 2.0;
    const bool across = c->tp * c->dp >= comm_per_node(g) && g->internode_gbs > 0;
    const double link = (across ? g->internode_gbs : g->interconnect_gbs) * 1e9 * SPEED_LINK_EFF;
    sp->p2p_tok = 2.0 * e * (double)p->spec.hidden / (double)c->tp / link;
    sp->p2p_fixed_s = 2.0 * (NCCL_BASE_LAT + (across ? NCCL_NET_LAT : 3.4e-6));
}

/* Bytes a second of host-device copies over g's PCIe link (SPEED_PCIE_EFF of its rate). */
static double pcie_rate(const struct gpu_spec *g)
{
    return (g->pcie_gbs > 0 ? g->pcie_gbs : SPEED_PCIE_DEFAULT_GBS) * 1e9 * SPEED_PCIE_EFF;
}

/* ZeRO-Offload (Ren et al., USENIX ATC 2021, section 4; DeepSpeed stage3.py with
 * offload_optimizer): each rank's 16-bit gradient partition goes to pinned host memory
 * during backward (overlapped, as the reduce-scatters are), DeepSpeedCPUAdam updates the
 * fp32 master partition there, and the updated 16-bit partition comes back before the next
 * forward: the CPU step and the upload are exposed. The CPU step is memory-bound: it reads
 * the fp32 gradient, master weight and two states and writes master, states and the 16-bit
 * copy, 30 bytes a parameter, at SPEED_HOST_EFF of the node's DRAM bandwidth shared by its
 * GPUs. With offload_param every gather first fetches its partition over PCIe (forward and
 * backward), prefetched like the gathers. */
static void prepare_offload(const struct model_plan *p, const struct train_config *c,
                            const struct gpu_spec *g, double trained, struct speed_prepared *sp)
{
    const double pcie = pcie_rate(g);
    const double dram = (g->host_mem_gbs > 0 ? g->host_mem_gbs : SPEED_HOST_DEFAULT_GBS) * 1e9 * SPEED_HOST_EFF;
    const int per_node = comm_per_node(g);
    const double sharing = (double)(c->gpus < per_node ? c->gpus : per_node);
    const double share = trained / (double)c->dp, e = c->precision == PREC_FP32 ? 4.0 : 2.0;
    sp->comm_fixed_s += share * e / pcie;                       /* gradients down */
    sp->comm_post_s += share * e / pcie + share * 30.0 / (dram / sharing); /* step, upload */
    if (c->offload == OFFLOAD_PARAMS)
        sp->comm_fixed_s += 2.0 * (double)p->params / (double)c->dp * e / pcie;
}

static void prepare_comm(const struct model_plan *p, const struct train_config *c,
                         const struct gpu_spec *g, const struct speed_gpu_eff *eff, double trained,
                         double fwd_passes, struct speed_prepared *sp)
{
    const double tp = (double)c->tp, units = (double)(p->spec.layers + 1);
    const double e = c->precision == PREC_FP32 ? 4.0 : 2.0, stages = (double)train_pp(c);
    double grad_bytes = trained * e / stages;
    /* ZeRO-3 gathers a rank's own experts only (over the dp / ep ranks that hold them) */
    double p16 = (plan_rank_params(p, c) - (double)p->expert_p * (1.0 - 1.0 / (double)train_ep(c)) / tp) *
                 e / stages;
    /* float8 all-gather (float8.c float8_allgather): the block Linears travel in e4m3 */
    if (float8_allgather(c))
        p16 -= (double)(p->linear_w - p->head_p) / tp * (e - 1.0) / stages;
    const struct comm_group dp = comm_dp_group(c, g);
    sp->overlap = OVERLAP_NONE;
    sp->comm_fixed_s = sp->comm_first_s = sp->comm_post_s = sp->comm_sm_share = 0;
    switch (c->method) {
    case METHOD_CDP: /* DDP: bucketed all-reduce of the gradients during backward */
        sp->overlap = OVERLAP_DDP;
        sp->comm_fixed_s = comm_collective(grad_bytes, dp, 2.0, ceil(grad_bytes / SPEED_DDP_BUCKET_BYTES), g);
        sp->comm_first_s = comm_collective(grad_bytes < SPEED_DDP_BUCKET_BYTES ? grad_bytes : SPEED_DDP_BUCKET_BYTES,
                                      dp, 2.0, 1.0, g);
        sp->comm_sm_share = speed_nccl_sm_share(
            eff, grad_bytes < SPEED_DDP_BUCKET_BYTES ? grad_bytes : SPEED_DDP_BUCKET_BYTES);
        break;
    case METHOD_ZERO1:
    case METHOD_ZERO2: {
        /* DeepSpeed stage 1/2: gradients reduce-scattered in reduce_bucket_size buckets
         * (hidden x hidden elements under the HF Trainer) during backward (overlap_comm), the
         * updated 16-bit parameters all-gathered after the step (exposed) */
        const double bucket = (double)p->spec.hidden * (double)p->spec.hidden * e;
        sp->overlap = OVERLAP_DDP;
        sp->comm_fixed_s = comm_collective(grad_bytes, dp, 1.0, ceil(grad_bytes / bucket), g);
        sp->comm_first_s = comm_collective(grad_bytes < bucket ? grad_bytes : bucket, dp, 1.0, 1.0, g);
        sp->comm_post_s = comm_collective(grad_bytes, dp, 1.0, 1.0, g);
        sp->comm_sm_share = speed_nccl_sm_share(eff, grad_bytes < bucket ? grad_bytes : bucket);
        break;
    }
    case METHOD_PP:
        /* Megatron's distributed optimizer over DP, per stage: reduce-scatter of the fp32
         * main gradients, all-gather of the bf16 parameters, after the pipeline drains
         * (overlap_grad_reduce and overlap_param_gather are off by default) */
        sp->comm_post_s = comm_collective(grad_bytes * (c->precision == PREC_FP32 ? 1.0 : 2.0), dp, 1.0, 1.0, g) +
                          comm_collective(grad_bytes, dp, 1.0, 1.0, g);
        break;
    case METHOD_ADP:
    case METHOD_DPTP:
    case METHOD_OFFLOAD: /* ZeRO-3/FSDP: gather for forward and backward, reduce-scatter
                          * grads, one unit (block) ahead of compute; the first gather is
                          * exposed */
        sp->overlap = OVERLAP_FSDP;
        /* FSDP's mixed precision with an fp32 reduce_dtype reduce-scatters fp32 gradients */
        if ((c->features & FEAT_FSDP) && (c->features & FEAT_FSDP_FP32_REDUCE) && e < 4.0)
            grad_bytes *= 4.0 / e;
        sp->comm_fixed_s = 2.0 * comm_collective(p16, dp, 1.0, units, g) + comm_collective(grad_bytes, dp, 1.0, units, g);
        sp->comm_first_s = sp->comm_fixed_s / units;
        sp->comm_sm_share = speed_nccl_sm_share(eff, p16 / units); /* a unit's gather */
        if (c->method == METHOD_OFFLOAD)
            prepare_offload(p, c, g, trained, sp);
        break;
    default:
        break;
    }
    /* TP: two all-reduces of a [tokens, h] activation per block forward, two backward, on
     * the critical path (Megatron-LM: the next GEMM needs the reduced activation); a
     * pipeline stage holds 1/pp of the blocks */
    sp->act_comm_tok = sp->act_comm_fixed_s = 0;
    if (c->tp > 1) {
        const struct comm_group tpg = comm_tp_group(c, g);
        double blocks = (double)p->spec.layers / stages;
        double per_tok = (double)p->spec.hidden * e * blocks * 2.0 * (fwd_passes + 1.0);
        sp->act_comm_tok = comm_collective(per_tok, tpg, 2.0, 0, g);
        sp->act_comm_fixed_s = comm_collective(0, tpg, 2.0, 2.0 * blocks * (fwd_passes + 1.0), g);
    }
    if (train_ep(c) > 1)
        expert_all_to_all(p, c, g, fwd_passes, sp);
    prepare_p2p(p, c, g, sp);
}

/* --precision fp8: the memory-bound passes of torchao's dynamic float8 casts (torchao
 * @eab345c2 float8_utils.py tensor_to_amax = max(abs(x)), then the scaled cast to float8:
 * hp_tensor_to_float8_dynamic), eager, one kernel each (torch.compile fuses amax into the
 * producer; not modelled). Per converted Linear and step: its input, read twice (amax,
 * cast, e bytes each) and written in e4m3 (1), in every forward pass, recomputation
 * included (a checkpointed block recasts); in backward the output gradient the same way
 * (to e5m2), and the transposed float8 copies the weight gradient's _scaled_mm takes (read
 * and write, 1 byte each, of input and output gradient). The weight (in the dtype it is
 * cast from: bf16 gathered under FSDP2's mixed precision, else fp32) likewise in every
 * forward pass and once transposed in backward; under float8 all-gather the cast runs on
 * the rank's fp32 shard before the gather (fsdp_utils.py fsdp_pre_all_gather), once (a
 * pipeline stage: its blocks, once a micro-batch). */
static void fp8_casts(const struct model_plan *p, const struct train_config *c, double e,
                      double fwd_passes, struct speed_prepared *sp)
{
    const double tp = (double)c->tp, cast = 2.0 * e + 1.0;
    const bool allgather = float8_allgather(c);
    const double wb = (c->features & FEAT_FSDP_MP) ? 2.0 : 4.0;
    double tok = 0, w = 0;
    for (int role = ROLE_Q; role <= ROLE_DOWN; role++) {
        const double in = p->lora_in_active[role], out = p->lora_io_active[role] - in;
        tok += (in * cast * fwd_passes + out * cast + 2.0 * (in + out)) / tp;
        w += (double)p->role_w[role] / tp;
    }
    /* a pipeline stage casts its own blocks' weights, once a micro-batch */
    w *= (double)train_microbatches(c) / (double)train_pp(c);
    sp->elem_bytes_tok += tok;
    sp->fixed_s += (allgather ? w / (double)c->dp * (2.0 * 4.0 + 1.0) : w * (2.0 * wb + 1.0) * fwd_passes) / sp->bw +
                   w * 2.0 / sp->bw;
}

/* Passes over the optimizer's element size (4 bytes: fp32 master weights and states) one
 * step makes per trained parameter. A fused AdamW kernel (FEAT_FUSED_OPT: torch's
 * fused=True, apex FusedAdam) reads the weight, gradient and two states and writes the
 * weight and states: 7. The default unfused AdamW runs one kernel an operation
 * (torch/optim/adamw.py @c15fcf4e, _multi_tensor_adamw: _foreach_lerp_ of exp_avg (read
 * exp_avg and grad, write: 3 passes), _foreach_mul_ (2) and _foreach_addcmul_ (3) of
 * exp_avg_sq, _foreach_sqrt into a temporary (2), _foreach_div_ (2), _foreach_add_ of eps
 * (2), _foreach_addcdiv_ into the weight (read weight, exp_avg, denominator, write: 4)):
 * 18 passes; composer's DecoupledAdamW (composer/optim/decoupled_weight_decay.py @28cc4caf,
 * the loop llm-foundry runs) does the same per parameter with mul_ + add_ for the lerp (20).
 * Weight decay, when not 0, adds a _foreach_mul_ of the weight (2): not counted (the HF
 * Trainer's default weight_decay is 0). SGD with momentum: 3. The HF Trainer's default
 * optimizer is adamw_torch, this foreach path (transformers PR #25109, 2023-07), until
 * transformers PR #37358 makes adamw_torch_fused the default with torch >= 2.8: such runs
 * are feature `fused`, as the memory model already has them (no step temporaries). */
double speed_opt_passes(const struct train_config *c)
{
    if (c->optimizer == OPT_SGD)
        return 3.0;
    if (c->optimizer == OPT_ADAMW && !(c->features & FEAT_FUSED_OPT))
        return 18.0;
    return 7.0; /* fused AdamW, bitsandbytes' 8-bit AdamW kernel (one fused kernel) */
}

/* Bytes FSDP moves over its unsharded gradient per trained parameter and backward, beyond
 * the GEMMs that produce it, for e-byte gradients reduced in r-byte elements (r = 4 with
 * FEAT_FSDP_FP32_REDUCE, else e). FSDP (torch.distributed.fsdp, FSDP1: HF Trainer,
 * Lightning/litgpt, composer) hands the module its weights as views made by torch.split
 * (torch/distributed/fsdp/flat_param.py of torch 2.0/2.1, _flat_param.py since 2.2:
 * _get_unflat_views_unaligned), so autograd's split backward concatenates the views'
 * gradients into the flat gradient: a copy, read and write, 2e. _post_backward_hook
 * (torch/distributed/fsdp/_runtime_utils.py @3ade90a6) casts it to the reduce dtype when
 * that differs (flat_param.grad.to(reduce_dtype): e + r), and the default reduce-scatter hook
 * divides it in place by the pre-divide factor before communicating
 * (torch/distributed/algorithms/_comm_hooks/default_hooks.py @db8ddc78, reduce_scatter_hook:
 * grad.div_(gradient_predivide_factor), a factor above 1 for any world size above 1): 2r.
 * FSDP2 (fully_shard: the torchtune and torchtitan stacks) copies the gradients into the
 * reduce-scatter buffer in the reduce dtype (_fsdp_collectives.py foreach_reduce,
 * torch._chunk_cat: e + r) and, with NCCL's AVG, divides nothing. */
double speed_fsdp_grad_bytes(const struct train_config *c, double e)
{
    const double r = (c->features & FEAT_FSDP_FP32_REDUCE) && e < 4.0 ? 4.0 : e;
    if (c->stack == STACK_TORCHTUNE || c->stack == STACK_TORCHTITAN)
        return e + r;
    return 2.0 * e + (r != e ? e + r : 0.0) + 2.0 * r;
}

void speed_prepare(const struct model_plan *p, const struct train_config *c,
                   const struct gpu_spec *g, struct speed_prepared *sp)
{
    const struct model_spec *m = &p->spec;
    const double tp = (double)c->tp;
    const bool full = c->finetune == FT_FULL;
    const double e = c->precision == PREC_FP32 ? 4.0 : 2.0;
    /* full checkpointing runs every forward twice; selective recomputes the pointwise
     * work and half the matmuls, not attention (its output is saved) */
    const double fwd_passes = c->grad_ckpt ? 2.0 : 1.0;
    const double elem_passes = c->grad_ckpt || c->ckpt_selective ? 2.0 : 1.0;
    struct speed_gpu_eff eff;
    speed_gpu_eff(g, &eff);
    sp->gpu_eff = eff;
    const double peak = dense_rate(g, c->precision);
    sp->matmul_rate = peak * eff.matmul;
    sp->bw = g->mem_bw_gbs * 1e9 * SPEED_BW_EFF;
    int gemms = prepare_gemms(p, c, e, fp8_speedup(g, c), sp);

    /* causal attention: QK^T and AV are 2 * s * q FLOPs each per token, halved by the mask;
     * backward 2.5x forward (FA2: five matmuls to forward's two) */
    /* (DeepSeek's value heads are narrower than its query/key heads: AV uses v_head_dim) */
    const int64_t vd = m->v_head_dim ? m->v_head_dim : m->head_dim;
    sp->attn_flops_tok = (double)(m->heads * m->head_dim + m->heads * vd) * (double)m->layers / tp;
    sp->attn_passes = fwd_passes + 2.5;
    sp->attn_rate = peak * eff.attn;
    if (c->features & FEAT_TRITON_ATTN)
        sp->attn_rate /= SPEED_TRITON_ATTN_SLOWDOWN;
    sp->attn_bytes_tok = 0;
    if (c->features & FEAT_EAGER_ATTN) {
        /* eager: the full s x s scores, at matmul speed, plus their bytes: matmul output
         * (2), mask add (6), fp32 softmax (6), cast back (6), read by AV (2) = 22 bytes a
         * score forward, twice that backward */
        sp->attn_rate = sp->matmul_rate * 0.5; /* no causal skip: twice the FLOPs */
        sp->attn_bytes_tok = 22.0 * (double)(m->heads * m->layers) / tp * (fwd_passes + 2.0);
    }

    /* memory-bound work: forward passes, backward about twice forward's bytes (gradient in,
     * saved input, gradient out); cross-entropy over the vocabulary in fp32 (logits read,
     * upcast, log_softmax, its gradient, cast back: ~28 bytes a logit); embedding lookup */
    /* the loss runs over the rank's vocab shard only under loss parallelism (losspath.c
     * loss_parallel_path); every other TP gathers the logits (transformers' colwise_rep) */
    const bool vocab_split = losspath_select(c, m->model_type) == LOSS_LOSS_PARALLEL;
    sp->elem_bytes_tok = elementwise_fwd(p, c, e) * (elem_passes + 2.0) + elementwise_bwd_extra(p, c, e) +
                         28.0 * (double)m->vocab / (vocab_split ? tp : 1.0) + 3.0 * e * (double)m->hidden;

    /* optimizer step: read weights, grads and two states, write weights and states */
    /* a TP rank's trained parameters (a whole embedding under HF's TP: plan_rank_params) */
    double trained = full ? plan_rank_params(p, c) : (double)plan_lora_params_cfg(p, c) / tp;
    const bool zero3 = c->method == METHOD_ADP || c->method == METHOD_DPTP || c->method == METHOD_OFFLOAD;
    if (!zero3) /* expert parallelism without ZeRO-3: a rank's own experts */
        trained -= (full ? (double)p->expert_p
                         : (double)plan_lora_expert_params(p, c->lora_targets, c->lora_r)) *
                   (1.0 - 1.0 / (double)train_ep(c)) / tp;
    /* sharded over DP by ZeRO (every stage) and Megatron's distributed optimizer; a
     * pipeline stage updates its own blocks; the offloaded step runs on the CPU */
    double shard = (c->method == METHOD_CDP || c->method == METHOD_TP || c->method == METHOD_SINGLE)
                       ? 1.0 : (double)c->dp;
    shard *= (double)train_pp(c);
    double wt = c->precision == PREC_BF16_PURE ? 2.0 : 4.0;
    double opt_bytes = c->method == METHOD_OFFLOAD ? 0
                     : trained / shard * wt * speed_opt_passes(c);
    sp->fixed_s = opt_bytes / sp->bw;
    /* FSDP's unsharded gradient, every parameter of every unit each backward, before the
     * reduce-scatter (zero3 with FEAT_FSDP; speed_fsdp_grad_bytes) */
    if (zero3 && (c->features & FEAT_FSDP))
        sp->fixed_s += trained / (double)train_pp(c) * speed_fsdp_grad_bytes(c, e) / sp->bw;
    /* quantized base: each matmul reads the packed weight and writes/reads a 16-bit copy */
    if (!full && c->quant != QUANT_NONE)
        sp->fixed_s += (double)(p->linear_w - p->head_p) / tp * (c->quant == QUANT_INT8 ? 5.0 : 4.5) *
                       (1.0 + fwd_passes) / sp->bw;
    /* a trained embedding: its dense fp32 gradient is zeroed and accumulated (index_add) */
    if (full)
        sp->fixed_s += plan_embed_rank(p, c) * 8.0 / sp->bw;
    if (c->precision == PREC_FP8)
        fp8_casts(p, c, e, elem_passes, sp);
    sp->fwd_share = fwd_passes / (fwd_passes + 2.0);
    sp->host_s = kernels_fwd(m, c, gemms) * (elem_passes + 2.0) * SPEED_LAUNCH_S;
    sp->pp = train_pp(c);
    sp->pp_micro = train_microbatches(c);
    sp->pp_local = train_pp_local(c);
    prepare_comm(p, c, g, &eff, trained, fwd_passes, sp);
    speed_fold(sp);
}

/* The useful share of the padded tiles of an m x n output, the better candidate. */
static double tile_padding(const struct speed_gpu_eff *e, double m, double n)
{
    double best = 0;
    for (int t = 0; t < SPEED_TILES; t++) {
        const double tm = (double)e->tile_m[t], tn = (double)e->tile_n[t];
        const double eff = m * n / (ceil(m / tm) * tm * ceil(n / tn) * tn);
        best = eff > best ? eff : best;
    }
    return best;
}

/* A shaped class as waves: the forward GEMM (N = out, K = in) runs its forward passes,
 * the input gradient (N = in, K = out) one; a wave of one matrix takes sms x tile area x
 * 2 K FLOPs at the matmul rate. The weight gradient's FLOPs per token over the rate and
 * its tile padding. Classes of the same tiles merge. */
static void fold_wave(struct speed_prepared *sp, const struct speed_gemm *k)
{
    const struct speed_gpu_eff *e = &sp->gpu_eff;
    const double fwd = k->passes - 1.0 - k->wgrad, n[2] = {k->out, k->in}, kd[2] = {k->in, k->out};
    const double passes[2] = {fwd, 1.0};
    const double rate = sp->matmul_rate * (k->fast > 0 ? k->fast : 1.0);
    struct speed_wave w = {.mem_s = k->bytes_tok * k->passes / sp->bw,
                           .mem_fixed_s = k->bytes_fixed * k->passes / sp->bw};
    for (int g = 0; g < 2; g++)
        for (int t = 0; t < SPEED_TILES; t++) {
            w.n_tiles[g][t] = ceil(n[g] / (double)e->tile_n[t]);
            w.wave_s[g][t] = k->mods * passes[g] * (double)e->sms * (double)e->tile_m[t] *
                             (double)e->tile_n[t] * 2.0 * kd[g] / rate;
        }
    w.wgrad_s = k->wgrad * 2.0 * k->mods * k->in * k->out / rate / tile_padding(e, k->out, k->in);
    int j = 0;
    while (j < sp->nwave && memcmp(sp->wave[j].n_tiles, w.n_tiles, sizeof w.n_tiles))
        j++;
    if (j == sp->nwave) {
        sp->wave[sp->nwave++] = w;
        return;
    }
    struct speed_wave *d = &sp->wave[j];
    for (int g = 0; g < 2; g++)
        for (int t = 0; t < SPEED_TILES; t++)
            d->wave_s[g][t] += w.wave_s[g][t];
    d->wgrad_s += w.wgrad_s, d->mem_s += w.mem_s, d->mem_fixed_s += w.mem_fixed_s;
}

void speed_fold(struct speed_prepared *sp)
{
    sp->nterm = sp->nwave = 0;
    for (int t = 0; t < SPEED_TILES; t++)
        sp->inv_tile_m[t] = sp->gpu_eff.sms > 0 ? 1.0 / (double)sp->gpu_eff.tile_m[t] : 0;
    sp->inv_sms = sp->gpu_eff.sms > 0 ? 1.0 / (double)sp->gpu_eff.sms : 0;
    for (int i = 0; i < sp->ngemm; i++) {
        const struct speed_gemm *k = &sp->gemm[i];
        if (k->mods > 0 && sp->gpu_eff.sms > 0) {
            fold_wave(sp, k);
            continue;
        }
        struct speed_term t = {k->flops_tok * k->passes / (sp->matmul_rate * (k->fast > 0 ? k->fast : 1.0)),
                               k->bytes_tok * k->passes / sp->bw, k->bytes_fixed * k->passes / sp->bw};
        int j = 0; /* a class proportional to an earlier one (q and o, k and v) adds to it */
        while (j < sp->nterm && !(sp->term[j].compute_s * t.mem_s == sp->term[j].mem_s * t.compute_s &&
                                  sp->term[j].compute_s * t.mem_fixed_s == sp->term[j].mem_fixed_s * t.compute_s &&
                                  sp->term[j].compute_s > 0))
            j++;
        if (j == sp->nterm) {
            sp->term[sp->nterm++] = t;
        } else {
            sp->term[j].compute_s += t.compute_s;
            sp->term[j].mem_s += t.mem_s;
            sp->term[j].mem_fixed_s += t.mem_fixed_s;
        }
    }
    sp->attn_s_tok = sp->attn_bytes_tok > 0 ? 0 : sp->attn_flops_tok * sp->attn_passes / sp->attn_rate;
    sp->eager_s_tok = sp->attn_bytes_tok > 0
        ? sp->attn_flops_tok * sp->attn_passes / sp->attn_rate + sp->attn_bytes_tok / sp->bw : 0;
    sp->elem_s_tok = sp->elem_bytes_tok / sp->bw;
}

/* A pipelined step (1F1B): the m micro-batches pass pp stages in m + pp - 1 slots, each
 * slot one micro-batch through one stage (1/pp of the blocks: per-micro-batch GPU time and
 * TP communication / pp) plus its blocking send and receive; the bubble is the pp - 1
 * slots beyond m, (pp - 1) / (m + pp - 1) of the step (Megatron schedules.py; Narayanan et
 * al. 2021, section 2.2). With v stages a rank (the interleaved schedule) a slot is one
 * micro-batch through one of pp v stages and there are m v + pp - 1 of them: the bubble
 * shrinks v times, the sends and receives grow v times (Narayanan et al. 2021, section
 * 2.2.2). The optimizer step and the DP collectives follow once. */
static void eval_pipeline(const struct speed_prepared *sp, double tok, double mb_gpu,
                          struct speed_estimate *s)
{
    const double pp = (double)sp->pp, m = (double)sp->pp_micro, v = sp->pp_local > 1 ? (double)sp->pp_local : 1.0;
    const double slots = m * v + pp - 1.0;
    const double tp_comm = sp->act_comm_fixed_s + sp->act_comm_tok * tok;
    const double p2p = sp->p2p_fixed_s + sp->p2p_tok * tok;
    const double slot = (mb_gpu + tp_comm) / (pp * v) + p2p;
    s->flops *= m / pp;
    s->compute_s *= m / pp;
    s->memory_s = sp->elem_s_tok * tok * m / pp + sp->fixed_s;
    s->bubble_s = (pp - 1.0) * (mb_gpu + tp_comm) / (pp * v);
    s->comm_s = slots * p2p + m * tp_comm / pp + sp->comm_post_s;
    s->step_time_s = slot * slots + sp->fixed_s + sp->comm_post_s;
}

/* The shaped classes at `tok` tokens (M): per GEMM kind the better tile's waves x the
 * seconds of a wave, the weight gradient, and the roofline against the class's bytes.
 * tiles / sms is a ratio of integers, so its fraction is 0 or at least 1 / sms: the
 * 1e-9 keeps the product's rounding from adding a wave. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* ceil is one instruction with SSE4.1 (roundsd) and a dozen without; the same value either
 * way, so a CPU that has it runs the clone compiled for it (resolved once at load) */
#define SPEED_CEIL_CLONES __attribute__((target_clones("sse4.1", "default")))
#else
#define SPEED_CEIL_CLONES
#endif

SPEED_CEIL_CLONES static double eval_waves(const struct speed_prepared *sp, double tok)
{
    double tm[SPEED_TILES], total = 0;
    for (int t = 0; t < SPEED_TILES; t++)
        tm[t] = ceil(tok * sp->inv_tile_m[t]);
    for (int i = 0; i < sp->nwave; i++) {
        const struct speed_wave *w = &sp->wave[i];
        double t_c = w->wgrad_s * tok;
        for (int g = 0; g < 2; g++) {
            double best = ceil(tm[0] * w->n_tiles[g][0] * sp->inv_sms - 1e-9) * w->wave_s[g][0];
            for (int t = 1; t < SPEED_TILES; t++) {
                double v = ceil(tm[t] * w->n_tiles[g][t] * sp->inv_sms - 1e-9) * w->wave_s[g][t];
                best = v < best ? v : best;
            }
            t_c += best;
        }
        const double t_m = w->mem_s * tok + w->mem_fixed_s;
        total += t_c > t_m ? t_c : t_m;
    }
    return total;
}

void speed_eval(const struct train_config *c, const struct speed_prepared *sp,
                struct speed_estimate *s)
{
    const double b = (double)c->micro_batch, seq = (double)c->seq_len, tok = b * seq;
    double gemm_s = 0;
    for (int i = 0; i < sp->nterm; i++) { /* the roofline of each class */
        const struct speed_term *k = &sp->term[i];
        double t_c = k->compute_s * tok, t_m = k->mem_s * tok + k->mem_fixed_s;
        gemm_s += t_c > t_m ? t_c : t_m;
    }
    if (sp->nwave)
        gemm_s += eval_waves(sp, tok);
    /* FlashAttention at s: rate * s / (s + s_half), so time = flops * (s + s_half) / s */
    double attn_s = tok * (sp->attn_s_tok * (seq + SPEED_ATTN_S_HALF) + sp->eager_s_tok * seq);
    s->flops = (sp->flops_tok + sp->attn_flops_tok * seq * sp->attn_passes) * tok;
    s->compute_s = gemm_s + attn_s;
    s->memory_s = sp->elem_s_tok * tok + sp->fixed_s;
    s->bubble_s = 0;
    double global = b * (double)c->dp;
    if (sp->pp > 1) {
        double mb = s->compute_s + sp->elem_s_tok * tok;
        eval_pipeline(sp, tok, mb > sp->host_s ? mb : sp->host_s, s);
        global *= (double)sp->pp_micro;
        s->samples_per_s = global / s->step_time_s;
        s->tokens_per_s = s->samples_per_s * seq;
        return;
    }
    double gpu = s->compute_s + s->memory_s;
    if (gpu < sp->host_s) /* the host cannot launch kernels as fast as they finish */
        gpu = sp->host_s;
    double exposed = sp->comm_fixed_s;
    if (sp->overlap == OVERLAP_FSDP) /* gathers overlap forward and backward */
        exposed = speed_overlap_cost(sp->comm_fixed_s, gpu - sp->fixed_s, sp->comm_sm_share) +
                  sp->comm_first_s;
    else if (sp->overlap == OVERLAP_DDP) /* buckets overlap backward */
        exposed = speed_overlap_cost(sp->comm_fixed_s, (gpu - sp->fixed_s) * (1.0 - sp->fwd_share),
                                     sp->comm_sm_share) +
                  sp->comm_first_s;
    s->comm_s = exposed + sp->comm_post_s + sp->act_comm_fixed_s + sp->act_comm_tok * tok;
    s->step_time_s = gpu + s->comm_s;
    s->samples_per_s = global / s->step_time_s;
    s->tokens_per_s = s->samples_per_s * seq;
}

void speed_add_paging(const struct gpu_spec *g, uint64_t moved, struct speed_estimate *s)
{
    if (!moved || !g)
        return;
    /* bitsandbytes' prefetch_state (cudaMemPrefetchAsync) migrates a parameter's pages in
     * before its update and the driver writes the evicted ones back: both ways, one after
     * the other, at the pinned-copy share of the link */
    const double paging = 2.0 * (double)moved / pcie_rate(g), step = s->step_time_s + paging;
    s->comm_s += paging;
    s->samples_per_s *= s->step_time_s / step;
    s->tokens_per_s *= s->step_time_s / step;
    s->step_time_s = step;
}
