/* test_activations.c: what one block saves for backward per token (activations.c), through
 * the timeline model's phases, on the tiny model (tiny_model.h; its parameters are worked out
 * in test_memmodel.c: h 64, q 64, kv 32, i 128, 4 heads of 16, 2 blocks, vocab 1000). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "activations.h"
#include "fixtures.h"
#include "resident.h"
#include "tiny_model.h"

TINY_PLAN_FIXTURE

/* Activations of one block per token, full bf16-pure, SDPA (e_a = e_r = 2):
 *   norms 2 x (4h fp32 upcast + 2h trained-weight output)        = 2 x 384 = 768
 *   Linear inputs 2 x (2h + i) = 2 x (128 + 128); o's input is a
 *   view of the output SDPA saves (o_input_own)                    = 512
 *   SDPA 2 x (2q + 2kv) + 4 x heads = 2 x (128 + 64) + 16          = 400
 *   gated MLP 3 x 2 x i                                            = 768
 *   -> 2448 per token and block.  Tail: final norm 384 + lm_head input 128 = 512.
 * b = 2, s = 8 -> t = 16; forward without checkpointing: 2 x 2448 x 16 + 512 x 16 = 86528. */
static void test_forward_activations(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    tiny_predict(&plan, &c, &e);
    /* 86528 with K and V at their kv width; HF repeats them to the 4 query heads in a
     * padded batch of 2 (test_kv_repeat): + 2 x (32 + 32) = 128 per block and token, 4096;
     * and SDPA keeps each block's bf16 copy of the batch's bool mask (activations.c
     * act_sdpa_mask): (2, 1, 8, 8) x 2 bytes, s x 2 = 16 per block and token, 512 */
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 86528 + 4096 + 512);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_GRADS], 0); /* set_to_none between steps */
    /* checkpointing keeps one boundary (e_r h = 128 bytes) per block and token:
     * 2 x 128 x 16 + 512 x 16 = 12288 */
    c.grad_ckpt = true;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 12288);
}

/* Eager attention keeps q and the expanded k, v (3 x 2 x 64 = 384) instead of SDPA's 528
 * (q, K and V repeated to the query heads in HF's padded batch, output: 4 x 2 x 64, + 16
 * logsumexp), plus fp32 softmax and 16-bit probabilities per head and key: 4 x 6 x s = 192
 * per token at s = 8. Per block and token +48; over 2 blocks and 16 tokens +1536, less
 * SDPA's copy of the padded batch's mask (16 per block and token: 512), which eager
 * attention adds without keeping; and o's input is eager's own transposed copy (2 x 64 a
 * block and token, +4096), where under SDPA it is a view of SDPA's saved output. */
static void test_eager_attention(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate sdpa, eager;
    tiny_predict(&plan, &c, &sdpa);
    c.features |= FEAT_EAGER_ATTN;
    tiny_predict(&plan, &c, &eager);
    assert_int_equal(eager.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         sdpa.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 1536 - 512 + 4096);
}

/* Softcapped attention (Gemma 2): tanh keeps its output, one more scores-sized tensor in
 * the compute dtype: 4 heads x 2 bytes x s = 64 per token at s = 8, over 2 blocks and 16
 * tokens +2048 beside eager attention's +1536 (and o's own input, +4096). litgpt cannot use SDPA for it
 * (FEAT_SOFTCAP_EAGER), so its stack is eager on such a model without being asked; a
 * model without softcapping stays on SDPA there. */
static void test_softcap_attention(void **state)
{
    (void)state;
    struct model_plan cap;
    struct model_spec m = plan.spec;
    m.attn_softcap = true;
    assert_int_equal(plan_init(&cap, &m), 0);
    struct train_config c = tiny_base_config();
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_estimate sdpa, eager, lit, lit_off, plain;
    memmodel_predict(&cap, &c, &o, &sdpa);
    c.features |= FEAT_EAGER_ATTN;
    memmodel_predict(&cap, &c, &o, &eager);
    assert_int_equal(eager.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         sdpa.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 1536 + 2048 - 512 + 4096);
    c = tiny_base_config();
    c.stack = STACK_LITGPT;
    c.features = stack_features(STACK_LITGPT);
    memmodel_predict(&cap, &c, &o, &lit);
    assert_true(act_eager_attn(&cap.spec, &c));
    assert_false(act_eager_attn(&plan.spec, &c));
    memmodel_predict(&plan, &c, &o, &plain);
    c.features &= ~FEAT_SOFTCAP_EAGER;
    memmodel_predict(&cap, &c, &o, &lit_off);
    assert_int_equal(lit.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         lit_off.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 1536 + 2048 + 4096);
    assert_int_equal(plain.phase[PHASE_FORWARD][TERM_ACTIVATIONS],
                     lit_off.phase[PHASE_FORWARD][TERM_ACTIVATIONS]);
    plan_free(&cap);
}

