/* mempoint.c: the batch-dependent half of the memory model (mempoint.h): one point's
 * activations, logits and buffers per phase on top of what memmodel_prepare fixed, the
 * maximum over the phases, and the sweep's peak-only path. */
#include "mempoint.h"

#include <string.h>

#include "activations.h"
#include "losspath.h"
#include "stepreplay.h"
#include "units.h"

#define MIB (UINT64_C(1) << 20)

/* What the phases hold at the optimizer step beyond the replay's resident bytes (LoRA's
 * adapters, their gradients and states), rounded as one more block. */
static uint64_t beside_replay(const struct mem_prepared *mp, uint64_t resident)
{
    const uint64_t *fw = mp->fixed[PHASE_FORWARD];
    const uint64_t held = bytes_add(bytes_add(fw[TERM_PARAMS], fw[TERM_OPTIMIZER]),
                                    mp->fixed[PHASE_BWD_FIRST][TERM_GRADS]);
    return held > resident ? memmodel_round(held - resident) : 0;
}

/* The replayed model and configuration: what both replays share. The empty-cache loop's
 * replay (stepreplay_run) takes it as it is (no autocast, SDPA, foreach AdamW). */
static struct stepreplay_shape replay_shape(const struct model_plan *p, const struct train_config *c,
                                            const struct mem_prepared *mp)
{
    const struct model_spec *m = &p->spec;
    const bool full = c->finetune == FT_FULL;
    const bool q4 = !full && (c->quant == QUANT_NF4 || c->quant == QUANT_NF4_DQ);
    return (struct stepreplay_shape){
        .params = &p->tensors, .h = (uint64_t)m->hidden,
        .hq = (uint64_t)(m->heads * m->head_dim), .hkv = (uint64_t)(m->kv_heads * m->head_dim),
        .inter = (uint64_t)m->intermediate, .vocab = (uint64_t)m->vocab,
        .heads = (uint64_t)m->heads, .layers = (int32_t)m->layers, .ew = 2, .full = full,
        .kv_repeat = mp->kv_rep_tok && (!mp->kv_rep_padded || c->micro_batch > 1),
        .loss = losspath_select(c, m->model_type), .loss_class = losspath_class(c->precision),
        .kept = (c->features & FEAT_OUTPUTS_KEPT) != 0,
        .until_step = (c->features & FEAT_OUTPUTS_UNTIL_STEP) != 0,
        .lora_r = full ? 0 : (uint64_t)c->lora_r, .lora_targets = full ? 0 : plan_lora_targets(p, c),
        .lora16 = !full && train_lora_uncast(c),
        .dropout = !full && (c->features & FEAT_LORA_DROPOUT) != 0,
        .quant4 = q4, .nested = q4 && c->quant == QUANT_NF4_DQ,
        .quant4_input = q4 && (c->features & FEAT_BNB_INPUT_KEPT) != 0,
    };
}

/* Reserved from whole replayed steps (stepreplay.h) for a loop that empties the cache
 * every replay_window steps, plus what the replay leaves out: the resident bytes the
 * phases count beyond its weights (and gradients and states: LoRA's adapters) and the
 * cuBLAS workspaces. The phases' rounded sums stay a floor. */
static uint64_t replay_reserved(const struct model_plan *p, const struct train_config *c,
                                const struct mem_options *opt, const struct mem_prepared *mp)
{
    const struct stepreplay_shape sh = replay_shape(p, c, mp);
    struct stepreplay_result r;
    if (stepreplay_run(&sh, c->micro_batch, c->seq_len, mp->replay_window, &r) != 0)
        return 0;
    return bytes_add(bytes_add(r.reserved, beside_replay(mp, r.resident)), opt->ws_res);
}

/* Reserved from a run of whole steps (stepreplay_steps): three of c's length when the data
 * are packed (the first allocates the optimizer states, the second is the steady state, the
 * third repeats it), a measured variable-length run's own widths, or none (0) when the
 * data are variable and their widths unknown; plus what the replay leaves out (the cuBLAS
 * workspaces, beside_replay). */
