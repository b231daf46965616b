/* test_memmodel.c: the phase-timeline memory model on hand-worked cases.
 *
 * The model: a tiny llama-style network, worked out by hand once:
 *   layers 2, hidden h 64, heads 4 (head_dim 16, q = 64), kv_heads 2 (kv = 32),
 *   intermediate i 128, vocab v 1000, RMSNorm, gated MLP, rotary, untied lm_head, no biases.
 *   embed 1000*64 = 64000; per layer: norms 2*64 = 128, q 64*64 = 4096, k 64*32 = 2048,
 *   v 2048, o 4096, gate/up/down 3*64*128 = 24576 -> 36992; two layers 73984;
 *   final norm 64; lm_head 64000.  Total 64000 + 73984 + 64 + 64000 = 202048. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mempoint.h"
#include "plan.h"
#include "stepreplay.h"
#include "tiny_model.h"
#include "units.h"

TINY_PLAN_FIXTURE

static void test_param_count(void **state)
{
    (void)state;
    assert_int_equal(plan.params, 202048);
    assert_int_equal(plan.linear_w, 73728 + 64000); /* block Linears + lm_head */
}

/* Full bf16-pure AdamW (foreach) at the optimizer step: weights 2, grads 2, two states 2+2
 * and one sqrt temporary 2 bytes per parameter. */
static void test_optimizer_step_full_bf16(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    const uint64_t *ph = e.phase[PHASE_OPTIMIZER];
    assert_int_equal(ph[TERM_PARAMS], 2 * 202048);
    assert_int_equal(ph[TERM_GRADS], 2 * 202048);
    assert_int_equal(ph[TERM_OPTIMIZER], 4 * 202048 + 2 * 202048);
    /* the fused kernel has no temporary */
    c.features |= FEAT_FUSED_OPT;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 4 * 202048);
}

/* Mixed precision by autocast (HF, full fine-tuning, checkpointing): fp32 weights, so the
 * residual stream and each boundary are fp32 (4 x 64 = 256 per block and token: 2 x 256 x
 * 16 = 8192), the tail (the final norm's fp32 input and the fp32 normalised input its fp32
 * weight keeps, 2 x 256, and the lm_head's bf16 input, 128) 640 x 16 = 10240, and
 * autocast's 16-bit copy of one block's Linear weights for the recomputed block: 36864 x 2
 * = 73728; 92160 in all. FSDP2's
 * MixedPrecisionPolicy (torchtitan) gathers 16-bit parameters and runs no autocast: no
 * copies, boundaries in bf16 (2 x 128 x 16 = 4096): 12288. */
static void test_fsdp_mixed_precision(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    c.precision = PREC_BF16;
    c.grad_ckpt = true;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 92160);
    c.features |= FEAT_FSDP_MP;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 12288);
    assert_true(stack_features(STACK_TORCHTITAN) & FEAT_FSDP_MP);
}

/* The base configuration as QLoRA r4 on q and v with the stack's own features. */
static struct train_config qlora_config(enum stack stack)
{
    struct train_config c = tiny_base_config();
    c.stack = stack;
    c.finetune = FT_QLORA;
    c.quant = QUANT_NF4;
    c.lora_r = 4;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    c.features = stack_features(stack);
    return c;
}

/* A base Lightning quantized from fp16 (litgpt, FEAT_DEQUANT_CAST) dequantizes each weight
 * to fp16 and casts it to bf16 beside it: 2 + 2 bytes a weight while the cast runs. The
 * largest block Linear is 64 x 128 = 8192 weights (32768 bytes, 16384 without the cast),
 * the quantized lm_head 64000 (256000, 128000 without). Under fp16 compute the cast is a
 * no-op: 2 bytes. */
static void test_dequant_cast(void **state)
{
    (void)state;
    struct train_config c = qlora_config(STACK_LITGPT);
    struct mem_resident r;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &r);
    assert_int_equal(r.dequant, 32768);
    assert_int_equal(r.dequant_head, 256000);
    struct mem_estimate with, without;
    tiny_predict(&plan, &c, &with);
    c.features &= ~FEAT_DEQUANT_CAST;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &r);
    assert_int_equal(r.dequant, 16384);
    assert_int_equal(r.dequant_head, 128000);
    tiny_predict(&plan, &c, &without);
    /* litgpt's forward phase ends with the lm_head, whose dequantized weight (larger than a
     * block's) is gone before Fabric's fp32 logits at the loss */
    assert_int_equal(with.phase[PHASE_LOSS][TERM_ACTIVATIONS] -
                         without.phase[PHASE_LOSS][TERM_ACTIVATIONS], 0);
    assert_int_equal(with.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         without.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 128000);
    c.features |= FEAT_DEQUANT_CAST;
    c.precision = PREC_FP16;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &r);
    assert_int_equal(r.dequant, 16384);
    assert_int_equal(r.dequant_head, 128000);
}

/* HF loss on an fp32 upcast: 12 bytes per token and vocab entry: 12 x 16 x 1000. litgpt's
 * full fine-tuning (losspath.c litgpt_full_path): the fp32 logits Fabric returns, the shifted
 * reshape copy and its fp32 log_softmax: 12 x 16 x 1000; its LoRA recipes: the previous
 * step's fp32 logits, this step's 16-bit chunks and their fp32 copies: 10 x 16 x 1000. The
 * loop keeps the fp32 logits through backward (4) and validates between steps on the fp32
 * copy, the reshape copy and log_softmax beside them: 16; a run whose longest batch comes
 * first validates on shorter ones. */