/* 4-bit blocks on fp32 normed inputs under autocast (activations.c act_fp32_norms): QLoRA
 * on q and v, bf16 mixed. bitsandbytes' Linear4bit returns .to(inp_dtype), so under an fp32
 * norm gate, act(gate) and up are saved in fp32: 3 x 4 x 128 = 1536 a token and block
 * (768 in bf16), the residual stream (e_r) is fp32, and backward's MLP input gradients are
 * 2 x 4 x 128. The fp32 norm is PEFT's prepare_model_for_kbit_training (the hf default), or
 * any LayerNorm under autocast (layer_norm is on its float32 list), prepared or not; TRL
 * >= 0.26 (stack trl) leaves an RMSNorm model in bf16. */
static void test_kbit_fp32_norms(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.finetune = FT_QLORA, c.quant = QUANT_NF4, c.lora_r = 4, c.precision = PREC_BF16;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    c.features = stack_features(STACK_HF);
    struct mem_act_tok a;
    act_block_tok(&plan, &c, &a);
    assert_true(a.mlp == 1536 && a.er == 4 && a.em == 4);
    c.stack = STACK_TRL, c.features = stack_features(STACK_TRL);
    act_block_tok(&plan, &c, &a);
    assert_true(a.mlp == 768 && a.er == 2 && a.em == 2);
    struct model_plan ln;
    struct model_spec m = plan.spec;
    m.norm = NORM_LAYERNORM;
    assert_int_equal(plan_init(&ln, &m), 0);
    act_block_tok(&ln, &c, &a);
    assert_true(a.mlp == 1536 && a.er == 4);
    c.precision = PREC_BF16_PURE; /* no autocast: the LayerNorm's output keeps its dtype */
    act_block_tok(&ln, &c, &a);
    assert_true(a.mlp == 768 && a.er == 2);
    plan_free(&ln);
}

/* lora_A's input under PEFT (activations.c lora_own_input), LoRA r 4 on q and v of the tiny
 * model, no dropout, per token and block: the r-wide lora_A outputs 2 x 4 x 2 = 16, and
 *   bf16 mixed, fp32 adapters: each module's autocast cast of its fp32 copy, 2 x (2 x 64) = 256;
 *   bf16-pure, fp32 adapters: each module keeps its fp32 copy, 2 x (4 x 64) = 512;
 *   4-bit base under autocast, not prepared: PEFT's bnb layer does not cast, lora_A reads the
 *   16-bit normed input itself, shared by q and v: 2 x 64 = 128. */
static void test_lora_input_casts(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.finetune = FT_LORA, c.lora_r = 4, c.precision = PREC_BF16;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    c.features = stack_features(STACK_HF);
    struct mem_act_tok a;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lora, 16 + 256);
    c.precision = PREC_BF16_PURE;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lora, 16 + 512);
    c.precision = PREC_BF16, c.finetune = FT_QLORA, c.quant = QUANT_NF4;
    c.features &= ~(FEAT_KBIT_PREP | FEAT_KBIT_TRL);
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lora, 16 + 128);
}

/* Grouped-query attention: q 64 (4 heads), K and V 32 each (2 KV heads). litgpt,
 * torchtune and torchtitan repeat K and V to the query heads before SDPA, which saves the
 * copies: + 2 x ((64 - 32) + (64 - 32)) = 128 per block and token, over 2 blocks and 16
 * tokens 4096 beside K and V at their width (flash-attn). HF repeats them only when a mask
 * is needed: variable lengths with more than one sample in the micro-batch; at micro-batch
 * 1 or with packed batches SDPA's enable_gqa takes them as they are. The per-point term
 * and act_block_tok agree. With them, in the same batches, SDPA keeps each block's bf16 copy
 * of the mask (act_sdpa_mask: 2 x 16 x 16 = 512), which flash-attn does not take. */
