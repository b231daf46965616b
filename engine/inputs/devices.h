/* devices.h: the GPUs of this machine as the CUDA runtime sees them, and a measurement of
 * the CUDA context overhead (LLMem's m_base). Only this module touches the CUDA runtime;
 * without it (WITH_CUDA=OFF or no toolkit) every call reports "no GPU". Having no GPU is
 * normal, not an error. */
#ifndef LLMEM_DEVICES_H
#define LLMEM_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#define DEVICE_NAME_MAX 96

struct device_info {
    int index;                  /* CUDA device ordinal (honours CUDA_VISIBLE_DEVICES) */
    char name[DEVICE_NAME_MAX]; /* e.g. "NVIDIA H100 80GB HBM3", truncated to fit */
    uint64_t total_bytes, free_bytes;
    int cc_major, cc_minor;     /* compute capability */
};

/* Number of CUDA devices without creating any context. Returns the count, 0 with a reason in
 * note when there is no usable GPU, or -1 with a message in note on an unexpected CUDA error. */
int devices_count(char *note, size_t note_len);

/* Fills up to max entries; returns the number of GPUs (0 when none), or -1 on an unexpected
 * CUDA error with a message in note. When built without CUDA, or with no driver
 * (cudaErrorInsufficientDriver) or no device (cudaErrorNoDevice), returns 0 and writes a short
 * reason to note ("built without the CUDA runtime", "no NVIDIA driver found",
 * "no CUDA device present"). Never crashes, prints nothing. The return value may exceed max;
 * only min(max, count) entries are written. Reading free memory needs a context on each device:
 * it is created and released again, so no GPU memory stays held afterwards. */
int devices_list(struct device_info *out, int max, char *note, size_t note_len);

/* Measures the CUDA context overhead on device `index`: used memory (cudaMemGetInfo
 * total - free) right after creating the context (cudaFree(0)), the floor LLMem calls m_base.
 * Memory other processes hold on that GPU is counted too. Returns 0 and sets *bytes, or -1
 * with note (no GPU, index out of range, CUDA error). */
int devices_probe_context(int index, uint64_t *bytes, char *note, size_t note_len);

#endif
