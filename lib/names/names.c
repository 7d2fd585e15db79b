/*
 * names.c - the name grammars (docs/protocol.md) and the agents.ini
 * pattern matcher (README: Configuration).  Pure functions over borrowed
 * strings; no state, so every function is thread-safe.
 *
 * The regexes of names.h are implemented as hand-written scanners: each
 * is a simple concatenation of character classes, and a scanner makes the
 * "ASCII classes, full match" rule explicit without a regex engine.
 */
#include "aur_setup.h"

#include "names.h"
#include "utf8.h"

#include <string.h>

static bool is_lower(int c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(int c) { return c >= 'A' && c <= 'Z'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return is_lower(c) || is_upper(c); }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }

/*
 * One lowercase segment [a-z][a-z0-9_-]* starting at *p; advances *p past
 * it.  False if no segment starts there.
 */
static bool lower_segment(const char **p)
{
    const char *s = *p;

    if (!is_lower((unsigned char)*s))
        return false;
    s++;
    while (is_lower((unsigned char)*s) || is_digit((unsigned char)*s) ||
           *s == '_' || *s == '-')
        s++;
    *p = s;
    return true;
}

/* Number of dot-separated lowercase segments that make up all of s, or
 * -1 if s is not exactly such a sequence. */
static long lower_dotted(const char *s)
{
    long n = 0;

    for (;;) {
        if (!lower_segment(&s))
            return -1;
        n++;
        if (*s == '\0')
            return n;
        if (*s != '.')
            return -1;
        s++;
    }
}

bool aur__valid_package(const char *s)
{
    return s && lower_dotted(s) >= 2;
}

bool aur__valid_raw_name(const char *s)
{
    if (!s || !is_alpha((unsigned char)*s))
        return false;
    for (s++; *s; s++)
        if (!is_alnum((unsigned char)*s) && *s != '_' && *s != '-')
            return false;
    return true;
}

bool aur__valid_builtin_id(const char *s)
{
    /* aur(\.seg){2,} is "aur" as its own first segment plus two more. */
    if (!s || strncmp(s, "aur.", 4) != 0)
        return false;
    return lower_dotted(s + 4) >= 2;
}

bool aur__valid_event_id(const char *s)
{
    size_t n = 1;

    if (!s || !is_alnum((unsigned char)*s))
        return false;
    for (s++; *s; s++, n++) {
        int c = (unsigned char)*s;
        if (!is_alnum(c) && c != '.' && c != '_' && c != ':' && c != '-')
            return false;
    }
    return n <= 160;
}

long aur__utf8_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    long count = 0;
    size_t i = 0;

    if (!s)
        return -1;
    while (i < n) {
        uint32_t cp;
        size_t len = aur__utf8_next(p + i, n - i, &cp);
        if (len == 0)
            return -1;
        i += len;
        count++;
    }
    return count;
}

bool aur__valid_scope(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n, i = 0;
    uint32_t cp = 0;
    long count = 0;

    if (!s || *s == '\0')
        return false;
    n = strlen(s);
    while (i < n) {
        size_t len = aur__utf8_next(p + i, n - i, &cp);
        if (len == 0 || cp < 0x20)
            return false;
        if (i == 0 && aur__py_space(cp))
            return false;
        i += len;
        if (++count > 256)
            return false;
    }
    /* cp now holds the last code point. */
    return !aur__py_space(cp);
}

/* ------------------------------------------------------------------ */
/* agents.ini patterns                                                */
/* ------------------------------------------------------------------ */

/*
 * Match the class starting at p[0] == '[' against c.  *end is set past the
 * closing ']'.  Returns -1 if the class is malformed (no closing ']' in
 * the segment, or a range whose end is below its start), else 1 / 0.
 * A ']' right after "[" or "[!" / "[^" is a literal, as in fnmatch.
 */
static int class_match(const char *p, const char *pend, int c,
                       const char **end)
{
    bool neg = false, hit = false;
    const char *q = p + 1;

    if (q < pend && (*q == '!' || *q == '^')) {
        neg = true;
        q++;
    }
    if (q < pend && *q == ']') {
        hit = hit || c == ']';
        q++;
    }
    while (q < pend && *q != ']') {
        int lo = (unsigned char)*q, hi = lo;
        if (q + 2 < pend && q[1] == '-' && q[2] != ']') {
            hi = (unsigned char)q[2];
            if (hi < lo)
                return -1;
            q += 3;
        } else {
            q++;
        }
        if (c >= lo && c <= hi)
            hit = true;
    }
    if (q >= pend)
        return -1;
    *end = q + 1;
    return hit != neg;
}