static void test_logits(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 192000);
    c.features = FEAT_LOGITS_KEPT; /* + the fp32 logits the loop holds: 16 x 1000 x 4 */
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 256000);
    c.stack = STACK_LITGPT;
    c.features = FEAT_CHUNKED_CE | FEAT_EVAL_LOGITS;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 192000);
    assert_int_equal(e.phase[PHASE_BWD_LAST][TERM_LOGITS], 64000);
    assert_int_equal(e.phase[PHASE_EVAL][TERM_LOGITS], 256000);
    c.finetune = FT_LORA;
    c.lora_r = 4;
    c.lora_targets = TARGET_BIT(ROLE_Q);
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 160000);
    /* the forward's end, the lm_head: the previous step's fp32 logits and the 16-bit chunks */
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_LOGITS], 96000);
    c.features |= FEAT_LONGEST_FIRST; /* first step: 16-bit chunks + fp32 copies, then + log_softmax */
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 128000);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_LOGITS], 32000);
    assert_int_equal(e.phase[PHASE_EVAL][TERM_LOGITS], 0);
}

/* Two cuBLAS workspaces (forward and autograd threads). Off Hopper 2 x 8,519,680 bytes
 * allocated = 17,039,360; the first takes a 20 MiB segment (1 to 10 MiB requests), the second
 * is carved from its 11.875 MiB remainder: 20 MiB reserved. On Hopper 2 x 32 MiB, each its
 * own segment: 64 MiB. */
static void test_blas_workspace(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_options none = {.paper = false, .base_bytes = 1 << 20};
    struct gpu_spec a100 = {.context_bytes = 1 << 20, .cublas_ws_bytes = 8519680};
    struct gpu_spec h100 = {.context_bytes = 1 << 20, .cublas_ws_bytes = 33554432};
    struct mem_options ampere, hopper;
    mem_options_for_gpu(&a100, false, &ampere);
    mem_options_for_gpu(&h100, false, &hopper);
    struct mem_estimate e0, e1, e2;
    memmodel_predict(&plan, &c, &none, &e0);
    memmodel_predict(&plan, &c, &ampere, &e1);
    memmodel_predict(&plan, &c, &hopper, &e2);
    assert_int_equal(e1.allocated - e0.allocated, 17039360);
    assert_int_equal(e1.reserved - e0.reserved, 20 << 20);
    assert_int_equal(e2.reserved - e0.reserved, 64 << 20);
    assert_int_equal(e1.device - e0.device, 20 << 20);
}

/* Variable-length batches: the loss path's stranded segments count in the loss phase's
 * `reserved`, per micro-batch bucket (losspath.c replays a run; test_losspath checks the
 * replay by hand): over 16 tokens x 1000 entries, 16,000 x (variable - packed) bytes more
 * for micro-batch 2. What nvidia-smi shows is the reserved peak plus what lies outside the
 * allocator (here the 1 MiB base). */
static void test_variable_reserved(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate packed, variable;
    struct loss_cost lv, lpk;
    c.features |= FEAT_FLASH_ATTN; /* K and V unrepeated in both shapes (test_kv_repeat) */
    c.data = DATA_PACKED;
    tiny_predict(&plan, &c, &packed);
    c.data = DATA_VARIABLE;
    tiny_predict(&plan, &c, &variable);
    losspath_cost(LOSS_HF, LP_HALF, DATA_VARIABLE, ALLOC_DEFAULT, &lv);
    losspath_cost(LOSS_HF, LP_HALF, DATA_PACKED, ALLOC_DEFAULT, &lpk);
    assert_int_equal(losspath_batch_bucket(c.micro_batch), 1);
    assert_true(lv.reserved[1] > lpk.reserved[1]);
    assert_int_equal(variable.phase_reserved[PHASE_LOSS] - packed.phase_reserved[PHASE_LOSS],
                     (uint64_t)(16000 * lv.reserved[1]) - (uint64_t)(16000 * lpk.reserved[1]));
    assert_int_equal(variable.shown, variable.reserved + (1 << 20));
    assert_int_equal(variable.allocated, packed.allocated);
    /* a loop that empties the cache after every step replays like packed batches */
    struct mem_estimate emptied;
    c.features |= FEAT_EMPTY_CACHE;
    tiny_predict(&plan, &c, &emptied);
    assert_int_equal(emptied.reserved, packed.reserved);
}

/* The reserved pool never outgrows the GPU: with a capacity below the variable-length
 * reserved peak, `reserved` stops at the capacity (the allocator releases its free cached
 * segments when cudaMalloc fails), never below what the run cannot release. */
static void test_reserved_capacity(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.micro_batch = 16; /* 1024 tokens: the loss phase's stranded segments lead */
    c.seq_len = 64;
    struct mem_estimate free_run, capped;
    tiny_predict(&plan, &c, &free_run);
    assert_true(free_run.reserved > free_run.device - (1 << 20) + 1000);
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20,
                            .capacity_bytes = free_run.reserved - 1000};
    memmodel_predict(&plan, &c, &o, &capped);
    assert_int_equal(capped.reserved, free_run.reserved - 1000);
    assert_int_equal(capped.device, free_run.device);
    o.capacity_bytes = 1000; /* below what the run needs: the floor is the held memory */
    memmodel_predict(&plan, &c, &o, &capped);
    assert_int_equal(capped.reserved, capped.device - (1 << 20));
}

