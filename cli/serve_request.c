/*
 * serve_request.c - the grammar of one `aurora-mcp serve` request line:
 * what makes a line a request, which ids can be echoed, which fields each
 * op takes.  serve_pool.c owns the threads and serve_lines.c the
 * answers; this file only reads a line and says what it asks for, or why
 * it is refused.
 *
 * Most lines are calls of one shape: an integer or plain string id, op
 * "call", a tool id and an arguments object.  serve_request_fast reads
 * that shape without making a json-c object of the line (the line's tree
 * was a third of serve's own work a call): only the arguments, if not
 * empty, go through the host's parser, as the core needs them as a tree.
 * Anything else, including anything the general path would refuse or
 * read differently (escapes, bytes past ASCII, repeated or unknown keys,
 * other numbers), is declined and read by serve_request_parse_tree.
 * fuzz/fuzz_serve_request.c holds the fast path to the general one.
 *
 * Threads: no state; any thread.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shortest text of a finite d that reads back as d, written as
 * Python's repr writes floats: 0.1, 100.0, -0.0, 1e+300.  (The core's
 * own formatter is internal: the CLI sees only aur_host.h.) */
static void shortest_float(double d, char *text, size_t n)
{
    int prec, exp;

    for (prec = 0; prec < 17; prec++) {
        snprintf(text, n, "%.*e", prec, d);
        if (strtod(text, NULL) == d)
            break;
    }
    exp = atoi(strchr(text, 'e') + 1);
    if (exp >= -4 && exp < 16) {
        snprintf(text, n, "%.*f", prec > exp ? prec - exp : 0, d);
        if (!strchr(text, '.'))
            strcat(text, ".0");
    }
}

/*
 * Whether id can be echoed: a string, a number that is finite as a double
 * (1e999 is not: json-c would print it as Infinity, which is not JSON), or
 * null.  true, objects and arrays are refused (JSON-RPC's rule).  Integers
 * are echoed digit for digit (the parser keeps them exact); any other
 * number is given its shortest_float text as its serialisation (json-c's
 * own %.17g would turn 0.1 into 0.10000000000000001), so both answer
 * paths (serve_respond and cli_call_answer) print that.
 */
static bool id_ok(struct json_object *id)
{
    char text[40];
    double d;

    switch (json_object_get_type(id)) {
    case json_type_null:
    case json_type_string:
    case json_type_int:
        return true;
    case json_type_double:
        break;
    default:
        return false;
    }
    d = json_object_get_double(id);
    if (!isfinite(d))
        return false;
    if (json_object_get_userdata(id))
        return true; /* an integer too big for 64 bits, kept as written */
    shortest_float(d, text, sizeof text);
    char *keep = strdup(text);
    if (keep) /* else json-c's own %.17g: longer, but valid JSON */
        json_object_set_serializer(id, json_object_userdata_to_json_string,
                                   keep, json_object_free_userdata);
    return true;
}

/* A name from a request used as a C string: NULL when v is not a string
 * or holds U+0000 (strcmp and the core would see only the part before it,
 * which may name something else). */
static const char *c_name(struct json_object *v, bool *has_nul)
{
    const char *p;

    *has_nul = false;
    if (!json_object_is_type(v, json_type_string))
        return NULL;
    p = json_object_get_string(v);
    if (strlen(p) != (size_t)json_object_get_string_len(v)) {
        *has_nul = true;
        return NULL;
    }
    return p;
}

static const struct {
    const char *name;
    enum serve_op op;
} k_ops[] = {
    {"call", SERVE_OP_CALL},
    {"status", SERVE_OP_STATUS},
    {"tools", SERVE_OP_TOOLS},
    {"shutdown", SERVE_OP_SHUTDOWN},
};

/* The first member of req that op does not take, or NULL: a misspelt
 * "argumnts" must not become a call without arguments. */
static const char *unknown_field(struct json_object *req, enum serve_op op)
{
    json_object_object_foreach(req, key, val) {
        (void)val;
        if (strcmp(key, "id") != 0 && strcmp(key, "op") != 0 &&
            !(op == SERVE_OP_CALL && (strcmp(key, "tool") == 0 ||
                                      strcmp(key, "arguments") == 0)))
            return key;
    }
    return NULL;
}

static const char *refuse(char *msg, size_t size, const char *code,
                          const char *text)
{
    snprintf(msg, size, "%s", text);
    return code;
}

/* ---- the fast path ---- */

struct fscan {
    const char *s;
    size_t i, n;
};

static void fs_ws(struct fscan *f)
{
    while (f->i < f->n && (f->s[f->i] == ' ' || f->s[f->i] == '\t' ||
                           f->s[f->i] == '\n' || f->s[f->i] == '\r'))
        f->i++;
}