static void test_kv_repeat(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate hf2, flash2, pk2, hf1, flash1, tt2, tt1;
    struct mem_act_tok a;
    tiny_predict(&plan, &c, &hf2);
    act_block_tok(&plan, &c, &a);
    assert_true(a.kv_rep_on);
    assert_int_equal(a.kv_rep, 128);
    c.features |= FEAT_FLASH_ATTN;
    tiny_predict(&plan, &c, &flash2);
    assert_int_equal(hf2.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         flash2.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 4096 + 512);
    assert_true(a.mask_on && a.mask_s == 2);
    c = tiny_base_config();
    c.data = DATA_PACKED;
    tiny_predict(&plan, &c, &pk2);
    assert_int_equal(pk2.phase[PHASE_FORWARD][TERM_ACTIVATIONS],
                     flash2.phase[PHASE_FORWARD][TERM_ACTIVATIONS]);
    c = tiny_base_config();
    c.micro_batch = 1;
    tiny_predict(&plan, &c, &hf1);
    act_block_tok(&plan, &c, &a);
    assert_false(a.kv_rep_on);
    c.features |= FEAT_FLASH_ATTN;
    tiny_predict(&plan, &c, &flash1);
    assert_int_equal(hf1.phase[PHASE_FORWARD][TERM_ACTIVATIONS],
                     flash1.phase[PHASE_FORWARD][TERM_ACTIVATIONS]);
    /* prepared once at micro-batch 1, evaluated at 2: the per-point term follows */
    struct mem_options o = {.paper = false, .base_bytes = 1 << 20};
    struct mem_prepared mp;
    c = tiny_base_config();
    c.micro_batch = 1;
    memmodel_prepare(&plan, &c, &o, &mp);
    c.micro_batch = 2;
    memmodel_eval(&plan, &c, &o, &mp, &tt2);
    assert_int_equal(tt2.phase[PHASE_FORWARD][TERM_ACTIVATIONS],
                     hf2.phase[PHASE_FORWARD][TERM_ACTIVATIONS]);
    /* torchtune repeats at any micro-batch */
    c = tiny_base_config();
    c.stack = STACK_TORCHTUNE;
    c.features = stack_features(STACK_TORCHTUNE);
    c.micro_batch = 1;
    tiny_predict(&plan, &c, &tt1);
    c.features |= FEAT_FLASH_ATTN;
    tiny_predict(&plan, &c, &flash1);
    assert_int_equal(tt1.phase[PHASE_FORWARD][TERM_ACTIVATIONS] -
                         flash1.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 2048);
    /* torch.compile's partitioner recomputes the repeat in backward */
    c.features = stack_features(STACK_TORCHTUNE) | FEAT_COMPILE;
    act_block_tok(&plan, &c, &a);
    assert_false(a.kv_rep_on);
    assert_int_equal(a.kv_rep, 0);
}

/* What a LoRA block keeps of its Linears' inputs (activations.c linear_inputs, lora_tok),
 * tiny model, bf16, r 4 on q and v, no dropout, adapters in the base dtype: the frozen
 * Linears keep nothing; the q adapter's lora_A keeps the attention input (64 x 2 = 128), the
 * v adapter reads the same tensor; each keeps its r-wide lora_A output (4 x 2 x 2 = 16).
 * Under a bitsandbytes base every MatMul4Bit keeps its input: the attention input and the
 * MLP input (64 each), down's input (128), o's input being SDPA's saved output: 256 x 2 =
 * 512, and the adapters' inputs are those (bitsandbytes before 0.43.2, bnb-input-kept). From
 * 0.43.2 MatMul4Bit keeps nothing: the adapters keep their input, as LoRA's 144. */
static void test_lora_linear_inputs(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_act_tok a;
    c.stack = STACK_TORCHTUNE;
    c.finetune = FT_LORA;
    c.lora_r = 4;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lin_in, 0);
    assert_int_equal(a.lora, 144);
    c.finetune = FT_QLORA;
    c.quant = QUANT_NF4;
    c.features = FEAT_BNB_INPUT_KEPT;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lin_in, 512);
    assert_int_equal(a.lora, 16);
    c.features = 0;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lin_in, 0);
    assert_int_equal(a.lora, 144);
    c.quant = QUANT_INT8; /* MatMul8bitLt keeps (CAt, subA, A) in every version */
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lin_in, 512);
}

