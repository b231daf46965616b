/* test_speed.c: the step-time model on hand-worked cases.
 *
 * The model is test_memmodel.c's tiny llama (layers 2, hidden 64, heads 4 x 16, kv_heads 2,
 * intermediate 128, vocab 1000, untied head): per layer q 64x64, k 64x32, v 64x32, o 64x64,
 * gate/up/down 64x128. The GPU is made up so the numbers stay round. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "speed.h"
#include "tiny_model.h"

static struct model_plan plan;
static struct gpu_spec gpu;

static int setup(void **state)
{
    (void)state;
    memset(&gpu, 0, sizeof gpu);
    snprintf(gpu.name, sizeof gpu.name, "TEST-GPU");
    gpu.bf16_tflops = gpu.fp16_tflops = 100, gpu.fp32_tflops = 10;
    gpu.mem_bw_gbs = 1000, gpu.interconnect_gbs = 100, gpu.internode_gbs = 10;
    gpu.gpus_per_node = 8;
    return tiny_model_plan(&plan);
}

static int teardown(void **state)
{
    (void)state;
    plan_free(&plan);
    return 0;
}

static struct train_config full_bf16(void)
{
    struct train_config c;
    memset(&c, 0, sizeof c);
    c.method = METHOD_SINGLE, c.gpus = c.tp = c.dp = 1;
    c.micro_batch = 1, c.seq_len = 1024;
    c.precision = PREC_BF16, c.finetune = FT_FULL;
    return c;
}

/* The q class: 2 * 2 * 64 * 64 = 16384 FLOPs per token over both layers; it reads its
 * input and writes its output, (64 + 64) * 2 layers * 2 bytes = 512 bytes per token, and
 * its bf16 weight once a pass, 8192 * 2 bytes. Full fine-tuning: forward, input and
 * weight gradient = 3 passes; checkpointing adds a forward. */
static void test_gemm_classes(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    struct speed_prepared sp;
    speed_prepare(&plan, &c, &gpu, &sp);
    const struct speed_gemm *q = &sp.gemm[0]; /* ROLE_Q comes first (no proj role here) */
    assert_true(q->flops_tok == 16384.0);
    assert_true(q->bytes_tok == 512.0);
    assert_true(q->bytes_fixed == 16384.0);
    assert_true(q->passes == 3.0);
    /* the default efficiencies: 0.80 of the peak for matmuls, 0.85 of the bandwidth */
    assert_true(sp.matmul_rate == 100e12 * 0.80);
    assert_true(sp.bw == 1000e9 * SPEED_BW_EFF);
    /* folded: proportional classes merge, {q, o}, {k, v}, {gate, up, down}, {lm_head},
     * keeping the total matmul time */
    assert_int_equal(sp.ngemm, 8);
    assert_int_equal(sp.nterm, 4);
    double classes = 0, terms = 0;
    for (int i = 0; i < sp.ngemm; i++)
        classes += sp.gemm[i].flops_tok * sp.gemm[i].passes / sp.matmul_rate;
    for (int i = 0; i < sp.nterm; i++)
        terms += sp.term[i].compute_s;
    assert_float_equal(classes, terms, 1e-20);
    c.grad_ckpt = true;
    speed_prepare(&plan, &c, &gpu, &sp);
    assert_true(sp.gemm[0].passes == 4.0);
}

/* Selective checkpointing recomputes the 2nd, 4th, 6th matmul of the block: k, o, up
 * (q k v o gate up down, unfused); the others keep 3 passes. */
static void test_selective_recompute(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    train_set_ckpt(&c, CKPT_SELECTIVE);
    struct speed_prepared sp;
    speed_prepare(&plan, &c, &gpu, &sp);
    const double want[7] = {3, 4, 3, 4, 3, 4, 3}; /* q k v o gate up down */
    for (int i = 0; i < 7; i++)
        assert_true(sp.gemm[i].passes == want[i]);
    assert_true(sp.gemm[7].passes == 3.0); /* lm_head: never recomputed */
}

