/*
 * call_result.c - what a tool call's answer means: the CallToolResult or
 * the JSON-RPC error a server sent, mapped to succeeded / failed /
 * unknown and a text (docs/protocol.md, Calls); call.c sends the call
 * and decides the outcomes where no answer came.
 *
 * A result that breaks the CallToolResult shape is unknown, never
 * failed: the server ran something and said it in a way we cannot read.
 */
#include "aur_setup.h"

#include "engine.h"
#include "grow.h"
#include "jsonx.h"
#include "log.h"

#include <json-c/json.h>

void aur__out_reset(struct aur_tool_output *out)
{
    uint32_t size = out->struct_size;

    memset(out, 0, sizeof *out);
    out->struct_size = size;
}

void aur_tool_output_clear(struct aur_tool_output *out)
{
    if (!out)
        return;
    if (!aur__out_is_nomem(out))
        free(out->content);
    free(out->owned);
    aur__out_reset(out);
}

/*
 * Out of memory (aur_host.h states the policy): the content is one of
 * these static texts, which aur_tool_output_clear does not free.  A call
 * that succeeded but whose text cannot be held is unknown: the effect
 * happened, and nothing of it can be handed on.
 */
static const char nomem_failed[] = "out of memory; the call failed without "
                                   "effect";
static const char nomem_unknown[] = "out of memory after the call may have "
                                    "reached the server; its effect is "
                                    "unknown";

void aur__out_nomem(struct aur_tool_output *out, enum aur_call_status s)
{
    if (!aur__out_is_nomem(out))
        free(out->content);
    out->status = s == AUR_CALL_FAILED ? AUR_CALL_FAILED : AUR_CALL_UNKNOWN;
    out->content = (char *)(s == AUR_CALL_FAILED ? nomem_failed
                                                  : nomem_unknown);
    out->content_len = strlen(out->content);
}

bool aur__out_is_nomem(const struct aur_tool_output *out)
{
    return out->content == nomem_failed || out->content == nomem_unknown;
}

void aur__out_set(struct aur_tool_output *out, enum aur_call_status s,
                  const char *fmt, ...)
{
    va_list ap;
    char *text = NULL;
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    if (!text) {
        aur__out_nomem(out, s);
        return;
    }
    if (aur__is_blank(text)) {
        free(text);
        text = strdup(s == AUR_CALL_SUCCEEDED ? "ok" : "no detail");
    }
    aur__out_take(out, s, text, text ? strlen(text) : 0);
}

void aur__out_take(struct aur_tool_output *out, enum aur_call_status s,
                   char *text, size_t len)
{
    if (!text) {
        aur__out_nomem(out, s);
        return;
    }
    if (!aur__out_is_nomem(out))
        free(out->content);
    out->status = s;
    out->content = text;
    out->content_len = len;
}

/* Joins are on the hot path, so no stdio streams.  *ok turns false for
 * good once memory runs out. */
static void sb_add(struct aur__buf *b, bool *ok, const char *s, size_t n)
{
    *ok = *ok && aur__buf_put(b, s, n, SIZE_MAX) == 0;
}

/* ok, and when memory ran out the join is freed (b->p NULL). */
static bool sb_done(struct aur__buf *b, bool ok)
{
    if (!ok) {
        free(b->p);
        b->p = NULL;
    }
    return ok;
}

/* The error text (*len its bytes): the non-empty text blocks, else
 * structuredContent, else a fixed text. */
static char *error_text(struct json_object *content, struct json_object *sc,
                        size_t *len)
{
    size_t n = json_object_array_length(content);
    struct aur__buf b = {0};
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_object_array_get_idx(content, i), *ty, *tx;
        if (json_object_object_get_ex(o, "type", &ty) &&
            aur__json_str_is(ty, "text") &&
            json_object_object_get_ex(o, "text", &tx) &&
            json_object_get_string_len(tx) > 0) {
            if (b.n)
                sb_add(&b, &ok, "\n", 1);
            sb_add(&b, &ok, json_object_get_string(tx),
                   (size_t)json_object_get_string_len(tx));
        }
    }
    if (!sb_done(&b, ok))
        return NULL;
    if (b.p && !aur__is_blank_n(b.p, b.n)) {
        *len = b.n;
        return b.p;
    }
    free(b.p);
    if (sc) {
        struct aur_error err;
        char *canon = NULL;
        int rc = aur__json_canonical(sc, &canon, len, &err);
        if (rc == AUR_OK || rc == AUR_E_NOMEM)
            return canon;
    }
    *len = strlen("MCP server returned isError");
    return strdup("MCP server returned isError");
}

/* Whether content has non-text blocks; *out their types, distinct and
 * sorted, joined by ", " (NULL when memory ran out). */
