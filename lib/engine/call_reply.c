/*
 * call_reply.c - the common tools/call reply, read straight from its text.
 *
 * Nearly every reply to a call has one small shape:
 *   {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"…"}]}}
 * Building a json-c tree for it (three objects, each three allocations and
 * a 16-slot table), walking it in the sink and in map_result, and freeing
 * it was over half of a call's client instructions (docs/benchmarks.md).
 * This scanner reads that shape in one pass and yields the id and the
 * joined text: exactly what the general path (aur__json_parse, the sink,
 * call.c's map_result and success_text) makes of the same bytes.
 *
 * It accepts a strict subset of what aur__json_parse accepts, and declines
 * (false) everything else, which then takes the general path unchanged:
 * an error member, a method, isError other than false, structuredContent,
 * resultType other than "complete", a block that is not text, a key spelt
 * with an escape, a repeated key that matters, \u0000 in text, an invalid
 * byte anywhere, nesting deeper than SKIP_DEPTH.  So declining is always
 * safe; accepting must match the general path byte for byte, which
 * fuzz/fuzz_call_reply.c checks against a tree-based reference.
 *
 * Threads: pure function of its input.
 */
#include "aur_setup.h"

#include "engine.h"
#include "jsonx_int.h"
#include "call_reply.h"
#include "rpc.h"

/* Unknown members may nest this deep before the scanner declines; the
 * general path then applies the real nesting budget. */
#define SKIP_DEPTH 16

struct scan {
    const unsigned char *s;
    size_t n, i;
    char *out; /* the joined text, at most n bytes (never longer than the
                  input it is unescaped from); NULL until needed */
    size_t len;
};

static void ws(struct scan *sc)
{
    while (sc->i < sc->n && (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t' ||
                             sc->s[sc->i] == '\n' || sc->s[sc->i] == '\r'))
        sc->i++;
}

/* Skip ws, then take c if it is next. */
static bool take(struct scan *sc, unsigned char c)
{
    ws(sc);
    if (sc->i < sc->n && sc->s[sc->i] == c) {
        sc->i++;
        return true;
    }
    return false;
}