/* speed_eval on a hand-filled configuration: one compute-bound GEMM class, FlashAttention,
 * memory-bound bytes, no communication. b = 2, s = 768: 1536 tokens.
 *   GEMM: max(1e6 * 1536 / 1e12, (1000 * 1536 + 0) / 1e12) = 1.536e-3 s, 3 passes: 4.608e-3
 *   attention: 1e3 * 1536 * (768 + 256) / 1e12 * 3.5 passes = 5.505024e-3 s
 *   memory: 2e5 * 1536 / 1e12 + 1e-3 = 1.3072e-3 s; host 1e-6 (hidden) */
static void test_eval_by_hand(void **state)
{
    (void)state;
    struct speed_prepared sp;
    memset(&sp, 0, sizeof sp);
    sp.ngemm = 1;
    sp.gemm[0] = (struct speed_gemm){.flops_tok = 1e6, .bytes_tok = 1000, .passes = 3};
    sp.matmul_rate = sp.bw = sp.attn_rate = 1e12;
    sp.attn_flops_tok = 1e3, sp.attn_passes = 3.5;
    sp.elem_bytes_tok = 2e5, sp.fixed_s = 1e-3, sp.host_s = 1e-6;
    speed_fold(&sp);
    struct train_config c = full_bf16();
    c.micro_batch = 2, c.seq_len = 768;
    struct speed_estimate s;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.compute_s, 4.608e-3 + 5.505024e-3, 1e-12);
    assert_float_equal(s.memory_s, 1.3072e-3, 1e-12);
    assert_float_equal(s.step_time_s, 4.608e-3 + 5.505024e-3 + 1.3072e-3, 1e-12);
    assert_float_equal(s.tokens_per_s, 1536.0 / s.step_time_s, 1e-6);
    /* the host bounds a step whose kernels finish faster than they are launched */
    sp.host_s = 1.0;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.step_time_s, 1.0, 1e-12);
}

/* FSDP overlaps its collectives with compute: only what exceeds the GPU time (less the
 * optimizer step) and the first unit's gather are exposed. DDP hides the all-reduce in
 * backward (2/3 of compute without checkpointing) up to the last bucket. */
/* One GEMM class of 1e9 FLOPs a token at 1e12 FLOP/s: 1 s of compute for 1000 tokens. */
static void one_second_of_compute(struct speed_prepared *sp, struct train_config *c)
{
    memset(sp, 0, sizeof *sp);
    sp->ngemm = 1;
    sp->gemm[0] = (struct speed_gemm){.flops_tok = 1e9, .passes = 1};
    sp->matmul_rate = sp->bw = sp->attn_rate = 1e12;
    sp->fwd_share = 1.0 / 3.0;
    speed_fold(sp);
    *c = full_bf16();
    c->seq_len = 1000;
}

static void test_overlap(void **state)
{
    (void)state;
    struct speed_prepared sp;
    struct train_config c;
    one_second_of_compute(&sp, &c);
    struct speed_estimate s;
    sp.overlap = OVERLAP_FSDP, sp.comm_fixed_s = 0.5, sp.comm_first_s = 0.1;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.comm_s, 0.1, 1e-12); /* hidden but the first unit */
    sp.comm_fixed_s = 1.5;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.comm_s, 0.5 + 0.1, 1e-12);
    sp.overlap = OVERLAP_DDP, sp.comm_fixed_s = 1.0, sp.comm_first_s = 0.05;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.comm_s, 1.0 - 2.0 / 3.0 + 0.05, 1e-12);
    sp.overlap = OVERLAP_NONE;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.comm_s, 1.0, 1e-12);
}

