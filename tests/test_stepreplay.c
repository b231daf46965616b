/* test_stepreplay.c: the whole-step allocator replay (engine/model/stepreplay.c) on hand-
 * worked cases: the bucket's batch lengths, the resident bytes of the tiny model, and the
 * floor the replay's reserved pool cannot go below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stepreplay.h"
#include "tiny_model.h"

#define MIB (UINT64_C(1) << 20)

TINY_PLAN_FIXTURE

/* Three steps of micro-batch 4 padded to 32 tokens a sample: the whole-step runs below. */
static int steps32(const struct stepreplay_shape *sh, struct stepreplay_result *r)
{
    static const uint32_t w[3] = {32, 32, 32};
    return stepreplay_steps(sh, 4, w, 3, r);
}

/* A bucket of 20 batches of 4 samples, lengths uniform on 1..512: the j-th batch pads to
 * the (4j+1)-th largest of 80, 512 * (1 - (4j+1)/81): 505.68 -> 506 (j 0), 480.40 -> 480
 * (j 1), 278.12 -> 278 (j 9); one batch a bucket of one sample: 512 * (1 - 1/2) = 256. */
static void test_batch_lengths(void **state)
{
    (void)state;
    assert_int_equal(stepreplay_batch_len(512, 4, 20, 0), 506);
    assert_int_equal(stepreplay_batch_len(512, 4, 20, 1), 480);
    assert_int_equal(stepreplay_batch_len(512, 4, 20, 9), 278);
    assert_int_equal(stepreplay_batch_len(512, 1, 1, 0), 256);
    assert_int_equal(stepreplay_batch_len(1, 4, 20, 19), 1);
}

/* The loop: PEFT MetaMathQA's, which keeps `outputs` to the next forward (the outputs-kept
 * path), or HF Trainer's (the hf path). */
static void keep_outputs(struct stepreplay_shape *sh, bool kept)
{
    sh->kept = kept;
    sh->loss = kept ? LOSS_OUTPUTS_KEPT : LOSS_HF;
}

/* Autocast on or off, and the loss path's precision class with it. */
static void set_amp(struct stepreplay_shape *sh, bool amp)
{
    sh->amp = amp;
    sh->loss_class = amp ? LP_MIXED : LP_HALF;
}

static struct stepreplay_shape tiny_shape(const struct model_plan *p, bool full)
{
    const struct model_spec *m = &p->spec;
    struct stepreplay_shape sh = {
        .params = &p->tensors, .h = 64, .hq = 64, .hkv = 32, .inter = 128, .vocab = 1000,
        .heads = 4, .layers = (int32_t)m->layers, .ew = 2, .full = full, .kv_repeat = true,
        .loss_class = LP_HALF,
    };
    keep_outputs(&sh, true);
    return sh;
}

/* The tiny model's parameters in bf16, each rounded to 512 B: a block's q 64x64 8192, k and
 * v 32x64 4096 each, o 8192, gate, up and down 128x64 16384 each, two norms of 64 (128 B,
 * 512 rounded): 74752; two blocks 149504, the embedding and the untied lm_head 1000x64
 * 128000 each, the final norm 512: 406016. Full fine-tuning keeps weights, gradients and
 * both AdamW states between steps: 4 x 406016. */
static void test_resident(void **state)
{
    (void)state;
    struct stepreplay_result r;
    struct stepreplay_shape sh = tiny_shape(&plan, false);
    assert_int_equal(stepreplay_run(&sh, 4, 32, 1, &r), 0);
    assert_int_equal(r.resident, 406016);
    sh = tiny_shape(&plan, true);
    assert_int_equal(stepreplay_run(&sh, 4, 32, 10, &r), 0);
    assert_int_equal(r.resident, 4 * 406016);
    /* every tensor a step allocates is freed but the kept outputs of the last step (the
     * tenth, 4 x 17 tokens: 32 * (1 - 37/81) = 17.38 -> 17 a sample, 68 tokens): 16-bit
     * logits 68 x 1000 x 2 = 136000 B (512-rounded 136192) and each block's K and V copies,
     * 68 x 32 x 2 = 4352 B (4608 rounded) each, four of them */
    assert_int_equal(stepreplay_batch_len(32, 4, 20, 9), 17);
    assert_int_equal(r.allocated, 4 * 406016 + 136192 + 4 * 4608);
    keep_outputs(&sh, false);
    assert_int_equal(stepreplay_run(&sh, 4, 32, 10, &r), 0);
    assert_int_equal(r.allocated, 4 * 406016);
}

