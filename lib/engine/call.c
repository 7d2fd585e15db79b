/*
 * call.c - one tool call and its three-state outcome
 * (docs/protocol.md, Calls).
 *
 * succeeded = the executor confirmed success; failed = explicitly rejected
 * or provably without effect; unknown = the request may have reached the
 * server and its effect cannot be known.  Nothing here ever turns unknown
 * into failed, and nothing is retried.
 */
#include "aur_setup.h"

#include "clock.h"
#include "engine.h"
#include "grow.h"
#include "jsonx.h"
#include "log.h"

#include <json-c/json.h>

/*
 * A deep copy of the declared scopes for each call into *out (NULL for
 * none): json_object_deep_copy looks every key up again and gives each
 * array 32 slots; these keys come from an object, so they are new, and
 * the arrays get their exact size.  Anything but objects, arrays and
 * strings is copied by json-c.  false: out of memory (nothing kept).
 */
static bool copy_scopes(struct json_object *v, struct json_object **out)
{
    struct json_object *c, *e;

    *out = NULL;
    switch (json_object_get_type(v)) {
    case json_type_null:
        return true;
    case json_type_string:
        c = json_object_new_string_len(json_object_get_string(v),
                                       json_object_get_string_len(v));
        break;
    case json_type_array: {
        size_t n = json_object_array_length(v);
        c = json_object_new_array_ext(n ? (int)n : 1);
        for (size_t i = 0; c && i < n; i++)
            if (!copy_scopes(json_object_array_get_idx(v, i), &e) ||
                json_object_array_add(c, e) != 0) {
                json_object_put(e);
                json_object_put(c);
                return false;
            }
        break;
    }
    case json_type_object:
        c = json_object_new_object();
        json_object_object_foreach(v, k, val) {
            /* The two keys every scopes object has need no copy: static
             * keys, like the parser's vocabulary (jsonx_lex.c). */
            const char *key = strcmp(k, "observe") == 0   ? "observe"
                              : strcmp(k, "publish") == 0 ? "publish"
                                                          : NULL;
            if (!c)
                break;
            if (!copy_scopes(val, &e) ||
                json_object_object_add_ex(
                    c, key ? key : k, e,
                    JSON_C_OBJECT_ADD_KEY_IS_NEW |
                        (key ? JSON_C_OBJECT_ADD_CONSTANT_KEY : 0)) != 0) {
                json_object_put(e);
                json_object_put(c);
                return false;
            }
        }
        break;
    default:
        c = aur__json_copy(v);
    }
    *out = c;
    return c != NULL;
}

/* The tool's own lists (borrowed from the frozen view) or none. */
static void view_out(struct aur_tool_output *out,
                     const struct aur__scope_view *v)
{
    out->observe = v ? v->observe : NULL;
    out->publish = v ? v->publish : NULL;
    out->n_observe = v ? v->n_observe : 0;
    out->n_publish = v ? v->n_publish : 0;
}

/*
 * The call's scopes into *out.  Without an extension that resolves them
 * they are the tool's frozen lists; otherwise each hook edits a copy of
 * the declared templates in turn, and the result is copied into one block
 * the output owns.
 */
static int resolve_scopes(struct aur__tool *t, struct json_object *args,
                          struct aur_tool_output *out, struct aur_error *err)
{
    struct aur__app *app = t->app;
    struct aur_tool_ref ref = {sizeof ref, t->id, t->raw_name};
    struct aur__scope_view *v;
    struct json_object *s = NULL;
    bool hooked = false;

    for (size_t i = 0; i < app->next; i++) {
        struct aur__ext_session *x = &app->ext[i];
        int rc;
        if (!x->active || !AUR_HAS(&x->p->ops.e, resolve_scope))
            continue;
        if (!hooked && !copy_scopes(t->scopes, &s))
            return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
        hooked = true;
        aur_error_clear(err);
        rc = x->p->ops.e.resolve_scope(x->p->state, x->session, &ref, args, s,
                                       err);
        if (rc != AUR_OK) {
            json_object_put(s);
            if (rc == AUR_DECLINE || !err->msg[0])
                return aur_fail(err, AUR_E_SCOPE, 0, "%s",
                                err->msg[0] ? err->msg : "declined");
            return rc;
        }
    }
    if (!hooked) {
        view_out(out, t->view);
        return AUR_OK;
    }
    v = aur__scope_view_new(s, true);
    json_object_put(s);
    if (!v && errno == ENOMEM)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    if (!v)
        return aur_fail(err, AUR_E_SCOPE, 0, "resolved scopes are not lists "
                        "of strings");
    view_out(out, v);
    out->owned = v;
    return AUR_OK;
}

