/* fsdpwrap.c: FSDP1's wrap from CPU-resident weights through the allocator model
 * (fsdpwrap.h cites the steps), and its floor under the phases. Runs once per configuration,
 * never per point. */
#include "fsdpwrap.h"

#include <stdlib.h>

#include "allocsim.h"
#include "memmodel.h"
#include "resident.h"

/* PARAM_BROADCAST_BUCKET_SIZE (torch/distributed/fsdp/_init_utils.py): 250 MiB */
#define BUCKET_BYTES (UINT64_C(250) << 20)
/* broadcast_coalesced's `max_in_flight` (torch/csrc/distributed/c10d/comm.cpp) */
#define IN_FLIGHT 2
/* parameters of one unit: a block's tensors and, in mixed units, their adapters */
#define UNIT_MAX 96

struct unit {
    uint64_t bytes[UNIT_MAX];
    uint32_t n;
    uint64_t table;  /* each of its attention's two rotary tables (resident_rope_table), or 0 */
};

struct wrap {
    allocsim_state st;
    const struct train_config *c;
    bool sync;
    bool failed;
};

static uint32_t alloc_or_fail(struct wrap *w, uint64_t bytes)
{
    uint32_t h = ALLOCSIM_NULL_HANDLE;
    if (allocsim_alloc(&w->st, bytes, &h) != ALLOCSIM_OK)
        w->failed = true;
    return h;
}

static void free_or_fail(struct wrap *w, uint32_t h)
{
    if (h != ALLOCSIM_NULL_HANDLE && allocsim_free(&w->st, h) != ALLOCSIM_OK)
        w->failed = true;
}

/* Step 2: the buckets of broadcast_coalesced, two in flight. */
static void sync_buckets(struct wrap *w, const struct unit *u)
{
    uint32_t flight[IN_FLIGHT];
    size_t nf = 0;
    uint64_t sum = 0;
    uint32_t count = 0;
    for (uint32_t i = 0; i < u->n; i++) {
        sum += u->bytes[i];
        count++;
        if (sum < BUCKET_BYTES && i + 1 < u->n)
            continue;
        if (nf == IN_FLIGHT) { /* the oldest finishes: its flat copy is freed */
            free_or_fail(w, flight[0]);
            flight[0] = flight[1];
            nf--;
        }
        flight[nf++] = count > 1 ? alloc_or_fail(w, sum) : ALLOCSIM_NULL_HANDLE; /* a lone tensor is viewed */
        sum = 0;
        count = 0;
    }
    for (size_t i = 0; i < nf; i++)
        free_or_fail(w, flight[i]);
}

static void unit_add(struct unit *u, uint64_t bytes, bool *full)
{
    if (u->n == UNIT_MAX)
        *full = true;
    else if (bytes)
        u->bytes[u->n++] = bytes;
}

/* One unit's construction (steps 1 to 4). Its buffers (a block's rotary tables) move after
 * its parameters and stay (_move_states_to_device: `for param in params`, then `for buffer
 * in buffers`); the sync broadcasts them first (_sync_module_params_and_buffers: the
 * module's not yet synced buffers, then the parameters; torch/distributed/fsdp/
 * _init_utils.py, 2.2 - 2.5). */
static void wrap_unit(struct wrap *w, const struct unit *u)
{
    uint32_t moved[UNIT_MAX];
    uint64_t sum = 0;
    for (uint32_t i = 0; i < u->n; i++) {
        moved[i] = alloc_or_fail(w, u->bytes[i]);
        sum += u->bytes[i];
    }
    const uint32_t nb = u->table ? 2 : 0;
    for (uint32_t i = 0; i < nb; i++)
        alloc_or_fail(w, u->table);
    if (w->sync) {
        struct unit states = {{u->table, u->table}, nb, 0};
        bool full = false;
        for (uint32_t i = 0; i < u->n; i++)
            unit_add(&states, u->bytes[i], &full);
        w->failed |= full;
        sync_buckets(w, &states);
    }
    const uint32_t flat = alloc_or_fail(w, sum);
    const uint64_t dp = (uint64_t)w->c->dp;
    alloc_or_fail(w, (sum + dp - 1) / dp); /* the shard, kept */
    free_or_fail(w, flat);
    for (uint32_t i = 0; i < u->n; i++)
        free_or_fail(w, moved[i]);
}