/* QLoRA r = 4 on q and v, bf16 compute, HF (adapters fp32):
 *   block Linears 73728 weights in NF4: 0.5 + 4/64 bytes each = 41472
 *   the rest (embedding, lm_head, norms) 202048 - 73728 = 128320: in fp32 under HF, whose
 *   scripts run PEFT's prepare_model_for_kbit_training, 513280; in bf16 under TRL (>= 0.26
 *   prepares nothing; 0.15 .. 0.25 cast the embedding and lm_head back under bf16), 256640
 *   adapters per block: q 4 x (64 + 64) = 512, v 4 x (64 + 32) = 384 -> 896; two blocks 1792
 *   trained in fp32: 7168 (TRL >= 0.26 casts them to bf16: 3584).  Weights: 41472 + 513280 +
 *   7168 = 561920 (TRL 0.15 .. 0.25: 305280; TRL >= 0.26: 301696).
 *   AdamW states 8 bytes per adapter weight: 14336; gradients 4 bytes: 7168.
 * At the loss (16 tokens, no checkpointing), over TRL >= 0.26, which prepares nothing:
 *   fp32 norms (HF, TRL 0.15 .. 0.25): gate, act(gate) and up in fp32, 3 x 128 x 2 more
 *   bytes a token and block, 2 x 16 x 768 = 24576;
 *   an fp32 lm_head (HF only): autocast's bf16 copy its matmul saves, 1000 x 64 x 2 = 128000;
 *   fp32 adapters (not TRL >= 0.26): q's and v's lora_A each save their own bf16 cast of the
 *   normed input, 2 x 64 x 2 bytes, where bf16 ones share the input itself, 64 x 2:
 *   2 x 16 x 128 = 4096. */
static void test_qlora_weights(void **state)
{
    (void)state;
    struct train_config c = qlora_config(STACK_HF);
    c.precision = PREC_BF16;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 561920);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_GRADS], 7168);
    /* trl, trl-0.22, trl-0.15; trl-0.15 (transformers before 4.54) keeps no mask copy per
     * block: SDPA's bf16 copy of the padded batch's mask, 2 x 16 x (8 x 2) = 512 */
    const uint64_t want[3] = {24576 + 128000 + 4096, 128000, 128000 + 512};
    const uint64_t params[3] = {301696, 305280, 305280};
    for (enum stack s = STACK_TRL; s <= STACK_TRL_015; s++) {
        struct train_config t = qlora_config(s);
        t.precision = PREC_BF16;
        struct mem_estimate te;
        tiny_predict(&plan, &t, &te);
        assert_int_equal(te.phase[PHASE_OPTIMIZER][TERM_PARAMS], params[s - STACK_TRL]);
        if (s == STACK_TRL) /* bf16 adapters: bf16 gradients and AdamW states (fused) */
            assert_true(te.phase[PHASE_OPTIMIZER][TERM_GRADS] == 3584 &&
                        te.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER] == 7168);
        assert_int_equal(e.phase[PHASE_LOSS][TERM_ACTIVATIONS] - te.phase[PHASE_LOSS][TERM_ACTIVATIONS],
                         want[s - STACK_TRL]);
    }
    /* HF Trainer's fused AdamW (torch >= 2.8) updates in place; foreach (hf-4.49) adds one
     * sqrt(exp_avg_sq) temporary per trained weight */
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 14336);
    struct train_config f = c;
    f.stack = STACK_HF_449;
    f.features = stack_features(STACK_HF_449);
    tiny_predict(&plan, &f, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 14336 + 7168);
    /* double quantization: absmax 8-bit per 64 plus fp32 per 64 x 256:
     * 73728 x (0.5 + 1/64 + 4/16384) = 36864 + 1152 + 18 = 38034 */
    c.quant = QUANT_NF4_DQ;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 38034 + 513280 + 7168);
}

/* FSDP over a bitsandbytes 4-bit base (resident.c memmodel_quant_state_bytes): the tiny
 * model's block Linears are 2 x 36864 = 73728 weights, NF4 0.5 + 4/64 bytes each. FSDP on
 * two GPUs shards the packed 4 bits and the 16-bit rest; every rank keeps the absmax whole,
 * 73728 x 4/64 = 4608, where torchao's NF4 shards its scalers too (4608 / 2): 2304 more. A
 * gathered block is its packed Linears, 36864 x 0.5, and its norms, 128 x 2 (it was counted
 * as 36992 x 2); forward holds it beside the root unit (embedding 64000 + lm_head 64000) x
 * 2: 256000 + 18688 = 274688, under torchao 256000 + 36864 x 0.5625 + 256. Offloading the
 * parameters leaves the absmax on the GPU. */
static void test_fsdp_qlora_shards(void **state)
{
    (void)state;
    struct train_config bnb = qlora_config(STACK_HF);
    bnb.method = METHOD_ADP, bnb.gpus = bnb.dp = 2, bnb.features |= FEAT_FSDP;
    struct train_config ao = bnb;
    ao.features |= FEAT_TORCHAO_NF4;
    struct mem_resident rb, ra;
    memmodel_resident(&plan, &bnb, MEM_STAGE_ALL, &rb);
    memmodel_resident(&plan, &ao, MEM_STAGE_ALL, &ra);
    assert_int_equal(rb.w - ra.w, 2304);
    assert_int_equal(rb.gather_fwd, 274688);
    assert_int_equal(ra.gather_fwd, 256000 + 20736 + 256);
    bnb.method = METHOD_OFFLOAD, bnb.offload = OFFLOAD_PARAMS;
    memmodel_resident(&plan, &bnb, MEM_STAGE_ALL, &rb);
    assert_int_equal(rb.w, 4608);
}

