/* units.c: size parsing (see units.h). */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    double scale;
} unit_table[] = {
    {"b", 1.0},
    {"kb", 1e3},  {"mb", 1e6},  {"gb", 1e9},  {"tb", 1e12},
    {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
};

int units_parse_size(const char *s, uint64_t *bytes)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* plain decimals only: strtod would also take hex ("0x10") and exponents */
    if (errno || end == s || end != s + strspn(s, "0123456789.") || !isfinite(v) || v <= 0)
        return -1;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++) {
        if (strcasecmp(end, unit_table[i].name) != 0)
            continue;
        double b = v * unit_table[i].scale;
        if (b < 1.0 || b > (double)UNITS_MAX_BYTES)
            return -1;
        *bytes = (uint64_t)llround(b);
        return 0;
    }
    return -1;
}
