/*
 * fuzz_names.c - libFuzzer target for the grammars and the agents.ini
 * pattern matcher (lib/names/names.c).
 *
 * The input is split at its first NUL into a pattern and an id (no NUL:
 * both are the whole input; the id ends at any later NUL).  Every
 * aur__valid_* grammar runs on both strings, and a set of properties must
 * hold, else abort():
 *   - aur__valid_scope and aur__utf8_len agree with an independent
 *     reference written here from the scope rule of docs/protocol.md
 *     and the Unicode table of well-formed UTF-8 byte sequences;
 *   - aur__valid_event_id agrees with a reference of the event id rule;
 *   - the grammars nest as the regexes say (builtin id = "aur." +
 *     package, raw name vs env name, package => scope, ...);
 *   - a pattern without wildcards matches exactly the equal id; "**"
 *     matches everything, "*" every dot-free id; the id with each
 *     character turned into a one-character class (or '?') matches
 *     itself; a match survives a "**." prefix / ".**" suffix on the
 *     pattern when the id grows by one segment there; without a "**"
 *     segment a match needs equal segment counts.
 *
 * Fuzzing build: see fuzz/run.sh.  With -DAUR_FUZZ_REPLAY (CMake target
 * fuzz_names_replay, CTest fuzz_names_corpus) main() replays files.
 */
#include "aur_setup.h"

#include <stdio.h>

#include "names.h"

#define FUZZ_NAME "fuzz_names"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------ */
/* reference checks                                                   */
/* ------------------------------------------------------------------ */

/*
 * Decode s as UTF-8 following the Unicode table of well-formed byte
 * sequences (first byte decides the range of the second).  Returns the
 * number of code points, or -1.  cps (may be NULL) receives up to cap of
 * them.
 */
static long ref_decode(const unsigned char *s, size_t n, uint32_t *cps,
                       size_t cap)
{
    size_t i = 0;
    long count = 0;

    while (i < n) {
        unsigned b = s[i];
        unsigned lo = 0x80, hi = 0xbf;
        size_t more;
        uint32_t cp;

        if (b <= 0x7f) {
            more = 0, cp = b;
        } else if (b >= 0xc2 && b <= 0xdf) {
            more = 1, cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
            more = 2, cp = b & 0x0f;
            if (b == 0xe0)
                lo = 0xa0;
            else if (b == 0xed)
                hi = 0x9f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            more = 3, cp = b & 0x07;
            if (b == 0xf0)
                lo = 0x90;
            else if (b == 0xf4)
                hi = 0x8f;
        } else {
            return -1;
        }
        if (n - i - 1 < more)
            return -1;
        for (size_t k = 1; k <= more; k++) {
            unsigned c = s[i + k];
            unsigned klo = k == 1 ? lo : 0x80, khi = k == 1 ? hi : 0xbf;
            if (c < klo || c > khi)
                return -1;
            cp = (cp << 6) | (c & 0x3f);
        }
        if (cps && (size_t)count < cap)
            cps[count] = cp;
        count++;
        i += more + 1;
    }
    return count;
}

/* The whitespace of the scope rule (Python str.isspace), spelled out. */
static bool ref_space(uint32_t c)
{
    static const uint32_t ws[] = {
        0x20,   0x09,   0x0a,   0x0b,   0x0c,   0x0d,   0x1c,   0x1d,
        0x1e,   0x1f,   0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002,
        0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
        0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
    };
    for (size_t i = 0; i < AUR__ARRAY_LEN(ws); i++)
        if (ws[i] == c)
            return true;
    return false;
}

static bool ref_scope(const char *s)
{
    uint32_t cps[257];
    long n = ref_decode((const unsigned char *)s, strlen(s), cps, 257);

    if (n < 1 || n > 256)
        return false;
    for (long i = 0; i < n; i++)
        if (cps[i] <= 0x1f)
            return false;
    return !ref_space(cps[0]) && !ref_space(cps[n - 1]);
}

