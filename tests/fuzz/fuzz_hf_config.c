/* fuzz_hf_config.c: libFuzzer target for the HF config.json reader.
 *
 * Any input must give 0 or -1 with a terminated error, never a crash, leak or hang: the
 * Infinity/NaN pre-pass, jansson and the per-class key tables all see hostile bytes.
 * Seeds: tests/fuzz/corpus/hf_config/. */
#include <stddef.h>
#include <stdint.h>

#include "hf_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct model_spec m;
    struct input_error err;
    hf_config_parse((const char *)data, size, "fuzz.json", &m, &err);
    return 0;
}
