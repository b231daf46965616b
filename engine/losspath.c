/* losspath.c: the loss paths of the training stacks (see losspath.h).
 *
 * Each path is the ordered list of the allocations and frees of N x V tensors that one
 * training step performs, from the lm_head's output to the gradient the lm_head's backward
 * receives. Sizes are per token and vocabulary entry: the compute dtype (2 bytes under
 * 16-bit training, 4 under fp32), fp32 (4), or one fp32 chunk of eight (0.5). */
#include "losspath.h"

#include <stdbool.h>
#include <stddef.h>
#include <threads.h>

#include "allocsim.h"

enum lp_size { SZ_COMPUTE, SZ_FP32, SZ_FP32_CHUNK8 };

struct lp_event {
    bool alloc;        /* allocate the slot, else free it */
    uint8_t slot;      /* which tensor (0 .. LP_SLOTS - 1) */
    enum lp_size size; /* its bytes per token and vocabulary entry (alloc only) */
};

#define LP_SLOTS 8
#define A(slot, size) {true, (slot), (size)}
#define F(slot) {false, (slot), SZ_COMPUTE}

/* transformers >= 4.46 (LlamaForCausalLM.forward and loss/loss_utils.py ForCausalLMLoss;
 * the same for every model that calls self.loss_function): the lm_head writes logits in the
 * compute dtype (0); the loss upcasts them (1) and pads the labels instead of shifting the
 * logits; F.cross_entropy = log_softmax, whose output it saves (2), + nll_loss. The upcast
 * has no other reference once the loss returns, Trainer.compute_loss drops `outputs` with
 * the logits before training_step calls backward. Backward: nll_loss's gradient (3), then
 * log_softmax's (4) beside its saved output, then the upcast's backward casts to the compute
 * dtype (5) for the lm_head's backward. */
static const struct lp_event hf_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32), A(2, SZ_FP32), F(1), F(0),
    A(3, SZ_FP32), A(4, SZ_FP32), F(2), F(3), A(5, SZ_COMPUTE), F(4), F(5),
};

/* A loop that keeps `logits = model(x)[..., :-1, :].contiguous()` in fp32 (1) through
 * loss.backward(): torchtune's recipes at 0217d44c; later ones `del logits` first ("free
 * logits otherwise it peaks backward memory"). */
static const struct lp_event kept_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32), F(0), A(2, SZ_FP32),
    A(3, SZ_FP32), A(4, SZ_FP32), F(2), F(3), A(5, SZ_COMPUTE), F(4), F(5), F(1),
};

/* torchtune's CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py): the model
 * returns 16-bit logits in chunks (0) and the loss upcasts each chunk (1); both stay for
 * backward. Under torch.compile the upcast is fused into the chunk's reduction: one fp32
 * chunk of the 8 exists at a time (2). */
static const struct lp_event chunked_upcast_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32), F(1), F(0),
};
static const struct lp_event chunked_compiled_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32_CHUNK8), F(1), F(0),
};

/* litgpt: LoRA recipes compute the lm_head in 128-token chunks (16-bit, 0) and
 * chunked_cross_entropy takes a 16-bit log_softmax of each (1); finetune/full.py computes
 * the full logits (0), and chunked_cross_entropy copies each non-contiguous chunk of
 * logits[..., :-1, :] (1) before its log_softmax (2). */
static const struct lp_event litgpt_lora_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_COMPUTE), F(1), F(0),
};
static const struct lp_event litgpt_full_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_COMPUTE), A(2, SZ_COMPUTE), F(2), F(1), F(0),
};

static const struct {
    const char *name;
    const struct lp_event *ev;
    size_t n;
} paths[LOSS_COUNT] = {
    [LOSS_HF] = {"hf", hf_path, sizeof hf_path / sizeof hf_path[0]},
    [LOSS_HF_LEGACY] = {"hf-legacy", hf_path, sizeof hf_path / sizeof hf_path[0]},
    [LOSS_KEPT] = {"logits-kept", kept_path, sizeof kept_path / sizeof kept_path[0]},
    [LOSS_CHUNKED_UPCAST] = {"chunked-upcast", chunked_upcast_path,
                             sizeof chunked_upcast_path / sizeof chunked_upcast_path[0]},
    [LOSS_CHUNKED_COMPILED] = {"chunked-compiled", chunked_compiled_path,
                               sizeof chunked_compiled_path / sizeof chunked_compiled_path[0]},
    [LOSS_LITGPT_LORA] = {"litgpt-lora", litgpt_lora_path,
                          sizeof litgpt_lora_path / sizeof litgpt_lora_path[0]},
    [LOSS_LITGPT_FULL] = {"litgpt-full", litgpt_full_path,
                          sizeof litgpt_full_path / sizeof litgpt_full_path[0]},
};

const char *loss_path_name(enum loss_path lp)
{
    return (unsigned)lp < LOSS_COUNT ? paths[lp].name : "?";
}

enum loss_path losspath_select(const struct train_config *c)
{
    if (c->features & FEAT_CHUNKED_CE) {
        if (c->stack == STACK_LITGPT)
            return c->finetune == FT_FULL ? LOSS_LITGPT_FULL : LOSS_LITGPT_LORA;
        return (c->features & FEAT_COMPILE) ? LOSS_CHUNKED_COMPILED : LOSS_CHUNKED_UPCAST;
    }
    if (c->features & FEAT_LOGITS_KEPT)
        return LOSS_KEPT;
    return LOSS_HF;
}

