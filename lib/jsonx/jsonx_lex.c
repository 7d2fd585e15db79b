/*
 * jsonx_lex.c - the tokens of the strict RFC 8259 parser (jsonx_parser.h):
 * strings with their escapes, numbers, literals and object keys.
 *
 * Deliberate differences from Python's json.loads (the reference for
 * what we accept): a lone surrogate in a \u escape is rejected (Python
 * keeps it, but such a string is not valid Unicode and cannot be written
 * as UTF-8); an object key containing U+0000 is rejected (json-c keys are
 * C strings, and a silently truncated key could collide with another).
 * Numbers that overflow a double (1e400) become +-inf, as in Python; the
 * canonical serializer refuses them later.
 *
 * Speed (every inbound message goes through here): plain strings (ASCII,
 * no escapes) are made straight from the input, without the scratch
 * copy, and keys of the wire vocabulary are stored as json-c constant keys
 * pointing at the static table below, so they cost neither a strdup nor
 * a free.  Such a key lives as long as this library stays mapped.
 */
#include "aur_setup.h"

#include <limits.h>
#include <stdio.h>

#include "jsonx.h"
#include "jsonx_int.h"
#include "jsonx_parser.h"

int aur__jp_fail_at(struct parser *ps, size_t at, const char *what)
{
    return aur_fail(ps->err, AUR_E_PROTOCOL, 0,
                    "JSON parse error at byte %zu: %s", at, what);
}

int aur__jp_no_memory(struct parser *ps)
{
    return aur_fail(ps->err, AUR_E_NOMEM, ENOMEM,
                    "out of memory while parsing JSON");
}

static int sb_put(struct parser *ps, struct aur__buf *sb, const void *p,
                  size_t n)
{
    if (aur__buf_put(sb, p, n, SIZE_MAX) != 0)
        return aur__jp_no_memory(ps);
    return AUR_OK;
}

void aur__jp_skip_ws(struct parser *ps)
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
        return aur__jp_fail_at(ps, at, "truncated \\u escape");
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
            return aur__jp_fail_at(ps, at + i,
                                   "invalid hex digit in \\u escape");
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

static int put_code_point(struct parser *ps, struct aur__buf *sb, unsigned cp)
{
    unsigned char u[4];

    return sb_put(ps, sb, u, aur__json_utf8_put(u, cp));
}

/* The escape whose backslash is at ps->pos; advances past it. */
static int parse_escape(struct parser *ps, struct aur__buf *sb)
{
    static const char plain_in[] = "\"\\/bfnrt";
    static const char plain_out[] = "\"\\/\b\f\n\r\t";
    size_t at = ps->pos;
    unsigned cp, lo;
    const char *k;
    int rc;

    if (at + 1 >= ps->len)
        return aur__jp_fail_at(ps, at, "unterminated string");
    if (ps->in[at + 1] != 'u') {
        k = ps->in[at + 1] ? strchr(plain_in, ps->in[at + 1]) : NULL;
        if (!k)
            return aur__jp_fail_at(ps, at, "invalid escape in string");
        ps->pos += 2;
        return sb_put(ps, sb, &plain_out[k - plain_in], 1);
    }
    if ((rc = hex4(ps, at + 2, &cp)) != AUR_OK)
        return rc;
    ps->pos = at + 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return aur__jp_fail_at(ps, at, "lone low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (ps->len - ps->pos < 2 || ps->in[ps->pos] != '\\' ||
            ps->in[ps->pos + 1] != 'u')
            return aur__jp_fail_at(ps, at, "lone high surrogate in \\u escape");
        if ((rc = hex4(ps, ps->pos + 2, &lo)) != AUR_OK)
            return rc;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return aur__jp_fail_at(ps, at, "lone high surrogate in \\u escape");
        ps->pos += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return put_code_point(ps, sb, cp);
}

/* The end of the run of plain bytes starting at i. */
static size_t plain_run(const struct parser *ps, size_t i)
{
    return i + aur__json_plain_span(ps->in + i, ps->len - i);
}

/*
 * The wire vocabulary, grouped by length (see aur__jp_intern): MCP's keys,
 * the JSON Schema keywords tools' schemas use most, and the keys of the
 * Aurora extensions' messages (a world event and its commit data).  A
 * key found here costs no copy and no look-up when it is added.
 */
