/*
 * jsonx_parse.c - the strict RFC 8259 parser of jsonx.h.
 *
 * json-c's tokener saturates integers past 64 bits and is lenient in
 * ways we do not want, so this is our own parser building json-c values.
 * It is iterative: open containers live on a heap stack bounded by
 * max_depth, so hostile nesting costs neither C stack nor more than
 * max_depth pointers.  Each container is attached to its parent as soon
 * as it is opened, so on any error freeing the root frees everything.
 *
 * Deliberate differences from Python's json.loads (the reference for
 * what we accept): a lone surrogate in a \u escape is rejected (Python
 * keeps it, but such a string is not valid Unicode and cannot be written
 * as UTF-8); an object key containing U+0000 is rejected (json-c keys are
 * C strings, and a silently truncated key could collide with another);
 * a leading UTF-8 byte order mark is rejected (as Python does for str).
 * Numbers that overflow a double (1e400) become +-inf, as in Python; the
 * canonical serializer refuses them later.
 *
 * Speed (every inbound message goes through here): plain strings (ASCII,
 * no escapes) are made straight from the input, without the scratch
 * copy, and keys of the MCP vocabulary are stored as json-c constant keys
 * pointing at the static table below, so they cost neither a strdup nor
 * a free.  Such a key lives as long as this library stays mapped.
 */
#include "aur_setup.h"

#include <limits.h>
#include <stdio.h>

#include <json-c/json.h>
#include <json-c/linkhash.h>

#include "jsonx_int.h"
#include "jsonx.h"

/* A growable byte buffer; never larger than the input it copies from. */
struct sbuf {
    char *b;
    size_t len, cap;
};

struct parser {
    const unsigned char *in; /* borrowed */
    size_t len, pos;
    size_t mem, max_mem; /* the tree's estimated heap so far, its bound */
    size_t last_mem;     /* what the scalar parse_scalar made takes */
    bool compact;        /* shrink containers as they close */
    struct sbuf key; /* the key whose value is being parsed */
    int key_idx; /* or this vocab index (-1: the key is in key) */
    bool key_plain; /* the key had no escapes */
    struct sbuf tmp; /* string values and number text */
    struct aur_error *err;
};

/*
 * Memory.  What a json-c 0.16 tree costs on the heap, counted the way
 * glibc malloc hands out chunks (8 bytes of header, 16-byte steps, 32 at
 * least).  The sizes are json-c's private structs; a later json-c that
 * changes them only makes the estimate a little off, never unbounded.
 */
#define JC_BASE 40         /* struct json_object */
#define JC_LH_TABLE 56     /* struct lh_table */
#define JC_LH_ENTRY 40     /* struct lh_entry */
#define JC_ARRAY_LIST 32   /* struct array_list */
#define JC_DEF_ENTRIES 16  /* JSON_OBJECT_DEF_HASH_ENTRIES */
#define JC_DEF_SLOTS 32    /* ARRAY_LIST_DEFAULT_SIZE */
/* Inputs at least this long get their containers shrunk to fit as they
 * close: json-c gives every object a 16-entry table (784 bytes of heap
 * for "{}" in all, 176 once shrunk) and every array 32 slots, the main
 * reason a tools/list page took 20 to 80 times its bytes.  Smaller
 * messages are transient and skip the extra allocation. */
#define COMPACT_MIN_LEN 4096

static size_t chunk(size_t n)
{
    n = (n + 8 + 15) & ~(size_t)15;
    return n < 32 ? 32 : n;
}

/* What the scalars the parser makes take (json_object_string keeps its
 * bytes inline). */
#define STRING_MEM(len) chunk(JC_BASE + 8 + (size_t)(len) + 8)
#define INT_MEM chunk(JC_BASE + 16)
#define BOOL_MEM chunk(JC_BASE + 8)

static int fail_at(struct parser *ps, size_t at, const char *what)
{
    return aur_fail(ps->err, AUR_E_PROTOCOL, 0,
                    "JSON parse error at byte %zu: %s", at, what);
}

static int no_memory(struct parser *ps)
{
    return aur_fail(ps->err, AUR_E_NOMEM, ENOMEM,
                    "out of memory while parsing JSON");
}