/*
 * The tools/call request, serialised directly: the envelope text is built
 * once per App and the arguments go through the canonical serialiser,
 * which only reads the caller's object (json-c's printer caches into it,
 * and it may be shared with other threads).  The raw name needs no
 * escaping: its grammar is [A-Za-z][A-Za-z0-9_-]*.  Small requests are
 * put together on the stack.
 * pre: a handle from aur__rpc_pending_new to send, or NULL for a new
 * one with a waiter.
 */
static int send_call(struct aur__app *app, struct aur__rpc *rpc,
                     struct aur__tool *t, struct json_object *args,
                     bool text_ok, aur_deadline dl, struct aur__pending *pre,
                     struct aur__pending **p, bool *maybe_sent,
                     struct aur_error *err)
{
    static const char k_name[] = "{\"name\":\"", k_args[] = "\",\"arguments\":",
                      k_meta[] = ",\"_meta\":";
    char *argtext = NULL, local[1024], *params = local;
    const char *at = "{}";
    size_t alen = 2, nlen = strlen(t->raw_name), mlen = 0, n;
    int rc;

    *maybe_sent = false;
    if (args && (rc = aur__json_canonical(args, &argtext, &alen, err)) != AUR_OK)
        return rc;
    if (argtext)
        at = argtext;
    if (app->modern)
        mlen = sizeof k_meta - 1 + strlen(app->envelope_text);
    n = sizeof k_name - 1 + nlen + sizeof k_args - 1 + alen + mlen + 1;
    if (n >= sizeof local && !(params = malloc(n + 1))) {
        free(argtext);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    char *w = params;
#define PUT(s, l) (memcpy(w, (s), (l)), w += (l))
    PUT(k_name, sizeof k_name - 1);
    PUT(t->raw_name, nlen);
    PUT(k_args, sizeof k_args - 1);
    PUT(at, alen);
    if (app->modern) {
        PUT(k_meta, sizeof k_meta - 1);
        PUT(app->envelope_text, mlen - (sizeof k_meta - 1));
    }
#undef PUT
    *w++ = '}';
    *w = '\0';
    free(argtext);
    if (pre) {
        *p = pre;
        rc = aur__rpc_request_pending(rpc, pre, "tools/call", params, n, dl,
                                      maybe_sent, err);
    } else {
        rc = aur__rpc_request_text(rpc, "tools/call", params, n, text_ok, dl,
                                   p, maybe_sent, err);
    }
    if (params != local)
        free(params);
    return rc;
}

/* A reply may skip the tree (call_reply.c) unless an extension reads it. */
static bool reply_as_text_ok(const struct aur__app *app)
{
    for (size_t i = 0; i < app->next; i++)
        if (app->ext[i].active && AUR_HAS(&app->ext[i].p->ops.e, classify))
            return false;
    return true;
}

/* A call that ended without a response of its own, by what the
 * transport knows of it (end) or this layer's rc. */
static void map_no_reply(struct aur__rpc *rpc, struct aur__pending *p, int rc,
                         const struct aur__rpc_end *end,
                         const struct aur_error *err,
                         struct aur_tool_output *out)
{
    if (end->ended && !end->delivered) {
        aur__out_set(out, AUR_CALL_FAILED, "MCP call not sent: %s", end->msg);
        return;
    }
    if ((end->ended ? end->code : rc) == AUR_E_NOMEM) {
        aur__out_nomem(out, AUR_CALL_UNKNOWN);
        return;
    }
    if (end->ended) {
        aur__out_set(out, AUR_CALL_UNKNOWN,
                     "MCP call got no response (%s); its effect is unknown",
                     end->msg);
        return;
    }
    switch (rc) {
    case AUR_E_TIMEOUT:
        aur__rpc_abandon(rpc, p, true);
        aur__out_set(out, AUR_CALL_UNKNOWN,
                     "MCP call timed out; its effect is unknown");
        return;
    case AUR_E_CANCELLED:
        aur__out_set(out, AUR_CALL_UNKNOWN, "MCP host shut down while the "
                     "call was in flight; its effect is unknown");
        return;
    default:
        aur__out_set(out, AUR_CALL_UNKNOWN,
                "MCP connection lost; the effect of the call is unknown (%s)",
                err->msg);
    }
}

/*
 * record_calls (docs/budgets.md has the key): one mcp.tool.called commit
 * per call that reached an App, after its outcome is decided; with_data
 * adds the arguments and the content.  A journal error is logged and
 * changes nothing of the call.
 */
static void record_call(struct aur__tool *t, struct json_object *args,
                        const struct aur_tool_output *out, int64_t ms)
{
    struct aur__app *app = t->app;
    int mode = app->mcp->cfg->record_calls;
    uint64_t n;
    char suffix[48], *summary;
    struct json_object *data;

    if (!mode)
        return;
    n = __atomic_add_fetch(&app->mcp->calls_recorded, 1, __ATOMIC_RELAXED);
    snprintf(suffix, sizeof suffix, "call:%llu", (unsigned long long)n);
    summary = aur__strdup_printf("MCP tool call %s: %s",
                                 aur_call_status_word(out->status), t->id);
    data = json_object_new_object();
    bool ok = aur__json_set(data, "tool_id", json_object_new_string(t->id));
    ok = ok && aur__json_set(data, "status",
                             json_object_new_string(
                                 aur_call_status_word(out->status)));
    ok = ok && aur__json_set(data, "duration_ms", json_object_new_int64(ms));
    if (mode == 2) {
        ok = ok && aur__json_set(data, "arguments",
                                 args ? aur__json_copy(args)
                                      : json_object_new_object());
        ok = ok && aur__json_set(data, "content",
                                 json_object_new_string_len(
                                     out->content, (int)out->content_len));
    }
    data = aur__json_built(data, ok);
    aur__lifecycle_commit(app, "mcp.tool.called", suffix, summary, data);
    json_object_put(data);
    free(summary);
}

bool aur__call_fast_ok(const struct aur__app *app)
{
    return !app->mcp->cfg->record_calls && reply_as_text_ok(app);
}

int aur__call_enter(struct aur__tool *t, struct json_object *args,
                    int64_t timeout_ms, bool wait, struct aur__call *c,
                    struct aur_tool_output *out)
{
    struct aur__app *app = t->app;
    bool open;

    *c = (struct aur__call){.t = t, .app = app};
    pthread_mutex_lock(&app->mu);
    if (app->state == AUR__S_READY && !app->disconnected && !app->closing &&
        app->rpc) {
        c->rpc = app->rpc;
        app->inflight++;
    }
    pthread_mutex_unlock(&app->mu);
    if (!c->rpc) {
        aur__out_set(out, AUR_CALL_FAILED,
                     "MCP App is not connected; the call was not sent");
        record_call(t, args, out, 0);
        return 0;
    }
    /* Never longer than the App's timeout: shutdown waits that long for
     * calls in flight before it frees the connection. */
    if (timeout_ms < 0 || timeout_ms > app->cfg->timeout_ms)
        timeout_ms = app->cfg->timeout_ms;
    c->t0 = aur__now_ms();
    c->dl = c->t0 + timeout_ms;
    /* max_in_flight: later calls queue here, unsent, until one ends; a
     * call still queued at its deadline or at close was never sent. */
    pthread_mutex_lock(&app->mu);
    while (wait && app->calls_sent >= app->cfg->budgets.in_flight &&
           !app->closing && !app->disconnected &&
           aur__cond_wait_until(&app->cv, &app->mu, c->dl) == 0)
        ;
    open = !app->closing && !app->disconnected;
    c->gated = open && app->calls_sent < app->cfg->budgets.in_flight;
    if (c->gated)
        app->calls_sent++;
    else if (!wait && open) {
        app->inflight--; /* a full gate: the caller runs it another way */
        pthread_cond_broadcast(&app->cv);
    }
    pthread_mutex_unlock(&app->mu);
    if (c->gated)
        return 1;
    if (!wait && open)
        return -1;
    aur__out_set(out, AUR_CALL_FAILED,
                 "MCP call not sent: %s", !open
                 ? "the App closed while the call waited for a slot"
                 : "max_in_flight calls of this App were still running "
                 "at the call's deadline");
    aur__call_leave(c, args, out);
    return 0;
}

int aur__call_send(struct aur__call *c, struct json_object *args,
                   struct aur__pending *pre, struct aur__pending **p,
                   struct aur_tool_output *out)
{
    struct aur__app *app = c->app;
    struct aur_error err;
    bool maybe_sent;
    int rc;

    aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag, "tools/call %s",
             c->t->raw_name);
    /* A handle made beforehand has its text_ok already. */
    rc = send_call(app, c->rpc, c->t, args, pre || reply_as_text_ok(app),
                   c->dl, pre, p, &maybe_sent, &err);
    if (rc == AUR_E_NOMEM)
        aur__out_nomem(out, maybe_sent ? AUR_CALL_UNKNOWN : AUR_CALL_FAILED);
    else if (rc != AUR_OK && maybe_sent)
        /* Only a send that provably wrote nothing is "not sent". */
        aur__out_set(out, AUR_CALL_UNKNOWN, "MCP call may have been partly "
                     "sent (%s); its effect is unknown", err.msg);
    else if (rc != AUR_OK)
        aur__out_set(out, AUR_CALL_FAILED, "MCP call not sent: %s", err.msg);
    return rc;
}

void aur__call_outcome(struct aur__call *c, struct aur__pending *p,
                       struct aur_tool_output *out)
{
    static const char *const reply_keys[] = {"error", "result"};
    struct json_object *reply = NULL, *res, *m[2];
    struct aur__app *app = c->app;
    struct aur__rpc_end end;
    struct aur_error err;
    char *text = NULL;
    size_t tlen = 0;
    bool has[2];
    int rc;

    rc = aur__rpc_wait_text(c->rpc, p, c->dl, true, &reply, &text, &tlen,
                            &end, &err);
    if (rc != AUR_OK) {
        map_no_reply(c->rpc, p, rc, &end, &err, out);
        return;
    }
    if (text) { /* a plain success, read from the text */
        aur__call_map_text(text, tlen, out);
        goto mapped;
    }
    aur__json_pick(reply, reply_keys, m, has, 2);
    res = m[1];
    if (has[0])
        aur__call_map_rpc_error(reply, end.http_status, out);
    else if (json_object_is_type(res, json_type_object))
        aur__call_map_result(c->t, res, out);
    else
        aur__out_set(out, AUR_CALL_UNKNOWN,
                "MCP call result cannot be confirmed: result is not an object");
mapped:
    json_object_put(reply);
    /* budget (lib/engine/budget.c): max_result_bytes */
    aur__call_result_budget(app, out);
    aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag, "tools/call %s done: %s",
             c->t->raw_name, aur_call_status_word(out->status));
}

void aur__call_leave(struct aur__call *c, struct json_object *args,
                     const struct aur_tool_output *out)
{
    struct aur__app *app = c->app;

    /* While still counted in flight: close waits for that before it lets
     * the journal go. */
    record_call(c->t, args, out, aur__now_ms() - c->t0);
    pthread_mutex_lock(&app->mu);
    if (c->gated)
        app->calls_sent--;
    app->inflight--;
    pthread_cond_broadcast(&app->cv);
    pthread_mutex_unlock(&app->mu);
}