/* bitsandbytes' MatMul4Bit inputs a litgpt step keeps (act_bnb_held_tok), tiny model (2
 * blocks, hidden 64, attention output 4 x 16, intermediate 128), bf16: each block's
 * attention input 64, MLP input 64, o's input 64, down's input 128 = 320 elements, x 2
 * blocks, less block 0's attention input (64), plus the quantized lm_head's input (64):
 * 640 elements, 1280 bytes per token. The graph is the previous step's through the forward
 * and the loss; this step's at the optimizer step (16 tokens: 20480 bytes). */
static void test_bnb_held(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    c.stack = STACK_LITGPT;
    c.finetune = FT_QLORA;
    c.quant = QUANT_NF4;
    c.lora_r = 4;
    c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    c.features = FEAT_QUANT_HEAD | FEAT_BNB_INPUT_KEPT; /* litgpt pins bitsandbytes 0.42 */
    assert_int_equal(act_bnb_held_tok(&plan, &c), 1280);
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_OPTIMIZER][TERM_ACTIVATIONS], 20480);
    c.features = FEAT_BNB_INPUT_KEPT; /* a 16-bit lm_head */
    assert_int_equal(act_bnb_held_tok(&plan, &c), 1152);
    c.features = FEAT_TORCHAO_NF4 | FEAT_BNB_INPUT_KEPT; /* linear_nf4 keeps nothing in ctx */
    assert_int_equal(act_bnb_held_tok(&plan, &c), 0);
    c.features = FEAT_QUANT_HEAD; /* bitsandbytes >= 0.43.2: (None, B) */
    assert_int_equal(act_bnb_held_tok(&plan, &c), 0);
    c.features = FEAT_QUANT_HEAD | FEAT_BNB_INPUT_KEPT;
    c.stack = STACK_HF; /* the trainer drops the graph after backward */
    assert_int_equal(act_bnb_held_tok(&plan, &c), 0);
}

/* Sequence parallelism (torchtitan's TP plan) on 2 TP ranks, bf16-pure, full, checkpointed,
 * b = 2, s = 8 (t = 16). Without it every rank keeps the whole block boundaries (2 x 64 =
 * 128 bytes per block and token: 2 x 128 x 16 = 4096) and the tail (final norm 4h + 2h =
 * 384, lm_head input 128: 512 x 16 = 8192): 12288, and 12 x 16 x 1000 = 192000 bytes of
 * logits. With it the boundaries are sharded over the sequence (64: 2048), so is the
 * final norm (192), the lm_head input is gathered (128): 320 x 16 = 5120, 7168 in all;
 * the loss is vocab-parallel: 12 x 16 x 500 = 96000. The floor's block inputs halve: at
 * 8192 tokens (where the end of forward binds) 8192 x (128 - 64) x 2 blocks = 1048576 less. */
static void test_sequence_parallel(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    c.method = METHOD_TP, c.gpus = c.tp = 2, c.grad_ckpt = true;
    struct mem_estimate e;
    enum mem_phase at;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 12288);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 192000);
    struct train_config big = c;
    big.micro_batch = 64, big.seq_len = 128;
    const uint64_t floor_tp = memmodel_floor(&plan, &big, true, false, &at);
    c.features |= FEAT_SEQ_PARALLEL, big.features |= FEAT_SEQ_PARALLEL;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 7168);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 96000);
    assert_int_equal(floor_tp - memmodel_floor(&plan, &big, true, false, &at), 1048576);
    assert_int_equal(at, PHASE_FORWARD);
    assert_true(stack_features(STACK_TORCHTITAN) & FEAT_SEQ_PARALLEL);
    /* torchtitan's loss_parallel path on the vocab shard: 16 bytes per token and entry
     * (losspath.c loss_parallel_path): 16 x 16 x 500 */
    c.stack = STACK_TORCHTITAN;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_LOSS][TERM_LOGITS], 128000);
    c.stack = STACK_HF;
    /* one TP rank: nothing to shard */
    c.method = METHOD_SINGLE, c.gpus = c.tp = 1;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 12288);
}

/* --precision fp8 (torchao Float8Linear on the block Linears), FSDP2 mixed precision
 * (e_a = e_r = 2), no checkpointing. Tensorwise: each Linear saves its own e4m3 input
 * (h x (3 q/k/v + 2 gate/up) + q into o + i into down = 320 + 64 + 128 = 512 a token,
 * instead of bf16's 640), so a block keeps 768 + 512 + 400 + 768 = 2448 a token, and every
 * block Linear its e4m3 weight cast (73728 x 1 byte): 2 x 2448 x 16 + 512 x 16 + 73728 =
 * 160256; the stack (hf, variable-length data, micro-batch 2) repeats K and V to the query
 * width before SDPA (test_kv_repeat): (q - kv) + (ao - v) = 64 bf16 elements a token and block,
 * 2 x 128 x 16 = 4096 more, and SDPA keeps each block's bf16 copy of the padded batch's
 * mask (act_sdpa_mask), 2 x 16 x 16 = 512: 164864. Rowwise saves the bf16 input and the
 * weight itself: bf16's 86528 + 4096 + 512. */
