/* fuzz_values.c: the command-line value parsers: sizes, integer lists and ranges, LoRA
 * target lists and enum names. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "options.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[256];
    static struct int_list list;
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    uint64_t bytes;
    uint32_t targets;
    char back[96];
    (void)units_parse_size(s, &bytes);
    (void)options_parse_int_list(s, 1, 65536, &list);
    if (targets_parse(s, &targets) == 0)
        targets_format(targets, back, sizeof back);
    (void)method_parse(s);
    (void)precision_parse(s);
    (void)quant_parse(s);
    return 0;
}