/* FSDP2's end units (resident.c zero3_end_units; torchtitan from 83e69410, torchtune configs
 * with custom_sharded_layers: ['tok_embeddings', 'output']), full bf16 on two GPUs: a block
 * is 36992 parameters, 73984 bytes gathered and as much gradient. The root unit (embedding
 * 64000 + lm_head 64000, x 2 = 256000; the final norm's few bytes left out, as zero3_gather
 * leaves them) stays gathered beside one block in forward, 329984, and beside two blocks and
 * a block's gradient in backward, 477952. With
 * end units forward holds the larger of the lm_head (128000) and a block, 128000; the first
 * block's backward the block, the prefetched embedding and the gradient, 275968; the last
 * block's two blocks and the gradient, 221952. */
static void test_fsdp2_end_units(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.stack = STACK_TORCHTUNE, c.features = stack_features(STACK_TORCHTUNE);
    c.method = METHOD_ADP, c.gpus = c.dp = 2;
    struct mem_resident root, ends;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &root);
    c.features |= FEAT_FSDP_END_UNITS;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &ends);
    assert_int_equal(root.gather_fwd, 329984);
    assert_int_equal(root.gather_bwd, 477952);
    assert_int_equal(root.gather_bwd_last, 477952);
    assert_int_equal(ends.gather_fwd, 128000);
    assert_int_equal(ends.gather_bwd, 275968);
    assert_int_equal(ends.gather_bwd_last, 221952);
    /* the sharded parameters are the same either way */
    assert_int_equal(root.w, ends.w);
}

/* Liger's fused linear cross-entropy (memmodel.c liger_coeffs), full bf16-pure on the tiny
 * model, micro-batch 2 x 8 = 16 tokens, V 1000, h 64: chunks of next_power_of_2(cdiv(16,
 * cdiv(1000, 64) = 16)) = 1 token; at the loss one chunk's logits 1 x 1000 x 2 = 2000, its
 * input gradient 1 x 64 x 2 = 128, and grad_input 16 x 64 x 2 = 2048: 4176 in place of the
 * hf path's N x V tensors; the lm_head's gradient (64000 x 2 = 128000) from the loss on. */
static void test_liger(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.features = FEAT_LIGER_FLCE;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 4176);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_GRADS], 128000);
    /* 4096 tokens: cdiv(4096, 16) = 256 a chunk: 256 x 1000 x 2 + 256 x 64 x 2 + 4096 x 64 x 2 */
    c.seq_len = 2048;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 512000 + 32768 + 524288);
}

/* bitsandbytes' paged optimizers (resident.c bnb_paged_states). The tiny model's tensors
 * are all below 1e5 elements, so its states stay in the caching allocator: fp32 for the
 * 32-bit optimizer, 202048 x 8 = 1616384 bytes, with no foreach temporary (one in-place
 * kernel); for the 8-bit one, uint8 except below 4096 elements (the five norms, 320, and
 * k and v, 2048 each: 8512 at 8 bytes, 193536 at 2: 455168). Nothing is outside the
 * allocator but the 1 MiB base. */
static void test_paged_small_states(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    c.data = DATA_PACKED; /* reserved = held: no stranded segments */
    c.features |= FEAT_PAGED_OPT;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 1616384);
    assert_int_equal(e.device - e.reserved, 1 << 20);
    assert_int_equal(e.shown, e.device);
    c.optimizer = OPT_ADAMW8BIT;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 455168);
}

/* Vocabulary 2000 (330048 parameters): the embedding and the lm_head, 128000 elements
 * each, have their fp32 states, 2 x 1024000 bytes, in managed memory; the other 74048
 * elements keep theirs in the allocator (592384 bytes).
 * Device counts one of the two managed ones (1024000, the step prefetches a parameter at
 * a time); nvidia-smi (shown) all while the GPU has room; with room for 1536000 only,
 * 512000 bytes go to host and back each step. */
static void test_paged_room(void **state)
{
    (void)state;
    struct model_plan big;
    assert_int_equal(llama_test_plan(&big, "tiny-v2000", (const int64_t[8]){2, 64, 4, 2, 16, 128, 2000, 128}), 0);
    struct train_config c = tiny_base_config();
    c.data = DATA_PACKED;
    c.features |= FEAT_PAGED_OPT;
    struct mem_options o = {.base_bytes = 1 << 20};
    struct mem_estimate e;
    memmodel_predict(&big, &c, &o, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 592384);
    assert_int_equal(e.device - e.reserved, (1 << 20) + 1024000);
    assert_int_equal(e.shown - e.reserved, (1 << 20) + 2048000);
    assert_int_equal(e.paged_moved, 0);
    o.capacity_bytes = e.reserved + 1536000; /* + base: the GPU's memory */
    memmodel_predict(&big, &c, &o, &e);
    assert_int_equal(e.shown - e.reserved, (1 << 20) + 1536000);
    assert_int_equal(e.paged_moved, 512000);
    assert_int_equal(e.device - e.reserved, (1 << 20) + 1024000);
    o.capacity_bytes = e.reserved; /* no room: the largest parameter's states still come in */
    memmodel_predict(&big, &c, &o, &e);
    assert_int_equal(e.shown - e.reserved, (1 << 20) + 1024000);
    assert_int_equal(e.paged_moved, 1024000);
    plan_free(&big);
}