static bool ref_event_id(const char *s)
{
    size_t n = strlen(s);

    if (n < 1 || n > 160)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || !strchr("._:-", c)))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* properties                                                         */
/* ------------------------------------------------------------------ */

static void check_string(const char *s)
{
    size_t n = strlen(s);
    bool pkg = aur__valid_package(s), raw = aur__valid_raw_name(s);
    bool env = aur__valid_env_name(s), ev = aur__valid_event_id(s);

    if (aur__valid_scope(s) != ref_scope(s))
        abort();
    if (aur__utf8_len(s, n) != ref_decode((const unsigned char *)s, n,
                                          NULL, 0))
        abort();
    if (ev != ref_event_id(s))
        abort();
    if (aur__valid_builtin_id(s) !=
        (strncmp(s, "aur.", 4) == 0 && aur__valid_package(s + 4)))
        abort();
    if (pkg && (!strchr(s, '.') || strspn(s, "abcdefghijklmnopqrstuvwxyz"
                                             "0123456789_-.") != n))
        abort();
    if (pkg && n <= 256 && !aur__valid_scope(s))
        abort();
    if (pkg && !aur__pattern_match(s, s))
        abort();
    if (raw && !strchr(s, '-') && !env)
        abort();
    if (env && s[0] != '_' && !raw)
        abort();
    if (raw && n <= 160 && !ev)
        abort();
}

static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);

    if (!s)
        abort();
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
    return s;
}

static size_t count_dots(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += *s == '.';
    return n;
}

static bool has_dstar_segment(const char *p)
{
    for (const char *seg = p;; seg++) {
        const char *dot = strchr(seg, '.');
        size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
        if (len == 2 && seg[0] == '*' && seg[1] == '*')
            return true;
        if (!dot)
            return false;
        seg = dot;
    }
}

/* id with every non-dot character c written as "[c]", or as "?" when
 * qmark is set or c would open a negated class. */
static char *literal_pattern(const char *id, bool qmark)
{
    char *p = malloc(strlen(id) * 3 + 1), *w = p;

    if (!p)
        abort();
    for (; *id; id++) {
        if (*id == '.') {
            *w++ = '.';
        } else if (qmark || *id == '!' || *id == '^') {
            *w++ = '?';
        } else {
            *w++ = '[';
            *w++ = *id;
            *w++ = ']';
        }
    }
    *w = '\0';
    return p;
}

static void check_match(const char *pat, const char *id)
{
    bool m = aur__pattern_match(pat, id);
    bool wild = aur__pattern_has_wildcard(pat);
    char *p2, *i2;

    if (wild != (strpbrk(pat, "*?[") != NULL))
        abort();
    if (!wild && m != (strcmp(pat, id) == 0))
        abort();
    if (!aur__pattern_match("**", id))
        abort();
    if (aur__pattern_match("*", id) != (strchr(id, '.') == NULL))
        abort();
    if (m && !has_dstar_segment(pat) && count_dots(pat) != count_dots(id))
        abort();

    p2 = literal_pattern(id, false);
    if (!aur__pattern_match(p2, id))
        abort();
    free(p2);
    p2 = literal_pattern(id, true);
    if (!aur__pattern_match(p2, id))
        abort();
    free(p2);

    if (m) {
        p2 = concat("**.", pat);
        i2 = concat("x.", id);
        if (!aur__pattern_match(p2, i2))
            abort();
        free(p2);
        free(i2);
        p2 = concat(pat, ".**");
        i2 = concat(id, ".y");
        if (!aur__pattern_match(p2, i2))
            abort();
        free(p2);
        free(i2);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t np = nul ? (size_t)(nul - data) : size;
    size_t ni = nul ? size - np - 1 : size;
    char *pat = malloc(np + 1), *id = malloc(ni + 1);

    if (!pat || !id)
        abort();
    memcpy(pat, data, np);
    pat[np] = '\0';
    memcpy(id, nul ? nul + 1 : data, ni);
    id[ni] = '\0';

    check_string(pat);
    check_string(id);
    check_match(pat, id);
    check_match(id, pat);
    free(pat);
    free(id);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif
