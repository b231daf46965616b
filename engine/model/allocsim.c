/* allocsim.c: PyTorch's CUDA caching allocator, rule by rule.
 *
 * Every rule cites pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp at commit
 * 001074d25084fdb87a799823e395a50f5ec044d3 ("CCA" below) by the function that holds it.
 * Blocks live in the caller's array; a pool is the set of used, unallocated, mapped slots
 * of one size class, and the ordered std::set of PyTorch is a linear scan over the slots
 * (a training step has a few hundred live blocks, so a scan is cheaper than a tree). */
#include "allocsim.h"

#include <stdbool.h>
#include <string.h>

#define NONE (-1)
#define MIB (UINT64_C(1) << 20)
/* Address space of an expandable segment when no capacity is set: larger than any request
 * (PyTorch reserves 1 1/8 of the device's memory; the device has 256 TiB of it). */
#define UNLIMITED_ADDRESS_SPACE (UINT64_C(1) << 51)
/* The model's whole virtual address space: segments beyond it fail like cudaMalloc. It
 * bounds every address and byte sum far below 2^64. */
#define ADDRESS_LIMIT (UINT64_C(1) << 62)
/* allocsim_run: an id with no live allocation. */
#define DEAD_HANDLE (UINT32_MAX - 1)

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

/* CCA round_size(): sizes below kMinBlockSize become kMinBlockSize, others are rounded up
 * to a multiple of it (roundup_power2_divisions is off by default and not modelled). */
uint64_t allocsim_round_size(uint64_t bytes)
{
    if (bytes < ALLOCSIM_MIN_BLOCK)
        return ALLOCSIM_MIN_BLOCK;
    return round_up(bytes, ALLOCSIM_MIN_BLOCK);
}

/* CCA get_allocation_size(). */
uint64_t allocsim_segment_size(uint64_t rounded)
{
    if (rounded <= ALLOCSIM_SMALL_SIZE)
        return ALLOCSIM_SMALL_BUFFER;
    if (rounded < ALLOCSIM_MIN_LARGE_ALLOC)
        return ALLOCSIM_LARGE_BUFFER;
    return round_up(rounded, ALLOCSIM_ROUND_LARGE);
}

/* ---- statistics (CCA increase_stat / decrease_stat / reset_peak_stat) ---- */

static void add_allocated(allocsim_state *st, uint64_t n)
{
    st->stats.allocated += n;
    if (st->stats.allocated > st->stats.peak_allocated)
        st->stats.peak_allocated = st->stats.allocated;
}

static void add_reserved(allocsim_state *st, uint64_t n)
{
    st->stats.reserved += n;
    if (st->stats.reserved > st->stats.peak_reserved)
        st->stats.peak_reserved = st->stats.reserved;
}

/* ---- slots ---- */

static int32_t slot_take(allocsim_state *st)
{
    int32_t i;
    if (st->free_head != NONE) {
        i = st->free_head;
        st->free_head = st->blocks[i].next;
    } else {
        i = (int32_t)st->hi++;
    }
    st->n_free--;
    memset(&st->blocks[i], 0, sizeof st->blocks[i]);
    st->blocks[i].used = 1;
    st->blocks[i].prev = st->blocks[i].next = NONE;
    st->blocks[i].pprev = st->blocks[i].pnext = NONE;
    return i;
}

/* ---- the pools' lists: each pool's cached blocks (used, free, mapped), in no order, so
 * that a lookup scans the cache rather than every slot; pool_sync after any change of a
 * block's used, allocated or mapped flag keeps them exact ---- */

static uint8_t pool_of(const allocsim_block *b)
{
    return b->used && !b->allocated && b->mapped ? (uint8_t)(1 + b->small) : 0;
}

static void pool_sync(allocsim_state *st, int32_t i)
{
    allocsim_block *b = &st->blocks[i];
    const uint8_t want = pool_of(b);
    if (want == b->pool)
        return;
    if (b->pool) {
        if (b->pprev != NONE)
            st->blocks[b->pprev].pnext = b->pnext;
        else
            st->pool_head[b->pool] = b->pnext;
        if (b->pnext != NONE)
            st->blocks[b->pnext].pprev = b->pprev;
    }
    b->pprev = b->pnext = NONE;
    if (want) {
        b->pnext = st->pool_head[want];
        if (b->pnext != NONE)
            st->blocks[b->pnext].pprev = i;
        st->pool_head[want] = i;
    }
    b->pool = want;
}

