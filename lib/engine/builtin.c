/*
 * builtin.c - tools the embedding runtime implements itself: adding them
 * before start, on json-c trees (aur_host_jsonc.h) or on text
 * (aur_host.h), and running one call.
 *
 * A text builtin answers through aur_builtin_reply_set, so no allocator
 * crosses the API.  One that returns without answering ran and said
 * nothing: its call is unknown, never failed.
 */
#include "aur_setup.h"

#include "engine.h"
#include "jsonx.h"
#include "names.h"
#include "utf8.h"

#include <json-c/json.h>

struct aur_builtin_reply {
    struct aur_tool_output *out;
    bool answered;
    bool nomem; /* an answer was lost: the outcome is unknown */
};

/* Every description goes out as JSON text (status, aur_mcp_tool_json),
 * which only UTF-8 can be. */
static bool utf8_ok(const char *s)
{
    return aur__utf8_valid((const unsigned char *)s, strlen(s));
}

/* Takes schema (NULL = {"type":"object"}); frees it on failure. */
static int add_tool(struct aur_mcp *h, const char *id,
                    const char *description, struct json_object *schema,
                    aur_builtin_jsonc_fn *fn, aur_builtin_fn *tfn, void *ud,
                    struct aur_error *err)
{
    struct aur__tool *t, **grown;

    if (h->started) {
        json_object_put(schema);
        return aur_fail(err, AUR_E_STATE, 0, "builtins are added before start");
    }
    if (!id || !aur__valid_builtin_id(id) || !(fn || tfn)) {
        json_object_put(schema);
        return aur_fail(err, AUR_E_INVAL, 0, "invalid builtin tool id: %s",
                        id ? id : "(null)");
    }
    /* MCP tools' own namespace: a builtin there could only collide with
     * an App's tool at start, where neither could be named. */
    if (strncmp(id, "aur.mcp.", 8) == 0) {
        json_object_put(schema);
        return aur_fail(err, AUR_E_INVAL, 0,
                        "builtin tool id %s: aur.mcp. is the MCP tools' "
                        "namespace", id);
    }
    if (description && !utf8_ok(description)) {
        json_object_put(schema);
        return aur_fail(err, AUR_E_INVAL, 0,
                        "builtin %s: description is not UTF-8", id);
    }
    for (size_t i = 0; i < h->nbuiltins; i++)
        if (strcmp(h->builtins[i]->id, id) == 0) {
            json_object_put(schema);
            return aur_fail(err, AUR_E_INVAL, 0, "duplicate tool id: %s", id);
        }
    t = calloc(1, sizeof *t);
    grown = realloc(h->builtins, (h->nbuiltins + 1) * sizeof *grown);
    if (grown)
        h->builtins = grown;
    if (t) {
        t->id = strdup(id);
        t->raw_name = strdup(strrchr(id, '.') + 1);
        t->description =
            strdup(description && *description ? description : id);
        t->schema = schema ? schema
                           : json_tokener_parse("{\"type\":\"object\"}");
        schema = NULL;
        t->scopes = json_tokener_parse("{\"observe\":[],\"publish\":[]}");
    }
    if (!t || !grown || !t->id || !t->raw_name || !t->description ||
        !t->schema || !t->scopes) {
        json_object_put(schema);
        aur__tool_free(t);
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    t->description_len = strlen(t->description);
    t->fn = fn;
    t->tfn = tfn;
    t->ud = ud;
    h->builtins[h->nbuiltins++] = t;
    return AUR_OK;
}

int aur_mcp_add_builtin_jsonc(struct aur_mcp *h, const char *id,
                              const char *description,
                              struct json_object *schema,
                              aur_builtin_jsonc_fn *fn, void *ud,
                              struct aur_error *err)
{
    struct json_object *copy = schema ? aur__json_copy(schema) : NULL;

    if (schema && !copy)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    return add_tool(h, id, description, copy, fn, NULL, ud, err);
}

int aur_mcp_add_builtin(struct aur_mcp *h, const char *id,
                        const char *description, const char *schema_json,
                        size_t schema_len, aur_builtin_fn *fn, void *ud,
                        struct aur_error *err)
{
    struct json_object *schema = NULL;
    struct aur_error e;
    int rc;

    if (schema_json) {
        rc = aur__json_parse(schema_json, schema_len, 128, &schema, &e);
        if (rc != AUR_OK)
            return aur_fail(err, rc, 0, "builtin %s: schema: %s",
                            id ? id : "(null)", e.msg);
        if (!json_object_is_type(schema, json_type_object)) {
            json_object_put(schema);
            return aur_fail(err, AUR_E_INVAL, 0,
                            "builtin %s: schema is not a JSON object",
                            id ? id : "(null)");
        }
    }
    return add_tool(h, id, description, schema, NULL, fn, ud, err);
}

int aur_builtin_reply_set(struct aur_builtin_reply *r,
                          enum aur_call_status status, const char *text,
                          size_t len)
{
    char *copy;

    if (!r || (status != AUR_CALL_SUCCEEDED && status != AUR_CALL_FAILED &&
               status != AUR_CALL_UNKNOWN) ||
        (!text && len) || len == SIZE_MAX)
        return AUR_E_INVAL;
    if (!(copy = malloc(len + 1))) {
        r->nomem = true;
        return AUR_E_NOMEM;
    }
    if (len)
        memcpy(copy, text, len);
    copy[len] = '\0';
    aur__out_take(r->out, status, copy, len);
    r->answered = true;
    return AUR_OK;
}

/* A text builtin: the arguments as canonical text, the answer through
 * the reply. */
static void run_text(struct aur__tool *t, struct json_object *args,
                     struct aur_tool_output *out)
{
    struct aur_builtin_reply r = {out, false, false};
    struct aur_error err;
    char *text = NULL;
    size_t len = 0;
    int rc = args ? aur__json_canonical(args, &text, &len, &err) : AUR_OK;

    if (rc == AUR_E_NOMEM) {
        aur__out_nomem(out, AUR_CALL_FAILED); /* it did not run */
        return;
    }
    if (rc != AUR_OK) {
        aur__out_set(out, AUR_CALL_FAILED,
                     "builtin tool arguments cannot be passed on: %s",
                     err.msg);
        return;
    }
    t->tfn(t->ud, text ? text : "{}", text ? len : 2, &r);
    free(text);
    if (r.nomem)
        aur__out_nomem(out, AUR_CALL_UNKNOWN); /* it ran */
    else if (!r.answered)
        aur__out_set(out, AUR_CALL_UNKNOWN,
                     "builtin tool gave no answer; its effect is unknown");
}

void aur__builtin_run(struct aur__tool *t, struct json_object *args,
                      struct aur_tool_output *out)
{
    if (t->tfn)
        run_text(t, args, out);
    else
        t->fn(t->ud, args, out);
    size_t n = !out->content      ? 0
               : out->content_len ? out->content_len
                                  : strlen(out->content);

    if (!out->content || aur__is_blank_n(out->content, n))
        aur__out_set(out, out->status, "builtin tool returned no content");
    else
        out->content_len = n;
    /* A list the builtin left unset is the tool's default (none). */
    if (!out->observe) {
        out->observe = t->view->observe;
        out->n_observe = t->view->n_observe;
    }
    if (!out->publish) {
        out->publish = t->view->publish;
        out->n_publish = t->view->n_publish;
    }
}