/* After the optimizer step the weights, gradients and states are allocated and the sqrt
 * temporaries were (5 x 406016 B beside each other, all below 1 MiB: the small pool's
 * 2 MiB segments), so the pool is at least that, in whole 2 MiB segments; the logits of
 * 4 x 32 tokens x 1000 entries (2 B kept, 4 B upcast, 4 B log_softmax) and the KV cache come
 * on top. A longer cap never reserves less. */
static void test_reserved_floor(void **state)
{
    (void)state;
    const struct stepreplay_shape sh = tiny_shape(&plan, true);
    struct stepreplay_result a, b;
    assert_int_equal(stepreplay_run(&sh, 4, 32, 10, &a), 0);
    assert_true(a.reserved >= 5 * UINT64_C(406016) + 4 * 32 * 1000 * UINT64_C(10));
    assert_int_equal(a.reserved % (2 * MIB), 0);
    assert_int_equal(stepreplay_run(&sh, 4, 128, 10, &b), 0);
    assert_true(b.reserved >= a.reserved);
    struct stepreplay_result again;
    assert_int_equal(stepreplay_run(&sh, 4, 32, 10, &again), 0);
    assert_int_equal(again.reserved, a.reserved);
    assert_int_equal(stepreplay_run(&sh, 0, 32, 10, &again), -1);
}

/* Full fine-tuning under autocast over fp32 weights: the tiny model's parameters in fp32,
 * each rounded to 512 B: a block's q 64x64x4 16384, k and v 32x64x4 8192 each, o 16384,
 * gate, up and down 128x64x4 32768 each, two norms of 64 x 4 = 256 B (512 rounded): 148480;
 * two blocks 296960, the embedding and the untied lm_head 256000 each, the final norm 512:
 * 809472. */
#define TINY_FP32 UINT64_C(809472)

static struct stepreplay_shape amp_shape(const struct model_plan *p, enum stepreplay_opt opt, bool ckpt)
{
    struct stepreplay_shape sh = tiny_shape(p, true);
    keep_outputs(&sh, false);
    set_amp(&sh, true);
    sh.ckpt = ckpt;
    sh.opt = opt;
    return sh;
}

/* After the steps the gradients are gone (zero_grad(set_to_none=True)) and what stays is
 * the weights and, for AdamW, both states: 3 x 809472 B, or the weights alone for SGD. The
 * foreach step has weights, gradients, both states and one sqrt(exp_avg_sq) a parameter
 * alive at once: the peak is at least 5 x 809472; the fused step's at least 4 x. */
static void test_amp_resident(void **state)
{
    (void)state;
    struct stepreplay_result r;
    struct stepreplay_shape sh = amp_shape(&plan, STEPREPLAY_FOREACH, false);
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 3 * TINY_FP32);
    assert_true(r.peak_allocated >= 5 * TINY_FP32);
    assert_true(r.reserved >= r.peak_allocated);
    sh.opt = STEPREPLAY_FUSED;
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 3 * TINY_FP32);
    assert_true(r.peak_allocated >= 4 * TINY_FP32);
    sh.opt = STEPREPLAY_PLAIN;
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, TINY_FP32);
}

/* The loss's backward holds log_softmax's saved output, nll_loss's gradient and
 * log_softmax's: 3 x 4 B a token and vocabulary entry, beside the fp32 weights; at
 * 4 x 256 tokens that is 12288000 B, the largest part of the step, so the peak lies
 * between weights + the three and that plus every fp32 gradient and state, the 16-bit
 * logits and their gradient (2 + 2 B an entry) and each block's saved tensors (under 4 KiB
 * a token at hidden 64 and MLP 128: the fp32 stream's input, norm products and middle
 * (3 x 256 B), five 16-bit input casts, q, k, v, their repeats, SDPA's output and copy
 * (about 1 KiB), the MLP's four 16-bit tensors of 128 (1 KiB)). Checkpointing keeps each
 * layer's fp32 input only: it never raises the peak. */