static int hex4(const unsigned char *p)
{
    int v = 0;

    for (int k = 0; k < 4; k++) {
        unsigned char c = p[k];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/*
 * The string at sc->i (its opening quote), whose first run of plain bytes
 * ends at run (string measured it).  With dst, its unescaped bytes go
 * there (room: the raw length) and *dlen says how many.  *escaped: it had
 * a backslash.  false on anything the general parser would reject, and on
 * \u0000 (json-c strings are read as C strings downstream).
 */
static bool string_rest(struct scan *sc, size_t run, char *dst,
                        size_t *dlen, bool *escaped)
{
    static const char in[] = "\"\\/bfnrt", out[] = "\"\\/\b\f\n\r\t";
    const unsigned char *s = sc->s;
    size_t i = sc->i + 1, d = 0;

    *escaped = false;
    /* Each pass takes a run and what ends it; i grows every pass. */
    for (;; run = i + aur__json_plain_span(s + i, sc->n - i)) {
        unsigned char c;

        if (dst && run > i)
            memcpy(dst + d, s + i, run - i);
        d += run - i;
        i = run;
        if (i >= sc->n)
            return false;
        c = s[i];
        if (c == '"') {
            sc->i = i + 1;
            if (dlen)
                *dlen = d;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c >= 0x80) {
            size_t k = aur__utf8_next(s + i, sc->n - i, NULL);
            if (k == 0)
                return false;
            if (dst)
                memcpy(dst + d, s + i, k);
            d += k, i += k;
            continue;
        }
        /* a backslash */
        *escaped = true;
        if (i + 1 >= sc->n)
            return false;
        if (s[i + 1] != 'u') {
            const char *k = s[i + 1] ? strchr(in, s[i + 1]) : NULL;
            if (!k)
                return false;
            if (dst)
                dst[d] = out[k - in];
            d++, i += 2;
            continue;
        }
        int cp = i + 6 <= sc->n ? hex4(s + i + 2) : -1;
        if (cp <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
            return false;
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = i + 6 <= sc->n && s[i] == '\\' && s[i + 1] == 'u'
                         ? hex4(s + i + 2)
                         : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return false;
            i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        unsigned char u[4];
        size_t k = aur__json_utf8_put(u, (unsigned)cp);
        if (dst)
            memcpy(dst + d, u, k);
        d += k;
    }
}

/* The string at sc->i, as string_rest says; a string of plain bytes only
 * (nearly every one in a reply) is taken here in one span, without the
 * call. */
static inline bool string(struct scan *sc, char *dst, size_t *dlen,
                          bool *escaped)
{
    size_t i = sc->i + 1, run = i + aur__json_plain_span(sc->s + i, sc->n - i);

    if (run >= sc->n || sc->s[run] != '"')
        return string_rest(sc, run, dst, dlen, escaped);
    if (dst)
        memcpy(dst, sc->s + i, run - i);
    if (dlen)
        *dlen = run - i;
    *escaped = false;
    sc->i = run + 1;
    return true;
}

/* A member key: plain (no escapes) keys only, so they compare as bytes. */
static bool key(struct scan *sc, const unsigned char **k, size_t *klen)
{
    bool esc;
    size_t at;

    ws(sc);
    if (sc->i >= sc->n || sc->s[sc->i] != '"')
        return false;
    at = sc->i + 1;
    if (!string(sc, NULL, NULL, &esc) || esc)
        return false;
    *k = sc->s + at;
    *klen = sc->i - 1 - at;
    return take(sc, ':');
}

/* Keys and words are literals: their length is known when compiled. */
#define KEY_IS(k, n, word)                                                  \
    ((n) == sizeof(word) - 1 && memcmp((k), (word), (n)) == 0)
#define STRING_IS(sc, word) string_is((sc), (word), sizeof(word) - 1)
#define LITERAL(sc, word) literal((sc), (word), sizeof(word) - 1)

/* The plain string value word, exactly. */
static bool string_is(struct scan *sc, const char *word, size_t len)
{
    size_t at;
    bool esc;

    ws(sc);
    at = sc->i + 1;
    if (sc->i >= sc->n || sc->s[sc->i] != '"' ||
        !string(sc, NULL, NULL, &esc) || esc)
        return false;
    return sc->i - 1 - at == len && memcmp(sc->s + at, word, len) == 0;
}

static bool literal(struct scan *sc, const char *word, size_t n)
{
    if (sc->n - sc->i < n || memcmp(sc->s + sc->i, word, n) != 0)
        return false;
    sc->i += n;
    return true;
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* RFC 8259 number grammar, as aur__json_parse checks it. */
static bool number(struct scan *sc)
{
    const unsigned char *s = sc->s;
    size_t i = sc->i;

    if (i < sc->n && s[i] == '-')
        i++;
    if (i >= sc->n || !is_digit(s[i]))
        return false;
    if (s[i] == '0') {
        if (++i < sc->n && is_digit(s[i]))
            return false;
    } else {
        while (i < sc->n && is_digit(s[i]))
            i++;
    }
    if (i < sc->n && s[i] == '.') {
        if (++i >= sc->n || !is_digit(s[i]))
            return false;
        while (i < sc->n && is_digit(s[i]))
            i++;
    }
    if (i < sc->n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < sc->n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= sc->n || !is_digit(s[i]))
            return false;
        while (i < sc->n && is_digit(s[i]))
            i++;
    }
    sc->i = i;
    return true;
}

/* Any value, checked and skipped; recursion bounded by SKIP_DEPTH. */
static bool skip(struct scan *sc, int depth)
{
    bool esc;

    ws(sc);
    if (sc->i >= sc->n)
        return false;
    switch (sc->s[sc->i]) {
    case '"':
        return string(sc, NULL, NULL, &esc);
    case 't':
        return LITERAL(sc, "true");
    case 'f':
        return LITERAL(sc, "false");
    case 'n':
        return LITERAL(sc, "null");
    case '[':
        if (depth >= SKIP_DEPTH)
            return false;
        sc->i++;
        if (take(sc, ']'))
            return true;
        do
            if (!skip(sc, depth + 1))
                return false;
        while (take(sc, ','));
        return take(sc, ']');
    case '{':
        if (depth >= SKIP_DEPTH)
            return false;
        sc->i++;
        if (take(sc, '}'))
            return true;
        do {
            ws(sc);
            if (sc->i >= sc->n || sc->s[sc->i] != '"' ||
                !string(sc, NULL, NULL, &esc) || !take(sc, ':') ||
                !skip(sc, depth + 1))
                return false;
        } while (take(sc, ','));
        return take(sc, '}');
    default:
        return number(sc);
    }
}

/*
 * One content block: {"type":"text","text":"…"} plus members nobody reads.
 * A non-blank text is appended to sc->out, after "\n" if it is not the
 * first (success_text's join); a blank one is taken back.
 */
static bool block(struct scan *sc)
{
    bool has_type = false, has_text = false, esc;
    size_t mark = sc->len, start = 0, tlen = 0;

    if (!take(sc, '{'))
        return false;
    if (take(sc, '}'))
        return false; /* no type: the general path explains it */
    do {
        const unsigned char *k;
        size_t kl;

        if (!key(sc, &k, &kl))
            return false;
        if (KEY_IS(k, kl, "type")) {
            if (has_type || !STRING_IS(sc, "text"))
                return false;
            has_type = true;
        } else if (KEY_IS(k, kl, "text")) {
            ws(sc);
            if (has_text || sc->i >= sc->n || sc->s[sc->i] != '"')
                return false;
            if (!sc->out && !(sc->out = malloc(sc->n + 1)))
                return false;
            start = sc->len + (sc->len ? 1 : 0);
            if (!string(sc, sc->out + start, &tlen, &esc))
                return false;
            has_text = true;
        } else if (!skip(sc, 2)) {
            return false;
        }
    } while (take(sc, ','));
    if (!take(sc, '}') || !has_type || !has_text)
        return false;
    sc->out[start + tlen] = '\0';
    if (aur__is_blank(sc->out + start)) {
        sc->len = mark;
        return true;
    }
    if (start > sc->len)
        sc->out[sc->len] = '\n';
    sc->len = start + tlen;
    return true;
}

static bool result(struct scan *sc)
{
    bool has_content = false, has_err = false, has_type = false;

    if (!take(sc, '{') || take(sc, '}'))
        return false;
    do {
        const unsigned char *k;
        size_t kl;

        if (!key(sc, &k, &kl))
            return false;
        if (KEY_IS(k, kl, "content")) {
            if (has_content || !take(sc, '['))
                return false;
            has_content = true;
            if (take(sc, ']'))
                continue;
            do
                if (!block(sc))
                    return false;
            while (take(sc, ','));
            if (!take(sc, ']'))
                return false;
        } else if (KEY_IS(k, kl, "isError")) {
            ws(sc);
            if (has_err || !LITERAL(sc, "false"))
                return false;
            has_err = true;
        } else if (KEY_IS(k, kl, "resultType")) {
            if (has_type || !STRING_IS(sc, "complete"))
                return false;
            has_type = true;
        } else if (KEY_IS(k, kl, "structuredContent")) {
            return false;
        } else if (!skip(sc, 1)) {
            return false;
        }
    } while (take(sc, ','));
    return take(sc, '}') && has_content;
}

/* A non-negative integer id of at most 18 digits (what rpc.c sends). */
static bool id_value(struct scan *sc, int64_t *id)
{
    const unsigned char *s = sc->s;
    size_t i, d = 0;
    int64_t v = 0;

    ws(sc);
    i = sc->i;
    if (i < sc->n && s[i] == '0' && i + 1 < sc->n && is_digit(s[i + 1]))
        return false;
    for (; i < sc->n && is_digit(s[i]) && d < 18; i++, d++)
        v = v * 10 + (s[i] - '0');
    if (d == 0 || (i < sc->n && (is_digit(s[i]) || s[i] == '.' ||
                                 s[i] == 'e' || s[i] == 'E')))
        return false;
    sc->i = i;
    *id = v;
    return true;
}

bool aur__call_reply_scan(const char *buf, size_t len, int64_t *id,
                          char **text, size_t *text_len)
{
    struct scan sc = {(const unsigned char *)buf, len, 0, NULL, 0};
    bool has_v = false, has_id = false, has_res = false;

    if (!take(&sc, '{') || take(&sc, '}'))
        goto decline;
    do {
        const unsigned char *k;
        size_t kl;

        if (!key(&sc, &k, &kl))
            goto decline;
        if (KEY_IS(k, kl, "jsonrpc")) {
            if (has_v || !STRING_IS(&sc, "2.0"))
                goto decline;
            has_v = true;
        } else if (KEY_IS(k, kl, "id")) {
            if (has_id || !id_value(&sc, id))
                goto decline;
            has_id = true;
        } else if (KEY_IS(k, kl, "result")) {
            if (has_res || !result(&sc))
                goto decline;
            has_res = true;
        } else if (KEY_IS(k, kl, "error") || KEY_IS(k, kl, "method")) {
            goto decline;
        } else if (!skip(&sc, 1)) {
            goto decline;
        }
    } while (take(&sc, ','));
    if (!take(&sc, '}') || !has_v || !has_id || !has_res)
        goto decline;
    ws(&sc);
    if (sc.i != sc.n)
        goto decline;
    if (!sc.out && !(sc.out = malloc(1)))
        goto decline;
    sc.out[sc.len] = '\0';
    *text = sc.out;
    *text_len = sc.len;
    return true;
decline:
    free(sc.out);
    return false;
}