/* ZeRO-3 over 2 GPUs halves weights, gradients and states; DDP adds a gradient bucket. */
static void test_sharding(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = 2, c.dp = 2;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 202048);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_GRADS], 202048);
    c.method = METHOD_CDP;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 2 * 202048);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_COMM], 2 * 202048); /* bucket = grads */
}

/* FSDP on 2 GPUs, bf16: the root unit (embedding 64000 + lm_head 64000) stays gathered
 * with the block being computed (36992) in forward: (128000 + 36992) x 2 bytes; backward adds
 * the prefetched block and one block's unsharded gradient: (128000 + 2 x 36992 + 36992) x 2.
 * Accumulating under no_sync keeps the whole gradient unsharded: 202048 x 2 bytes, not the
 * 202048 / 2 x 2 of a shard; the optimizer step sees the shard again. */
static void test_fsdp_units(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = 2, c.dp = 2, c.features = FEAT_FSDP;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_COMM], 329984);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_COMM], 477952);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_GRADS], 0);
    c.features |= FEAT_GRAD_ACCUM;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_GRADS], 404096);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_GRADS], 404096);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_GRADS], 202048);
    c.features = FEAT_GRAD_ACCUM; /* ZeRO-3 without FSDP reduces every micro-batch */
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_GRADS], 202048);
}

/* FSDP1's root unit, full bf16 on 2 GPUs (resident.c root_grads): the root is the
 * embedding 64000 + the lm_head 64000 (untied). Its lm_head gradient piece (64000 x 2) is
 * held through backward; after the first block the embedding's piece (64000 x 2) and their
 * concatenation (128000 x 2) join it, beside the gathered root (128000 x 2). Without
 * accumulation the gradients are the 1/2 shards (202048 x 2 / 2) less the root's own
 * (128000 x 2 / 2), which its post-backward hook makes only after the concatenation: in
 * both backward phases. FSDP2 (no flat parameter) has no such phase. */
static void test_fsdp1_root_grads(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = 2, c.dp = 2, c.features = FEAT_FSDP;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase_reserved[PHASE_BWD_END], 0);
    const uint64_t first = e.phase[PHASE_BWD_FIRST][TERM_GRADS];
    c.features |= FEAT_FSDP_FLAT;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_GRADS], first + 64000 * 2 - 128000);
    assert_int_equal(e.phase[PHASE_BWD_END][TERM_GRADS], 202048 - 128000 + (64000 + 64000 + 128000) * 2);
    assert_int_equal(e.phase[PHASE_BWD_END][TERM_COMM], 128000 * 2);
    assert_int_equal(e.phase[PHASE_BWD_END][TERM_ACTIVATIONS], 0);
    /* under no_sync the accumulated whole gradient (202048 x 2) is there too, and the held
     * piece sits beside it at the last block */
    c.features |= FEAT_GRAD_ACCUM;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_BWD_LAST][TERM_GRADS], 404096 + 64000 * 2);
    assert_int_equal(e.phase[PHASE_BWD_END][TERM_GRADS], 404096 + 256000 * 2);
    /* LoRA: the root is frozen */
    c.finetune = FT_LORA, c.lora_r = 4, c.lora_targets = TARGETS_ATTN;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase_reserved[PHASE_BWD_END], 0);
}

/* litgpt's FSDP Block units mix frozen weights with the adapters (memmodel.c
 * mixed_unit_grads): the flat parameter's gradient is the whole block. LoRA r 4 on q, k, v, o,
 * bf16, 2 GPUs: the frozen blocks' gradient shard is 2 layers x 36992 x 2 bytes / 2 = 73984,
 * beside the adapters' trained x 2 / 2; no_sync keeps both unsharded (x 2). In the longest
 * batch's first step none exists before backward, the last block's one (1/2 of the sum) at
 * its first block-backward, and the whole block's new gradient (36992 x 2) is no longer a
 * transient beside the sum (AccumulateGrad keeps it as .grad). The hf stack has no such units. */
static void test_litgpt_mixed_units(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = 2, c.dp = 2, c.stack = STACK_LITGPT;
    c.features = FEAT_FSDP | FEAT_GRAD_ACCUM;
    c.finetune = FT_LORA, c.lora_r = 4, c.lora_targets = TARGETS_ATTN;
    struct mem_resident r;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &r);
    assert_int_equal(r.g_frozen, 73984);
    const uint64_t adapters = (uint64_t)(r.trained * 2.0 / 2.0);
    assert_int_equal(r.g, 73984 + adapters);
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_GRADS], 2 * r.g);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_GRADS], 2 * r.g);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_GRADS], r.g);
    const uint64_t comm = e.phase[PHASE_BWD_FIRST][TERM_COMM];
    c.features |= FEAT_LONGEST_FIRST;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_GRADS], 0);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_GRADS], 0);
    assert_int_equal(e.phase[PHASE_BWD_LAST][TERM_GRADS], 2 * r.g / 2);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_GRADS], 2 * r.g);
    assert_int_equal(comm - e.phase[PHASE_BWD_FIRST][TERM_COMM], 36992 * 2);
    c.stack = STACK_HF;
    memmodel_resident(&plan, &c, MEM_STAGE_ALL, &r);
    assert_int_equal(r.g_frozen, 0);
    assert_int_equal(r.g, adapters);
}

/* The floor, by hand: full bf16 AdamW holds 202048 x (2 + 2 + 4) bytes at the optimizer
 * step. At the end of forward, weights and states (202048 x 6) plus, per token and block,
 * the block input (2 x 64) and without checkpointing gate and up (2 x 2 x 128). */
