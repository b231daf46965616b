/* devices.c: local GPUs through the CUDA runtime (linked statically, so the binary starts on
 * machines without a driver; cudart then dlopen()s libcuda.so.1 and reports why it cannot).
 *
 * The public functions validate arguments and hold the logic shared by both builds; three small
 * backends (count, query one device, measure the context) differ between the CUDA build and the
 * stub build. Backends return 1 on success, 0 for "no usable GPU" (a reason is in note) and -1
 * for an unexpected CUDA error (a message is in note). */
#include "devices.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef LLMEM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static void set_note(char *note, size_t note_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_note(char *note, size_t note_len, const char *fmt, ...)
{
    if (note == NULL || note_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, note_len, fmt, ap); /* truncation is fine for a message */
    va_end(ap);
}

#ifdef LLMEM_HAVE_CUDA

/* Copies a device name of at most src_max bytes (CUDA's buffer need not be NUL-terminated),
 * truncating to dst_len - 1 and turning anything but printable ASCII into '?', because the
 * name ends up on terminals, in JSON and in HTML reports. */
static void copy_name(char *dst, size_t dst_len, const char *src, size_t src_max)
{
    const char *end = memchr(src, '\0', src_max);
    size_t n = end ? (size_t)(end - src) : src_max;
    if (n >= dst_len)
        n = dst_len - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    dst[n] = '\0';
}

/* Error 35 covers both "no driver at all" and "driver older than this runtime"; the driver
 * version tells them apart (0 when no driver could be loaded), as PyTorch's c10/cuda does. */
static void insufficient_driver_reason(char *note, size_t note_len)
{
    int driver = 0, runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver <= 0) {
        set_note(note, note_len, "no NVIDIA driver found");
        return;
    }
    (void)cudaRuntimeGetVersion(&runtime);
    set_note(note, note_len,
             "NVIDIA driver too old: it supports CUDA %d.%d, this build needs %d.%d",
             driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
}

/* Writes the reason and returns 1 for the errors that mean "this machine has no usable GPU";
 * returns 0 for anything else. */
static int no_gpu_reason(cudaError_t err, char *note, size_t note_len)
{
    switch (err) {
    case cudaErrorNoDevice:
        set_note(note, note_len, "no CUDA device present");
        return 1;
    case cudaErrorInsufficientDriver:
        insufficient_driver_reason(note, note_len);
        return 1;
    case cudaErrorStubLibrary:
        set_note(note, note_len, "no NVIDIA driver found (only the toolkit's stub libcuda)");
        return 1;
    case cudaErrorInitializationError:
        set_note(note, note_len, "the NVIDIA driver failed to initialise");
        return 1;
    case cudaErrorSystemDriverMismatch:
        set_note(note, note_len,
                 "NVIDIA kernel module and user-space driver versions differ");
        return 1;
    case cudaErrorCompatNotSupportedOnDevice:
        set_note(note, note_len,
                 "CUDA forward compatibility is not supported on this device");
        return 1;
    default:
        return 0;
    }
}

/* Turns a failed call into the backend convention (0 = no GPU, -1 = error). Errors such as 35
 * are sticky in cudaGetLastError; clearing it keeps later calls from seeing a stale failure. */
static int cuda_failure(cudaError_t err, const char *call, char *note, size_t note_len)
{
    (void)cudaGetLastError();
    if (no_gpu_reason(err, note, note_len))
        return 0;
    set_note(note, note_len, "%s failed: %s (CUDA error %d)", call,
             cudaGetErrorString(err), (int)err);
    return -1;
}

/* Destroys the primary context this module created, so that no GPU memory (hundreds of MiB)
 * stays held while the sweep runs for minutes, possibly beside other jobs on the same GPU. */
static void release_context(void)
{
    (void)cudaDeviceReset();
    (void)cudaGetLastError();
}