static bool unsupported_types(struct json_object *content, char **out)
{
    const char *types[64];
    size_t nt = 0, n = json_object_array_length(content);
    for (size_t i = 0; i < n && nt < AUR__ARRAY_LEN(types); i++) {
        struct json_object *ty;
        const char *s;
        bool dup = false;
        json_object_object_get_ex(json_object_array_get_idx(content, i), "type",
                                  &ty);
        s = json_object_get_string(ty); /* a name: shape_problem said so */
        if (strcmp(s, "text") == 0)
            continue;
        for (size_t k = 0; k < nt; k++)
            dup |= strcmp(types[k], s) == 0;
        if (!dup)
            types[nt++] = s;
    }
    *out = NULL;
    if (!nt)
        return false;
    for (size_t i = 1; i < nt; i++)
        for (size_t k = i; k > 0 && strcmp(types[k - 1], types[k]) > 0; k--) {
            const char *x = types[k];
            types[k] = types[k - 1];
            types[k - 1] = x;
        }
    struct aur__buf b = {0};
    bool ok = true;
    for (size_t i = 0; i < nt; i++) {
        size_t l = strlen(types[i]);
        if (i)
            sb_add(&b, &ok, ", ", 2);
        sb_add(&b, &ok, types[i], l < 64 ? l : 64);
    }
    *out = sb_done(&b, ok) ? b.p : NULL;
    return true;
}

#define NO_TEXT "MCP tool completed but returned no text content"

/* The non-blank texts joined by "\n" (*len its bytes), or NO_TEXT. */
static char *success_text(struct json_object *content, size_t *len)
{
    size_t n = json_object_array_length(content);
    struct aur__buf b = {0};
    bool first = true, ok = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *tx;
        json_object_object_get_ex(json_object_array_get_idx(content, i), "text",
                                  &tx);
        if (aur__is_blank_n(json_object_get_string(tx),
                    (size_t)json_object_get_string_len(tx)))
            continue;
        if (!first)
            sb_add(&b, &ok, "\n", 1);
        sb_add(&b, &ok, json_object_get_string(tx),
               (size_t)json_object_get_string_len(tx));
        first = false;
    }
    if (!sb_done(&b, ok))
        return NULL;
    if (b.p) {
        *len = b.n;
        return b.p;
    }
    *len = strlen(NO_TEXT);
    return strdup(NO_TEXT);
}

/* The shape checks of a CallToolResult; a result that fails them cannot
 * confirm anything. */
static const char *shape_problem(struct json_object *content,
                                 struct json_object *is_error_v,
                                 bool has_is_error, bool *is_error)
{
    static const char *const keys[] = {"type", "text"};
    *is_error = false;
    if (!json_object_is_type(content, json_type_array))
        return "result has no content array";
    size_t n = json_object_array_length(content);
    for (size_t i = 0; i < n; i++) {
        struct json_object *b = json_object_array_get_idx(content, i), *m[2];
        if (!json_object_is_type(b, json_type_object))
            return "a content block has no type";
        aur__json_pick(b, keys, m, NULL, 2);
        /* A type holding U+0000 is no type: "text\u0000x" is not text. */
        if (!aur__json_name(m[0]))
            return "a content block has no type";
        if (aur__json_str_is(m[0], "text") &&
            !json_object_is_type(m[1], json_type_string))
            return "a text block has no text";
    }
    if (has_is_error) {
        if (!json_object_is_type(is_error_v, json_type_boolean))
            return "isError is not a boolean";
        *is_error = json_object_get_boolean(is_error_v);
    }
    return NULL;
}

void aur__call_map_result(struct aur__tool *t, struct json_object *res,
                          struct aur_tool_output *out)
{
    struct aur__app *app = t->app;
    struct aur_tool_ref ref = {sizeof ref, t->id, t->raw_name};
    static const char *const keys[] = {"resultType", "content", "isError",
                                       "structuredContent"};
    struct json_object *m[4], *content, *sc, *rt;
    bool has[4];
    enum aur_outcome ext_out = AUR_OUTCOME_UNSET;
    char ext_msg[AUR_ERR_MSG_SIZE] = "";
    const char *problem;
    bool is_error;

    aur__json_pick(res, keys, m, has, 4);
    rt = m[0], content = m[1], sc = m[3];
    if (has[0]) {
        if (!json_object_is_type(rt, json_type_string)) {
            aur__out_set(out, AUR_CALL_UNKNOWN, "MCP call result cannot be "
                         "confirmed: resultType is not a string");
            return;
        }
        if (aur__json_str_is(rt, "input_required")) {
            aur__out_set(out, AUR_CALL_UNKNOWN,
                         "MCP tool requested input_required; the effect of "
                         "this call cannot be confirmed");
            return;
        }
        if (!aur__json_str_is(rt, "complete")) {
            aur__out_set(out, AUR_CALL_UNKNOWN,
                         "MCP tool returned a result of an extension that is "
                         "not enabled; the effect cannot be confirmed");
            return;
        }
    }
    problem = shape_problem(content, m[2], has[2], &is_error);
    if (problem) {
        aur__out_set(out, AUR_CALL_UNKNOWN,
                     "MCP call result cannot be confirmed: %s", problem);
        return;
    }