static void test_floor(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    enum mem_phase at;
    assert_int_equal(memmodel_floor(&plan, &c, true, false, &at), 1616384);
    assert_int_equal(at, PHASE_OPTIMIZER);
    c.micro_batch = 64, c.seq_len = 128; /* 8192 tokens */
    assert_int_equal(memmodel_floor(&plan, &c, true, false, &at), 1212288 + 8192 * 640 * 2);
    assert_int_equal(at, PHASE_FORWARD);
    c.grad_ckpt = true;
    assert_int_equal(memmodel_floor(&plan, &c, true, false, &at), 1212288 + 8192 * 128 * 2);
    assert_int_equal(memmodel_floor(&plan, &c, false, false, &at), 1616384); /* length only a cap */
    /* a local peak before any gradient (Salisbury's C): weights and states only (202048 x 6) */
    assert_int_equal(memmodel_floor(&plan, &c, false, true, &at), 1212288);
    assert_int_equal(at, PHASE_FORWARD);
}

/* The floor is a lower bound of the model's own prediction, for every knob. */
static void test_floor_below_prediction(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    for (int m = 0; m < METHOD_COUNT; m++)
        for (int ft = 0; ft < FT_COUNT; ft++)
            for (int pr = 0; pr < PREC_COUNT; pr++)
                for (int ck = 0; ck < 2; ck++)
                    for (int32_t b = 1; b <= 64; b *= 4) {
                        c.method = (enum method)m, c.finetune = (enum finetune)ft;
                        c.precision = (enum precision)pr, c.grad_ckpt = ck, c.micro_batch = b;
                        c.gpus = m == METHOD_SINGLE ? 1 : 2;
                        c.tp = m == METHOD_TP ? 2 : 1, c.dp = c.gpus / c.tp;
                        c.pp = m == METHOD_PP ? 2 : 1, c.dp /= c.pp, c.microbatches = 8;
                        c.offload = m == METHOD_OFFLOAD ? OFFLOAD_OPTIMIZER : OFFLOAD_NONE;
                        c.quant = ft == FT_QLORA ? QUANT_NF4 : QUANT_NONE;
                        c.lora_r = ft == FT_FULL ? 0 : 8;
                        c.lora_targets = ft == FT_FULL ? 0 : TARGETS_ALL;
                        c.features = m == METHOD_ADP ? FEAT_FSDP : 0;
                        struct mem_estimate e;
                        enum mem_phase at;
                        tiny_predict(&plan, &c, &e);
                        assert_true(memmodel_floor(&plan, &c, true, false, &at) <= e.allocated);
                    }
}

/* TP 2, bf16-pure full (P = 202048, of which 320 norm elements and the 64000-element
 * embedding): the stacks that split the embedding over the TP group (torchtitan:
 * RowwiseParallel tok_embeddings) hold (P - 320) / 2 + 320 = 101184 elements a rank; HF's
 * tp_plan leaves embed_tokens whole (train.h train_embed_tp), (P - 320 - 64000) / 2 + 64000
 * + 320 = 133184, the untied lm_head split either way. Weights, gradients and both states
 * follow it, 2 bytes an element each. */
static void test_tp_embedding(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_TP, c.gpus = c.tp = 2, c.features |= FEAT_FUSED_OPT;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 2 * 133184);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_GRADS], 2 * 133184);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 4 * 133184);
    c.stack = STACK_TORCHTITAN, c.features = FEAT_FUSED_OPT;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 2 * 101184);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 4 * 101184);
}

/* Checkpointing under autocast (bf16 mixed, full, HF): the loss's forward runs while
 * autocast's cache holds every block's 16-bit weight casts, 73728 x 2 = 147456 bytes, of
 * which the model counts one block's, 36864 x 2 = 73728, among the activations (the
 * lm_head's, 64000 x 2, is amp_head, alive either way). 2 x 8 tokens x 1000 entries: the
 * hf path's forward part peaks at 10 bytes an entry (160000), its backward at 12 (192000);
 * 160000 + 73728 = 233728 is the loss phase's logits term. Without checkpointing every
 * cast is saved for backward anyway: 192000. */
static void test_amp_cache_checkpointing(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.precision = PREC_BF16, c.grad_ckpt = true;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 233728);
    c.grad_ckpt = false;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 192000);
}

/* DeepSpeed ZeRO-1 / ZeRO-2, bf16 mixed, full, foreach AdamW on 4 GPUs (P = 202048), at the
 * optimizer step: the bf16 module 2P whole; gradients in bf16, whole (stage 1, 2P) or the
 * rank's partition (stage 2, 2P/4); the fp32 master and two states 12P/4, the fp32 copy
 * of the gradient partition and foreach's sqrt temporary 4P/4 each: 5P; two ipg buffers
 * (overlap_comm) of hidden x hidden bf16 elements. No autocast copies: the module is already bf16. */
static void test_zero12(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ZERO1, c.gpus = c.dp = 4, c.precision = PREC_BF16;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    const uint64_t *ph = e.phase[PHASE_OPTIMIZER];
    assert_int_equal(ph[TERM_PARAMS], 2 * 202048);
    assert_int_equal(ph[TERM_GRADS], 2 * 202048);
    assert_int_equal(ph[TERM_OPTIMIZER], 5 * 202048);
    assert_int_equal(ph[TERM_COMM], 2 * 64 * 64 * 2);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS] > 0, 1);
    assert_int_equal(e.host, 0);
    c.method = METHOD_ZERO2;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_GRADS], 2 * 202048 / 4);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_OPTIMIZER], 5 * 202048);
}