static int backend_count(int *count, char *note, size_t note_len)
{
    int n = 0; /* cudaGetDeviceCount leaves it unchanged when it fails */
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess)
        return cuda_failure(err, "cudaGetDeviceCount", note, note_len);
    *count = n;
    return 1;
}

static int backend_query(int dev, struct device_info *d, char *note, size_t note_len)
{
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    cudaError_t err = cudaGetDeviceProperties(&prop, dev);
    if (err != cudaSuccess)
        return cuda_failure(err, "cudaGetDeviceProperties", note, note_len);

    d->index = dev;
    copy_name(d->name, sizeof d->name, prop.name, sizeof prop.name);
    d->total_bytes = prop.totalGlobalMem;
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;

    /* Free memory is a property of a context: cudaMemGetInfo creates one on the device. */
    size_t free_b = 0, total_b = 0;
    err = cudaSetDevice(dev);
    if (err == cudaSuccess)
        err = cudaMemGetInfo(&free_b, &total_b);
    release_context();
    if (err != cudaSuccess)
        return cuda_failure(err, "cudaMemGetInfo", note, note_len);
    d->free_bytes = free_b;
    return 1;
}

static int backend_context_used(int dev, uint64_t *bytes, char *note, size_t note_len)
{
    size_t free_b = 0, total_b = 0;
    const char *call = "cudaSetDevice";
    cudaError_t err = cudaSetDevice(dev);
    if (err == cudaSuccess) {
        call = "cudaFree(0)"; /* the documented way to force context creation */
        err = cudaFree(NULL);
    }
    if (err == cudaSuccess) {
        call = "cudaMemGetInfo";
        err = cudaMemGetInfo(&free_b, &total_b);
    }
    release_context();
    if (err != cudaSuccess)
        return cuda_failure(err, call, note, note_len);
    *bytes = total_b > free_b ? (uint64_t)(total_b - free_b) : 0;
    return 1;
}

#else /* !LLMEM_HAVE_CUDA */

static const char no_runtime[] = "built without the CUDA runtime";

static int backend_count(int *count, char *note, size_t note_len)
{
    *count = 0;
    set_note(note, note_len, "%s", no_runtime);
    return 0;
}

static int backend_query(int dev, struct device_info *d, char *note, size_t note_len)
{
    (void)dev;
    (void)d;
    set_note(note, note_len, "%s", no_runtime);
    return 0;
}

static int backend_context_used(int dev, uint64_t *bytes, char *note, size_t note_len)
{
    (void)dev;
    (void)bytes;
    set_note(note, note_len, "%s", no_runtime);
    return 0;
}

#endif /* LLMEM_HAVE_CUDA */

int devices_count(char *note, size_t note_len)
{
    int count = 0;
    int rc = backend_count(&count, note, note_len);
    if (rc <= 0)
        return rc;
    if (count <= 0) {
        set_note(note, note_len, "no CUDA device present");
        return 0;
    }
    set_note(note, note_len, "%s", "");
    return count;
}

int devices_list(struct device_info *out, int max, char *note, size_t note_len)
{
    int count = devices_count(note, note_len);
    if (count <= 0 || out == NULL)
        return count;
    for (int i = 0; i < count && i < max; i++) {
        memset(&out[i], 0, sizeof out[i]);
        int rc = backend_query(i, &out[i], note, note_len);
        if (rc <= 0)
            return rc;
    }
    return count;
}

int devices_probe_context(int index, uint64_t *bytes, char *note, size_t note_len)
{
    if (bytes == NULL) {
        set_note(note, note_len, "no place to store the result");
        return -1;
    }
    int count = devices_count(note, note_len);
    if (count <= 0)
        return -1;
    if (index < 0 || index >= count) {
        set_note(note, note_len, "no CUDA device %d (devices 0..%d present)", index,
                 count - 1);
        return -1;
    }
    return backend_context_used(index, bytes, note, note_len) == 1 ? 0 : -1;
}