    for (size_t i = 0; i < app->next; i++) {
        struct aur__ext_session *x = &app->ext[i];
        enum aur_outcome o = AUR_OUTCOME_UNSET;
        struct aur_error err;
        if (!x->active || !AUR_HAS(&x->p->ops.e, classify))
            continue;
        aur_error_clear(&err);
        if (x->p->ops.e.classify(x->p->state, x->session, &ref, res, &o, &err) <
            0)
            o = AUR_OUTCOME_UNKNOWN; /* a broken hook cannot vouch */
        if (o > ext_out) {
            ext_out = o;
            snprintf(ext_msg, sizeof ext_msg, "%s", err.msg);
        }
    }
    /* Without an extension that vouches, isError says nothing about side
     * effects: unknown.  A vouching extension proposes failed;
     * nobody can propose below the core's view otherwise. */
    enum aur_outcome base = AUR_OUTCOME_SUCCEEDED;
    if (is_error)
        base = ext_out >= AUR_OUTCOME_FAILED ? ext_out : AUR_OUTCOME_UNKNOWN;
    else if (ext_out > base)
        base = ext_out;

    if (base == AUR_OUTCOME_UNKNOWN || base == AUR_OUTCOME_FAILED) {
        enum aur_call_status s =
            base == AUR_OUTCOME_UNKNOWN ? AUR_CALL_UNKNOWN : AUR_CALL_FAILED;
        size_t len = 0;
        if (ext_msg[0] && ext_out == base) {
            aur__out_set(out, s, "%s", ext_msg);
        } else {
            char *text = error_text(content, sc, &len);
            aur__out_take(out, s, text, len);
        }
        return;
    }
    /* From here the server said the call succeeded: what the host cannot
     * hand on makes it unknown, never failed (the call ran). */
    char *types;
    if (unsupported_types(content, &types)) {
        if (!types) {
            aur__out_nomem(out, AUR_CALL_UNKNOWN);
            return;
        }
        aur__out_set(out, AUR_CALL_UNKNOWN, "MCP tool returned content the "
                "host does not support; the call ran, but its effect cannot be "
                "confirmed: %s", types);
        free(types);
        return;
    }
    if (sc) {
        char *canon = NULL;
        size_t len = 0;
        struct aur_error err;
        int rc = aur__json_canonical(sc, &canon, &len, &err);
        if (rc == AUR_E_NOMEM) {
            aur__out_nomem(out, AUR_CALL_UNKNOWN);
            return;
        }
        if (rc != AUR_OK) {
            aur__out_set(out, AUR_CALL_UNKNOWN,
                    "MCP structuredContent is not supported by the host (%s): "
                    "the call ran, its result cannot be shown, so its effect "
                    "cannot be confirmed", err.msg);
            return;
        }
        aur__out_take(out, AUR_CALL_SUCCEEDED, canon, len);
        return;
    }
    size_t len = 0;
    char *text = success_text(content, &len);
    aur__out_take(out, AUR_CALL_SUCCEEDED, text, len);
}

/* A JSON-RPC error the server sent (with the HTTP status it came with,
 * 0 = none): the server's words, never a host fact. */
void aur__call_map_rpc_error(struct json_object *reply, int http_status,
                             struct aur_tool_output *out)
{
    struct json_object *e = NULL, *c = NULL, *m = NULL;
    char msg[200] = "", via[32] = "";
    int code;
    json_object_object_get_ex(reply, "error", &e);
    json_object_object_get_ex(e, "code", &c);
    json_object_object_get_ex(e, "message", &m);
    code = json_object_is_type(c, json_type_int) ? json_object_get_int(c) : 0;
    if (json_object_is_type(m, json_type_string))
        snprintf(msg, sizeof msg, "%s", json_object_get_string(m));
    if (http_status)
        snprintf(via, sizeof via, " (HTTP %d)", http_status);
    if (code == -32602 || code == -32601)
        aur__out_set(out, AUR_CALL_FAILED,
                "MCP server explicitly rejected the call: %d %s%s", code, msg,
                via);
    else
        aur__out_set(out, AUR_CALL_UNKNOWN,
                     "MCP server error; the effect of the call cannot be "
                     "confirmed: %d %s%s",
                     code, msg, via);
}

void aur__call_map_text(char *text, size_t len, struct aur_tool_output *out)
{
    if (!len) {
        free(text);
        text = strdup(NO_TEXT);
        len = strlen(NO_TEXT);
    }
    aur__out_take(out, text ? AUR_CALL_SUCCEEDED : AUR_CALL_UNKNOWN, text,
                  len);
}