/* Across nodes the ring runs at min(intra-node link, GPUs a node x inter-node link) and
 * each step waits 9.6 us (NCCL ring, network) instead of 3.4 (NVLink). FSDP of the tiny
 * model (202048 params, bf16: 404096 bytes), 3 collectives a unit, 3 units:
 *   8 GPUs: 3 x 404096 x 7/8 / (100e9 x 0.7) + 9 x (8.4 + 7 x 3.4) us
 *   16 GPUs: 3 x 404096 x 15/16 / (min(100, 8 x 10)e9 x 0.7) + 9 x (8.4 + 15 x 9.6) us */
static void test_nodes(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    c.method = METHOD_ADP, c.gpus = c.dp = 8;
    struct speed_prepared sp;
    speed_prepare(&plan, &c, &gpu, &sp);
    double bytes = 202048.0 * 2.0;
    /* one node: 3 ring collectives a unit, 9 in all, 7 NVLink hops each */
    double one = 3.0 * bytes * 7.0 / 8.0 / (100e9 * 0.7) + 9.0 * (8.4e-6 + 7.0 * 3.4e-6);
    assert_float_equal(sp.comm_fixed_s, one, 1e-12);
    assert_float_equal(sp.comm_first_s, one / 3.0, 1e-12);
    /* two nodes of 8: the node's 8 NICs carry the ring (min(100, 8 x 10) GB/s); of the 15
     * hops one crosses the network (NCCL tuning.cc: 14 us) */
    c.gpus = c.dp = 16;
    speed_prepare(&plan, &c, &gpu, &sp);
    double two = 3.0 * bytes * 15.0 / 16.0 / (80e9 * 0.7) + 9.0 * (8.4e-6 + 14.0 * 3.4e-6 + 14e-6);
    assert_float_equal(sp.comm_fixed_s, two, 1e-12);
    gpu.gpus_per_node = 16; /* one node again */
    speed_prepare(&plan, &c, &gpu, &sp);
    assert_true(sp.comm_fixed_s < two);
    gpu.gpus_per_node = 8;
}

/* Hierarchical groups: with tp 8 filling a node, each DP group has one rank a node and one
 * NIC (10 GB/s), not the node's eight (a rank's gradients: the TP shard of the matrices and,
 * under the hf stack's TP, the whole 64000-element embedding, train_embed_tp); DDP's all-reduce over 4 nodes takes NCCL's tree
 * when it is faster than the ring (latency 8.4 + 2 (7 x 4.0 + log2(4) x 14) us against the
 * ring's 8.4 + 2 (31 - 3) 3.4 + 2 x 3 x 14). */
static void test_hierarchy(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    struct speed_prepared sp;
    c.method = METHOD_DPTP, c.gpus = 16, c.tp = 8, c.dp = 2;
    plan.spec.heads = 8, plan.spec.kv_heads = 8; /* only the layout check reads these */
    speed_prepare(&plan, &c, &gpu, &sp);
    double bytes = ((202048.0 - 64000.0) / 8.0 + 64000.0) * 2.0;
    double dp = 3.0 * bytes * 0.5 / (10e9 * 0.7) + 9.0 * (8.4e-6 + 14e-6);
    assert_float_equal(sp.comm_fixed_s, dp, 1e-12);
    plan.spec.heads = 4, plan.spec.kv_heads = 2;
    /* a tiny all-reduce over 32 GPUs (4 nodes): latency-bound, the tree wins */
    c = full_bf16();
    c.method = METHOD_CDP, c.gpus = c.dp = 32;
    speed_prepare(&plan, &c, &gpu, &sp);
    double grad = 202048.0 * 2.0, data = 2.0 * grad * 31.0 / 32.0;
    double ring = data / (80e9 * 0.7) + 8.4e-6 + (62.0 - 6.0) * 3.4e-6 + 6.0 * 14e-6;
    double tree = data / (80e9 * 0.7 * 0.92) + 8.4e-6 + 2.0 * (7.0 * 4.0e-6 + 2.0 * 14e-6);
    assert_true(tree < ring);
    assert_float_equal(sp.comm_fixed_s, tree, 1e-12);
}

