/* gpu.h: what the sweep needs to know about one GPU model (a datasets/gpus.csv row). */
#ifndef LLMEM_GPU_H
#define LLMEM_GPU_H

#include <stdint.h>

#define GPU_NAME_MAX 64
/* PyTorch's cuBLAS workspace per handle off Hopper: ":4096:2:16:8" = 2 x 4 MiB + 8 x 16 KiB
 * (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize, since PR #89027). */
#define CUBLAS_WS_DEFAULT 8519680
/* NCCL buffers per GPU when gpus.csv does not say: 4 MiB (NCCL_BUFFSIZE) x 2 directions x 32
 * channels, the figure the model used before the per-GPU column. */
#define NCCL_BYTES_DEFAULT (UINT64_C(256) << 20)
#define GPU_PER_NODE_DEFAULT 8

struct gpu_spec {
    char name[GPU_NAME_MAX];    /* e.g. H100-SXM-80GB */
    char match[GPU_NAME_MAX];   /* lowercase substring of the CUDA device name */
    uint64_t memory_bytes;      /* total memory as CUDA reports it */
    double bf16_tflops, fp16_tflops, fp32_tflops; /* dense peak rates; 0 = unsupported */
    double mem_bw_gbs;          /* memory bandwidth, GB/s */
    double interconnect_gbs;    /* per-GPU GPU-to-GPU bandwidth within a node, GB/s */
    uint64_t context_bytes;     /* CUDA context + library workspaces (LLMem's m_base) */
    uint64_t cublas_ws_bytes;   /* PyTorch's cuBLAS workspace per handle (inside reserved) */
    uint64_t nccl_bytes;        /* NCCL buffers of one communicator per GPU (outside it) */
    double internode_gbs;       /* per-GPU network bandwidth between nodes, GB/s; 0 = unknown */
    int32_t gpus_per_node;      /* --gpus-per-node (default GPU_PER_NODE_DEFAULT) */
    double pcie_gbs;            /* GPU-host link a direction, GB/s; 0 = unknown (offload) */
    double host_mem_gbs;        /* host DRAM bandwidth of a node, GB/s; 0 = unknown */
    double fp8_tflops;          /* dense float8 tensor-core rate; 0 = none (pre-Ada) */
};

#endif