static void slot_give(allocsim_state *st, int32_t i)
{
    st->blocks[i].used = 0;
    pool_sync(st, i);
    st->blocks[i].next = st->free_head;
    st->free_head = i;
    st->n_free++;
}

/* ---- pools: ordered by (size, address) like CCA BlockComparatorSize ---- */

static bool in_pool(const allocsim_state *st, int32_t i, bool small)
{
    const allocsim_block *b = &st->blocks[i];
    return b->used && !b->allocated && b->mapped && b->small == small;
}

static bool key_less(const allocsim_block *a, uint64_t size, uint64_t addr)
{
    return a->size != size ? a->size < size : a->addr < addr;
}

/* The first pool block not below (size, addr): std::set::lower_bound. */
static int32_t pool_lower_bound(const allocsim_state *st, bool small, uint64_t size,
                                uint64_t addr)
{
    int32_t best = NONE;
    for (int32_t i = st->pool_head[1 + small]; i != NONE; i = st->blocks[i].pnext) {
        const allocsim_block *b = &st->blocks[i];
        if (key_less(b, size, addr))
            continue;
        if (best == NONE || key_less(b, st->blocks[best].size, st->blocks[best].addr))
            best = i;
    }
    return best;
}

/* The pool block just after i in (size, address) order. */
static int32_t pool_next(const allocsim_state *st, int32_t i)
{
    const allocsim_block *b = &st->blocks[i];
    return pool_lower_bound(st, b->small, b->size, b->addr + 1);
}

/* The last pool block before (size, addr), or NONE. */
static int32_t pool_prev(const allocsim_state *st, bool small, uint64_t size, uint64_t addr)
{
    int32_t best = NONE;
    for (int32_t i = st->pool_head[1 + small]; i != NONE; i = st->blocks[i].pnext) {
        const allocsim_block *b = &st->blocks[i];
        if (!key_less(b, size, addr))
            continue;
        if (best == NONE || !key_less(b, st->blocks[best].size, st->blocks[best].addr))
            best = i;
    }
    return best;
}

static uint64_t max_split(const allocsim_state *st)
{
    return st->cfg.max_split_size ? st->cfg.max_split_size : UINT64_MAX;
}

static uint64_t page_size(bool small)
{
    /* CCA find_expandable_block(): "segment_size = pool->is_small ? kSmallBuffer :
     * kLargeBuffer", i.e. 2 MiB pages for the small pool, 20 MiB for the large one. */
    return small ? ALLOCSIM_SMALL_BUFFER : ALLOCSIM_LARGE_BUFFER;
}

/* ---- reuse of a cached block ---- */

/* CCA get_free_block() expandable_size: a block followed by unmapped address space can
 * grow into it, so best-fit treats it as that much larger. */
static uint64_t expandable_size(const allocsim_state *st, int32_t i)
{
    const allocsim_block *b = &st->blocks[i];
    if (b->next != NONE && !st->blocks[b->next].mapped)
        return b->size + st->blocks[b->next].size;
    return b->size;
}

/* CCA get_free_block(): the smallest cached block that fits, then two refusals around
 * max_split_size. @return the block, or NONE. */
static int32_t get_free_block(const allocsim_state *st, bool small, uint64_t size)
{
    int32_t it = pool_lower_bound(st, small, size, 0);
    if (it == NONE)
        return NONE;
    if (st->blocks[it].expandable) {
        /* walk on to larger blocks while their expandable size is smaller */
        for (int32_t nx = pool_next(st, it);
             nx != NONE && expandable_size(st, nx) < expandable_size(st, it);
             nx = pool_next(st, it))
            it = nx;
    }
    /* "Do not return an oversized block for a large request" */
    if (size < max_split(st) && st->blocks[it].size >= max_split(st))
        return NONE;
    /* "Allow oversized block size to be rounded up but within a limit" (kLargeBuffer) */
    if (size >= max_split(st) && st->blocks[it].size >= size + ALLOCSIM_LARGE_BUFFER)
        return NONE;
    return it;
}

/* CCA should_split(): small pool or expandable segments split off any remainder of at
 * least kMinBlockSize; large blocks split only below max_split_size and when more than
 * kSmallSize would remain. */