const char *const aur__jp_vocab[] = {
    /* 2 */ "id",
    /* 3 */ "uri",
    /* 4 */ "type", "text", "name", "code", "data", "enum", "kind", "$ref",
    /* 5 */ "_meta", "tools", "error", "items", "title", "level", "tasks",
    "total", "scope", "const", "anyOf", "oneOf", "allOf", "$defs",
    /* 6 */ "result", "method", "params", "cursor", "format", "logger",
    "reason",
    /* 7 */ "jsonrpc", "content", "isError", "message", "version", "$schema",
    "default", "logging", "maximum", "minimum", "prompts", "summary",
    "pattern",
    /* 8 */ "required", "mimeType", "progress", "event_id", "minItems",
    "maxItems",
    /* 9 */ "arguments", "requestId", "resources", "subscribe", "execution",
    "minLength", "maxLength",
    /* 10 */ "resultType", "nextCursor", "properties", "serverInfo",
    "clientInfo", "extensions", "event_kind",
    /* 11 */ "inputSchema", "description", "annotations", "listChanged",
    "occurred_at", "taskSupport", "uniqueItems",
    /* 12 */ "outputSchema", "capabilities", "experimental", "instructions",
    "readOnlyHint",
    /* 13 */ "progressToken", "notifications", "openWorldHint",
    /* 14 */ "subscriptionId", "idempotentHint",
    /* 15 */ "protocolVersion", "destructiveHint",
    /* 17 */ "structuredContent", "supportedVersions",
    /* 20 */ "additionalProperties",
    /* 34 */ "io.modelcontextprotocol/serverInfo",
    "io.modelcontextprotocol/clientInfo",
    /* 38 */ "io.modelcontextprotocol/subscriptionId",
    /* 39 */ "io.modelcontextprotocol/protocolVersion",
    /* 42 */ "io.modelcontextprotocol/serverCapabilities",
    "io.modelcontextprotocol/clientCapabilities",
};
_Static_assert(AUR__ARRAY_LEN(aur__jp_vocab) <= VOCAB_BITS,
               "the vocabulary outgrew its bits");
const size_t aur__jp_vocab_len = AUR__ARRAY_LEN(aur__jp_vocab);

int aur__jp_intern(const unsigned char *s, size_t n)
{
    /* [first, end) of each length in the vocabulary (check_jsonx
     * vocabulary_groups holds them to the table). */
    static const unsigned char first[43] = {
        [2] = 0,   [3] = 1,   [4] = 2,   [5] = 10,  [6] = 24,
        [7] = 31,  [8] = 44,  [9] = 50,  [10] = 57, [11] = 64,
        [12] = 71, [13] = 76, [14] = 79, [15] = 81, [17] = 83,
        [20] = 85, [34] = 86, [38] = 88, [39] = 89, [42] = 90};
    static const unsigned char end[43] = {
        [2] = 1,   [3] = 2,   [4] = 10,  [5] = 24,  [6] = 31,
        [7] = 44,  [8] = 50,  [9] = 57,  [10] = 64, [11] = 71,
        [12] = 76, [13] = 79, [14] = 81, [15] = 83, [17] = 85,
        [20] = 86, [34] = 88, [38] = 89, [39] = 90, [42] = 92};

    if (n >= sizeof first)
        return -1;
    for (int i = first[n]; i < end[n]; i++)
        if (aur__jp_vocab[i][0] == s[0] && memcmp(s, aur__jp_vocab[i], n) == 0)
            return i;
    return -1;
}

/* The string whose opening quote is at ps->pos, decoded into *sb. */
static int parse_string(struct parser *ps, struct aur__buf *sb)
{
    size_t run, n;
    int rc;

    sb->n = 0;
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
            return aur__jp_fail_at(ps, ps->pos, "control character in string");
        } else if (c < 0x80) {
            /* Copy a run of plain ASCII at once (c is plain). */
            run = plain_run(ps, ps->pos + 1);
            if (sb_put(ps, sb, ps->in + ps->pos, run - ps->pos) != AUR_OK)
                return AUR_E_NOMEM;
            ps->pos = run;
        } else {
            n = aur__utf8_next(ps->in + ps->pos, ps->len - ps->pos, NULL);
            if (n == 0)
                return aur__jp_fail_at(ps, ps->pos, "invalid UTF-8 in string");
            if (sb_put(ps, sb, ps->in + ps->pos, n) != AUR_OK)
                return AUR_E_NOMEM;
            ps->pos += n;
        }
    }
    return aur__jp_fail_at(ps, ps->len, "unterminated string");
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* A JSON integer without fraction or exponent, text in ps->tmp. */
static struct json_object *make_integer(struct parser *ps, bool neg)
{
    const char *d = ps->tmp.p + neg;
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
    return json_object_new_double_s(aur__json_strtod(ps->tmp.p), ps->tmp.p);
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
        return aur__jp_fail_at(ps, p, "expected a digit");
    if (in[p] == '0') {
        p++;
        if (p < ps->len && is_digit(in[p]))
            return aur__jp_fail_at(ps, p - 1, "leading zero in number");
    } else {
        while (p < ps->len && is_digit(in[p]))
            p++;
    }
    if (p < ps->len && in[p] == '.') {
        integer = false;
        p++;
        if (p >= ps->len || !is_digit(in[p]))
            return aur__jp_fail_at(ps, p, "expected a digit after '.'");
        while (p < ps->len && is_digit(in[p]))
            p++;
    }
    if (p < ps->len && (in[p] == 'e' || in[p] == 'E')) {
        integer = false;
        p++;
        if (p < ps->len && (in[p] == '+' || in[p] == '-'))
            p++;
        if (p >= ps->len || !is_digit(in[p]))
            return aur__jp_fail_at(ps, p, "expected a digit in exponent");
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
        return *out ? AUR_OK : aur__jp_no_memory(ps);
    }
    ps->tmp.n = 0;
    if (sb_put(ps, &ps->tmp, in + start, p - start) != AUR_OK)
        return AUR_E_NOMEM;
    ps->pos = p;
    *out = integer ? make_integer(ps, neg)
                   : json_object_new_double(aur__json_strtod(ps->tmp.p));
    ps->last_mem = *out ? aur__json_mem(*out) : 0;
    return *out ? AUR_OK : aur__jp_no_memory(ps);
}

static int parse_literal(struct parser *ps, const char *word,
                         struct json_object **out)
{
    size_t n = strlen(word);

    if (ps->len - ps->pos < n || memcmp(ps->in + ps->pos, word, n) != 0)
        return aur__jp_fail_at(ps, ps->pos, "unexpected character");
    ps->pos += n;
    if (word[0] == 'n') {
        *out = NULL;
        ps->last_mem = 0;
        return AUR_OK;
    }
    ps->last_mem = BOOL_MEM;
    *out = json_object_new_boolean(word[0] == 't');
    return *out ? AUR_OK : aur__jp_no_memory(ps);
}

/* A scalar value at ps->pos (not a container). */
int aur__jp_scalar(struct parser *ps, struct json_object **out)
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
            return *out ? AUR_OK : aur__jp_no_memory(ps);
        }
        if ((rc = parse_string(ps, &ps->tmp)) != AUR_OK)
            return rc;
        if (ps->tmp.n > INT_MAX)
            return aur__jp_fail_at(ps, ps->pos, "string too long");
        *out = json_object_new_string_len(ps->tmp.p, (int)ps->tmp.n);
        ps->last_mem = STRING_MEM(ps->tmp.n);
        return *out ? AUR_OK : aur__jp_no_memory(ps);
    }
    if (c == '-' || is_digit(c))
        return parse_number(ps, out);
    if (c == 't')
        return parse_literal(ps, "true", out);
    if (c == 'f')
        return parse_literal(ps, "false", out);
    if (c == 'n')
        return parse_literal(ps, "null", out);
    return aur__jp_fail_at(ps, ps->pos, "unexpected character");
}

/* `"key" :` at the next non-blank; the key lands in ps->key. */
int aur__jp_key(struct parser *ps)
{
    size_t at;
    int rc;

    aur__jp_skip_ws(ps);
    if (ps->pos >= ps->len)
        return aur__jp_fail_at(ps, ps->pos, "unexpected end of input");
    at = ps->pos;
    if (ps->in[at] != '"')
        return aur__jp_fail_at(ps, at, "expected a string key");
    size_t end = plain_run(ps, at + 1);
    ps->key_idx = -1;
    ps->key_plain = end < ps->len && ps->in[end] == '"';
    if (ps->key_plain) {
        /* Plain: no escapes, so no U+0000 either. */
        ps->key_idx = aur__jp_intern(ps->in + at + 1, end - at - 1);
        ps->key.n = 0;
        if (ps->key_idx < 0 &&
            sb_put(ps, &ps->key, ps->in + at + 1, end - at - 1) != AUR_OK)
            return AUR_E_NOMEM;
        ps->pos = end + 1;
    } else {
        if ((rc = parse_string(ps, &ps->key)) != AUR_OK)
            return rc;
        if (memchr(ps->key.p, '\0', ps->key.n))
            return aur__jp_fail_at(ps, at, "object key contains U+0000");
    }
    aur__jp_skip_ws(ps);
    if (ps->pos >= ps->len)
        return aur__jp_fail_at(ps, ps->pos, "unexpected end of input");
    if (ps->in[ps->pos] != ':')
        return aur__jp_fail_at(ps, ps->pos, "expected ':' after object key");
    ps->pos++;
    return AUR_OK;
}
