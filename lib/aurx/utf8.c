/*
 * utf8.c - see utf8.h.  Written by hand: the decoder is a dozen lines on
 * the JSON parser's hot path, and the libraries Debian ships (iconv, ICU,
 * glib) either allocate, depend on the locale or are far larger than the
 * rule.  The second byte's range carries the exclusions (RFC 3629 §4), so
 * overlong forms and surrogates fail on one comparison.
 */
#include "utf8.h"

#include <string.h>

size_t aur__utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char lo = 0x80, hi = 0xBF, b = s[0];
    uint32_t v;
    size_t need;

    if (b < 0x80) {
        if (cp)
            *cp = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        need = 2, v = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 3, v = b & 0x0Fu;
        if (b == 0xE0)
            lo = 0xA0; /* overlong */
        else if (b == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4, v = b & 0x07u;
        if (b == 0xF0)
            lo = 0x90; /* overlong */
        else if (b == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < need || s[1] < lo || s[1] > hi)
        return 0;
    v = v << 6 | (s[1] & 0x3Fu);
    for (size_t i = 2; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3Fu);
    }
    if (cp)
        *cp = v;
    return need;
}

/* How many bytes from the start of s[0..n) are ASCII: a word's top bits
 * first, eight bytes at a time, then the tail. */
static size_t ascii_span(const unsigned char *s, size_t n)
{
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        if (x & 0x8080808080808080u)
            break;
    }
    while (i < n && s[i] < 0x80)
        i++;
    return i;
}

bool aur__utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0, k;
    while ((i += ascii_span(s + i, n - i)) < n) {
        if (!(k = aur__utf8_next(s + i, n - i, NULL)))
            return false;
        i += k;
    }
    return true;
}

bool aur__py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) ||
           c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}