/* A string of printable ASCII without escapes at f->i: its text is
 * s[*at, *at + *len).  false for anything else (the general path reads
 * it). */
static bool fs_plain(struct fscan *f, size_t *at, size_t *len)
{
    size_t i = f->i + 1;

    if (f->i >= f->n || f->s[f->i] != '"')
        return false;
    for (; i < f->n && f->s[i] != '"'; i++) {
        unsigned char c = (unsigned char)f->s[i];
        if (c < 0x20 || c >= 0x7f || c == '\\')
            return false;
    }
    if (i >= f->n)
        return false;
    *at = f->i + 1;
    *len = i - *at;
    f->i = i + 1;
    return true;
}

static bool fs_is(const struct fscan *f, size_t at, size_t len,
                  const char *word)
{
    return strlen(word) == len && memcmp(f->s + at, word, len) == 0;
}

/* An integer id: -?(0|[1-9][0-9]{0,17}), which int64 holds, followed by
 * what may follow a value.  Anything longer or not an integer (1.0, 1e3)
 * is the general path's. */
static struct json_object *fs_int(struct fscan *f)
{
    size_t i = f->i, digits = 0;
    bool neg = f->s[i] == '-';
    int64_t v = 0;

    if (neg)
        i++;
    if (i < f->n && f->s[i] == '0') {
        i++, digits = 1;
    } else {
        for (; i < f->n && f->s[i] >= '0' && f->s[i] <= '9' && digits < 18;
             i++, digits++)
            v = v * 10 + (f->s[i] - '0');
    }
    if (!digits || (neg && v == 0) ||
        (i < f->n && !strchr(" \t\r\n,}", f->s[i])))
        return NULL;
    f->i = i;
    return json_object_new_int64(neg ? -v : v);
}

/* The index of the quote that closes the string whose first byte is at
 * i, or n when it does not close.  memchr finds quotes and backslashes (a
 * long text argument is the usual big line); the next quote is looked
 * for again only once an escape has moved past it, so every byte is
 * searched at most twice however many escapes there are. */
static size_t fs_string_end(const char *s, size_t n, size_t i)
{
    const char *q = NULL, *b;

    while (i < n) {
        if (!q || q < s + i)
            q = memchr(s + i, '"', n - i);
        if (!q)
            return n;
        b = memchr(s + i, '\\', (size_t)(q - (s + i)));
        if (!b)
            return (size_t)(q - s);
        i = (size_t)(b - s) + 2;
    }
    return n;
}

/* Past the object at f->i ('{'), strings skipped; its depth must stay
 * well inside the parser's 128 with the line's own level around it.
 * Not a validation: the host's parser reads what is between. */
static bool fs_skip_object(struct fscan *f)
{
    int depth = 0;

    for (size_t i = f->i; i < f->n; i++) {
        char c = f->s[i];
        if (c == '"') {
            if ((i = fs_string_end(f->s, f->n, i + 1)) == f->n)
                return false;
        } else if (c == '{' || c == '[') {
            if (++depth > 100)
                return false;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                f->i = i + 1;
                return true;
            }
        }
    }
    return false;
}

/* The arguments object at f->i: NULL args for {} (the core's NULL is
 * {}), else the host's parser on its text. */
static bool fs_args(struct fscan *f, struct serve_request *r)
{
    size_t start = f->i;
    struct json_object *o = NULL;

    if (f->i >= f->n || f->s[f->i] != '{')
        return false;
    f->i++;
    fs_ws(f);
    if (f->i < f->n && f->s[f->i] == '}') {
        f->i++;
        return true;
    }
    f->i = start;
    if (!fs_skip_object(f) ||
        aur_json_parse(f->s + start, f->i - start, &o, NULL) != AUR_OK)
        return false;
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return false;
    }
    r->args = r->own_args = o;
    return true;
}