static uint64_t steps_reserved(const struct model_plan *p, const struct train_config *c,
                               const struct mem_options *opt, const struct mem_prepared *mp,
                               uint32_t *steps)
{
    struct stepreplay_shape sh = replay_shape(p, c, mp);
    sh.shards = mp->replay_shards;
    sh.fsdp1 = mp->replay_fsdp1;
    sh.mixed = sh.fsdp1 && train_mixed_units(c);
    /* 16-bit shards: bf16-pure, or LoRA's frozen base (the adapters live outside the replay) */
    sh.shard16 = sh.shards && (c->precision == PREC_BF16_PURE || !sh.full);
    /* FSDP's mixed precision gathers 16-bit units: no autocast runs (FSDP2), or it finds no
     * fp32 weight to cast (FSDP1 under accelerate) but LoRA's input casts for fp32 adapters,
     * whose lora_A runs on autocast's bf16 copy (activations.c lora_own_input) */
    sh.amp = c->precision == PREC_BF16 && (!sh.shards || (sh.fsdp1 && !sh.full));
    sh.ckpt = c->grad_ckpt;
    sh.expandable = c->alloc == ALLOC_EXPANDABLE;
    sh.eager = act_eager_attn(&p->spec, c);
    if (sh.eager) /* eager attention repeats K and V whenever there are fewer KV heads */
        sh.kv_repeat = p->spec.kv_heads < p->spec.heads;
    sh.opt = c->optimizer == OPT_SGD ? STEPREPLAY_PLAIN
             : (c->features & FEAT_FUSED_OPT) ? STEPREPLAY_FUSED : STEPREPLAY_FOREACH;
    const uint32_t packed[3] = {(uint32_t)c->seq_len, (uint32_t)c->seq_len, (uint32_t)c->seq_len};
    const bool is_packed = losspath_data_shape(c) == DATA_PACKED;
    const uint32_t *w = is_packed ? packed : mp->run_w;
    const size_t n = is_packed ? 3 : mp->run_n;
    struct stepreplay_result r;
    if (!n || stepreplay_steps(&sh, c->micro_batch, w, n, &r) != 0)
        return 0;
    *steps = (uint32_t)n;
    /* FSDP: every trained byte of full fine-tuning is in the replay, of LoRA all but the
     * adapters (mixed units' block gradients are: r.grads); FSDP2's all-gather copy-in
     * stream's pool (streampool.h) or FSDP1's pre-unshard one beside it. DDP: its buckets
     * beside the replica's step */
    const uint64_t lora = sh.full ? 0 : beside_replay(mp, bytes_add(r.resident, r.grads));
    const uint64_t beside = sh.shards ? bytes_add(mp->side_pool, lora)
                                      : bytes_add(beside_replay(mp, r.resident), mp->replay_buckets);
    return bytes_add(bytes_add(r.reserved, beside), opt->ws_res);
}

/* LLMem's terms mapped onto the breakdown columns; the peak is the paper's lm_head stage. */
static void eval_llmem(const struct model_plan *p, const struct train_config *c,
                       const struct mem_options *opt, const struct mem_prepared *mp,
                       struct mem_estimate *e)
{
    struct llmem_terms t = mp->llmem;
    llmem_eval(p, c, opt->paper, &t);
    e->llmem = t;
    uint64_t *ph = e->phase[PHASE_LOSS];
    ph[TERM_BASE] = t.m_base;
    ph[TERM_ACTIVATIONS] = t.m_out;
    ph[TERM_LOGITS] = t.m_lm;
    ph[TERM_COMM] = t.m_back;
    uint64_t rest = t.peak - t.m_base - t.m_out - t.m_lm - t.m_back; /* m_p and m_os shares */
    uint64_t os_share = c->method == METHOD_SINGLE || c->method == METHOD_CDP ? t.m_os : t.m_os / (uint64_t)c->gpus;
    ph[TERM_OPTIMIZER] = os_share < rest ? os_share : rest;
    ph[TERM_PARAMS] = rest - ph[TERM_OPTIMIZER];
    e->peak_phase = PHASE_LOSS;
    e->device = t.peak;
    e->reserved = t.peak - t.m_base;
    e->allocated = e->reserved;
    e->shown = e->device;
    e->phase_reserved[PHASE_LOSS] = e->reserved;
}