static bool should_split(const allocsim_state *st, int32_t i, uint64_t size)
{
    uint64_t remaining = st->blocks[i].size - size;
    if (st->blocks[i].small || st->cfg.expandable)
        return remaining >= ALLOCSIM_MIN_BLOCK;
    return size < max_split(st) && remaining > ALLOCSIM_SMALL_SIZE;
}

/* CCA try_merge_blocks(): dst absorbs src when src is free and mapped like dst. */
static void try_merge(allocsim_state *st, int32_t dst, int32_t src)
{
    if (src == NONE)
        return;
    allocsim_block *d = &st->blocks[dst], *s = &st->blocks[src];
    if (s->allocated || s->mapped != d->mapped)
        return;
    if (d->prev == src) {
        d->addr = s->addr;
        d->prev = s->prev;
        if (d->prev != NONE)
            st->blocks[d->prev].next = dst;
    } else {
        d->next = s->next;
        if (d->next != NONE)
            st->blocks[d->next].prev = dst;
    }
    d->size += s->size;
    slot_give(st, src);
}

/* Keeps the first `size` bytes of block i in i and moves the rest to a new block placed
 * after it, in the same state (CCA alloc_found_block(), map_block() and unmap_block() cut
 * blocks the same way). The caller checks that a slot is free. @return the new block. */
static int32_t split_back(allocsim_state *st, int32_t i, uint64_t size)
{
    int32_t n = slot_take(st);
    allocsim_block *b = &st->blocks[i], *r = &st->blocks[n];
    r->addr = b->addr + size;
    r->size = b->size - size;
    r->small = b->small;
    r->mapped = b->mapped;
    r->expandable = b->expandable;
    r->prev = i;
    r->next = b->next;
    if (r->next != NONE)
        st->blocks[r->next].prev = n;
    b->next = n;
    b->size = size;
    pool_sync(st, n);
    return n;
}

/* ---- new memory: cudaMalloc segments ---- */

static bool fits_capacity(const allocsim_state *st, uint64_t bytes)
{
    return st->cfg.capacity == 0 || st->stats.reserved + bytes <= st->cfg.capacity;
}

/* CCA alloc_block(), cudaMalloc path: a new segment of alloc_size bytes, or OOM when the
 * device (capacity) cannot hold it. */
static allocsim_status malloc_segment(allocsim_state *st, bool small, uint64_t alloc_size,
                                      int32_t *out)
{
    if (!fits_capacity(st, alloc_size) || alloc_size > ADDRESS_LIMIT - st->next_addr)
        return ALLOCSIM_OOM;
    if (st->n_free < 1)
        return ALLOCSIM_WORKSPACE;
    int32_t n = slot_take(st);
    allocsim_block *b = &st->blocks[n];
    b->addr = st->next_addr;
    b->size = alloc_size;
    b->small = small;
    b->mapped = 1;
    pool_sync(st, n);
    st->next_addr += alloc_size;
    st->stats.segments++;
    add_reserved(st, alloc_size);
    *out = n;
    return ALLOCSIM_OK;
}

/* CCA release_block(): cudaFree of a whole cached segment. */
static void release_block(allocsim_state *st, int32_t i)
{
    st->stats.reserved -= st->blocks[i].size;
    st->stats.segments--;
    slot_give(st, i);
}

/* ---- new memory: expandable segments ---- */

static bool allocatable(const allocsim_state *st, int32_t i)
{
    return i != NONE && !st->blocks[i].allocated;
}

/* CCA find_expandable_block() has_available_address_space. */
static bool has_space(const allocsim_state *st, int32_t i, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(st, i)) {
        bytes += st->blocks[i].size;
        i = st->blocks[i].next;
    }
    return bytes >= size;
}

/* The unmapped block of a pool with the lowest address above `addr`, or NONE. */
static int32_t next_unmapped(const allocsim_state *st, bool small, uint64_t addr)
{
    int32_t best = NONE;
    for (uint32_t i = 0; i < st->hi; i++) {
        const allocsim_block *b = &st->blocks[i];
        if (!b->used || b->mapped || b->small != small || b->addr < addr)
            continue;
        if (best == NONE || b->addr < st->blocks[best].addr)
            best = (int32_t)i;
    }
    return best;
}

/* CCA find_expandable_block(): the lowest address where free plus unmapped space holds
 * `size`, else a new segment reserving 1 1/8 of the device's memory in address space. */