/* The stored bytes of a base tensor of numel elements: trained ones in the trained dtype,
 * a quantized base's block Linears packed (their quant_state is not a parameter), the rest
 * in the frozen dtype (memmodel.h). */
static uint64_t base_bytes(const struct train_config *c, const struct tensor *t, int64_t numel)
{
    if (c->finetune == FT_FULL)
        return (uint64_t)numel * memmodel_trained_bytes(c);
    const bool packed = c->quant != QUANT_NONE && tensor_is_block_matrix(t);
    const double e = packed ? memmodel_frozen_elem_bytes(c, true) - memmodel_quant_state_bytes(c)
                            : memmodel_frozen_elem_bytes(c, false);
    return (uint64_t)((double)numel * e + 0.5);
}

/* Block `layer`'s tensors (a fused group is one allocation) into *blk; each LoRA target's
 * lora_A (r x in) and lora_B (out x r) into *blk after it (mixed units), or wrapped at once
 * as units of their own (peft's fsdp_auto_wrap_policy, which wraps them before their
 * block). Returns the index after the block's last tensor. */
static size_t block_units(struct wrap *w, const struct model_plan *p, size_t i, struct unit *blk, bool *full)
{
    const struct train_config *c = w->c;
    const uint32_t targets = c->finetune == FT_FULL ? 0 : plan_lora_targets(p, c);
    const uint64_t wt = memmodel_trained_bytes(c), r = (uint64_t)c->lora_r;
    const int32_t layer = p->tensors.t[i].layer;
    while (i < p->tensors.n && p->tensors.t[i].layer == layer) {
        const struct tensor *t = &p->tensors.t[i];
        int64_t numel = tensor_numel(t), rows = t->rows;
        size_t j = i + 1;
        for (; t->fuse > 0 && j < p->tensors.n && p->tensors.t[j].fuse == t->fuse; j++) {
            numel += tensor_numel(&p->tensors.t[j]);
            rows += p->tensors.t[j].rows;
        }
        unit_add(blk, base_bytes(c, t, numel), full);
        if (!t->bias && tensor_is_matrix(t) && (targets & TARGET_BIT(t->role))) {
            const uint64_t a = r * (uint64_t)t->cols * wt, b = (uint64_t)rows * r * wt;
            if (train_mixed_units(c)) {
                unit_add(blk, a, full);
                unit_add(blk, b, full);
            } else {
                const struct unit ua = {{a}, 1, 0}, ub = {{b}, 1, 0};
                wrap_unit(w, &ua);
                wrap_unit(w, &ub);
            }
        }
        i = j;
    }
    return i;
}

int fsdpwrap_replay(const struct model_plan *p, const struct train_config *c, bool sync_states,
                    struct fsdpwrap_result *out)
{
    /* FSDP1's flat parameters (not FSDP2's fully_shard), data parallel only; any base,
     * quantized ones too (train_fsdp1 names the regimes the side pools were measured in) */
    const uint64_t flat = FEAT_FSDP | FEAT_FSDP_FLAT;
    if ((c->features & flat) != flat || (c->features & FEAT_FSDP_MP) || c->method != METHOD_ADP ||
        c->dp < 2 || c->tp > 1)
        return -1;
    /* every unit leaves a shard; the cache holds about two units' tensors at a time */
    const size_t cap = 8 * p->tensors.n + 4096;
    allocsim_block *blocks = malloc(cap * sizeof *blocks);
    const allocsim_config cfg = {0};
    struct wrap w = {.c = c, .sync = sync_states};
    if (!blocks || allocsim_init(&w.st, &cfg, blocks, cap) != ALLOCSIM_OK) {
        free(blocks);
        return -1;
    }
    struct unit root = {{0}, 0, 0};
    bool full = false;
    for (size_t i = 0; i < p->tensors.n && !w.failed;) {
        const struct tensor *t = &p->tensors.t[i];
        if (t->layer < 0) { /* the root's: embedding, final norm, untied lm_head */
            unit_add(&root, base_bytes(c, t, tensor_numel(t)), &full);
            i++;
            continue;
        }
        struct unit blk = {{0}, 0, resident_rope_table(p, c)};
        i = block_units(&w, p, i, &blk, &full);
        wrap_unit(&w, &blk);
    }
    wrap_unit(&w, &root);
    const allocsim_stats *s = allocsim_get_stats(&w.st);
    *out = (struct fsdpwrap_result){.reserved = s->reserved, .allocated = s->allocated};
    free(blocks);
    return w.failed || full ? -1 : 0;
}