static void test_amp_loss_peak(void **state)
{
    (void)state;
    const uint32_t w[2] = {256, 256};
    const uint64_t loss = UINT64_C(4) * 256 * 1000 * 12;
    struct stepreplay_result off, on;
    struct stepreplay_shape sh = amp_shape(&plan, STEPREPLAY_FUSED, false);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &off), 0);
    assert_true(off.peak_allocated >= TINY_FP32 + loss);
    const uint64_t tok = 4 * 256, blocks = 2 * tok * 4096, logits16 = tok * 1000 * 4;
    assert_true(off.peak_allocated <= 4 * TINY_FP32 + loss + logits16 + blocks);
    sh.ckpt = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &on), 0);
    assert_true(on.peak_allocated <= off.peak_allocated);
    assert_true(on.peak_allocated >= TINY_FP32 + loss);
}

/* LoRA (rank 8 on every block Linear) on the 16-bit base, with and without autocast: the
 * replay keeps the base's bf16 weights alone between steps (406016 B, test_resident; the
 * adapters and their states are the caller's), and after the last step nothing else. The
 * adapters' fp32 x copies are saved without autocast (4 B an element, lora_A reads them)
 * and transient under it (lora_A saves its bf16 cast), so autocast never raises the peak;
 * checkpointing never does either. */
static void test_lora_steps(void **state)
{
    (void)state;
    const uint32_t w[2] = {256, 200};
    struct stepreplay_result plain, amp, ckpt;
    struct stepreplay_shape sh = tiny_shape(&plan, false);
    keep_outputs(&sh, false);
    sh.lora_r = 8;
    sh.lora_targets = TARGETS_ATTN | TARGETS_MLP;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &plain), 0);
    assert_int_equal(plain.allocated, 406016);
    assert_int_equal(plain.resident, 406016);
    set_amp(&sh, true);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &amp), 0);
    assert_int_equal(amp.allocated, 406016);
    assert_true(amp.peak_allocated < plain.peak_allocated);
    sh.ckpt = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &ckpt), 0);
    assert_int_equal(ckpt.allocated, 406016);
    assert_true(ckpt.peak_allocated <= amp.peak_allocated);
}

/* Eager attention saves each layer's fp32 softmax and its bf16 cast, 6 B x 4 heads x 256
 * keys a token (6144), where SDPA saves its output and logsumexp (2 x 64 + 4 x 4 = 144):
 * at 4 x 256 tokens over both layers, still alive at the loss, the peak rises by at least
 * 2 x 1024 x (6144 - 144) B. */
static void test_eager_scores(void **state)
{
    (void)state;
    const uint32_t w[2] = {256, 256};
    struct stepreplay_result sdpa, eager;
    struct stepreplay_shape sh = amp_shape(&plan, STEPREPLAY_FUSED, false);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &sdpa), 0);
    sh.eager = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &eager), 0);
    assert_true(eager.peak_allocated >= sdpa.peak_allocated + UINT64_C(2) * 1024 * (6144 - 144));
    assert_int_equal(eager.allocated, sdpa.allocated);
    keep_outputs(&sh, true); /* the outputs-kept loop runs SDPA only */
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &eager), -1);
}

/* The tiny model's full fine-tuning over `shards` FSDP ranks: foreach AdamW, no kept outputs
 * (FSDP2's unless the caller says fsdp1). */
static struct stepreplay_shape fsdp_shape(const struct model_plan *p, uint32_t shards)
{
    struct stepreplay_shape sh = tiny_shape(p, true);
    keep_outputs(&sh, false);
    sh.shards = shards;
    sh.opt = STEPREPLAY_FOREACH;
    return sh;
}

/* FSDP2 over 2 ranks (stepfsdp.c): each parameter's fp32 shard has half its rows at twice
 * the bytes of its bf16 whole, so the shards round as test_resident's bf16 parameters do,
 * 406016 B, and over 4 ranks: a block's q 16x64x4 4096, k and v 2048, o 4096, gate, up,
 * down 8192 each, two norms of 16 x 4 B (512 rounded): 37888; two blocks 75776, the
 * embedding and lm_head 250x64x4 64000 each, the final norm 512: 204288. After the steps
 * the default stream holds the shards and both AdamW states (3 x); the gradients are views
 * of the reduce-scatter outputs, in the reduce-scatter stream's pool. At the optimizer step
 * the shards, states and sqrt temporaries (4 x 406016 over 2 ranks) sit beside those
 * outputs: a block's 18496 elements x 4 B (74240 rounded) each, the root's 64032 x 4 B
 * (256512): 404992. That pool's small segment (2 MiB) is its own: at least 2 MiB beside the
 * default stream's. */