bool serve_request_fast(const char *line, size_t len, struct serve_request *r)
{
    struct fscan f = {line, 0, len};
    size_t at, klen, tool_at = 0, tool_len = 0;
    unsigned seen = 0; /* 1 id, 2 op, 4 tool, 8 arguments */

    memset(r, 0, sizeof *r);
    r->op = SERVE_OP_UNKNOWN;
    fs_ws(&f);
    if (f.i >= f.n || line[f.i++] != '{')
        return false;
    for (;;) {
        unsigned bit;
        fs_ws(&f);
        if (!fs_plain(&f, &at, &klen))
            goto decline;
        bit = fs_is(&f, at, klen, "id")          ? 1
              : fs_is(&f, at, klen, "op")        ? 2
              : fs_is(&f, at, klen, "tool")      ? 4
              : fs_is(&f, at, klen, "arguments") ? 8
                                                 : 0;
        if (!bit || (seen & bit))
            goto decline;
        seen |= bit;
        fs_ws(&f);
        if (f.i >= f.n || line[f.i++] != ':')
            goto decline;
        fs_ws(&f);
        if (f.i >= f.n)
            goto decline;
        if (bit == 1) {
            if (line[f.i] == '"') {
                if (!fs_plain(&f, &at, &klen))
                    goto decline;
                r->root = json_object_new_string_len(line + at, (int)klen);
            } else {
                r->root = fs_int(&f);
            }
            if (!r->root)
                goto decline;
        } else if (bit == 2) {
            if (!fs_plain(&f, &at, &klen) || !fs_is(&f, at, klen, "call"))
                goto decline;
        } else if (bit == 4) {
            if (!fs_plain(&f, &tool_at, &tool_len) ||
                tool_len >= sizeof r->tool_text)
                goto decline;
        } else if (!fs_args(&f, r)) {
            goto decline;
        }
        fs_ws(&f);
        if (f.i < f.n && line[f.i] == ',') {
            f.i++;
            continue;
        }
        if (f.i < f.n && line[f.i] == '}')
            break;
        goto decline;
    }
    f.i++;
    fs_ws(&f);
    if (f.i != f.n || (seen & 7) != 7)
        goto decline;
    memcpy(r->tool_text, line + tool_at, tool_len);
    r->tool_text[tool_len] = '\0';
    r->tool = r->tool_text;
    r->id = r->root;
    r->op = SERVE_OP_CALL;
    return true;
decline:
    serve_request_clear(r);
    r->op = SERVE_OP_UNKNOWN;
    return false;
}

/* ---- the general path ---- */

const char *serve_request_parse(const char *line, size_t len,
                                bool envelope_only, struct serve_request *r,
                                char *msg, size_t size)
{
    if (!envelope_only && serve_request_fast(line, len, r))
        return NULL;
    return serve_request_parse_tree(line, len, envelope_only, r, msg, size);
}

const char *serve_request_parse_tree(const char *line, size_t len,
                                     bool envelope_only,
                                     struct serve_request *r, char *msg,
                                     size_t size)
{
    struct json_object *o = NULL, *tool = NULL;
    struct aur_error err;
    const char *op, *extra;
    bool nul;

    memset(r, 0, sizeof *r);
    r->op = SERVE_OP_UNKNOWN;
    if (aur_json_parse(line, len, &r->root, &err) != AUR_OK ||
        !json_object_is_type(r->root, json_type_object) ||
        !json_object_object_get_ex(r->root, "id", &r->id) ||
        !json_object_object_get_ex(r->root, "op", &o) ||
        !json_object_is_type(o, json_type_string)) {
        r->id = NULL;
        return refuse(msg, size, "bad_request",
                      "each line must be a JSON object with \"id\" and "
                      "\"op\"");
    }
    if (!id_ok(r->id)) {
        r->id = NULL;
        return refuse(msg, size, "bad_request",
                      "\"id\" must be a string, a finite number or null");
    }
    if (!(op = c_name(o, &nul)))
        return refuse(msg, size, "bad_request", "\"op\" contains U+0000");
    if (envelope_only)
        return NULL;
    for (size_t i = 0; i < sizeof k_ops / sizeof *k_ops; i++)
        if (strcmp(op, k_ops[i].name) == 0)
            r->op = k_ops[i].op;
    if (r->op == SERVE_OP_UNKNOWN)
        return refuse(msg, size, "unknown_op", "unknown op");
    if ((extra = unknown_field(r->root, r->op))) {
        /* The field's name is the client's own text: bounded, and only
         * in the answer to that client. */
        snprintf(msg, size,
                 "unknown field \"%.64s\" in a %s request (it takes %s)",
                 extra, op,
                 r->op == SERVE_OP_CALL ? "id, op, tool, arguments"
                                        : "id, op");
        return "bad_request";
    }
    if (r->op != SERVE_OP_CALL)
        return NULL;
    json_object_object_get_ex(r->root, "tool", &tool);
    json_object_object_get_ex(r->root, "arguments", &r->args);
    if (!(r->tool = c_name(tool, &nul)))
        return refuse(msg, size, "bad_request",
                      nul ? "\"tool\" contains U+0000"
                          : "call needs a string \"tool\"");
    if (r->args && !json_object_is_type(r->args, json_type_object))
        return refuse(msg, size, "bad_request",
                      "\"arguments\" must be an object");
    return NULL;
}

void serve_request_clear(struct serve_request *r)
{
    json_object_put(r->root);
    json_object_put(r->own_args);
    r->root = r->id = r->args = r->own_args = NULL;
    r->tool = NULL;
}