/* Activations per token of each phase for one block's saved activations per token `lay`. */
static void act_coeffs(const struct mem_prepared *mp, uint64_t lay, uint64_t *act)
{
    /* blocks whose activations are held: [0] forward (pp: the first stage's micro-batches
     * in flight), [1] at the loss (pp: the last stage's one) */
    const uint64_t per_block = mp->ckpt ? mp->ckpt_tok : lay;
    const uint64_t saved = bytes_mul(per_block, (uint64_t)mp->act_layers[0]);
    const uint64_t saved_last = bytes_mul(per_block, (uint64_t)mp->act_layers[1]);
    const uint64_t recompute = bytes_add(mp->ckpt ? lay : 0, mp->bwd_tok);
    /* a loop's kept KV cache (kept_outputs): this step's from its forward on, and under
     * outputs-kept the previous step's (the same lengths) beside it during the forward */
    const uint64_t kv = mp->kept_tok;
    for (int ph = 0; ph < PHASE_COUNT; ph++) /* phases without activations of their own */
        act[ph] = 0;
    act[PHASE_FORWARD] = bytes_add(bytes_add(saved, mp->tail_fwd ? mp->tail_tok : 0), bytes_add(kv, mp->kept_prev_tok));
    act[PHASE_LOSS] = bytes_add(bytes_add(saved_last, mp->tail_tok), kv);
    act[PHASE_BWD_LAST] = bytes_add(bytes_add(saved_last, recompute), kv);
    act[PHASE_BWD_FIRST] = bytes_add(bytes_add(bytes_add(per_block, bytes_mul(per_block, (uint64_t)mp->act_extra_bwd)),
                                               recompute), kv);
    act[PHASE_OPTIMIZER] = kv;
    /* a graph the loop keeps (act_bnb_held_tok): the previous step's through this step's
     * forward and its lm_head, until model() returns; this step's from then on, its blocks'
     * part counted once where their activations are (backward of the last block); both are
     * there while validate() runs between steps */
    const uint64_t held = mp->held_tok, prev = mp->held_prev ? held : 0;
    act[PHASE_FORWARD] = bytes_add(act[PHASE_FORWARD], prev);
    act[PHASE_LOSS] = bytes_add(act[PHASE_LOSS], prev);
    act[PHASE_BWD_FIRST] = bytes_add(act[PHASE_BWD_FIRST], held - mp->held_blk_tok);
    act[PHASE_OPTIMIZER] = bytes_add(act[PHASE_OPTIMIZER], held);
    act[PHASE_EVAL] = held;
}

/* The most tokens a micro-batch may hold for memmodel_peak's phase sums to stay below 2^61
 * (half of BYTES_SAT) in plain arithmetic: each rounded term is at most its bytes plus one
 * 2 MiB segment, the loss path's share at most its largest coefficient. Bounds in double
 * with a relative margin far beyond its rounding. */