/* ZeRO-3 offload on 4 GPUs, bf16 mixed, full: the GPU keeps its bf16 partition (2P/4) and
 * no optimizer state or gradient partition; the host keeps the fp32 master, two states
 * and the fp32 gradient partition, 16P/4 = 4P a GPU; --offload params moves the bf16
 * partition there too. */
static void test_offload(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_OFFLOAD, c.offload = OFFLOAD_OPTIMIZER, c.gpus = c.dp = 4;
    c.precision = PREC_BF16, c.features = FEAT_FSDP;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    const uint64_t *ph = e.phase[PHASE_OPTIMIZER];
    assert_int_equal(ph[TERM_PARAMS], 2 * 202048 / 4);
    assert_int_equal(ph[TERM_GRADS], 0);
    assert_int_equal(ph[TERM_OPTIMIZER], 0);
    assert_int_equal(e.host, 4 * 202048);
    c.offload = OFFLOAD_PARAMS;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_PARAMS], 0);
    assert_int_equal(e.host, 4 * 202048 + 2 * 202048 / 4);
}

/* The peak is the maximum over phases, and device = reserved + base (+ NCCL on 2+ GPUs). */
static void test_peak_is_max_phase(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    for (int ph = 0; ph < PHASE_COUNT; ph++)
        assert_true(e.phase_reserved[ph] <= e.reserved);
    assert_int_equal(e.reserved, e.phase_reserved[e.peak_phase]);
    assert_int_equal(e.device, e.reserved + (1 << 20));
    assert_true(e.allocated <= e.reserved);
}

/* Memory never shrinks as the micro-batch grows (what pruning relies on). */
static void test_monotone(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    uint64_t last = 0;
    for (int32_t b = 1; b <= 64; b *= 2) {
        struct mem_estimate e;
        c.micro_batch = b;
        tiny_predict(&plan, &c, &e);
        assert_true(e.device >= last); /* non-decreasing: allocator rounding can tie */
        last = e.device;
    }
}

/* Float8 all-gather, FSDP on 2 GPUs: a gathered block is its Linears in e4m3 (36864 x 1)
 * and its norms in bf16 (128 x 2) = 37120, beside the bf16 root (128000 x 2): 293120 in
 * forward (bf16: 329984); backward two blocks and one block's fp32 unsharded gradient
 * (36992 x 4): 256000 + 74240 + 147968 = 478208. The saved weight is a view of the
 * gathered one: no casts kept; the repeated K and V as in test_fp8_activations (4096). */
static void test_fp8_allgather(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = 2, c.dp = 2, c.precision = PREC_FP8;
    c.features = FEAT_FSDP | FEAT_FSDP_MP | FEAT_FP8_ALLGATHER;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_COMM], 293120);
    assert_int_equal(e.phase[PHASE_BWD_FIRST][TERM_COMM], 478208);
    /* + SDPA's bf16 copy of the padded batch's mask, 2 blocks x 16 tokens x 16 */
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 2 * 2448 * 16 + 512 * 16 + 4096 + 512);
}

/* Selective checkpointing (torchtitan), eager: the policy keeps per block and token the
 * block input (128), the attention output (128) and logsumexp (16), the 1st/3rd/5th/7th
 * matmul outputs (q 64, v 32, gate 128, down 64: 2 x 288 = 576): 848, and under fp8 the
 * aten.abs outputs of each Linear's input cast (2 x 512 = 1024): 1872; and abs(weight) of
 * every block Linear in bf16 (73728 x 2). 2 x 1872 x 16 + 512 x 16 + 147456 = 215552.
 * Compiled, only what backward reads is saved: 2 x 848 x 16 + (128 + 128) x 16 = 31232. */
static void test_fp8_selective(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.precision = PREC_FP8, c.stack = STACK_TORCHTITAN, c.features = FEAT_FSDP_MP;
    c.ckpt_selective = true;
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 215552);
    c.features |= FEAT_COMPILE;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 31232);
}

/* memmodel_peak, the sweep's peak-only path, gives memmodel_eval's device bytes on both of
 * its sides: plain arithmetic up to t_plain tokens a micro-batch, the saturating full
 * evaluation beyond (a micro-batch x sequence whose logits pass 2^62 bytes). */
static void test_peak_paths(void **state)
{
    (void)state;
    const struct mem_options o = {.paper = false, .base_bytes = 1 << 20, .ws_res = 20 << 20};
    const int32_t batches[] = {1, 2, 7, 64, 1 << 30};
    const int32_t seqs[] = {8, 4096, 1 << 30};
    bool plain = false, saturated = false;
    for (int v = 0; v < 2; v++) {
        struct train_config c = tiny_base_config();
        c.grad_ckpt = v;
        struct mem_prepared mp;
        memmodel_prepare(&plan, &c, &o, &mp);
        for (size_t si = 0; si < sizeof seqs / sizeof *seqs; si++) {
            struct mem_seq ms;
            memmodel_seq(&mp, seqs[si], &ms);
            for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
                struct mem_estimate e;
                c.seq_len = seqs[si], c.micro_batch = batches[bi];
                memmodel_eval(&plan, &c, &o, &mp, &e);
                assert_int_equal(memmodel_peak(&plan, &c, &o, &mp, &ms), e.device);
                const uint64_t t = (uint64_t)c.micro_batch * (uint64_t)c.seq_len;
                plain |= t <= ms.t_plain;
                saturated |= t > ms.t_plain && e.device == BYTES_SAT;
            }
        }
    }
    assert_true(plain && saturated);
}

