/*
 * quote_span.h - how far a run of bytes goes that a JSON string holds
 * verbatim, eight bytes at a time: the core's parser, canonical writer
 * and reply scanner ("plain": printable ASCII but '"' and '\\'), and the
 * CLI's serve answer writer ("unescaped": the same, bytes >= 0x80
 * included, as its text was checked when it came in).  Header only:
 * compiled into each binary that uses it, never exported.  Pure
 * functions; thread-safe.
 */
#ifndef AURX_QUOTE_SPAN_H
#define AURX_QUOTE_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* c ends a run: a control character, '"' or '\\', and with high a byte
 * >= 0x80 too. */
static inline bool aur__quote_stop(unsigned char c, bool high)
{
    return c < 0x20 || c == '"' || c == '\\' || (high && c >= 0x80);
}

/*
 * How many bytes of s[0..n) from the start do not end a run
 * (aur__quote_stop).  On little-endian machines a word of eight is tested
 * at once: a byte below 0x20, '"' or '\\' sets the top bit of its lane in
 * the classic less-than and zero-byte tests on 64-bit words.  With high,
 * a byte >= 0x80 ends the run too, so the tests need not mask such bytes
 * out: unmasked, they mark every one of them (x - 0x20 those from 0xa0,
 * x ^ '"' minus one the rest), and the byte's own top bit is or-ed in as
 * well, to say so plainly.  The tests can also mark a lane above one
 * truly marked, where a borrow ran on, never below, so the lowest mark is
 * the first byte that ends the run: a string shorter than a word costs
 * one word.  The tail is tested a byte at a time.
 */
static inline size_t aur__quote_span(const unsigned char *s, size_t n,
                                     bool high)
{
    size_t i = 0;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                           \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t one = 0x0101010101010101u, top = 0x8080808080808080u;

    for (; n - i >= 8; i += 8) {
        uint64_t x, q, b, m;

        memcpy(&x, s + i, 8);
        q = x ^ (one * '"');
        b = x ^ (one * '\\');
        if (high)
            m = (x | (x - one * 0x20) | (q - one) | (b - one)) & top;
        else
            m = (((x - one * 0x20) & ~x) | ((q - one) & ~q) |
                 ((b - one) & ~b)) & top;
        if (m)
            return i + (size_t)__builtin_ctzll(m) / 8;
    }
#endif
    while (i < n && !aur__quote_stop(s[i], high))
        i++;
    return i;
}

#endif