static uint64_t plain_limit(const struct mem_prepared *mp, const struct mem_seq *ms)
{
    const double cap = 0x1p61, v = (double)mp->vocab, seg = (double)(2 * MIB);
    double q = 0, fmax = 0, kmax = v; /* the logits' entries, t x vocab, are summed too */
    for (int b = 0; b < LP_BATCH_BUCKETS; b++)
        q = mp->logits_need_tok[b] > q ? mp->logits_need_tok[b] : q;
    q += mp->amp_cache ? mp->loss_fwd_tok : 0; /* memmodel_amp_cache_extra's bound */
    for (int k = 0; k < mp->nphases; k++) {
        const int ph = mp->phases[k];
        const double act = (double)(ms->act[0][ph] > ms->act[1][ph] ? ms->act[0][ph] : ms->act[1][ph]);
        /* Liger's chunk is at most a token's logits, beside its input gradient */
        const double liger = mp->liger_inc ? v * mp->liger_ea + (double)mp->liger_h * (mp->liger_ea + mp->liger_er) : 0;
        const double per = act + (double)mp->cm_tok[ph] + liger +
                           v * ((double)mp->lg_tok[ph] + q + (double)mp->pp_out_tok * (double)mp->pp_out_n);
        const double f = (double)mp->fixed_r[ph] + (double)mp->amp_cache + seg * (5.0 + (double)mp->pp_out_n);
        fmax = f > fmax ? f : fmax;
        kmax = per > kmax ? per : kmax;
    }
    if (!(q >= 0) || !(fmax < cap / 2) || !(kmax < cap))
        return 0;
    return (uint64_t)((cap / 2 - fmax) / kmax * (1 - 1e-6));
}

/* Whether phase i holds at least what phase j holds at every point, term by term: its
 * fixed bytes and every per-token coefficient at least j's (alloc_round is monotone), and
 * its share of the loss path at least j's (the loss's own, then the pipeline's kept
 * outputs at the loss and the last block's backward, then none). */
static bool phase_dominates(const struct mem_prepared *mp, const uint64_t *act, int i, int j)
{
    const int rank_i = i == PHASE_LOSS ? 2 : i == PHASE_BWD_LAST && mp->pp_out_n ? 1 : 0;
    const int rank_j = j == PHASE_LOSS ? 2 : j == PHASE_BWD_LAST && mp->pp_out_n ? 1 : 0;
    return mp->fixed_r[i] >= mp->fixed_r[j] && act[i] >= act[j] && mp->cm_tok[i] >= mp->cm_tok[j] &&
           mp->lg_tok[i] >= mp->lg_tok[j] && rank_i >= rank_j;
}

/* The phases memmodel_peak's maximum needs for activations act: those no other phase kept
 * dominates (of two equal ones, the later stays). */
static void peak_phases(const struct mem_prepared *mp, const uint64_t *act, uint8_t *list, int *n)
{
    bool out[PHASE_COUNT] = {false};
    *n = 0;
    for (int a = 0; a < mp->nphases; a++) {
        const int j = mp->phases[a];
        for (int b = 0; b < mp->nphases && !out[j]; b++) {
            const int i = mp->phases[b];
            out[j] = i != j && !out[i] && phase_dominates(mp, act, i, j);
        }
        if (!out[j])
            list[(*n)++] = (uint8_t)j;
    }
}

void memmodel_seq(const struct mem_prepared *mp, int32_t seq_len, struct mem_seq *ms)
{
    const uint64_t lay = bytes_add(mp->layer_tok, bytes_mul(mp->layer_tok_s, (uint64_t)seq_len));
    ms->seq_len = seq_len;
    act_coeffs(mp, lay, ms->act[0]);
    /* a padded batch of several samples: K and V repeated, SDPA's mask copy (act_sdpa_mask) */
    const uint64_t padded = bytes_add(mp->kv_rep_tok, bytes_mul(mp->mask_tok_s, (uint64_t)seq_len));
    act_coeffs(mp, bytes_add(lay, padded), ms->act[1]);
    ms->t_plain = plain_limit(mp, ms);
    for (int v = 0; v < 2; v++)
        peak_phases(mp, ms->act[v], ms->phases[v], &ms->nphases[v]);
}

/* Which of ms->act applies: K and V repeated before SDPA (and SDPA's mask copy), unless only
 * padded batches of several samples have them and this one holds one sample (act_kv_repeat,
 * act_sdpa_mask). */
static int seq_kv(const struct mem_prepared *mp, const struct train_config *c)
{
    return !mp->kv_rep_padded || c->micro_batch > 1;
}