/* A loop that empties the cache every 10 steps (feature empty-cache-10, PEFT MetaMathQA):
 * reserved is the whole-step replay's (stepreplay.c) when it exceeds the phases' rounded
 * sums; full bf16-pure AdamW keeps nothing the replay leaves out (its weights, gradients
 * and states are the replay's resident bytes; no cuBLAS workspace in these options), so
 * reserved is the larger of the two, and here the replay leads: on the tiny model the
 * small pool's 2 MiB segments stay split between steps, on a model of hidden 1024 (MLP
 * 4096, vocabulary 32000, 4 blocks, 4 x 512 tokens) the activations' segments cannot hold
 * the gradients and sqrt temporaries. Allocated and device do not change. */
static void check_replay(const struct model_plan *pl, struct train_config c, bool replay_leads)
{
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_estimate plain, replayed;
    c.data = DATA_PACKED; /* what empty-cache makes of the loss path's data (losspath.c) */
    memmodel_predict(pl, &c, &o, &plain);
    c.features |= FEAT_EMPTY_CACHE | FEAT_EMPTY_CACHE_10;
    memmodel_predict(pl, &c, &o, &replayed);
    const struct model_spec *m = &pl->spec;
    const struct stepreplay_shape sh = {
        .params = &pl->tensors, .h = (uint64_t)m->hidden, .hq = (uint64_t)(m->heads * m->head_dim),
        .hkv = (uint64_t)(m->kv_heads * m->head_dim), .inter = (uint64_t)m->intermediate,
        .vocab = (uint64_t)m->vocab, .heads = (uint64_t)m->heads, .layers = (int32_t)m->layers,
        .ew = 2, .full = true, .kv_repeat = false, /* packed: no padding mask, no repeat */
        .loss = LOSS_HF, .loss_class = losspath_class(c.precision), .kept = false,
    };
    struct stepreplay_result r;
    assert_int_equal(stepreplay_run(&sh, c.micro_batch, c.seq_len, 10, &r), 0);
    assert_int_equal(r.reserved > plain.reserved, replay_leads);
    assert_int_equal(replayed.reserved, r.reserved > plain.reserved ? r.reserved : plain.reserved);
    assert_int_equal(replayed.allocated, plain.allocated);
    assert_int_equal(replayed.device, plain.device);
}

static void test_empty_cache_replay(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.micro_batch = 4, c.seq_len = 32;
    check_replay(&plan, c, true);
    struct model_plan medium;
    const int64_t dims[8] = {4, 1024, 8, 2, 128, 4096, 32000, 4096};
    assert_int_equal(llama_test_plan(&medium, "medium", dims), 0);
    c.seq_len = 512;
    check_replay(&medium, c, true);
    plan_free(&medium);
}

/* DeepSpeed ZeRO-3 from an accelerate config (feature ds-default-buckets): the contiguous
 * gradient bucket of DeepSpeed's default reduce_bucket_size, 5e8 elements in the 16-bit
 * module dtype, 1e9 bytes, in every phase's communication buffers, whatever the model. */
static void test_ds_default_bucket(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = 2, c.dp = 2, c.precision = PREC_BF16;
    c.finetune = FT_LORA, c.lora_r = 4, c.lora_targets = TARGETS_ALL;
    struct mem_estimate plain, ds;
    tiny_predict(&plan, &c, &plain);
    c.features |= FEAT_DS_DEFAULT_BUCKETS;
    tiny_predict(&plan, &c, &ds);
    for (int ph = 0; ph < PHASE_OPTIMIZER + 1; ph++)
        assert_int_equal(ds.phase[ph][TERM_COMM] - plain.phase[ph][TERM_COMM], UINT64_C(1000000000));
    assert_int_equal(ds.allocated - plain.allocated, UINT64_C(1000000000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_count),
        cmocka_unit_test(test_optimizer_step_full_bf16),
        cmocka_unit_test(test_dequant_cast),
        cmocka_unit_test(test_logits),
        cmocka_unit_test(test_blas_workspace),
        cmocka_unit_test(test_variable_reserved), cmocka_unit_test(test_fsdp_mixed_precision), cmocka_unit_test(test_reserved_capacity),
        cmocka_unit_test(test_qlora_weights),
        cmocka_unit_test(test_fsdp_qlora_shards),
        cmocka_unit_test(test_fsdp2_end_units),
        cmocka_unit_test(test_liger),
        cmocka_unit_test(test_paged_small_states),
        cmocka_unit_test(test_paged_room),
        cmocka_unit_test(test_sharding),
        cmocka_unit_test(test_fsdp_units),
        cmocka_unit_test(test_fsdp1_root_grads),
        cmocka_unit_test(test_litgpt_mixed_units),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_floor_below_prediction),
        cmocka_unit_test(test_peak_is_max_phase),
        cmocka_unit_test(test_monotone),
        cmocka_unit_test(test_zero12),
        cmocka_unit_test(test_offload),
        cmocka_unit_test(test_empty_cache_replay),
        cmocka_unit_test(test_ds_default_bucket),
        cmocka_unit_test(test_fp8_allgather),
        cmocka_unit_test(test_fp8_selective),
        cmocka_unit_test(test_peak_paths),
        cmocka_unit_test(test_tp_embedding),
        cmocka_unit_test(test_amp_cache_checkpointing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