static allocsim_status find_expandable(allocsim_state *st, bool small, uint64_t size,
                                       int32_t *out)
{
    for (int32_t c = next_unmapped(st, small, 0); c != NONE;
         c = next_unmapped(st, small, st->blocks[c].addr + 1)) {
        int32_t start = allocatable(st, st->blocks[c].prev) ? st->blocks[c].prev : c;
        if (has_space(st, start, size)) {
            *out = start;
            return ALLOCSIM_OK;
        }
    }
    uint64_t page = page_size(small);
    uint64_t space = st->cfg.capacity ? st->cfg.capacity + st->cfg.capacity / 8
                                      : UNLIMITED_ADDRESS_SPACE;
    uint64_t addr = round_up(st->next_addr, page);
    space = round_up(space, page);
    if (space > ADDRESS_LIMIT - addr)
        return ALLOCSIM_OOM;
    if (st->n_free < 1)
        return ALLOCSIM_WORKSPACE;
    int32_t n = slot_take(st);
    allocsim_block *b = &st->blocks[n];
    b->addr = addr;
    b->size = space;
    b->small = small;
    b->expandable = 1;
    st->next_addr = b->addr + b->size;
    st->stats.segments++;
    *out = n;
    return ALLOCSIM_OK;
}

/* CCA map_block() with ExpandableSegment::map(): backs the first `size` bytes of the
 * unmapped block i with whole pages (all or none: cuMemCreate failing part way releases
 * the pages of this call), then merges it with free mapped neighbours; i stays the
 * mapped block. */
static allocsim_status map_block(allocsim_state *st, int32_t i, uint64_t size)
{
    uint64_t bytes = round_up(size, page_size(st->blocks[i].small));
    if (!fits_capacity(st, bytes))
        return ALLOCSIM_OOM;
    if (bytes < st->blocks[i].size) {
        if (st->n_free < 1)
            return ALLOCSIM_WORKSPACE;
        (void)split_back(st, i, bytes); /* the rest stays unmapped */
    }
    st->blocks[i].mapped = 1;
    pool_sync(st, i);
    try_merge(st, i, st->blocks[i].prev);
    try_merge(st, i, st->blocks[i].next);
    add_reserved(st, bytes);
    return ALLOCSIM_OK;
}

/* CCA try_allocate_expandable_block(): maps pages until the candidate holds `size`; the
 * candidate chain is free -> unmapped -> ..., each mapping merging into the next block. */
static allocsim_status alloc_expandable(allocsim_state *st, bool small, uint64_t size,
                                        int32_t *out)
{
    int32_t c;
    allocsim_status s = find_expandable(st, small, size, &c);
    if (s != ALLOCSIM_OK)
        return s;
    if (!st->blocks[c].mapped) {
        uint64_t have = st->blocks[c].size;
        s = map_block(st, c, have < size ? have : size);
        if (s != ALLOCSIM_OK)
            return s;
    }
    while (st->blocks[c].size < size) {
        int32_t nc = st->blocks[c].next;
        if (nc == NONE || st->blocks[nc].mapped)
            return ALLOCSIM_INVALID; /* has_space() guarantees free -> unmapped */
        uint64_t want = size - st->blocks[c].size;
        s = map_block(st, nc, want < st->blocks[nc].size ? want : st->blocks[nc].size);
        if (s != ALLOCSIM_OK)
            return s;
        c = nc; /* nc absorbed c */
    }
    *out = c;
    return ALLOCSIM_OK;
}

/* ExpandableSegment::unmap(): the whole pages inside a block, [*begin, *stop).
 * @return whether there is at least one. */
static bool whole_pages(const allocsim_block *b, uint64_t *begin, uint64_t *stop)
{
    uint64_t page = page_size(b->small);
    *begin = round_up(b->addr, page);
    *stop = (b->addr + b->size) / page * page;
    return *begin < *stop;
}

/* CCA unmap_block() with ExpandableSegment::unmap(): returns the whole pages inside a free
 * block to the driver; the partial pages at either end stay as free mapped blocks.
 * @return the unmapped block, or NONE when the block holds no whole page. */