/* The batch-dependent parts of one point, per phase: activations, logits and
 * communication buffers allocated, and the loss path's segments as the allocator replay
 * found them (others rounded per term). memmodel_eval keeps them all; memmodel_peak
 * computes the same sums without keeping them. */
struct point_parts {
    uint64_t act[PHASE_COUNT], lg[PHASE_COUNT], cm[PHASE_COUNT];
    uint64_t lg_res[PHASE_COUNT], lg_need[PHASE_COUNT];
};

/* What Liger's fused loss holds at the loss beyond the N x V tensors it never makes
 * (memmodel.c liger_coeffs): the lm_head input's gradient, one chunk's logits and one
 * chunk's input gradient; allocated, or each rounded as the allocator rounds it. */
uint64_t memmodel_liger_bytes(const struct mem_prepared *mp, uint64_t t, bool rounded)
{
    if (!mp->liger_inc || !t)
        return 0;
    const uint64_t least = (t + mp->liger_inc - 1) / mp->liger_inc;
    uint64_t chunk = 1;
    while (chunk < least)
        chunk <<= 1;
    chunk = chunk < t ? chunk : t;
    const uint64_t part[3] = {bytes_mul(bytes_mul(chunk, (uint64_t)mp->vocab), mp->liger_ea),
                              bytes_mul(chunk, (uint64_t)mp->liger_h * mp->liger_ea),
                              bytes_mul(t, (uint64_t)mp->liger_h * mp->liger_er)};
    uint64_t sum = 0;
    for (int k = 0; k < 3; k++)
        sum = bytes_add(sum, rounded ? memmodel_round(part[k]) : part[k]);
    return sum;
}

/* The pipeline's kept outputs on its last stage (logits_coeffs), alive at its loss and the
 * backward of its last block: allocated, and rounded as the allocator rounds each. */
static uint64_t pp_outs(const struct mem_prepared *mp, uint64_t entries, bool rounded)
{
    const uint64_t one = bytes_mul(entries, mp->pp_out_tok);
    return bytes_mul(rounded ? memmodel_round(one) : one, (uint64_t)mp->pp_out_n);
}

uint64_t memmodel_amp_cache_extra(const struct mem_prepared *mp, uint64_t entries, unsigned bk)
{
    if (!mp->amp_cache)
        return 0;
    const uint64_t fwd = bytes_add(bytes_scale(entries, mp->loss_fwd_tok), mp->amp_cache);
    const uint64_t path = bytes_scale(entries, mp->logits_tok[bk]);
    return fwd > path ? fwd - path : 0;
}

static void point_parts(const struct train_config *c, const struct mem_prepared *mp,
                        const struct mem_seq *ms, struct point_parts *x)
{
    const uint64_t t = bytes_mul((uint64_t)c->micro_batch, (uint64_t)c->seq_len);
    /* chunked or not, every token's logits are alive at the loss (chunks stay for backward) */
    const uint64_t entries = bytes_mul(t, (uint64_t)mp->vocab);
    const uint64_t *act = ms->act[seq_kv(mp, c)];
    const uint64_t outs = pp_outs(mp, entries, false), outs_r = pp_outs(mp, entries, true);
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        x->act[ph] = bytes_mul(t, act[ph]);
        x->cm[ph] = bytes_mul(t, mp->cm_tok[ph]);
        x->lg[ph] = bytes_mul(entries, mp->lg_tok[ph]);
        x->lg_res[ph] = x->lg_need[ph] = memmodel_round(x->lg[ph]);
    }
    const unsigned bk = losspath_batch_bucket(c->micro_batch);
    const uint64_t lig = memmodel_liger_bytes(mp, t, false), lig_r = memmodel_liger_bytes(mp, t, true);
    x->lg[PHASE_LOSS] = bytes_add(bytes_add(bytes_scale(entries, mp->logits_tok[bk]), outs), lig);
    x->lg_res[PHASE_LOSS] = bytes_add(bytes_add(bytes_scale(entries, mp->logits_res_tok[bk]), outs_r), lig_r);
    x->lg_need[PHASE_LOSS] = bytes_add(bytes_add(bytes_scale(entries, mp->logits_need_tok[bk]), outs_r), lig_r);
    /* the casts autocast's cache held in the loss's forward are freed before its backward,
     * into segments of their own the loss path's tensors are too large to reuse: reserved */
    const uint64_t extra = memmodel_amp_cache_extra(mp, entries, bk);
    x->lg[PHASE_LOSS] = bytes_add(x->lg[PHASE_LOSS], extra);
    x->lg_res[PHASE_LOSS] = bytes_add(x->lg_res[PHASE_LOSS], memmodel_round(mp->amp_cache));
    x->lg_need[PHASE_LOSS] = bytes_add(x->lg_need[PHASE_LOSS], memmodel_round(extra));
    x->lg[PHASE_BWD_LAST] = bytes_add(x->lg[PHASE_BWD_LAST], outs);
    x->lg_res[PHASE_BWD_LAST] = x->lg_need[PHASE_BWD_LAST] = bytes_add(x->lg_res[PHASE_BWD_LAST], outs_r);
}