static void test_fp8_activations(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_estimate e;
    c.precision = PREC_FP8, c.features = FEAT_FSDP_MP;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 160256 + 4096 + 512);
    c.features |= FEAT_FP8_ROWWISE;
    tiny_predict(&plan, &c, &e);
    assert_int_equal(e.phase[PHASE_FORWARD][TERM_ACTIVATIONS], 86528 + 4096 + 512);
}

/* Autocast over fp32 weights (full fine-tuning, bf16 mixed): the residual stream is fp32, so
 * each trained RMSNorm keeps its fp32 input and the fp32 normalised input its weight
 * multiplies (2 x (4h + 4h) = 1024 a block and token, bf16-pure 768), and q, k, v, gate and
 * up each cast the fp32 normed input on their own (5 x 2h + down's 2i = 896, bf16-pure's
 * shared inputs 512). FSDP2's MixedPrecisionPolicy runs no autocast: as bf16-pure. Measured:
 * datasets/measured/h100-20261127.csv gpu-25min-00/-02/-16. A tied lm_head's fp32 weight is
 * cast for the logits too (the embedding, 1000 x 64 x 2 bytes), kept until its backward. */
static void test_autocast_casts(void **state)
{
    (void)state;
    struct train_config c = tiny_base_config();
    struct mem_act_tok a;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.norms, 768);
    assert_int_equal(a.lin_in, 512);
    c.precision = PREC_BF16;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.norms, 1024);
    assert_int_equal(a.lin_in, 896);
    c.features |= FEAT_FSDP_MP;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.norms, 768);
    assert_int_equal(a.lin_in, 512);

    /* a LayerNorm model's normed input is fp32 under autocast whatever the weights; under
     * DeepSpeed (the module in 16 bit, the master copy in the optimizer) no autocast runs:
     * q/k/v and the MLP read one shared input each (OPT: 2 x (2h + 2q + 2i) with o's own) */
    struct model_spec opt = fixture_opt_spec("opt-tiny", 2, 64, 4, 256, 1000, 128);
    struct model_plan ln;
    assert_int_equal(plan_init(&ln, &opt), 0);
    struct train_config d = tiny_base_config();
    d.precision = PREC_BF16;
    act_block_tok(&ln, &d, &a);
    assert_int_equal(a.lin_in, 2 * (4 * 64 + 256)); /* q, k, v and fc1 cast on their own */
    d.method = METHOD_ZERO2, d.gpus = d.dp = 2;
    act_block_tok(&ln, &d, &a);
    assert_int_equal(a.lin_in, 2 * (2 * 64 + 256));
    plan_free(&ln);

    struct resident r;
    c.features = 0;
    resident_terms(&plan, &c, &r);
    /* untied: the lm_head's cast is its own term (kept until its backward, checkpointing or
     * not), out of the blocks' amp_all: 64000 x 2 and 73728 x 2 */
    assert_int_equal(r.amp_head, 2 * 64000);
    assert_int_equal(r.amp_all, 2 * 73728);
    struct model_plan tied;
    struct model_spec m = plan.spec;
    m.tied = true;
    assert_int_equal(plan_init(&tied, &m), 0);
    resident_terms(&tied, &c, &r);
    assert_int_equal(r.amp_head, 1000 * 64 * 2);
    c.precision = PREC_BF16_PURE;
    resident_terms(&tied, &c, &r);
    assert_int_equal(r.amp_head, 0);
    plan_free(&tied);
}

/* The tiny model's base configuration under FSDP1 on 2 ranks, with `more` features. */
static struct train_config fsdp1_config(uint64_t more)
{
    struct train_config c = tiny_base_config();
    c.method = METHOD_ADP, c.gpus = c.dp = 2;
    c.features = FEAT_FSDP | FEAT_FSDP_FLAT | more;
    return c;
}