static void call_app(struct aur__tool *t, struct json_object *args,
                     int64_t timeout_ms, struct aur_tool_output *out)
{
    struct aur__pending *p = NULL;
    struct aur__call c;

    /* It waits (for a slot, for its answer): nothing this thread holds
     * waits with it, least of all what may hold the slot. */
    if (t->app)
        aur__batch_before_wait(t->app);
    if (aur__call_enter(t, args, timeout_ms, true, &c, out) != 1)
        return;
    if (aur__call_send(&c, args, NULL, &p, out) == AUR_OK)
        aur__call_outcome(&c, p, out);
    aur__call_leave(&c, args, out);
}

int aur__call_args(const char *args_json, size_t args_len,
                   struct json_object **args, struct aur_error *err)
{
    struct aur_error pe;
    int rc;

    *args = NULL;
    if (!args_json)
        return AUR_OK;
    rc = aur__json_parse(args_json, args_len, 128, args, &pe);
    if (rc == AUR_E_NOMEM)
        return aur_fail(err, rc, ENOMEM, "out of memory");
    if (rc != AUR_OK)
        return aur_fail(err, AUR_E_INVAL, 0, "tool arguments are not valid "
                        "JSON (not sent): %s", pe.msg);
    if (!json_object_is_type(*args, json_type_object)) {
        json_object_put(*args);
        *args = NULL;
        return aur_fail(err, AUR_E_INVAL, 0,
                        "tool arguments must be a JSON object (not sent)");
    }
    return AUR_OK;
}

bool aur__call_prepare(struct aur__tool *t, struct json_object *args,
                       struct aur_tool_output *out)
{
    struct aur_error err;

    if (!t->app) {
        aur__builtin_run(t, args, out);
        return false;
    }
    aur_error_clear(&err);
    if (resolve_scopes(t, args, out, &err) != AUR_OK) {
        if (err.code == AUR_E_NOMEM)
            aur__out_nomem(out, AUR_CALL_FAILED);
        else
            aur__out_set(out, AUR_CALL_FAILED,
                         "MCP tool scope resolution failed: %s", err.msg);
        return false;
    }
    if (t->task_required) {
        /* The host speaks no tasks: such a call could only end unknown. */
        aur__out_set(out, AUR_CALL_FAILED,
                     "MCP tool requires task-based execution "
                     "(execution.taskSupport = required), which this host "
                     "does not support; the call was not sent");
        return false;
    }
    return true;
}

void aur__tool_call(struct aur_mcp *mcp, struct aur__tool *t,
                    struct json_object *args, int64_t timeout_ms,
                    struct aur_tool_output *out)
{
    (void)mcp;
    if (aur__call_prepare(t, args, out))
        call_app(t, args, timeout_ms, out);
}

struct aur__tool *aur__call_lookup(struct aur_mcp *h, const char *tool_id,
                                   struct aur_tool_output *out)
{
    /* Shutdown may run while calls still arrive (serve on SIGTERM). */
    bool active = __atomic_load_n(&h->active, __ATOMIC_ACQUIRE);
    struct aur__tool *t = active && tool_id ? aur__registry_find(h, tool_id)
                                            : NULL;
    const char *near;

    if (t || !out)
        return t;
    near = active && tool_id ? aur__registry_suggest(h, tool_id) : NULL;
    aur__out_set(out, AUR_CALL_FAILED, "%s: %s%s%s%s",
                 active ? "unknown tool id" : "host is not running",
                 tool_id ? tool_id : "(null)", near ? " (did you mean " : "",
                 near ? near : "", near ? "?)" : "");
    return NULL;
}

int aur_mcp_call_jsonc(struct aur_mcp *h, const char *tool_id,
                 struct json_object *arguments, int64_t timeout_ms,
                 struct aur_tool_output *out)
{
    struct aur__tool *t;
    aur__out_reset(out);
    if (arguments && !json_object_is_type(arguments, json_type_object)) {
        aur__out_set(out, AUR_CALL_FAILED,
                     "tool arguments must be a JSON object");
        return AUR_E_INVAL;
    }
    if ((t = aur__call_lookup(h, tool_id, out)))
        aur__tool_call(h, t, arguments, timeout_ms, out);
    return aur__out_is_nomem(out) ? AUR_E_NOMEM : AUR_OK;
}
