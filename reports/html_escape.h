/* html_escape.h: writing untrusted strings (model names from downloaded config.json files,
 * GPU names, rule labels, paths) into an HTML page, one function per output context
 * (OWASP XSS Prevention Cheat Sheet; c-practice.md section 6.3).
 *
 * Every function treats its input as bytes: valid UTF-8 passes through, while invalid
 * sequences and control characters become U+FFFD, so the page is always valid UTF-8 and
 * nothing the input holds can end an element, an attribute or a script block. Each
 * returns 0, or -1 when the stream reports a write error. */
#ifndef LLMEM_HTML_ESCAPE_H
#define LLMEM_HTML_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* A text node (element content, SVG <text> and <title>): & < > " ' become entities. */
int html_text(FILE *f, const char *s);

/* Like html_text, but at most max_chars characters (code points); longer text ends
 * with an ellipsis. For chart labels; the full name goes into a <title>. */
int html_text_max(FILE *f, const char *s, size_t max_chars);

/* The value of a double-quoted attribute (the caller writes the quotes). Escapes the
 * same five characters as html_text, plus tab and newlines, which attribute
 * normalisation would otherwise turn into spaces. Never use it for on*=, style= or
 * URL-valued attributes: escaping does not make those safe. */
int html_attr(FILE *f, const char *s);

/* A JSON string literal, quotes included, for a <script type="application/json"> data
 * block: JSON escaping plus < > & as \u003c \u003e \u0026 (so neither "</script" nor
 * "<!--" can appear) and U+2028/U+2029 as escapes (JavaScript line terminators). */
int html_json_string(FILE *f, const char *s);

/* Percent-encodes s as one relative URL path segment: only A-Z a-z 0-9 - . _ ~ pass
 * through. The result needs no further attribute escaping. */
int html_url_segment(FILE *f, const char *s);

/* Number of code points html_text would print for s (invalid bytes count as one). */
size_t html_utf8_len(const char *s);

#endif