/* FSDP1 under accelerate's MixedPrecision(param_dtype=bf16) (FEAT_FSDP1_MP, the hf stacks'
 * default): each unit is gathered in bf16, so autocast finds bf16 weights and casts none,
 * as under FSDP2's policy: the bf16-pure activations (768, 512) and no amp copies. Only when
 * FSDP1 shards (adp over 2 or more ranks) in mixed precision: one GPU, or FSDP1 without the
 * policy (FSDP_FLAT alone), keeps autocast's casts (1024, 896, amp_all 2 x 73728).
 * Measured: h200-20261127-fsdp1.csv gpu-fsdp1-01/-06/-07/-11/-13. */
static void test_fsdp1_half_gather(void **state)
{
    (void)state;
    struct train_config c = fsdp1_config(FEAT_FSDP1_MP);
    c.precision = PREC_BF16;
    assert_true(train_fsdp_half_gather(&c));
    struct mem_act_tok a;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.norms, 768);
    assert_int_equal(a.lin_in, 512);
    struct resident r;
    resident_terms(&plan, &c, &r);
    assert_int_equal(r.amp_all, 0);
    assert_int_equal(r.amp_head, 0);

    c.features = FEAT_FSDP | FEAT_FSDP_FLAT; /* FSDP1 with fp32 param_dtype: autocast casts */
    assert_false(train_fsdp_half_gather(&c));
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.norms, 1024);
    assert_int_equal(a.lin_in, 896);
    resident_terms(&plan, &c, &r);
    assert_int_equal(r.amp_all, 2 * 73728);

    c.features = FEAT_FSDP | FEAT_FSDP_FLAT | FEAT_FSDP1_MP;
    c.method = METHOD_SINGLE, c.gpus = c.dp = 1; /* nothing sharded: plain autocast */
    assert_false(train_fsdp_half_gather(&c));
    c.method = METHOD_ADP, c.gpus = c.dp = 2, c.precision = PREC_BF16_PURE;
    assert_false(train_fsdp_half_gather(&c));
    assert_true(stack_features(STACK_HF) & FEAT_FSDP1_MP);
    assert_false(stack_features(STACK_LITGPT) & FEAT_FSDP1_MP);
}

/* LoRA q+v (r 4) in FSDP1 units that also hold the frozen block weights (train_mixed_units):
 * every view of the unit's flat parameter requires grad, so the block saves what full
 * fine-tuning saves (test_forward_activations): the Linear inputs 512, the norms 768 with
 * each trained-weight output, and of the adapters only their r-wide outputs, 2 x 4 x 2 = 16
 * (lora_A reads the attention input the frozen q keeps now). Without the mix (peft's
 * policy: the adapters are units of their own), test_lora_linear_inputs' 0 and 144 and
 * norms of 2 x 4h = 512. One rank: nothing sharded, nothing mixed. */
static void test_mixed_units(void **state)
{
    (void)state;
    struct train_config c = fsdp1_config(FEAT_FSDP_MIXED_UNITS);
    c.stack = STACK_TORCHTUNE;
    c.finetune = FT_LORA, c.lora_r = 4, c.lora_targets = TARGET_BIT(ROLE_Q) | TARGET_BIT(ROLE_V);
    assert_true(train_mixed_units(&c));
    struct mem_act_tok a;
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lin_in, 512);
    assert_int_equal(a.norms, 768);
    assert_int_equal(a.lora, 16);
    c.features = FEAT_FSDP | FEAT_FSDP_FLAT;
    assert_false(train_mixed_units(&c));
    act_block_tok(&plan, &c, &a);
    assert_int_equal(a.lin_in, 0);
    assert_int_equal(a.norms, 512);
    assert_int_equal(a.lora, 144);
    c.features = FEAT_FSDP | FEAT_FSDP_FLAT | FEAT_FSDP_MIXED_UNITS;
    c.method = METHOD_SINGLE, c.gpus = c.dp = 1;
    assert_false(train_mixed_units(&c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_activations),
        cmocka_unit_test(test_autocast_casts),
        cmocka_unit_test(test_eager_attention),
        cmocka_unit_test(test_softcap_attention),
        cmocka_unit_test(test_kv_repeat),
        cmocka_unit_test(test_kbit_fp32_norms),
        cmocka_unit_test(test_lora_input_casts),
        cmocka_unit_test(test_lora_linear_inputs),
        cmocka_unit_test(test_bnb_held),
        cmocka_unit_test(test_sequence_parallel),
        cmocka_unit_test(test_fp8_activations),
        cmocka_unit_test(test_fsdp1_half_gather),
        cmocka_unit_test(test_mixed_units),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