static int32_t unmap_block(allocsim_state *st, int32_t i, allocsim_status *err)
{
    uint64_t addr = st->blocks[i].addr, end = addr + st->blocks[i].size;
    uint64_t begin, stop;
    if (!whole_pages(&st->blocks[i], &begin, &stop))
        return NONE;
    if (st->n_free < 2) {
        *err = ALLOCSIM_WORKSPACE;
        return NONE;
    }
    if (begin > addr)
        i = split_back(st, i, begin - addr); /* before_free keeps the old slot */
    if (stop < end)
        (void)split_back(st, i, stop - begin); /* after_free */
    st->blocks[i].mapped = 0;
    pool_sync(st, i);
    try_merge(st, i, st->blocks[i].prev);
    try_merge(st, i, st->blocks[i].next);
    st->stats.reserved -= stop - begin;
    return i;
}

/* ---- releasing the cache ---- */

/* CCA release_blocks() for one pool: cudaFree every cached segment that is not split;
 * with expandable segments, unmap every free whole page and drop a segment left with no
 * mapped page (release_expandable_segment()). */
static allocsim_status release_pool(allocsim_state *st, bool small)
{
    allocsim_status err = ALLOCSIM_OK;
    for (uint32_t k = 0; k < st->hi && err == ALLOCSIM_OK; k++) {
        int32_t i = (int32_t)k;
        if (!in_pool(st, i, small))
            continue;
        allocsim_block *b = &st->blocks[i];
        if (!b->expandable) {
            if (b->prev == NONE && b->next == NONE)
                release_block(st, i);
            continue;
        }
        int32_t u = unmap_block(st, i, &err);
        if (u != NONE && st->blocks[u].prev == NONE && st->blocks[u].next == NONE) {
            slot_give(st, u);
            st->stats.segments--;
        }
    }
    return err;
}

/* CCA release_cached_blocks(): both pools, large first. */
static allocsim_status release_cached(allocsim_state *st)
{
    allocsim_status s = release_pool(st, false);
    return s != ALLOCSIM_OK ? s : release_pool(st, true);
}

/* What release_cached() would give back now: every cached segment that is not split, and
 * with expandable segments every free whole page. */
uint64_t allocsim_releasable(const allocsim_state *st)
{
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < st->hi; k++) {
        const allocsim_block *b = &st->blocks[k];
        if (!b->used || b->allocated || !b->mapped)
            continue;
        if (!b->expandable) {
            if (b->prev == NONE && b->next == NONE)
                bytes += b->size;
            continue;
        }
        uint64_t lo, hi;
        if (whole_pages(b, &lo, &hi))
            bytes += hi - lo;
    }
    return bytes;
}

/* An unsplit cached segment of at least max_split_size that release_available() may
 * cudaFree. PyTorch assumes such blocks are unsplit (a remainder of up to 1 MiB above
 * max_split_size is possible) and asserts on expandable ones; both stop the walk here. */
static bool releasable(const allocsim_state *st, int32_t i)
{
    const allocsim_block *b = &st->blocks[i];
    return !b->expandable && b->prev == NONE && b->next == NONE;
}

/* CCA release_available_cached_blocks(): with max_split_size set, cudaFree the smallest
 * oversize cached block that covers the request, else the largest ones until enough is
 * freed. @return whether enough was released to retry. */
static bool release_available(allocsim_state *st, bool small, uint64_t size)
{
    if (st->cfg.max_split_size == 0)
        return false;
    uint64_t key = size < max_split(st) ? max_split(st) : size;
    int32_t it = pool_lower_bound(st, small, key, 0);
    if (it != NONE) {
        if (!releasable(st, it))
            return false;
        release_block(st, it);
        return true;
    }
    uint64_t released = 0;
    for (it = pool_prev(st, small, UINT64_MAX, UINT64_MAX);
         it != NONE && released < key && st->blocks[it].size >= max_split(st) &&
         releasable(st, it);
         it = pool_prev(st, small, UINT64_MAX, UINT64_MAX)) {
        released += st->blocks[it].size;
        release_block(st, it);
    }
    return released >= key;
}

/* ---- public operations ---- */

allocsim_status allocsim_init(allocsim_state *st, const allocsim_config *cfg,
                              allocsim_block *blocks, size_t n_blocks)
{
    if (!st || !cfg || !blocks || n_blocks == 0 || n_blocks > INT32_MAX)
        return ALLOCSIM_INVALID;
    /* CUDAAllocatorConfig parseMaxSplitSize(): max_split_size_mb below kLargeBuffer/1 MiB
     * (20) is rejected (">= 20" in the stored version, "> 20" in older releases). */
    if (cfg->max_split_size != 0 && cfg->max_split_size < ALLOCSIM_LARGE_BUFFER)
        return ALLOCSIM_INVALID;
    if (cfg->capacity > ALLOCSIM_MAX_CAPACITY)
        return ALLOCSIM_INVALID;
    memset(st, 0, sizeof *st);
    st->cfg = *cfg;
    st->blocks = blocks;
    st->cap = (uint32_t)n_blocks;
    st->n_free = (uint32_t)n_blocks;
    st->free_head = NONE;
    st->pool_head[0] = st->pool_head[1] = st->pool_head[2] = NONE;
    st->next_addr = ALLOCSIM_LARGE_BUFFER; /* any page-aligned start */
    return ALLOCSIM_OK;
}