/* 1F1B: 8 micro-batches over 4 stages take 11 slots of a quarter of a micro-batch's work;
 * the bubble is 3 of them, and a step carries 8 micro-batches of every DP rank. Interleaved
 * (2 stages a rank): 8 x 2 + 3 = 19 slots of an eighth, the bubble 3 eighths. */
static void test_pipeline_bubble(void **state)
{
    (void)state;
    struct speed_prepared sp;
    memset(&sp, 0, sizeof sp);
    sp.matmul_rate = sp.bw = sp.attn_rate = 1e12;
    sp.elem_bytes_tok = 1e6; /* 1 us a token */
    sp.pp = 4, sp.pp_micro = 8;
    speed_fold(&sp);
    struct train_config c = full_bf16();
    c.method = METHOD_PP, c.pp = 4, c.microbatches = 8, c.dp = 2, c.gpus = 8;
    c.micro_batch = 2, c.seq_len = 512;
    struct speed_estimate s;
    speed_eval(&c, &sp, &s);
    const double mb = 1024 * 1e-6;
    assert_float_equal(s.step_time_s, mb / 4.0 * 11.0, 1e-12);
    assert_float_equal(s.bubble_s, mb / 4.0 * 3.0, 1e-12);
    assert_float_equal(s.tokens_per_s, 2.0 * 2.0 * 8.0 * 512.0 / (mb / 4.0 * 11.0), 1e-3);
    sp.pp_local = 2;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.step_time_s, mb / 8.0 * 19.0, 1e-12);
    assert_float_equal(s.bubble_s, mb / 8.0 * 3.0, 1e-12);
}

/* Offload: the optimizer step leaves the GPU; the CPU step (30 bytes a parameter at 0.8 of
 * the node's DRAM, shared by its GPUs) and the 16-bit upload over PCIe are exposed. */
static void test_offload(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    c.method = METHOD_OFFLOAD, c.offload = OFFLOAD_OPTIMIZER, c.gpus = c.dp = 2;
    gpu.pcie_gbs = 10, gpu.host_mem_gbs = 100;
    struct speed_prepared sp;
    speed_prepare(&plan, &c, &gpu, &sp);
    const double share = 202048.0 / 2.0;
    assert_float_equal(sp.comm_post_s, share * 2.0 / 8e9 + share * 30.0 / (80e9 / 2.0), 1e-12);
    struct speed_prepared adp;
    c.method = METHOD_ADP, c.offload = OFFLOAD_NONE;
    speed_prepare(&plan, &c, &gpu, &adp);
    assert_true(sp.fixed_s < adp.fixed_s); /* no optimizer step on the GPU */
    assert_float_equal(sp.comm_fixed_s, adp.comm_fixed_s + share * 2.0 / 8e9, 1e-12);
    gpu.pcie_gbs = gpu.host_mem_gbs = 0;
}

/* Backward-only memory-bound bytes. Biases on every Linear of the tiny model (full
 * fine-tuning, bf16): each backward sums the output gradient of q (64), k (32), v (32),
 * o (64), gate (128), up (128) and down (64) = 512 elements a token and layer, 2 bytes,
 * 2 layers: 2048 bytes a token more. LoRA trains no bias and no norm: nothing more. LayerNorm instead of
 * the eager RMSNorm: the forward's norm bytes fall from 18e to 2e an element (2 norms x 64 x
 * 2 layers x 16 x 2 bytes = 8192 a token forward, x 3 for forward and backward = 24576)
 * and the gamma/beta kernel reads the gradient and the input once more, e an element:
 * 2 norms x 64 x 2 layers x 2 bytes = 512. */