/* Each phase's floor. The wrap leaves its shards and freed blocks reserved on the default
 * stream, and reserved never shrinks without empty_cache. The cached
 * blocks serve the step's default-stream requests where they fit, so a step that asks for
 * more than the cache holds reserves what it would have without it (measured: gpu-residue's
 * cpu-init rows reserved at most 0.09 GiB more than their twins with the cache emptied).
 * What cannot go into those blocks is beside them, a floor under each phase's reserved:
 * - other streams' tensors (get_free_block matches the stream): FSDP1's gathered units on
 *   its unshard stream (the phase's comm term) and its sharded gradients, the
 *   reduce-scatter outputs of its post-backward stream (streampool.h);
 * - small requests (at most 1 MiB: get_pool hands them the small pool, whose segments the
 *   wrap's large blocks are not): LoRA's optimizer states and step temporaries, where every
 *   adapter is a unit of its own, in the share of its trained tensors that small
 *   (plan_trained_tensors). A full fine-tuning's or mixed unit's states are taken as fitting;
 * - what was allocated before the wrap and stays: a 4-bit base's QuantState tensors, which
 *   every rank keeps whole (r->whole) from the quantization on the GPU before the wrap
 *   (Answer.AI train.py load_and_quantize: `Params4bit(...).cuda(device)`, then only the
 *   packed data `.to("cpu")` or "meta", L203-207 @50efa1e), absmax tensors of at most 1 MiB
 *   each, small-pool blocks the wrap's large ones are not; their bytes in whole 2 MiB
 *   segments, a lower bound (how the loader's threads interleave them is not replayed).
 * The side pools' free parts stay beside the floor too (stream_free). */
void fsdpwrap_phases(const struct model_plan *p, const struct train_config *c, const struct resident *r,
                     struct mem_prepared *mp)
{
    struct fsdpwrap_result w;
    if (!(c->features & FEAT_WRAP_CACHE) ||
        fsdpwrap_replay(p, c, (c->features & FEAT_SYNC_STATES) != 0, &w) != 0)
        return;
    mp->wrap_reserved = w.reserved;
    mp->wrap_allocated = w.allocated;
    double small = 0.0;
    if (c->finetune != FT_FULL && !train_mixed_units(c) && r->trained > 0) {
        const double limit[2] = {(double)ALLOCSIM_SMALL_SIZE / (double)memmodel_trained_bytes(c) + 1.0, 0.0};
        double below[2], largest;
        plan_trained_tensors(p, c, (double)c->dp, limit, below, &largest);
        const double sharded = r->trained / (double)c->dp; /* r->trained is before sharding */
        small = below[0] < sharded ? below[0] / sharded : 1.0;
    }
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        const uint64_t *f = mp->fixed[ph];
        mp->wrap_floor[ph] = w.reserved + memmodel_round(f[TERM_COMM]) + memmodel_round(f[TERM_GRADS]) +
                             memmodel_round((uint64_t)(small * (double)f[TERM_OPTIMIZER])) +
                             memmodel_round(r->whole);
        const uint64_t top = mp->wrap_floor[ph] + mp->stream_free[ph];
        if (mp->phase_on[ph] && top > mp->wrap_top)
            mp->wrap_top = top;
    }
}