/* Bytes per token and vocabulary entry, in eighths of a byte (exact for every size). */
static uint64_t eighths(enum lp_size s, uint32_t ea)
{
    switch (s) {
    case SZ_FP32:
        return 32;
    case SZ_FP32_CHUNK8:
        return 4;
    default:
        return 8u * ea;
    }
}

/* The allocated peak of one pass over the events, in eighths. */
static uint64_t allocated_peak(enum loss_path lp, uint32_t ea)
{
    uint64_t size[LP_SLOTS] = {0}, live = 0, peak = 0;
    for (size_t k = 0; k < paths[lp].n; k++) {
        const struct lp_event *e = &paths[lp].ev[k];
        if (e->alloc) {
            size[e->slot] = eighths(e->size, ea);
            live += size[e->slot];
        } else {
            live -= size[e->slot];
        }
        if (live > peak)
            peak = live;
    }
    return peak;
}

/* Entries (tokens x vocabulary) of the longest replayed step: 2^28. Every tensor of a path is
 * then a large allocation (at least 128 MiB, above kMinLargeAlloc), whose segment is its
 * own size rounded to 2 MiB, and every step length below is a multiple of 2 MiB for every
 * element size: the replay is exact at this scale and, the allocator's rules being the same
 * for all large requests, the bytes per entry it finds hold at any batch and vocabulary
 * (up to the 2 MiB rounding of small batches). */
#define REF_ENTRIES (UINT64_C(1) << 28)

/* Batch lengths of the replayed steps, in 64ths of the longest (seq_len).
 * Packed (or padded to a fixed length): every step the same; two steps show the steady
 * state. Variable-length batches padded to the longest sample: the cache keeps the
 * segments cut for each new longest batch (a record), and only a record can need new
 * ones, so the step that reaches the cap finds the segments of the record before it. For
 * independent lengths up to the cap, the record before the longest batch lies uniformly
 * below it: at half the cap on average. Earlier, shorter records are assumed reused by the
 * later records' smaller tensors (activations split them), which this replay of the loss
 * path alone cannot show; README "Validation" says how far that holds. */
static const uint64_t packed_steps[] = {64, 64};
static const uint64_t variable_steps[] = {32, 64};

/* Replays the path over the steps through the caching allocator model. */
static int replay(enum loss_path lp, uint32_t ea, const uint64_t *steps, size_t n_steps,
                  enum alloc_conf alloc, struct loss_cost *out)
{
    allocsim_block blocks[128];
    allocsim_state st;
    const allocsim_config cfg = {.capacity = 0, .max_split_size = 0,
                                 .expandable = alloc == ALLOC_EXPANDABLE};
    if (allocsim_init(&st, &cfg, blocks, sizeof blocks / sizeof blocks[0]) != ALLOCSIM_OK)
        return -1;
    uint32_t handle[LP_SLOTS] = {0};
    uint64_t needed = 0;
    for (size_t k = 0; k < n_steps; k++) {
        const uint64_t entries = REF_ENTRIES / 64 * steps[k];
        for (size_t i = 0; i < paths[lp].n; i++) {
            const struct lp_event *e = &paths[lp].ev[i];
            allocsim_status s = e->alloc
                ? allocsim_alloc(&st, entries / 8 * eighths(e->size, ea), &handle[e->slot])
                : allocsim_free(&st, handle[e->slot]);
            if (s != ALLOCSIM_OK)
                return -1;
            uint64_t held = allocsim_get_stats(&st)->reserved - allocsim_releasable(&st);
            if (held > needed)
                needed = held;
        }
    }
    out->reserved = (double)allocsim_get_stats(&st)->peak_reserved / (double)REF_ENTRIES;
    out->needed = (double)needed / (double)REF_ENTRIES;
    return 0;
}

static void cost_of(enum loss_path lp, uint32_t ea, enum data_shape data, enum alloc_conf alloc,
                    struct loss_cost *out)
{
    out->allocated = (double)allocated_peak(lp, ea) / 8.0;
    const bool packed = data == DATA_PACKED;
    if (replay(lp, ea, packed ? packed_steps : variable_steps,
               packed ? sizeof packed_steps / sizeof packed_steps[0]
                      : sizeof variable_steps / sizeof variable_steps[0], alloc, out) != 0)
        out->reserved = out->needed = out->allocated; /* cannot happen with 128 blocks */
}

/* Every (path, element size, data shape, allocator) costs the same for every model: one
 * table, filled once before any sweep thread reads it. */
static struct loss_cost table[LOSS_COUNT][2][DATA_COUNT][ALLOC_COUNT];
static once_flag table_once = ONCE_FLAG_INIT;

static void fill_table(void)
{
    for (int lp = 0; lp < LOSS_COUNT; lp++)
        for (int w = 0; w < 2; w++)
            for (int d = 0; d < DATA_COUNT; d++)
                for (int a = 0; a < ALLOC_COUNT; a++)
                    cost_of((enum loss_path)lp, w ? 4 : 2, (enum data_shape)d, (enum alloc_conf)a,
                            &table[lp][w][d][a]);
}

void losspath_cost(enum loss_path lp, uint32_t ea, enum data_shape data, enum alloc_conf alloc,
                   struct loss_cost *out)
{
    call_once(&table_once, fill_table);
    *out = table[(unsigned)lp < LOSS_COUNT ? lp : LOSS_HF][ea == 4][(unsigned)data < DATA_COUNT ? data : 0]
                [(unsigned)alloc < ALLOC_COUNT ? alloc : 0];
}