static void test_backward_extra_bytes(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    struct speed_prepared base, sp;
    speed_prepare(&plan, &c, &gpu, &base);
    plan.spec.qkv_bias = plan.spec.o_bias = plan.spec.mlp_bias = true;
    speed_prepare(&plan, &c, &gpu, &sp);
    assert_float_equal(sp.elem_bytes_tok - base.elem_bytes_tok, 2048.0, 1e-9);
    c.finetune = FT_LORA, c.lora_r = 8, c.lora_targets = TARGETS_ALL;
    struct speed_prepared lora_base;
    plan.spec.qkv_bias = plan.spec.o_bias = plan.spec.mlp_bias = false;
    speed_prepare(&plan, &c, &gpu, &lora_base);
    plan.spec.qkv_bias = plan.spec.o_bias = plan.spec.mlp_bias = true;
    speed_prepare(&plan, &c, &gpu, &sp);
    assert_float_equal(sp.elem_bytes_tok, lora_base.elem_bytes_tok, 1e-9);
    plan.spec.qkv_bias = plan.spec.o_bias = plan.spec.mlp_bias = false;
    c = full_bf16();
    plan.spec.norm = NORM_LAYERNORM;
    speed_prepare(&plan, &c, &gpu, &sp);
    assert_float_equal(sp.elem_bytes_tok - base.elem_bytes_tok, -24576.0 + 512.0, 1e-9);
    /* frozen norms (LoRA): no gamma/beta kernel */
    c.finetune = FT_LORA, c.lora_r = 8, c.lora_targets = TARGETS_ALL;
    speed_prepare(&plan, &c, &gpu, &sp);
    assert_float_equal(sp.elem_bytes_tok - lora_base.elem_bytes_tok, -24576.0, 1e-9);
    plan.spec.norm = NORM_RMSNORM;
}

/* The optimizer step: unfused AdamW makes 18 passes over 4-byte elements per parameter,
 * fused 7, SGD 3; the tiny model's 202,048 parameters at 850 GB/s: the unfused step takes
 * 202048 x 4 x 11 / 850e9 s longer than the fused one. FSDP adds the split backward's copy
 * and the reduce-scatter hook's division of the unsharded bf16 gradient: 4 passes x 2 bytes
 * per parameter each backward, whatever the DP degree (FSDP1's copy and division). */
static void test_optimizer_and_fsdp_passes(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    assert_true(speed_opt_passes(&c) == 18.0);
    struct speed_prepared unfused, fused;
    speed_prepare(&plan, &c, &gpu, &unfused);
    c.features |= FEAT_FUSED_OPT;
    assert_true(speed_opt_passes(&c) == 7.0);
    speed_prepare(&plan, &c, &gpu, &fused);
    assert_float_equal((unfused.fixed_s - fused.fixed_s) * 850e9, 202048.0 * 4.0 * 11.0, 1e-3);
    c.optimizer = OPT_SGD;
    assert_true(speed_opt_passes(&c) == 3.0);
    c.optimizer = OPT_ADAMW8BIT;
    assert_true(speed_opt_passes(&c) == 7.0);
    c = full_bf16();
    c.method = METHOD_ADP, c.gpus = c.dp = 4;
    struct speed_prepared zero3, fsdp;
    speed_prepare(&plan, &c, &gpu, &zero3);
    c.features |= FEAT_FSDP;
    speed_prepare(&plan, &c, &gpu, &fsdp);
    assert_true(speed_fsdp_grad_bytes(&c, 2.0) == 8.0);
    assert_float_equal((fsdp.fixed_s - zero3.fixed_s) * 850e9, 202048.0 * 2.0 * 4.0, 1e-3);
    /* an fp32 reduce dtype: the copy (4), the cast (2 + 4), the division in fp32 (8) = 18
     * bytes; the reduce-scatter carries 4 bytes a parameter instead of 2, so the step's
     * collectives grow by one more reduce-scatter's worth (gathers 2 x 2, scatter 4) */
    c.features |= FEAT_FSDP_FP32_REDUCE;
    struct speed_prepared fp32;
    speed_prepare(&plan, &c, &gpu, &fp32);
    assert_true(speed_fsdp_grad_bytes(&c, 2.0) == 18.0);
    assert_float_equal((fp32.fixed_s - zero3.fixed_s) * 850e9, 202048.0 * 18.0, 1e-3);
    assert_true(fp32.comm_fixed_s > fsdp.comm_fixed_s);
    /* FSDP2 (torchtune, torchtitan): the copy into the reduce-scatter buffer only */
    c.stack = STACK_TORCHTUNE;
    assert_true(speed_fsdp_grad_bytes(&c, 2.0) == 6.0);
    c.features &= ~FEAT_FSDP_FP32_REDUCE;
    assert_true(speed_fsdp_grad_bytes(&c, 2.0) == 4.0);
}

