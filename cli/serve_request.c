/*
 * serve_request.c - the grammar of one `aurora-mcp serve` request line:
 * what makes a line a request, which ids can be echoed, which fields each
 * op takes.  serve_pool.c owns the threads and serve_lines.c the
 * answers; this file only reads a line and says what it asks for, or why
 * it is refused.
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

const char *serve_request_parse(const char *line, size_t len,
                                bool envelope_only, struct serve_request *r,
                                char *msg, size_t size)
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
    memset(r, 0, sizeof *r);
}