/* What a phase holds beside its logits, rounded as the allocator rounds each part. */
static uint64_t phase_others(const struct mem_options *opt, const struct mem_prepared *mp,
                             const struct point_parts *x, int ph)
{
    return bytes_add(bytes_add(mp->fixed_r[ph], memmodel_round(x->act[ph])),
                     bytes_add(memmodel_round(x->cm[ph]), opt->ws_res));
}

/* The segment the pipeline's merged result adds to the step's reserved (memmodel.c
 * pp_merge): none when a cached block of the largest FSDP unit could hold it. Allocated
 * and held stay the phases': by then the last backward has resharded the stage. */
static uint64_t merge_segment(const struct train_config *c, const struct mem_prepared *mp)
{
    if (!mp->pp_merge_tok)
        return 0;
    const uint64_t t = bytes_mul((uint64_t)c->micro_batch, (uint64_t)c->seq_len);
    const uint64_t merged = bytes_mul(bytes_mul(t, (uint64_t)mp->vocab), mp->pp_merge_tok);
    return merged > mp->pp_merge_above ? memmodel_round(merged) : 0;
}

/* Where bitsandbytes' managed-memory optimizer states live (resident.c bnb_paged_states):
 * on the GPU as far as it has room beside the reserved pool, which the caching allocator
 * keeps at its peak, and the largest parameter's at least (the step prefetches it); with
 * the GPU's size unknown, all of them. When they do not all fit, each step reads every
 * one of them, so what has no room (e->paged_moved) moves to the GPU and back at least
 * once a step. More moves if the driver evicts pages the step reads next (cyclic access
 * under LRU would move all of them); its eviction policy is not in the sources cited, so
 * the model keeps the bound (README "Paged optimizers" compares both with TTM-04, TTS-01). */
static void paged_room(const struct mem_options *opt, const struct mem_prepared *mp,
                       uint64_t used, struct mem_estimate *e)
{
    const uint64_t total = bytes_add(opt->capacity_bytes, opt->base_bytes);
    uint64_t room = !opt->capacity_bytes ? UINT64_MAX : total > used ? total - used : 0;
    room = room > mp->paged_one ? room : mp->paged_one;
    e->shown = bytes_add(used, mp->paged < room ? mp->paged : room);
    e->paged_moved = mp->paged > room ? mp->paged - room : 0;
}

