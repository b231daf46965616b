/* allocsim.h: a pure model of PyTorch's CUDA caching allocator (the native backend,
 * DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp), so that `reserved` can be
 * derived from the ordered allocations and frees of a training step instead of a factor.
 *
 * Source read: pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp at commit
 * 001074d25084fdb87a799823e395a50f5ec044d3 (the version the team's code index stores; rules
 * are cited by function name in allocsim.c). What is modelled: request rounding, the small
 * and large pools, segment sizes, best-fit reuse ordered by (size, address), splitting,
 * max_split_size, merging on free, the release-and-retry path before an out-of-memory
 * error, empty_cache, expandable segments, and the allocated/reserved statistics with
 * their peaks.
 *
 * Not modelled: more than one stream (training runs on the default stream; every block is
 * on that one), CUDA-graph private pools, record_stream events, roundup_power2_divisions,
 * garbage_collection_threshold, per_process_memory_fraction, the cudaMallocAsync backend.
 * Addresses of new segments grow monotonically: they only break ties between free blocks
 * of equal size, where real cudaMalloc addresses are not predictable.
 *
 * The simulation never allocates: the caller passes the block array it runs in. */
#ifndef LLMEM_ALLOCSIM_H
#define LLMEM_ALLOCSIM_H

#include <stddef.h>
#include <stdint.h>

/* Constants of CUDACachingAllocator.cpp (commit above), in bytes. */
#define ALLOCSIM_MIN_BLOCK UINT64_C(512)        /* kMinBlockSize */
#define ALLOCSIM_SMALL_SIZE UINT64_C(1048576)   /* kSmallSize: largest small request */
#define ALLOCSIM_SMALL_BUFFER UINT64_C(2097152) /* kSmallBuffer: small segments */
#define ALLOCSIM_LARGE_BUFFER UINT64_C(20971520) /* kLargeBuffer: 1..10 MiB requests */
#define ALLOCSIM_MIN_LARGE_ALLOC UINT64_C(10485760) /* kMinLargeAlloc */
#define ALLOCSIM_ROUND_LARGE UINT64_C(2097152)  /* kRoundLarge */

/* Largest request accepted (1 PiB). */
#define ALLOCSIM_MAX_REQUEST (UINT64_C(1) << 50)

/* Largest capacity accepted (1 EiB). */
#define ALLOCSIM_MAX_CAPACITY (UINT64_C(1) << 60)

/* The handle of a zero-byte allocation: PyTorch hands out a null pointer without touching
 * the allocator, and freeing it does nothing. */
#define ALLOCSIM_NULL_HANDLE UINT32_MAX

typedef enum {
    ALLOCSIM_OK = 0,
    ALLOCSIM_OOM,       /* out of memory after releasing the cache, as PyTorch raises it */
    ALLOCSIM_WORKSPACE, /* the caller's block array is full */
    ALLOCSIM_INVALID    /* bad argument: handle not allocated, size too large, bad config */
} allocsim_status;

typedef struct {
    uint64_t capacity;       /* bytes the allocator may reserve; 0 = unlimited */
    uint64_t max_split_size; /* max_split_size_mb in bytes; 0 = unlimited (the default) */
    int expandable;          /* expandable_segments:True */
} allocsim_config;

/* One block of a segment (allocated, cached free, or an unmapped range of an expandable
 * segment). Callers only declare arrays of it; the fields belong to allocsim.c. */
typedef struct {
    uint64_t addr, size;
    int32_t prev, next; /* neighbours in the same segment, or the free-slot chain; -1 none */
    int32_t pprev, pnext; /* neighbours in its pool's list of cached blocks; -1 none */
    uint8_t used, allocated, mapped, small, expandable;
    uint8_t pool;       /* the pool list it is on: 0 none, 1 large, 2 small */
} allocsim_block;

typedef struct {
    uint64_t allocated;      /* sum of the (rounded) sizes of blocks in use */
    uint64_t reserved;       /* sum of segment sizes (mapped pages when expandable) */
    uint64_t peak_allocated; /* highest `allocated` since init or the last reset */
    uint64_t peak_reserved;  /* highest `reserved` since init or the last reset */
    uint32_t segments;       /* live cudaMalloc segments, or live expandable segments */
    uint32_t ooms;           /* allocations that ended in ALLOCSIM_OOM */
} allocsim_stats;

typedef struct {
    allocsim_config cfg;
    allocsim_block *blocks;
    uint32_t cap;       /* slots in blocks[] */
    uint32_t hi;        /* slots ever used: scans stop here */
    uint32_t n_free;    /* unused slots */
    int32_t free_head;  /* chain of unused slots below hi */
    int32_t pool_head[3]; /* each pool's cached blocks, unordered ([1] large, [2] small) */
    uint64_t next_addr; /* where the next segment's address range starts */
    allocsim_stats stats;
} allocsim_state;