static void test_fsdp2_steps(void **state)
{
    (void)state;
    struct stepreplay_result r2, r4;
    struct stepreplay_shape sh = fsdp_shape(&plan, 2);
    assert_int_equal(steps32(&sh, &r2), 0);
    assert_int_equal(r2.allocated, 3 * 406016);
    assert_int_equal(r2.resident, 4 * 406016);
    assert_true(r2.peak_allocated >= 4 * 406016 + 404992);
    assert_true(r2.reserved >= 2 * 2 * MIB);
    assert_true(r2.reserved >= r2.peak_allocated);
    sh.shards = 4;
    assert_int_equal(steps32(&sh, &r4), 0);
    assert_int_equal(r4.allocated, 3 * 204288);
    assert_true(r4.peak_allocated < r2.peak_allocated);
    assert_int_equal(r2.grads, 404992);
    /* no policy over bf16 parameters (shard16), 2 ranks: bf16 shards and states, 204288 B a
     * kind, and reduce-scatter outputs in the gradients' bf16: a block's 18496 x 2 B (37376
     * rounded) each, the root's 64032 x 2 B (128512): 203264, beside the step's 4 kinds */
    sh.shards = 2, sh.shard16 = true;
    assert_int_equal(steps32(&sh, &r4), 0);
    assert_int_equal(r4.allocated, 3 * 204288);
    assert_int_equal(r4.resident, 4 * 204288);
    assert_int_equal(r4.grads, 203264);
    assert_true(r4.peak_allocated >= 4 * 204288 + 203264);
    assert_true(r4.peak_allocated < r2.peak_allocated);
}

/* FSDP1 (stepfsdp.c, shape.fsdp1) over 2 ranks, bf16 parameters (shard16). */
static struct stepreplay_shape fsdp1_shape(const struct model_plan *p)
{
    struct stepreplay_shape sh = fsdp_shape(p, 2);
    sh.fsdp1 = true, sh.shard16 = true;
    return sh;
}

/* FSDP1 over 2 ranks (stepfsdp.c, shape.fsdp1): bf16 parameters (shard16) keep bf16 shards
 * and states, each half its parameter's bf16 bytes, the bytes of test_fsdp2_steps' fp32
 * shards over 4 ranks: 204288 B a kind, the shards and both AdamW states in the default
 * stream's pool after the steps, the gradients (reduce-scatter outputs) in the post-backward
 * stream's. Every unit's gathered flat parameter (a block's 36992 elements, 73984 B; the
 * root's 128064, 256128 B) and flat gradient lie on the unshard stream: three pools, each at
 * least its small 2 MiB segment. Over fp32 parameters (accelerate's MixedPrecision) the shards
 * and states are fp32: test_fsdp2_steps' 406016 B a kind. */
static void test_fsdp1_steps(void **state)
{
    (void)state;
    struct stepreplay_result r;
    struct stepreplay_shape sh = fsdp1_shape(&plan);
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 3 * 204288);
    assert_int_equal(r.resident, 4 * 204288);
    assert_true(r.reserved >= 3 * 2 * MIB);
    assert_true(r.reserved >= r.peak_allocated);
    /* the root gathered, its flat gradient and the last block's pieces at the root's
     * post-backward: at least the root's two flat buffers beside the shards and states */
    assert_true(r.peak_allocated >= 3 * 204288 + 2 * 256128);
    assert_int_equal(r.grads, 203264); /* test_fsdp2_steps' bf16 reduce-scatter outputs */
    sh.shard16 = false;
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 3 * 406016);
    assert_int_equal(r.grads, 404992); /* their fp32 casts */
}

/* LoRA (q and v, r 4, bf16 adapters) under FSDP1 over 2 ranks, then FSDP2: the frozen base's
 * bf16 shards, test_fsdp1_steps' 204288 B, are all the replay keeps between steps (the
 * adapters and their states live outside it). With peft's policy FSDP1's units are frozen:
 * they reshard in their post-backward and nothing is reduced. With the adapters inside them
 * (mixed) every block weight gets a gradient, and each block's flat gradient is
 * reduce-scattered into the post-backward stream's pool: 36992 elements / 2 x 2 B, 37376
 * rounded, a block: 74752; the root (embedding, final norm, lm_head) holds no adapter and
 * stays frozen. */
