/* chunk.h: Colossal-AI Gemini's chunk-size search, as LLMem's code ships it.
 *
 * LLMem's m_p (paper eq. for m_p, reference section 4.2) rounds the transformer body's
 * parameters up to whole chunks of `cs` elements. Gemini picks cs by simulating greedy
 * in-order packing of the parameter tensors for every candidate size and keeping the one
 * that wastes least (colossalai/zero/gemini/chunk/search_utils.py). */
#ifndef LLMEM_CHUNK_H
#define LLMEM_CHUNK_H

#include <stdint.h>

#include "tensors.h"

#define CHUNK_MIN_ELEMS (INT64_C(32) << 20)    /* min_chunk_size_m = 32 (x 2^20 elements) */
#define CHUNK_SEARCH_RANGE (INT64_C(32) << 20) /* search_range_m = 32 */
#define CHUNK_INTERVAL 1024                    /* search_interval when no hidden size given */

/* The chunk size in elements for one group of parameters (all tensors of the list, each
 * fused group counted as one parameter), before rounding to the DP degree. */
int64_t chunk_search(const struct tensor_list *l);

/* Rounds a searched size up to a multiple of the DP degree (Gemini does this last). */
int64_t chunk_for_dp(int64_t searched, int dp);

#endif