static int sb_put(struct parser *ps, struct sbuf *sb, const void *p,
                  size_t n)
{
    if (sb->cap - sb->len <= n) {
        size_t cap = sb->cap ? sb->cap : 64;
        char *b;

        while (cap - sb->len <= n)
            cap *= 2;
        b = realloc(sb->b, cap);
        if (!b)
            return no_memory(ps);
        sb->b = b;
        sb->cap = cap;
    }
    memcpy(sb->b + sb->len, p, n);
    sb->len += n;
    sb->b[sb->len] = '\0';
    return AUR_OK;
}

static void skip_ws(struct parser *ps)
{
    while (ps->pos < ps->len) {
        unsigned char c = ps->in[ps->pos];

        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        ps->pos++;
    }
}

static int hex4(struct parser *ps, size_t at, unsigned *out)
{
    unsigned v = 0;
    size_t i;

    if (ps->len - at < 4)
        return fail_at(ps, at, "truncated \\u escape");
    for (i = 0; i < 4; i++) {
        unsigned char c = ps->in[at + i];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return fail_at(ps, at + i, "invalid hex digit in \\u escape");
    }
    *out = v;
    return AUR_OK;
}

size_t aur__json_utf8_put(unsigned char u[4], unsigned cp)
{
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    u[0] = (unsigned char)(0xF0 | cp >> 18);
    u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static int put_code_point(struct parser *ps, struct sbuf *sb, unsigned cp)
{
    unsigned char u[4];

    return sb_put(ps, sb, u, aur__json_utf8_put(u, cp));
}

/* The escape whose backslash is at ps->pos; advances past it. */
static int parse_escape(struct parser *ps, struct sbuf *sb)
{
    static const char plain_in[] = "\"\\/bfnrt";
    static const char plain_out[] = "\"\\/\b\f\n\r\t";
    size_t at = ps->pos;
    unsigned cp, lo;
    const char *k;
    int rc;

    if (at + 1 >= ps->len)
        return fail_at(ps, at, "unterminated string");
    if (ps->in[at + 1] != 'u') {
        k = ps->in[at + 1] ? strchr(plain_in, ps->in[at + 1]) : NULL;
        if (!k)
            return fail_at(ps, at, "invalid escape in string");
        ps->pos += 2;
        return sb_put(ps, sb, &plain_out[k - plain_in], 1);
    }
    if ((rc = hex4(ps, at + 2, &cp)) != AUR_OK)
        return rc;
    ps->pos = at + 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail_at(ps, at, "lone low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (ps->len - ps->pos < 2 || ps->in[ps->pos] != '\\' ||
            ps->in[ps->pos + 1] != 'u')
            return fail_at(ps, at, "lone high surrogate in \\u escape");
        if ((rc = hex4(ps, ps->pos + 2, &lo)) != AUR_OK)
            return rc;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail_at(ps, at, "lone high surrogate in \\u escape");
        ps->pos += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return put_code_point(ps, sb, cp);
}

const unsigned char aur__json_plain_byte[256] = {
    /* 00 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 10 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 20 */ 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 30 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 40 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 50 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    /* 60 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 70 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 80 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* a0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* b0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* c0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* d0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* e0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* f0 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The end of the run of plain bytes starting at i. */
static size_t plain_run(const struct parser *ps, size_t i)
{
    const unsigned char *in = ps->in;

    while (i < ps->len && aur__json_plain_byte[in[i]])
        i++;
    return i;
}

/* The MCP vocabulary, grouped by length (see intern_key). */
static const char *const vocab[] = {
    /* 2 */ "id",
    /* 3 */ "uri",
    /* 4 */ "type", "text", "name", "code", "data", "enum",
    /* 5 */ "_meta", "tools", "error", "items", "title", "level", "tasks",
    "total",
    /* 6 */ "result", "method", "params", "cursor", "format", "logger",
    "reason",
    /* 7 */ "jsonrpc", "content", "isError", "message", "version", "$schema",
    "default", "logging", "maximum", "minimum", "prompts",
    /* 8 */ "required", "mimeType", "progress",
    /* 9 */ "arguments", "requestId", "resources", "subscribe",
    /* 10 */ "resultType", "nextCursor", "properties", "serverInfo",
    "clientInfo", "extensions",
    /* 11 */ "inputSchema", "description", "annotations", "listChanged",
    /* 12 */ "outputSchema", "capabilities", "experimental", "instructions",
    /* 13 */ "progressToken", "notifications",
    /* 14 */ "subscriptionId",
    /* 15 */ "protocolVersion",
    /* 17 */ "structuredContent", "supportedVersions",
    /* 20 */ "additionalProperties",
    /* 34 */ "io.modelcontextprotocol/serverInfo",
    "io.modelcontextprotocol/clientInfo",
    /* 38 */ "io.modelcontextprotocol/subscriptionId",
    /* 39 */ "io.modelcontextprotocol/protocolVersion",
    /* 42 */ "io.modelcontextprotocol/serverCapabilities",
    "io.modelcontextprotocol/clientCapabilities",
};
#define VOCAB_BITS 128 /* one bit per key */
_Static_assert(AUR__ARRAY_LEN(vocab) <= VOCAB_BITS, "vocab outgrew the bits");

/* The index in vocab of the key s[0..n), or -1. */
static int intern_key(const unsigned char *s, size_t n)
{
    /* [first, end) of each length in vocab. */
    static const unsigned char first[43] = {
        [2] = 0, [3] = 1, [4] = 2, [5] = 8, [6] = 16, [7] = 23, [8] = 34,
        [9] = 37, [10] = 41, [11] = 47, [12] = 51, [13] = 55, [14] = 57,
        [15] = 58, [17] = 59, [20] = 61, [34] = 62, [38] = 64, [39] = 65,
        [42] = 66};
    static const unsigned char end[43] = {
        [2] = 1, [3] = 2, [4] = 8, [5] = 16, [6] = 23, [7] = 34, [8] = 37,
        [9] = 41, [10] = 47, [11] = 51, [12] = 55, [13] = 57, [14] = 58,
        [15] = 59, [17] = 61, [20] = 62, [34] = 64, [38] = 65, [39] = 66,
        [42] = 68};

    if (n >= sizeof first)
        return -1;
    for (int i = first[n]; i < end[n]; i++)
        if (vocab[i][0] == s[0] && memcmp(s, vocab[i], n) == 0)
            return i;
    return -1;
}

/* The string whose opening quote is at ps->pos, decoded into *sb. */
static int parse_string(struct parser *ps, struct sbuf *sb)
{
    size_t run, n;
    int rc;

    sb->len = 0;
    if (sb_put(ps, sb, "", 0) != AUR_OK)
        return AUR_E_NOMEM;
    ps->pos++;
    while (ps->pos < ps->len) {
        unsigned char c = ps->in[ps->pos];

        if (c == '"') {
            ps->pos++;
            return AUR_OK;
        }
        if (c == '\\') {
            if ((rc = parse_escape(ps, sb)) != AUR_OK)
                return rc;
        } else if (c < 0x20) {
            return fail_at(ps, ps->pos, "control character in string");
        } else if (c < 0x80) {
            /* Copy a run of plain ASCII at once. */
            run = ps->pos + 1;
            while (run < ps->len && ps->in[run] >= 0x20 &&
                   ps->in[run] < 0x80 && ps->in[run] != '"' &&
                   ps->in[run] != '\\')
                run++;
            if (sb_put(ps, sb, ps->in + ps->pos, run - ps->pos) != AUR_OK)
                return AUR_E_NOMEM;
            ps->pos = run;
        } else {
            n = aur__utf8_next(ps->in + ps->pos, ps->len - ps->pos, NULL);
            if (n == 0)
                return fail_at(ps, ps->pos, "invalid UTF-8 in string");
            if (sb_put(ps, sb, ps->in + ps->pos, n) != AUR_OK)
                return AUR_E_NOMEM;
            ps->pos += n;
        }
    }
    return fail_at(ps, ps->len, "unterminated string");
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* A JSON integer without fraction or exponent, text in ps->tmp. */
static struct json_object *make_integer(struct parser *ps, bool neg)
{
    const char *d = ps->tmp.b + neg;
    uint64_t u = 0;
    bool big = false;

    for (; *d; d++) {
        unsigned v = (unsigned)(*d - '0');

        if (u > (UINT64_MAX - v) / 10) {
            big = true;
            break;
        }
        u = u * 10 + v;
    }
    if (!big && !neg)
        return u <= INT64_MAX ? json_object_new_int64((int64_t)u)
                              : json_object_new_uint64(u);
    if (!big && u <= (uint64_t)INT64_MAX + 1)
        /* -0 is the integer 0, as in Python. */
        return json_object_new_int64(u == (uint64_t)INT64_MAX + 1
                                         ? INT64_MIN
                                         : -(int64_t)u);
    /* The grammar forbids leading zeros, so the text is already the
     * normal form of the value. */
    return json_object_new_double_s(aur__json_strtod(ps->tmp.b), ps->tmp.b);
}

/* The number starting at ps->pos. */
static int parse_number(struct parser *ps, struct json_object **out)
{
    size_t start = ps->pos, p = ps->pos;
    const unsigned char *in = ps->in;
    bool neg = false, integer = true;

    if (in[p] == '-') {
        neg = true;
        p++;
    }
    if (p >= ps->len || !is_digit(in[p]))
        return fail_at(ps, p, "expected a digit");
    if (in[p] == '0') {
        p++;
        if (p < ps->len && is_digit(in[p]))
            return fail_at(ps, p - 1, "leading zero in number");
    } else {
        while (p < ps->len && is_digit(in[p]))
            p++;
    }
    if (p < ps->len && in[p] == '.') {
        integer = false;
        p++;
        if (p >= ps->len || !is_digit(in[p]))
            return fail_at(ps, p, "expected a digit after '.'");
        while (p < ps->len && is_digit(in[p]))
            p++;
    }
    if (p < ps->len && (in[p] == 'e' || in[p] == 'E')) {
        integer = false;
        p++;
        if (p < ps->len && (in[p] == '+' || in[p] == '-'))
            p++;
        if (p >= ps->len || !is_digit(in[p]))
            return fail_at(ps, p, "expected a digit in exponent");
        while (p < ps->len && is_digit(in[p]))
            p++;
    }
    if (integer && p - start - neg <= 18) {
        /* Fits int64 whatever the digits: no scratch copy (-0 is 0). */
        int64_t v = 0;

        for (size_t i = start + neg; i < p; i++)
            v = v * 10 + (in[i] - '0');
        ps->pos = p;
        *out = json_object_new_int64(neg ? -v : v);
        ps->last_mem = INT_MEM;
        return *out ? AUR_OK : no_memory(ps);
    }
    ps->tmp.len = 0;
    if (sb_put(ps, &ps->tmp, in + start, p - start) != AUR_OK)
        return AUR_E_NOMEM;
    ps->pos = p;
    *out = integer ? make_integer(ps, neg)
                   : json_object_new_double(aur__json_strtod(ps->tmp.b));
    ps->last_mem = *out ? aur__json_mem(*out) : 0;
    return *out ? AUR_OK : no_memory(ps);
}

static int parse_literal(struct parser *ps, const char *word,
                         struct json_object **out)
{
    size_t n = strlen(word);

    if (ps->len - ps->pos < n || memcmp(ps->in + ps->pos, word, n) != 0)
        return fail_at(ps, ps->pos, "unexpected character");
    ps->pos += n;
    if (word[0] == 'n') {
        *out = NULL;
        ps->last_mem = 0;
        return AUR_OK;
    }
    ps->last_mem = BOOL_MEM;
    *out = json_object_new_boolean(word[0] == 't');
    return *out ? AUR_OK : no_memory(ps);
}

/* A scalar value at ps->pos (not a container). */
static int parse_scalar(struct parser *ps, struct json_object **out)
{
    unsigned char c = ps->in[ps->pos];
    int rc;

    if (c == '"') {
        size_t end = plain_run(ps, ps->pos + 1);

        if (end < ps->len && ps->in[end] == '"' && end - ps->pos <= INT_MAX) {
            /* Nothing to decode: no scratch copy. */
            *out = json_object_new_string_len(
                (const char *)ps->in + ps->pos + 1, (int)(end - ps->pos - 1));
            ps->last_mem = STRING_MEM(end - ps->pos - 1);
            ps->pos = end + 1;
            return *out ? AUR_OK : no_memory(ps);
        }
        if ((rc = parse_string(ps, &ps->tmp)) != AUR_OK)
            return rc;
        if (ps->tmp.len > INT_MAX)
            return fail_at(ps, ps->pos, "string too long");
        *out = json_object_new_string_len(ps->tmp.b, (int)ps->tmp.len);
        ps->last_mem = STRING_MEM(ps->tmp.len);
        return *out ? AUR_OK : no_memory(ps);
    }
    if (c == '-' || is_digit(c))
        return parse_number(ps, out);
    if (c == 't')
        return parse_literal(ps, "true", out);
    if (c == 'f')
        return parse_literal(ps, "false", out);
    if (c == 'n')
        return parse_literal(ps, "null", out);
    return fail_at(ps, ps->pos, "unexpected character");
}

/* `"key" :` at the next non-blank; the key lands in ps->key. */
static int parse_key(struct parser *ps)
{
    size_t at;
    int rc;

    skip_ws(ps);
    if (ps->pos >= ps->len)
        return fail_at(ps, ps->pos, "unexpected end of input");
    at = ps->pos;
    if (ps->in[at] != '"')
        return fail_at(ps, at, "expected a string key");
    size_t end = plain_run(ps, at + 1);
    ps->key_idx = -1;
    ps->key_plain = end < ps->len && ps->in[end] == '"';
    if (ps->key_plain) {
        /* Plain: no escapes, so no U+0000 either. */
        ps->key_idx = intern_key(ps->in + at + 1, end - at - 1);
        ps->key.len = 0;
        if (ps->key_idx < 0 &&
            sb_put(ps, &ps->key, ps->in + at + 1, end - at - 1) != AUR_OK)
            return AUR_E_NOMEM;
        ps->pos = end + 1;
    } else {
        if ((rc = parse_string(ps, &ps->key)) != AUR_OK)
            return rc;
        if (memchr(ps->key.b, '\0', ps->key.len))
            return fail_at(ps, at, "object key contains U+0000");
    }
    skip_ws(ps);
    if (ps->pos >= ps->len)
        return fail_at(ps, ps->pos, "unexpected end of input");
    if (ps->in[ps->pos] != ':')
        return fail_at(ps, ps->pos, "expected ':' after object key");
    ps->pos++;
    return AUR_OK;
}

/* The smallest table json-c fills with count keys without growing it
 * (it grows before an insert that finds count >= size * LH_LOAD_FACTOR).
 * A full table is fine to read: a lookup probes at most size slots. */
static int fit_entries(int count)
{
    int n = count > 0 ? count : 1;
    while (count - 1 >= n * LH_LOAD_FACTOR)
        n++;
    return n;
}

size_t aur__json_mem(struct json_object *v)
{
    size_t m = 0;

    switch (json_object_get_type(v)) {
    case json_type_null:
        return 0;
    case json_type_boolean:
    case json_type_double:
        m = chunk(JC_BASE + 8);
        if (json_object_get_userdata(v))
            m += chunk(strlen(json_object_get_userdata(v)) + 1);
        return m;
    case json_type_int:
        return INT_MEM;
    case json_type_string:
        return STRING_MEM(json_object_get_string_len(v));
    case json_type_array: {
        struct array_list *al = json_object_get_array(v);
        size_t n = json_object_array_length(v);
        m = chunk(JC_BASE + 8) + chunk(JC_ARRAY_LIST) +
            chunk((al ? al->size : n) * sizeof(void *));
        for (size_t i = 0; i < n; i++)
            m += aur__json_mem(json_object_array_get_idx(v, i));
        return m;
    }
    case json_type_object: {
        struct lh_table *t = json_object_get_object(v);
        struct lh_entry *e;
        m = chunk(JC_BASE + 8) + chunk(JC_LH_TABLE) +
            chunk((size_t)t->size * JC_LH_ENTRY);
        for (e = lh_table_head(t); e; e = lh_entry_next(e)) {
            if (!e->k_is_constant)
                m += chunk(strlen(lh_entry_k(e)) + 1);
            m += aur__json_mem((struct json_object *)lh_entry_v(e));
        }
        return m;
    }
    }
    return m;
}

/* Charge n bytes of the tree being built; over max_mem is an error. */
static int charge(struct parser *ps, size_t n)
{
    ps->mem += n;
    if (ps->max_mem && ps->mem > ps->max_mem)
        return aur_fail(ps->err, AUR_E_LIMIT, 0,
                        "JSON value of %zu bytes needs more than %zu bytes "
                        "of memory (stopped at byte %zu)",
                        ps->len, ps->max_mem, ps->pos);
    return AUR_OK;
}

/* An open container: its full default table or slots, plus an upper
 * bound on growth per member (charged in attach) until it closes. */
#define OPEN_OBJECT_MEM                                                       \
    (chunk(JC_BASE + 8) + chunk(JC_LH_TABLE) +                                \
     chunk(JC_DEF_ENTRIES * JC_LH_ENTRY))
#define OPEN_ARRAY_MEM                                                        \
    (chunk(JC_BASE + 8) + chunk(JC_ARRAY_LIST) +                              \
     chunk(JC_DEF_SLOTS * sizeof(void *)))
/* A table never holds more than 2 / LH_LOAD_FACTOR (about 3) entries
 * per key, an array list twice its length. */
#define GROW_PER_KEY (3 * JC_LH_ENTRY)
#define GROW_PER_ITEM (2 * sizeof(void *))

/* A container closes: shrink it to fit (compact) and replace its open
 * charges by what it really holds. */
static void close_container(struct parser *ps, struct json_object *v)
{
    /* lh_table_resize is declared in json-c's public linkhash.h (0.13 to
     * 0.18) but versioned JSONC_PRIVATE in the library: no other way
     * exists to give an object a smaller table. */
    if (json_object_is_type(v, json_type_object)) {
        struct lh_table *t = json_object_get_object(v);
        int count = t->count, fit = fit_entries(count);
        size_t open = chunk(JC_DEF_ENTRIES * JC_LH_ENTRY) +
                      (size_t)count * GROW_PER_KEY;
        if (ps->compact && fit < t->size)
            (void)lh_table_resize(t, fit); /* no memory: keep it as is */
        ps->mem -= open;
        ps->mem += chunk((size_t)t->size * JC_LH_ENTRY);
    } else {
        size_t n = json_object_array_length(v);
        struct array_list *al = json_object_get_array(v);
        size_t open = chunk(JC_DEF_SLOTS * sizeof(void *)) + n * GROW_PER_ITEM;
        if (ps->compact && al && al->size > (n ? n : 1))
            (void)json_object_array_shrink(v, 0);
        ps->mem -= open;
        ps->mem += chunk((al ? al->size : n) * sizeof(void *));
    }
}

/*
 * Which keys an open object already has, so json-c need not look a key up
 * before adding it: one bit per vocab key, and whether any key came with
 * escapes (it may spell a vocab key, so then every key is looked up).  A
 * plain key outside the vocab is always looked up.
 */
struct seen {
    uint64_t bits[VOCAB_BITS / 64];
    bool escaped;
};

/* Put v (transfer) into the innermost open container, under the pending
 * key for an object; duplicate keys replace (last wins).  seen: that
 * object's keys, or NULL (unknown: look every key up). */
static int attach(struct parser *ps, struct json_object *parent,
                  struct json_object *v, struct seen *seen)
{
    int r;

    if (json_object_is_type(parent, json_type_object)) {
        unsigned flags = 0;

        if (charge(ps, GROW_PER_KEY + (ps->key_idx >= 0
                                           ? 0
                                           : chunk(ps->key.len + 1))) !=
            AUR_OK) {
            json_object_put(v);
            return AUR_E_LIMIT;
        }

        if (ps->key_idx >= 0) {
            uint64_t bit = 1ull << (ps->key_idx % 64);
            uint64_t *w = seen ? &seen->bits[ps->key_idx / 64] : NULL;

            flags = JSON_C_OBJECT_ADD_CONSTANT_KEY;
            if (w && !seen->escaped && !(*w & bit))
                flags |= JSON_C_OBJECT_ADD_KEY_IS_NEW;
            if (w)
                *w |= bit;
            r = json_object_object_add_ex(parent, vocab[ps->key_idx], v,
                                          flags);
        } else {
            if (seen && !ps->key_plain)
                seen->escaped = true;
            r = json_object_object_add(parent, ps->key.b, v);
        }
    } else {
        if (charge(ps, GROW_PER_ITEM) != AUR_OK) {
            json_object_put(v);
            return AUR_E_LIMIT;
        }
        r = json_object_array_add(parent, v);
    }
    if (r != 0) {
        json_object_put(v);
        return no_memory(ps);
    }
    return AUR_OK;
}

int aur__json_parse(const char *buf, size_t len, int max_depth,
                    struct json_object **out, struct aur_error *err)
{
    return aur__json_parse_mem(buf, len, max_depth, AUR__JSON_MAX_MEM, out,
                               NULL, err);
}

int aur__json_parse_mem(const char *buf, size_t len, int max_depth,
                        size_t max_mem, struct json_object **out,
                        size_t *mem, struct aur_error *err)
{
    struct parser ps = {.in = (const unsigned char *)buf, .len = len,
                        .err = err, .max_mem = max_mem,
                        .compact = len >= COMPACT_MIN_LEN};
    /* Most messages nest a few levels: the stack starts on the C stack. */
    struct json_object *local[32];
    struct seen seen[AUR__ARRAY_LEN(local)]; /* for the first 32 levels */
    struct json_object **stack = local, *root = NULL, *v;
    size_t depth = 0, cap = AUR__ARRAY_LEN(local);
    unsigned char c;
    bool opened, is_obj;
    int rc = AUR_OK;

    if (!buf && len)
        return aur_fail(err, AUR_E_INVAL, 0, "JSON input is NULL");
    /* Every pass parses one value and consumes at least one byte, and the
     * closing loop pops at most one container per byte: bounded by len. */
    for (;;) {
        skip_ws(&ps);
        if (ps.pos >= ps.len) {
            rc = fail_at(&ps, ps.pos, "unexpected end of input");
            goto out;
        }
        c = ps.in[ps.pos];
        opened = c == '{' || c == '[';
        if (opened) {
            if (max_depth < 0 || depth >= (size_t)max_depth) {
                char what[64];

                snprintf(what, sizeof what, "nesting deeper than %d",
                         max_depth < 0 ? 0 : max_depth);
                rc = fail_at(&ps, ps.pos, what);
                goto out;
            }
            if (depth == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                struct json_object **ns;

                ns = realloc(stack == local ? NULL : stack,
                             ncap * sizeof *ns);
                if (!ns) {
                    rc = no_memory(&ps);
                    goto out;
                }
                if (stack == local)
                    memcpy(ns, local, sizeof local);
                stack = ns;
                cap = ncap;
            }
            v = c == '{' ? json_object_new_object()
                         : json_object_new_array();
            if (!v) {
                rc = no_memory(&ps);
                goto out;
            }
            ps.pos++;
            if ((rc = charge(&ps, c == '{' ? OPEN_OBJECT_MEM
                                           : OPEN_ARRAY_MEM)) != AUR_OK) {
                json_object_put(v);
                goto out;
            }
        } else if ((rc = parse_scalar(&ps, &v)) != AUR_OK) {
            goto out;
        } else if ((rc = charge(&ps, ps.last_mem)) != AUR_OK) {
            json_object_put(v);
            goto out;
        }
        if (depth == 0) {
            root = v;
        } else if ((rc = attach(&ps, stack[depth - 1], v,
                                depth - 1 < AUR__ARRAY_LEN(seen)
                                    ? &seen[depth - 1]
                                    : NULL)) != AUR_OK) {
            goto out;
        }
        if (opened) {
            if (depth < AUR__ARRAY_LEN(seen))
                memset(&seen[depth], 0, sizeof seen[depth]);
            stack[depth++] = v;
            skip_ws(&ps);
            if (ps.pos < ps.len && ps.in[ps.pos] == (c == '{' ? '}' : ']')) {
                ps.pos++;
                close_container(&ps, v);
                depth--;
            } else if (c == '{') {
                if ((rc = parse_key(&ps)) != AUR_OK)
                    goto out;
                continue;
            } else {
                continue;
            }
        }
        /* A value is complete: close containers until one wants more. */
        while (depth > 0) {
            is_obj = json_object_is_type(stack[depth - 1], json_type_object);

            skip_ws(&ps);
            if (ps.pos >= ps.len) {
                rc = fail_at(&ps, ps.pos, "unexpected end of input");
                goto out;
            }
            c = ps.in[ps.pos];
            if (c == ',') {
                ps.pos++;
                if (is_obj && (rc = parse_key(&ps)) != AUR_OK)
                    goto out;
                break;
            }
            if (c != (is_obj ? '}' : ']')) {
                rc = fail_at(&ps, ps.pos,
                             is_obj ? "expected ',' or '}'"
                                    : "expected ',' or ']'");
                goto out;
            }
            ps.pos++;
            close_container(&ps, stack[depth - 1]);
            depth--;
        }
        if (depth == 0)
            break;
    }
    skip_ws(&ps);
    if (ps.pos != ps.len) {
        rc = fail_at(&ps, ps.pos, "trailing characters after JSON value");
        goto out;
    }
    *out = root;
    root = NULL;
    if (mem)
        *mem = ps.mem;
out:
    json_object_put(root);
    if (stack != local)
        free(stack);
    free(ps.key.b);
    free(ps.tmp.b);
    return rc;
}