/* CCA alloc_block() retry chain: new memory, else release oversize cached blocks and
 * retry, else release every unsplit cached block and retry. */
static allocsim_status new_block(allocsim_state *st, bool small, uint64_t size,
                                 int32_t *out)
{
    uint64_t alloc_size = allocsim_segment_size(size);
    allocsim_status s = ALLOCSIM_OOM;
    for (int attempt = 0; attempt < 3 && s == ALLOCSIM_OOM; attempt++) {
        if (attempt == 1 && !release_available(st, small, size))
            continue;
        if (attempt == 2) {
            allocsim_status r = release_cached(st);
            if (r != ALLOCSIM_OK)
                return r;
        }
        /* expandable segments map the rounded request, not get_allocation_size() */
        s = st->cfg.expandable ? alloc_expandable(st, small, size, out)
                               : malloc_segment(st, small, alloc_size, out);
    }
    return s;
}

allocsim_status allocsim_alloc(allocsim_state *st, uint64_t bytes, uint32_t *handle)
{
    if (!st || !handle || bytes > ALLOCSIM_MAX_REQUEST)
        return ALLOCSIM_INVALID;
    if (bytes == 0) {
        *handle = ALLOCSIM_NULL_HANDLE;
        return ALLOCSIM_OK;
    }
    uint64_t size = allocsim_round_size(bytes);
    bool small = size <= ALLOCSIM_SMALL_SIZE; /* CCA get_pool() */
    /* a split needs one slot: refuse before touching anything */
    if (st->n_free < 1)
        return ALLOCSIM_WORKSPACE;
    int32_t b = get_free_block(st, small, size);
    if (b == NONE) {
        allocsim_status s = new_block(st, small, size, &b);
        if (s == ALLOCSIM_OOM)
            st->stats.ooms++;
        if (s != ALLOCSIM_OK)
            return s;
    }
    if (should_split(st, b, size)) {
        if (st->n_free < 1)
            return ALLOCSIM_WORKSPACE;
        (void)split_back(st, b, size); /* the remainder stays cached */
    }
    st->blocks[b].allocated = 1;
    pool_sync(st, b);
    add_allocated(st, st->blocks[b].size);
    *handle = (uint32_t)b;
    return ALLOCSIM_OK;
}

static bool is_allocated(const allocsim_state *st, uint32_t h)
{
    return h < st->hi && st->blocks[h].used && st->blocks[h].allocated;
}

/* CCA free() and free_block(): back to the pool, merged with free neighbours. */
allocsim_status allocsim_free(allocsim_state *st, uint32_t handle)
{
    if (!st)
        return ALLOCSIM_INVALID;
    if (handle == ALLOCSIM_NULL_HANDLE)
        return ALLOCSIM_OK;
    if (!is_allocated(st, handle))
        return ALLOCSIM_INVALID;
    int32_t i = (int32_t)handle;
    st->blocks[i].allocated = 0;
    pool_sync(st, i);
    st->stats.allocated -= st->blocks[i].size;
    try_merge(st, i, st->blocks[i].prev);
    try_merge(st, i, st->blocks[i].next);
    return ALLOCSIM_OK;
}

/* CCA emptyCache() calls release_cached_blocks(). */
allocsim_status allocsim_empty_cache(allocsim_state *st)
{
    return st ? release_cached(st) : ALLOCSIM_INVALID;
}

void allocsim_reset_peaks(allocsim_state *st)
{
    st->stats.peak_allocated = st->stats.allocated;
    st->stats.peak_reserved = st->stats.reserved;
}

const allocsim_stats *allocsim_get_stats(const allocsim_state *st) { return &st->stats; }

uint64_t allocsim_block_size(const allocsim_state *st, uint32_t handle)
{
    return is_allocated(st, handle) ? st->blocks[handle].size : 0;
}