/*
 * Glob-match one pattern segment p[0..pl) against one id segment s[0..sl)
 * with '*', '?' and classes.  Classic single-backtrack-point algorithm:
 * O(pl * sl), no recursion.  Malformed classes never match.
 */
static bool segment_match(const char *p, size_t pl, const char *s, size_t sl)
{
    const char *pe = p + pl, *se = s + sl;
    const char *star_p = NULL, *star_s = NULL;

    while (s < se) {
        if (p < pe && *p == '*') {
            star_p = ++p;
            star_s = s;
            continue;
        }
        if (p < pe) {
            const char *next = p + 1;
            int ok;
            if (*p == '?') {
                ok = 1;
            } else if (*p == '[') {
                ok = class_match(p, pe, (unsigned char)*s, &next);
                if (ok < 0)
                    return false;
            } else {
                ok = *p == *s;
            }
            if (ok) {
                p = next;
                s++;
                continue;
            }
        }
        if (!star_p)
            return false;
        p = star_p;
        s = ++star_s;
    }
    while (p < pe && *p == '*')
        p++;
    return p == pe;
}

struct seg {
    const char *s;
    size_t n;
};

/* Split s on '.'; returns the number of segments written to out (at most
 * cap), or (size_t)-1 if there are more than cap. */
static size_t split_dots(const char *s, struct seg *out, size_t cap)
{
    size_t n = 0;
    const char *start = s;

    for (;; s++) {
        if (*s == '.' || *s == '\0') {
            if (n == cap)
                return (size_t)-1;
            out[n].s = start;
            out[n].n = (size_t)(s - start);
            n++;
            if (*s == '\0')
                return n;
            start = s + 1;
        }
    }
}

static size_t count_segments(const char *s)
{
    size_t n = 1;

    for (; *s; s++)
        n += *s == '.';
    return n;
}

/*
 * A segment that is exactly "**" matches ONE OR MORE whole id segments.
 * That is what the original's translation (segments joined by "\." with
 * "**" as ".*") accepts for every valid id: an id never has an empty
 * segment, so ".*" between two dots (or at an end) always spans at least
 * one segment.  Hence "aur.mcp.**" matches "aur.mcp.x.y" but not
 * "aur.mcp", and "**" alone matches every id.
 *
 * Dynamic programming over (pattern segment, id segment): O(P * I) time,
 * so a pattern with many "**" cannot blow up.
 */
bool aur__pattern_match(const char *pat, const char *id)
{
    size_t np, ni, i, j;
    struct seg *ps = NULL, *is = NULL;
    bool *row = NULL, *next = NULL, result = false;

    if (!pat || !id)
        return false;
    np = count_segments(pat);
    ni = count_segments(id);
    ps = calloc(np, sizeof *ps);
    is = calloc(ni, sizeof *is);
    row = calloc(ni + 1, sizeof *row);
    next = calloc(ni + 1, sizeof *next);
    if (!ps || !is || !row || !next)
        goto out;
    split_dots(pat, ps, np);
    split_dots(id, is, ni);

    /* row[j]: pattern segments [0, i) match id segments [0, j). */
    row[0] = true;
    for (i = 0; i < np; i++) {
        bool dstar = ps[i].n == 2 && ps[i].s[0] == '*' && ps[i].s[1] == '*';
        bool any = false;
        next[0] = false;
        for (j = 1; j <= ni; j++) {
            if (dstar) {
                /* "**" ends at j if it started right after some k < j
                 * with row[k]: i.e. row[j-1] or "**" already ran to j-1. */
                next[j] = row[j - 1] || next[j - 1];
            } else {
                next[j] = row[j - 1] &&
                          segment_match(ps[i].s, ps[i].n, is[j - 1].s,
                                        is[j - 1].n);
            }
            any = any || next[j];
        }
        memcpy(row, next, (ni + 1) * sizeof *row);
        if (!any)
            goto out;
    }
    result = row[ni];
out:
    free(ps);
    free(is);
    free(row);
    free(next);
    return result;
}

bool aur__pattern_has_wildcard(const char *pat)
{
    return pat && strpbrk(pat, "*?[") != NULL;
}