static void test_fsdp_lora_steps(void **state)
{
    (void)state;
    struct stepreplay_result r;
    struct stepreplay_shape sh = fsdp1_shape(&plan);
    sh.full = false, sh.lora_r = 4, sh.lora_targets = (1u << ROLE_Q) | (1u << ROLE_V), sh.lora16 = true;
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 204288);
    assert_int_equal(r.resident, 204288);
    assert_int_equal(r.grads, 0);
    const uint64_t frozen_peak = r.peak_allocated;
    sh.mixed = true;
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 204288);
    assert_int_equal(r.grads, 74752);
    assert_true(r.peak_allocated > frozen_peak); /* the Linear inputs and norms kept, too */
    /* FSDP2 under its policy: the adapters gathered in bf16 (lora16), the frozen base's
     * units only gathered and freed, nothing reduced but the adapters' (outside) */
    sh.fsdp1 = false, sh.mixed = false;
    assert_int_equal(steps32(&sh, &r), 0);
    assert_int_equal(r.allocated, 204288);
    assert_int_equal(r.grads, 0);
    sh.lora16 = false; /* fp32 adapters on FSDP2 without a policy: not replayed */
    assert_int_equal(steps32(&sh, &r), -1);
}

/* LoRA r 8 on every block Linear, bf16 adapters on the 16-bit base (lora16), HF Trainer's
 * loop without kept outputs: the shape the loop and base variants below start from. */
static struct stepreplay_shape lora16_shape(const struct model_plan *p)
{
    struct stepreplay_shape sh = tiny_shape(p, false);
    keep_outputs(&sh, false);
    sh.lora_r = 8, sh.lora16 = true, sh.lora_targets = TARGETS_ATTN | TARGETS_MLP;
    return sh;
}

/* Answer.AI's loop on transformers 4.31 (the hf-4.31 path, `output = None` after the
 * optimizer step) with checkpointing, LoRA r 8 on every block Linear in bf16: the fp32
 * logits L (4 B an entry) outlive the loss, so at the loss's backward they sit beside
 * log_softmax's output and both gradients: 16 B an entry. Not kept, the peak is the loss's
 * forward, L, its shifted copy and log_softmax's output (12 B) beside the lm_head's input
 * (4 x 256 tokens x 64 x 2 B = 131072 B, which the frozen lm_head does not save): the peak
 * rises by 4 x 256 x 1000 entries x 4 B less that, 3964928 B; after the last step nothing
 * but the base is left. Outputs kept to the step's end without checkpointing (the
 * cache's tensors are not in the op lists), or beside the outputs-kept loop, are refused. */
static void test_until_step(void **state)
{
    (void)state;
    const uint32_t w[2] = {256, 256};
    struct stepreplay_result plain, until;
    struct stepreplay_shape sh = lora16_shape(&plan);
    sh.loss = LOSS_HF_431, sh.ckpt = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &plain), 0);
    sh.loss = LOSS_HF431_KEPT, sh.until_step = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &until), 0);
    assert_int_equal(until.peak_allocated, plain.peak_allocated + UINT64_C(4096000) - 131072);
    assert_int_equal(until.allocated, 406016);
    sh.ckpt = false;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &until), -1);
    sh.ckpt = true, sh.kept = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &until), -1);
    sh.kept = false, sh.until_step = false; /* a kept path needs a loop that keeps */
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &until), -1);
}

/* PEFT's lora_dropout (v0.10.0 Linear.forward: lora_A(dropout(x))) on bf16 adapters without
 * checkpointing: each adapted Linear saves its dropped copy (2 B) and bool mask (1 B) a
 * feature, where without dropout lora_A saved the Linear's input itself: a block's q, k, v,
 * o, gate and up add 6 x 3 x 64 B a token and down 3 x 128 (1536), and the inputs no longer
 * saved are q/k/v's (shared), gate/up's (shared) and down's, 2 x 64 + 2 x 64 + 2 x 128 (512;
 * o's is a view of what SDPA saves): 1024 B a token more per block. At the loss both blocks'
 * saved tensors are alive, so the peak rises by 2 x 1024 tokens x 1024 B = 2097152; nothing
 * stays after the steps. Dropout needs adapters in the base's dtype (lora16). */