/* Checks one used block's links and adds it to the sums. */
static bool check_block(const allocsim_state *st, uint32_t i, uint64_t *alloc,
                        uint64_t *mapped)
{
    const allocsim_block *b = &st->blocks[i];
    if (b->size == 0 || (b->allocated && !b->mapped))
        return false;
    if (b->next != NONE) {
        const allocsim_block *n = &st->blocks[b->next];
        if ((uint32_t)b->next >= st->hi || !n->used || n->prev != (int32_t)i ||
            n->addr != b->addr + b->size || n->small != b->small)
            return false;
        /* neighbours that could merge must have been merged */
        if (!b->allocated && !n->allocated && b->mapped == n->mapped)
            return false;
    }
    if (b->prev != NONE &&
        ((uint32_t)b->prev >= st->hi || st->blocks[b->prev].next != (int32_t)i))
        return false;
    if (b->pool != pool_of(b))
        return false;
    if (b->allocated)
        *alloc += b->size;
    if (b->mapped)
        *mapped += b->size;
    return true;
}

/* Each pool list holds exactly the blocks that say they are on it, linked both ways. */
static bool check_pools(const allocsim_state *st, uint32_t listed)
{
    uint32_t n = 0;
    for (uint8_t p = 1; p <= 2; p++)
        for (int32_t i = st->pool_head[p], prev = NONE; i != NONE; prev = i, i = st->blocks[i].pnext) {
            if ((uint32_t)i >= st->hi || st->blocks[i].pool != p || st->blocks[i].pprev != prev ||
                ++n > listed)
                return false;
        }
    return n == listed;
}

allocsim_status allocsim_check(const allocsim_state *st)
{
    uint64_t alloc = 0, mapped = 0;
    uint32_t used = 0, listed = 0;
    for (uint32_t i = 0; i < st->hi; i++) {
        if (!st->blocks[i].used)
            continue;
        used++;
        listed += st->blocks[i].pool != 0;
        if (!check_block(st, i, &alloc, &mapped))
            return ALLOCSIM_INVALID;
    }
    if (!check_pools(st, listed))
        return ALLOCSIM_INVALID;
    const allocsim_stats *s = &st->stats;
    bool ok = used + st->n_free == st->cap && alloc == s->allocated &&
              mapped == s->reserved && s->allocated <= s->reserved &&
              s->peak_allocated >= s->allocated && s->peak_reserved >= s->reserved &&
              (st->cfg.capacity == 0 || s->reserved <= st->cfg.capacity);
    return ok ? ALLOCSIM_OK : ALLOCSIM_INVALID;
}

/* ---- trace driver ---- */

static allocsim_status run_event(allocsim_state *st, const allocsim_event *e,
                                 const allocsim_workspace *ws)
{
    if (e->id >= ws->n_handles)
        return ALLOCSIM_INVALID;
    uint32_t *h = &ws->handles[e->id];
    if (e->op == ALLOCSIM_EV_ALLOC) {
        if (*h != DEAD_HANDLE)
            return ALLOCSIM_INVALID;
        return allocsim_alloc(st, e->bytes, h);
    }
    if (e->op != ALLOCSIM_EV_FREE || *h == DEAD_HANDLE)
        return ALLOCSIM_INVALID;
    allocsim_status s = allocsim_free(st, *h);
    *h = DEAD_HANDLE;
    return s;
}

allocsim_status allocsim_run(const allocsim_config *cfg, const allocsim_event *events,
                             size_t n, const allocsim_workspace *ws,
                             allocsim_result *result)
{
    if (!result)
        return ALLOCSIM_INVALID;
    memset(result, 0, sizeof *result);
    result->failed_event = n;
    allocsim_state st;
    if (!ws || !ws->handles || (n && !events)) {
        result->status = ALLOCSIM_INVALID;
        return result->status;
    }
    result->status = allocsim_init(&st, cfg, ws->blocks, ws->n_blocks);
    if (result->status != ALLOCSIM_OK)
        return result->status;
    for (size_t i = 0; i < ws->n_handles; i++)
        ws->handles[i] = DEAD_HANDLE;
    for (size_t i = 0; i < n; i++) {
        allocsim_status s = run_event(&st, &events[i], ws);
        if (s != ALLOCSIM_OK) {
            result->status = s;
            result->failed_event = i;
            break;
        }
    }
    result->stats = st.stats;
    return result->status;
}
