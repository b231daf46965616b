/* html_escape.c: context escaping for the HTML report (see html_escape.h). */
#include "html_escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define REPLACEMENT 0xFFFDu

/* Decodes one UTF-8 sequence at s (s[0] != 0). Returns the bytes consumed (at least 1)
 * and sets *cp; an invalid sequence (truncated, overlong, surrogate, above U+10FFFF)
 * consumes one byte and yields U+FFFD, the WHATWG decoder's choice. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
    uint32_t c = s[0], min;
    size_t n;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2, c &= 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, c &= 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, c &= 0x07, min = 0x10000;
    } else {
        *cp = REPLACEMENT;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) { /* also stops at the terminating NUL */
            *cp = REPLACEMENT;
            return 1;
        }
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
        *cp = REPLACEMENT;
        return 1;
    }
    *cp = c;
    return n;
}

/* C0 and C1 controls other than tab and newlines are parse errors in HTML and have no
 * business in a name: they print as U+FFFD. */
static bool is_control(uint32_t c)
{
    return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || (c >= 0x7F && c <= 0x9F);
}

static int put_utf8(FILE *f, uint32_t c)
{
    unsigned char b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (unsigned char)c, n = 1;
    } else if (c < 0x800) {
        b[0] = (unsigned char)(0xC0 | (c >> 6)), b[1] = (unsigned char)(0x80 | (c & 0x3F)), n = 2;
    } else if (c < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (c >> 12));
        b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (c >> 18));
        b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (c & 0x3F));
        n = 4;
    }
    return fwrite(b, 1, n, f) == n ? 0 : -1;
}

/* One code point in HTML text or attribute context. */
static int put_html(FILE *f, uint32_t c, bool attr)
{
    switch (c) {
    case '&':
        return fputs("&amp;", f) < 0 ? -1 : 0;
    case '<':
        return fputs("&lt;", f) < 0 ? -1 : 0;
    case '>':
        return fputs("&gt;", f) < 0 ? -1 : 0;
    case '"':
        return fputs("&quot;", f) < 0 ? -1 : 0;
    case '\'':
        return fputs("&#39;", f) < 0 ? -1 : 0;
    case '\t':
    case '\n':
    case '\r':
        if (attr)
            return fprintf(f, "&#%u;", (unsigned)c) < 0 ? -1 : 0;
        return put_utf8(f, c);
    default:
        return put_utf8(f, is_control(c) ? REPLACEMENT : c);
    }
}

static int html_escaped(FILE *f, const char *s, size_t max_chars, bool attr)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t total = html_utf8_len(s), shown = 0;
    int rc = 0;
    /* keep room for the ellipsis when the text has to be cut */
    size_t limit = total > max_chars ? (max_chars ? max_chars - 1 : 0) : total;
    while (*p && shown < limit) {
        uint32_t c;
        p += utf8_next(p, &c);
        rc |= put_html(f, c, attr);
        shown++;
    }
    if (total > max_chars)
        rc |= put_utf8(f, 0x2026);
    return rc || ferror(f) ? -1 : 0;
}

int html_text(FILE *f, const char *s)
{
    return html_escaped(f, s, SIZE_MAX, false);
}

int html_text_max(FILE *f, const char *s, size_t max_chars)
{
    return html_escaped(f, s, max_chars, false);
}

int html_attr(FILE *f, const char *s)
{
    return html_escaped(f, s, SIZE_MAX, true);
}

size_t html_utf8_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = 0;
    uint32_t c;
    while (*p) {
        p += utf8_next(p, &c);
        n++;
    }
    return n;
}

int html_json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int rc = fputc('"', f) == EOF;
    while (*p) {
        uint32_t c;
        p += utf8_next(p, &c);
        if (c == '"' || c == '\\')
            rc |= fprintf(f, "\\%c", (char)c) < 0;
        else if (c == '\n')
            rc |= fputs("\\n", f) < 0;
        else if (c == '\t')
            rc |= fputs("\\t", f) < 0;
        /* < > & would let the text close the script element or open a comment; the
         * JavaScript line terminators break JSON embedded in older JS parsers */
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x2028 || c == 0x2029 ||
                 (c >= 0x7F && c <= 0x9F))
            rc |= fprintf(f, "\\u%04x", (unsigned)c) < 0;
        else
            rc |= put_utf8(f, c);
    }
    rc |= fputc('"', f) == EOF;
    return rc || ferror(f) ? -1 : 0;
}

int html_url_segment(FILE *f, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            rc |= fputc(*p, f) == EOF;
        else
            rc |= fprintf(f, "%%%c%c", hex[*p >> 4], hex[*p & 15]) < 0;
    }
    return rc || ferror(f) ? -1 : 0;
}
