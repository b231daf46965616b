/* gpu.h: what the sweep needs to know about one GPU model (a datasets/gpus.csv row). */
#ifndef LLMEM_GPU_H
#define LLMEM_GPU_H

#include <stdint.h>

#define GPU_NAME_MAX 64

struct gpu_spec {
    char name[GPU_NAME_MAX];    /* e.g. H100-SXM-80GB */
    char match[GPU_NAME_MAX];   /* lowercase substring of the CUDA device name */
    uint64_t memory_bytes;      /* total memory as CUDA reports it */
    double bf16_tflops, fp16_tflops, fp32_tflops; /* dense peak rates; 0 = unsupported */
    double mem_bw_gbs;          /* memory bandwidth, GB/s */
    double interconnect_gbs;    /* per-GPU GPU-to-GPU bandwidth within a node, GB/s */
    uint64_t context_bytes;     /* CUDA context + library workspaces (LLMem's m_base) */
};

#endif