void memmodel_eval(const struct model_plan *p, const struct train_config *c,
                   const struct mem_options *opt, const struct mem_prepared *mp,
                   struct mem_estimate *e)
{
    memset(e, 0, sizeof *e);
    if (mp->use_llmem) {
        eval_llmem(p, c, opt, mp, e);
        return;
    }
    struct mem_seq ms;
    struct point_parts x;
    memmodel_seq(mp, c->seq_len, &ms);
    point_parts(c, mp, &ms, &x);
    const uint64_t base = bytes_add(opt->base_bytes, mp->nccl);
    uint64_t held = 0;
    for (int ph = 0; ph < PHASE_COUNT; ph++) {
        if (!mp->phase_on[ph])
            continue;
        uint64_t *row = e->phase[ph];
        memcpy(row, mp->fixed[ph], sizeof mp->fixed[ph]);
        row[TERM_BASE] = bytes_add(base, opt->ws_alloc);
        row[TERM_ACTIVATIONS] = bytes_add(row[TERM_ACTIVATIONS], x.act[ph]);
        row[TERM_LOGITS] = x.lg[ph];
        row[TERM_COMM] = bytes_add(row[TERM_COMM], x.cm[ph]);
        uint64_t alloc = opt->ws_alloc;
        for (int k = TERM_PARAMS; k < TERM_COUNT; k++)
            alloc = bytes_add(alloc, row[k]);
        const uint64_t others = phase_others(opt, mp, &x, ph);
        /* at least what FSDP1's wrap left and what cannot use its cache (fsdpwrap.c fsdpwrap_phases) */
        uint64_t own = bytes_add(others, x.lg_res[ph]);
        own = own > mp->wrap_floor[ph] ? own : mp->wrap_floor[ph];
        e->phase_reserved[ph] = bytes_add(own, mp->stream_free[ph]);
        if (alloc > e->allocated)
            e->allocated = alloc;
        if (e->phase_reserved[ph] > e->reserved)
            e->reserved = e->phase_reserved[ph];
        if (bytes_add(others, x.lg_need[ph]) > held) {
            held = bytes_add(others, x.lg_need[ph]);
            e->peak_phase = (enum mem_phase)ph;
        }
    }
    if (mp->replay_window) { /* only rows with feature empty-cache: never the sweep's points */
        const uint64_t r = replay_reserved(p, c, opt, mp);
        e->reserved = r > e->reserved ? r : e->reserved;
    }
    if (mp->replay_steps) { /* the whole step sees what the phases, each alone, cannot */
        const uint64_t r = steps_reserved(p, c, opt, mp, &e->replayed_steps);
        if (r) {
            e->reserved_phases = e->reserved;
            e->reserved = r > e->allocated ? r : e->allocated;
            e->reserved = e->reserved > mp->wrap_top ? e->reserved : mp->wrap_top;
        }
    }
    e->step_end = merge_segment(c, mp);
    e->reserved = bytes_add(e->reserved, e->step_end);
    /* No more than the GPU holds is ever reserved: when cudaMalloc fails, the allocator
     * releases every wholly free cached segment and retries (CCA malloc:
     * release_cached_blocks), so stranded segments stop growing the reserved pool there
     * (what the run cannot release, `held`, is the floor: beyond it the run fails). */
    const uint64_t limit = opt->capacity_bytes > held ? opt->capacity_bytes : held;
    if (opt->capacity_bytes && e->reserved > limit) {
        e->reserved = limit;
        for (int ph = 0; ph < PHASE_COUNT; ph++)
            if (e->phase_reserved[ph] > e->reserved)
                e->phase_reserved[ph] = e->reserved;
    }
    e->device = bytes_add(bytes_add(held, base), mp->paged_one);
    paged_room(opt, mp, bytes_add(e->reserved, base), e);
    e->host = mp->host;
}