/* FlashAttention's efficiency rises with the sequence: at s = s_half it runs at half its
 * long-sequence rate, so per token the attention costs (s + 256) / s of its FLOPs. */
static void test_attention_efficiency(void **state)
{
    (void)state;
    struct speed_prepared sp;
    memset(&sp, 0, sizeof sp);
    sp.matmul_rate = sp.bw = 1e12, sp.attn_rate = 1e12;
    sp.attn_flops_tok = 1.0, sp.attn_passes = 1.0;
    speed_fold(&sp);
    struct train_config c = full_bf16();
    struct speed_estimate s;
    c.seq_len = 256;
    speed_eval(&c, &sp, &s);
    double t256 = s.compute_s; /* 256 tokens x 512 / 1e12 */
    assert_float_equal(t256, 256.0 * 512.0 / 1e12, 1e-18);
    assert_float_equal(s.flops, 256.0 * 256.0, 1e-9);
    c.seq_len = 4096;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.compute_s, 4096.0 * (4096.0 + 256.0) / 1e12, 1e-15);
}

/* The efficiencies, SMs and tiles of the gpus.csv row named `name`. */
static void eff_of(const char *name, struct speed_gpu_eff *e)
{
    struct gpu_spec g = gpu;
    snprintf(g.name, sizeof g.name, "%s", name);
    speed_gpu_eff(&g, e);
}

/* The per-GPU efficiencies: the MAMF table's A100 SXM and H100 rows, else the default. */
static void test_gpu_efficiency(void **state)
{
    (void)state;
    struct speed_gpu_eff e;
    eff_of("A100-SXM-80GB", &e);
    assert_true(e.matmul == 0.869 && e.attn == 0.60);
    eff_of("H100-SXM-80GB", &e);
    assert_true(e.matmul == 0.803 && e.attn == 0.34);
    eff_of("L4-24GB", &e);
    assert_true(e.matmul == 0.80 && e.attn == 0.50);
}

/* NCCL's channels: 32 KiB a channel (512 threads x 64 bytes, Simple protocol), at most the
 * GPU's count. H100 SXM: 32 channels of 132 SMs for a 64 MiB gather; a 100 KiB one drops
 * to floor(100 / 32) = 3 channels; below 32 KiB one. A GPU outside the table: 0. */
static void test_nccl_sm_share(void **state)
{
    (void)state;
    struct speed_gpu_eff e;
    eff_of("H100-SXM-80GB", &e);
    assert_int_equal(e.sms, 132);
    assert_int_equal(e.nccl_channels, 32);
    assert_float_equal(speed_nccl_sm_share(&e, 64.0 * 1048576), 32.0 / 132.0, 1e-15);
    assert_float_equal(speed_nccl_sm_share(&e, 100.0 * 1024), 3.0 / 132.0, 1e-15);
    assert_float_equal(speed_nccl_sm_share(&e, 1000.0), 1.0 / 132.0, 1e-15);
    eff_of("A100-SXM-40GB", &e);
    assert_float_equal(speed_nccl_sm_share(&e, 64.0 * 1048576), 24.0 / 108.0, 1e-15);
    speed_gpu_eff(&gpu, &e);
    assert_true(speed_nccl_sm_share(&e, 64.0 * 1048576) == 0.0);
}