static void test_lora_dropout(void **state)
{
    (void)state;
    const uint32_t w[2] = {256, 256};
    struct stepreplay_result plain, drop;
    struct stepreplay_shape sh = lora16_shape(&plan);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &plain), 0);
    sh.dropout = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &drop), 0);
    assert_int_equal(drop.peak_allocated, plain.peak_allocated + UINT64_C(2097152));
    assert_int_equal(drop.allocated, 406016);
    sh.lora16 = false;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &drop), -1);
}

/* LoRA on bitsandbytes 4-bit block Linears: each stores a quarter of its weights as 16-bit
 * elements, 512-rounded: a block's q 64x64 -> 1024 x 2 B 2048, k and v 1024 each, o 2048,
 * gate, up and down 4096 each, two norms 512 each: 19456; two blocks 38912, the 16-bit
 * embedding and lm_head 128000 each, the final norm 512: 295424, all the replay keeps. Each
 * matmul dequantizes its weight (gate's 8192 x 2 B, with double quantization after an fp32
 * absmax of 128 x 4 B) and, before bitsandbytes 0.43.2, saves its input: the peak is no
 * lower than the 16-bit base's less the weights' difference. A checkpointed step of one token shows the dequantized weight:
 * on the 16-bit base the loss path's 12 B x 1000 entries (4096 B blocks), the checkpoints
 * and the head's 512 B blocks stay under gate's 16384 B, which the 4-bit base's peak holds
 * beside its weights. Not with full fine-tuning, nor with FSDP2's shards. */
static void test_quant4(void **state)
{
    (void)state;
    const uint32_t w[2] = {256, 256};
    struct stepreplay_result base16, q;
    struct stepreplay_shape sh = lora16_shape(&plan);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &base16), 0);
    sh.quant4 = true, sh.nested = true, sh.quant4_input = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &q), 0);
    assert_int_equal(q.resident, 295424);
    assert_int_equal(q.allocated, 295424);
    assert_true(q.peak_allocated >= base16.peak_allocated - (406016 - 295424));
    const uint32_t one = 1;
    sh.ckpt = true;
    assert_int_equal(stepreplay_steps(&sh, 1, &one, 1, &q), 0);
    assert_true(q.peak_allocated >= 295424 + 16384);
    sh.quant4 = false;
    assert_int_equal(stepreplay_steps(&sh, 1, &one, 1, &base16), 0);
    assert_true(base16.peak_allocated < 406016 + 16384);
    sh.quant4 = true;
    sh.shards = 2;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &q), -1);
    sh.shards = 0, sh.full = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &q), -1);
}

/* Out of range: no steps, a zero width, a zero micro-batch, checkpointing with the kept
 * outputs (HF turns the cache off under checkpointing; the op list has no such loop). */
static void test_steps_arguments(void **state)
{
    (void)state;
    const uint32_t w[2] = {32, 0};
    struct stepreplay_result r;
    struct stepreplay_shape sh = amp_shape(&plan, STEPREPLAY_FOREACH, true);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 0, &r), -1);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 2, &r), -1);
    assert_int_equal(stepreplay_steps(&sh, 0, w, 1, &r), -1);
    sh = tiny_shape(&plan, true);
    sh.ckpt = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 1, &r), -1);
    assert_int_equal(stepreplay_run(&sh, 4, 32, 1, &r), -1);
    keep_outputs(&sh, false);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 1, &r), 0);
    /* FSDP2: full fine-tuning without autocast only; never the empty-cache loop */
    sh.shards = 2;
    assert_int_equal(stepreplay_run(&sh, 4, 32, 1, &r), -1);
    set_amp(&sh, true);
    assert_int_equal(stepreplay_steps(&sh, 4, w, 1, &r), -1);
    set_amp(&sh, false), sh.full = false;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 1, &r), -1);
    sh.full = true;
    assert_int_equal(stepreplay_steps(&sh, 4, w, 1, &r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_lengths),
        cmocka_unit_test(test_resident),
        cmocka_unit_test(test_reserved_floor),
        cmocka_unit_test(test_amp_resident),
        cmocka_unit_test(test_amp_loss_peak),
        cmocka_unit_test(test_until_step),
        cmocka_unit_test(test_lora_dropout),
        cmocka_unit_test(test_quant4),
        cmocka_unit_test(test_lora_steps),
        cmocka_unit_test(test_eager_scores),
        cmocka_unit_test(test_fsdp2_steps),
        cmocka_unit_test(test_fsdp1_steps),
        cmocka_unit_test(test_fsdp_lora_steps),
        cmocka_unit_test(test_steps_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