uint64_t memmodel_peak(const struct model_plan *p, const struct train_config *c,
                       const struct mem_options *opt, const struct mem_prepared *mp,
                       const struct mem_seq *ms)
{
    const uint64_t t = (uint64_t)c->micro_batch * (uint64_t)c->seq_len;
    if (mp->use_llmem || t > ms->t_plain) { /* t_plain: beyond it a sum could saturate */
        struct mem_estimate e;
        memmodel_eval(p, c, opt, mp, &e);
        return e.device;
    }
    /* point_parts and phase_others summed per phase as memmodel_eval sums them, but only
     * what the held peak reads, in plain arithmetic (the sweep's hot path). The cuBLAS
     * workspaces are the same in every phase, so they join the maximum afterwards. */
    const uint64_t entries = t * (uint64_t)mp->vocab;
    const int kv = seq_kv(mp, c);
    const uint64_t *act = ms->act[kv];
    const uint64_t outs_r = mp->pp_out_n ? memmodel_round(entries * mp->pp_out_tok) * (uint64_t)mp->pp_out_n : 0;
    const unsigned bk = losspath_batch_bucket(c->micro_batch);
    uint64_t loss = bytes_scale(entries, mp->logits_need_tok[bk]) + outs_r;
    if (mp->amp_cache) /* the same for all of a configuration's points, as below */
        loss += memmodel_round(memmodel_amp_cache_extra(mp, entries, bk));
    if (mp->liger_inc) /* the same for all of a configuration's points: the branch predicts */
        loss += memmodel_liger_bytes(mp, t, true);
    uint64_t held = 0;
    for (int k = 0; k < ms->nphases[kv]; k++) {
        /* the zero tests skip terms a configuration does not have (the same for all its
         * points, so the branches predict; memmodel_round(0) is 0) */
        const int ph = ms->phases[kv][k];
        uint64_t h = mp->fixed_r[ph] + memmodel_round(t * act[ph]);
        if (mp->cm_tok[ph])
            h += memmodel_round(t * mp->cm_tok[ph]);
        if (mp->lg_tok[ph])
            h += memmodel_round(entries * mp->lg_tok[ph]);
        if (ph == PHASE_LOSS)
            h += loss;
        else if (ph == PHASE_BWD_LAST)
            h += outs_r;
        held = h > held ? h : held;
    }
    return bytes_add(bytes_add(held, opt->ws_res), bytes_add(bytes_add(opt->base_bytes, mp->nccl), mp->paged_one));
}

int memmodel_replay_run(const struct model_plan *p, const struct train_config *c, const uint32_t *w,
                        size_t n, struct mem_prepared *mp)
{
    uint32_t len[LP_RUN_STEPS];
    if (n < 1 || n > LP_RUN_STEPS || c->seq_len < 1 || losspath_data_shape(c) != DATA_VARIABLE)
        return -1;
    for (size_t i = 0; i < n; i++) { /* in 1/LP_LEN_UNIT of the longest step, at least 1 */
        if (w[i] < 1 || w[i] > (uint32_t)c->seq_len)
            return -1;
        const uint64_t u = (uint64_t)w[i] * LP_LEN_UNIT / (uint64_t)c->seq_len;
        len[i] = u ? (uint32_t)u : 1;
    }
    const enum loss_path lp = losspath_select(c, p->spec.model_type);
    double res, need;
    if (lp == LOSS_LIGER || losspath_replay(lp, losspath_class(c->precision), c->alloc,
                                            (uint32_t)c->micro_batch, len, n, &res, &need) != 0)
        return -1;
    const unsigned bk = losspath_batch_bucket(c->micro_batch);
    mp->logits_res_tok[bk] = res;
    mp->logits_need_tok[bk] = need;
    mp->run_w = w;
    mp->run_n = n;
    return 0;
}

void memmodel_predict(const struct model_plan *p, const struct train_config *c,
                      const struct mem_options *opt, struct mem_estimate *e)
{
    struct mem_prepared mp;
    memmodel_prepare(p, c, opt, &mp);
    memmodel_eval(p, c, opt, &mp, e);
    if (!mp.use_llmem && p->chunk_searched > 0) { /* the LLMem decomposition, for explain */
        struct llmem_terms t;
        llmem_static(p, c, opt->base_bytes, false, &t);
        llmem_eval(p, c, false, &t);
        e->llmem = t;
    }
}