/* Pure helpers, exposed for the memory model and tests. */

/* round_size: the request rounded up to a multiple of 512 bytes (at least 512).
 * @return the block size a request of `bytes` occupies (bytes <= ALLOCSIM_MAX_REQUEST). */
uint64_t allocsim_round_size(uint64_t bytes);

/* get_allocation_size: the size of the segment cudaMalloc'd for a rounded request.
 * @return 2 MiB for size <= 1 MiB, 20 MiB below 10 MiB, else size rounded up to 2 MiB. */
uint64_t allocsim_segment_size(uint64_t rounded);

/* Sets up an empty allocator over blocks[0..n_blocks).
 * @return ALLOCSIM_OK, or ALLOCSIM_INVALID when an argument is NULL, n_blocks is 0 or above
 *         INT32_MAX, capacity is above ALLOCSIM_MAX_CAPACITY, or max_split_size is set
 *         below 20 MiB (PyTorch rejects it). */
allocsim_status allocsim_init(allocsim_state *st, const allocsim_config *cfg,
                              allocsim_block *blocks, size_t n_blocks);

/* Allocates `bytes` (torch's malloc on the default stream).
 * @return ALLOCSIM_OK with *handle set (ALLOCSIM_NULL_HANDLE when bytes is 0);
 *         ALLOCSIM_OOM when no segment fits in capacity even after releasing the cache
 *         (the cache stays released, as in PyTorch); ALLOCSIM_WORKSPACE when the block
 *         array is full (the state stays consistent, the request is not served);
 *         ALLOCSIM_INVALID when handle is NULL or bytes > ALLOCSIM_MAX_REQUEST. */
allocsim_status allocsim_alloc(allocsim_state *st, uint64_t bytes, uint32_t *handle);

/* Frees an allocation: the block returns to its pool, merged with free neighbours.
 * @return ALLOCSIM_OK, or ALLOCSIM_INVALID when handle is not an allocated block. */
allocsim_status allocsim_free(allocsim_state *st, uint32_t handle);

/* torch.cuda.empty_cache(): releases every cached segment that is not split (expandable:
 * unmaps every free whole page).
 * @return ALLOCSIM_OK, or ALLOCSIM_WORKSPACE when unmapping needed a slot that was not
 *         there (what was released stays released). */
allocsim_status allocsim_empty_cache(allocsim_state *st);

/* @return the bytes torch.cuda.empty_cache() (or the release before an out-of-memory
 *         retry) would give back now: cached segments that are not split and, with
 *         expandable segments, free whole pages. reserved minus this is what a run cannot
 *         do without at this moment. */
uint64_t allocsim_releasable(const allocsim_state *st);

/* torch.cuda.reset_peak_memory_stats(): peaks become the current values. */
void allocsim_reset_peaks(allocsim_state *st);

/* @return the statistics (never NULL for an initialised state). */
const allocsim_stats *allocsim_get_stats(const allocsim_state *st);

/* @return the size of the block behind an allocated handle (its rounded size, or more
 *         when an unsplit block was handed out), or 0 when handle is not allocated. */
uint64_t allocsim_block_size(const allocsim_state *st, uint32_t handle);

/* Recounts the blocks: allocated and reserved equal the sums over blocks, neighbours are
 * linked both ways and contiguous, allocated <= reserved <= capacity (when set).
 * @return ALLOCSIM_OK, or ALLOCSIM_INVALID when an invariant is broken. */
allocsim_status allocsim_check(const allocsim_state *st);

/* Trace driver. */
typedef enum { ALLOCSIM_EV_ALLOC, ALLOCSIM_EV_FREE } allocsim_op;

typedef struct {
    allocsim_op op;
    uint32_t id;    /* names the allocation: an alloc sets it, a free ends it */
    uint64_t bytes; /* requested bytes (alloc only) */
} allocsim_event;

typedef struct {
    allocsim_status status;  /* of the first event that failed, or ALLOCSIM_OK */
    size_t failed_event;     /* its index (n when none failed) */
    allocsim_stats stats;    /* at the end of the run, or when it stopped */
} allocsim_result;

/* The caller's memory for allocsim_run. */
typedef struct {
    allocsim_block *blocks;
    size_t n_blocks;
    uint32_t *handles; /* one per event id */
    size_t n_handles;
} allocsim_workspace;

/* Replays events[0..n) on a fresh allocator and stops at the first failure.
 * @return result->status: ALLOCSIM_OK; ALLOCSIM_OOM / ALLOCSIM_WORKSPACE as from
 *         allocsim_alloc; ALLOCSIM_INVALID for a bad config, an id >= n_handles, an alloc
 *         of an id already live or a free of an id not live. */
allocsim_status allocsim_run(const allocsim_config *cfg, const allocsim_event *events,
                             size_t n, const allocsim_workspace *ws,
                             allocsim_result *result);

#endif