/* Overlapped collectives holding a quarter of the SMs: 0.4 s of them under 1 s of compute
 * slow it by 0.25 x 0.4 = 0.1 s; 2 s of them under 1 s: the compute ends inside them
 * (1 s at 0.75 needs 1.33 s), 1 s beyond the compute. In speed_eval: FSDP with 0.5 s of
 * collectives under the 1 s of test_overlap and a share of 0.2: 0.1 s + the first gather. */
static void test_overlap_sm_share(void **state)
{
    (void)state;
    assert_float_equal(speed_overlap_cost(0.4, 1.0, 0.25), 0.1, 1e-15);
    assert_float_equal(speed_overlap_cost(2.0, 1.0, 0.25), 1.0, 1e-15);
    assert_true(speed_overlap_cost(0.0, 1.0, 0.25) == 0.0);
    struct speed_prepared sp;
    struct train_config c;
    one_second_of_compute(&sp, &c);
    struct speed_estimate s;
    sp.overlap = OVERLAP_FSDP, sp.comm_fixed_s = 0.5, sp.comm_first_s = 0.1, sp.comm_sm_share = 0.2;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.comm_s, 0.2 * 0.5 + 0.1, 1e-12);
    assert_float_equal(s.step_time_s, 1.0 + 0.2, 1e-12);
}

/* Tile and wave quantization on an H100 SXM (132 SMs, 128x256 or 256x128 tiles):
 *  4096 x 4096: 32 x 16 = 512 tiles, ceil(512 / 132) = 4 waves of 132: 512 / 528;
 *  256 x 4096 (a micro-batch of 256 tokens into a 4096-wide layer): 128x256 gives 2 x 16 =
 *  32 tiles in one wave, 32 / 132; 256x128 the same 1 x 32;
 *  4000 x 4000: 128x256 pads to 32 x 16 tiles (4096 x 4096), so 16e6 / (4 x 132 x 32768).
 * An A100 (108 SMs, 128x128 or 256x128) on 4096 x 4096: 128x128 gives 1024 tiles, 10 waves
 * of 108 = 1080: 1024 / 1080. A GPU outside the table: 1. */
static void test_wave_efficiency(void **state)
{
    (void)state;
    struct speed_gpu_eff e;
    eff_of("H100-SXM-80GB", &e);
    assert_float_equal(speed_wave_efficiency(&e, 4096, 4096), 512.0 / 528.0, 1e-15);
    assert_float_equal(speed_wave_efficiency(&e, 256, 4096), 32.0 / 132.0, 1e-15);
    assert_float_equal(speed_wave_efficiency(&e, 4000, 4000), 16e6 / (4.0 * 132 * 32768), 1e-15);
    eff_of("A100-SXM-80GB", &e);
    assert_float_equal(speed_wave_efficiency(&e, 4096, 4096), 1024.0 / 1080.0, 1e-15);
    speed_gpu_eff(&gpu, &e);
    assert_true(speed_wave_efficiency(&e, 4096, 4096) == 1.0);
}

/* The point loop's waves: one 4096 x 4096 Linear on an H100 SXM at 4096 tokens, frozen
 * (forward and input gradient: 2 GEMMs of 2 x 4096^3 FLOPs), each at 512 / 528 of the
 * matmul rate; trained, the weight gradient adds one more, tile padding only (none here:
 * 4096 is a multiple of both tiles). At 4097 tokens a 33rd row of tiles: 528 tiles, still
 * 4 waves. */
static void test_eval_waves(void **state)
{
    (void)state;
    struct speed_prepared sp;
    memset(&sp, 0, sizeof sp);
    eff_of("H100-SXM-80GB", &sp.gpu_eff);
    sp.ngemm = 1;
    sp.gemm[0] = (struct speed_gemm){.flops_tok = 2.0 * 4096 * 4096, .passes = 2,
                                     .in = 4096, .out = 4096, .mods = 1};
    sp.matmul_rate = 1e15, sp.bw = 1e30, sp.attn_rate = 1e15;
    speed_fold(&sp);
    assert_int_equal(sp.nterm, 0);
    assert_int_equal(sp.nwave, 1);
    struct train_config c = full_bf16();
    c.seq_len = 4096;
    struct speed_estimate s;
    const double gemm = 2.0 * 4096.0 * 4096 * 4096 / 1e15; /* no attention FLOPs here */
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.compute_s, 2.0 * gemm * 528.0 / 512.0, 1e-12);
    c.seq_len = 4097;
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.compute_s, 2.0 * gemm * 528.0 / 512.0, 1e-12);
    c.seq_len = 4096;
    sp.gemm[0].passes = 3, sp.gemm[0].wgrad = 1;
    speed_fold(&sp);
    speed_eval(&c, &sp, &s);
    assert_float_equal(s.compute_s, 2.0 * gemm * 528.0 / 512.0 + gemm, 1e-12);
}

/* --precision fp8 on a GPU with twice the bf16 rate in float8: the block Linears (q, k, v,
 * o, gate, up, down) run at 2x, the lm_head at the bf16 rate; their weights are read in
 * e4m3 (q: 8192 x 1 byte). The casts by hand (tiny model, no checkpointing, e = 2, a cast
 * reads its input twice and writes 1 byte: 5 bytes an element): per token the Linear
 * inputs 2 x (6 x 64 + 128) = 1024 elements and outputs 2 x (64 + 2 x 32 + 64 + 2 x 128 +
 * 64) = 1024: 1024 x 5 (forward) + 1024 x 5 (output gradient) + 2 x 2048 (transposed
 * copies) = 14336 bytes a token more than bf16. A GPU without float8 refuses it, and so
 * does LoRA. */
static void test_fp8(void **state)
{
    (void)state;
    struct train_config c = full_bf16();
    struct speed_prepared bf, f8;
    struct gpu_spec g = gpu;
    g.fp8_tflops = 200;
    speed_prepare(&plan, &c, &g, &bf);
    c.precision = PREC_FP8;
    speed_prepare(&plan, &c, &g, &f8);
    assert_true(f8.gemm[0].fast == 2.0);
    assert_true(f8.gemm[0].bytes_fixed == 8192.0);
    assert_true(f8.gemm[7].fast == 0.0); /* lm_head */
    assert_true(f8.elem_bytes_tok - bf.elem_bytes_tok == 14336.0);
    struct speed_estimate eb, e8;
    speed_eval(&c, &bf, &eb);
    speed_eval(&c, &f8, &e8);
    assert_true(e8.compute_s < eb.compute_s);
    assert_null(train_gpu_check(&c, &g));
    assert_non_null(train_gpu_check(&c, &gpu)); /* fp8_tflops 0 */
    struct model_spec m = plan.spec;
    assert_null(train_config_check(&c, &m));
    c.finetune = FT_LORA, c.lora_r = 8, c.lora_targets = TARGETS_ALL;
    assert_non_null(train_config_check(&c, &m));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_classes),     cmocka_unit_test(test_selective_recompute),
        cmocka_unit_test(test_eval_by_hand),     cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_nodes),            cmocka_unit_test(test_attention_efficiency),
        cmocka_unit_test(test_hierarchy),        cmocka_unit_test(test_pipeline_bubble),
        cmocka_unit_test(test_offload),          cmocka_unit_test(test_backward_extra_bytes),
        cmocka_unit_test(test_optimizer_and_fsdp_passes),
        cmocka_unit_test(test_gpu_efficiency), cmocka_unit_test(test_fp8),
        cmocka_unit_test(test_nccl_sm_share),    cmocka_unit_test(test_overlap_sm_share),
        cmocka_unit_test(test_wave_efficiency),  cmocka_unit_test(test_eval_waves),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
