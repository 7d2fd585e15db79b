/*
 * events.c - what an App's server tells us on its own: notifications,
 * server requests, the end of the listen stream and of the connection.
 * Everything here runs on the App's dispatch (one item at a time, in
 * order, on a worker every App shares: lib/rpc/rpc_pool.h).
 *
 * One notification reaches exactly one handler: a method an extension
 * lists goes to that extension only; the core handles the rest.
 *
 * What was true when a notification arrived is decided when it arrived,
 * on the transport's thread (on_ordered), not when the dispatch gets to
 * it: an event that arrived before activation stays refused
 * however long the queue was, and one that arrived before close began is
 * still handled while close drains the queue.
 */

/* Arrival stamps (handlers.ordered). */
enum {
    STAMP_SEEN = 1u,   /* non-zero: keep it */
    STAMP_ACTIVE = 2u, /* the host was active and the App not closing */
    STAMP_COMMIT = 4u, /* this change is the one that needs a commit */
};
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "call_reply.h"
#include "jsonx.h"
#include "log.h"

#include <json-c/json.h>

/* The frozen tool ids in discovery order (new array, transfer). */
static struct json_object *frozen_ids(struct aur__app *app)
{
    struct json_object *a = json_object_new_array();
    bool ok = a != NULL;
    for (size_t i = 0; ok && i < app->ntools; i++)
        ok = aur__json_push(a, json_object_new_string(app->tools[i]->id));
    return aur__json_built(a, ok);
}

/* listen_id is laid down before the connection opens (negotiate.c). */
static bool is_listen_id(struct aur__app *app, struct json_object *id)
{
    return aur__json_str_is(id, app->listen_id);
}

static struct json_object *subscription_id(struct json_object *params)
{
    struct json_object *meta, *sid;
    if (json_object_object_get_ex(params, "_meta", &meta) &&
        json_object_object_get_ex(meta, "io.modelcontextprotocol/subscriptionId",
                                  &sid))
        return sid;
    return NULL;
}

/* The first change after activation sets restart_required; its seq is
 * the one mcp.catalog.changed commit's (STAMP_COMMIT: queue it).
 * app->mu held. */
static unsigned flag_restart(struct aur__app *app, int64_t seq)
{
    if (app->restart_required)
        return 0;
    app->restart_required = true;
    app->commit_change_seq = seq;
    return STAMP_COMMIT;
}

/* On the transport's thread (see on_ordered), so a change sent before a
 * tools/list response is counted before that response is seen.  Returns
 * the notification's stamp. */
static unsigned count_change(struct aur__app *app, struct json_object *params)
{
    unsigned stamp = STAMP_SEEN;
    struct json_object *sid = subscription_id(params);

    pthread_mutex_lock(&app->mu);
    /* Modern servers only push on our subscription; a list_changed for
     * another subscription is not ours to count. */
    if (app->modern && sid && !is_listen_id(app, sid)) {
        pthread_mutex_unlock(&app->mu);
        return AUR__RPC_DROP;
    }
    bool before_freeze = false;
    int64_t seq = 0;
    if (!app->closing) {
        seq = ++app->change_seq;
        app->changes++;
        before_freeze = !app->activated;
        if (app->activated)
            stamp |= flag_restart(app, seq);
        pthread_cond_broadcast(&app->cv);
    }
    pthread_mutex_unlock(&app->mu);
    /* Counted before the App was activated: a listed App pages again;
     * one the freeze went past meanwhile got a stale catalog, which this
     * change then marks, as one right after the freeze would. */
    if (before_freeze && aur__startup_recheck(app)) {
        pthread_mutex_lock(&app->mu);
        if (!app->closing)
            stamp |= flag_restart(app, seq);
        pthread_mutex_unlock(&app->mu);
    }
    /* Only the one change that needs a commit is worth queueing. */
    return (stamp & STAMP_COMMIT) ? stamp : AUR__RPC_DROP;
}

/* On the App's dispatch: the one mcp.catalog.changed commit. */
static void commit_change(struct aur__app *app)
{
    int64_t seq;
    pthread_mutex_lock(&app->mu);
    seq = app->commit_change_seq;
    pthread_mutex_unlock(&app->mu);
    aur__log(app->mcp->log, AUR_LOG_WARN, app->tag,
             "tool catalog changed; restart required to see it");
    struct json_object *data = json_object_new_object();
    char suffix[48];
    char *summary = aur__strdup_printf(
        "MCP tool catalog changed, restart required: %s", app->cfg->package);
    bool ok = aur__json_set(data, "restart_required",
                            json_object_new_boolean(1));
    ok = ok && aur__json_set(data, "frozen_tool_ids", frozen_ids(app));
    data = aur__json_built(data, ok);
    snprintf(suffix, sizeof suffix, "catalog-changed:%lld", (long long)seq);
    aur__lifecycle_commit(app, "mcp.catalog.changed", suffix, summary, data);
    free(summary);
    json_object_put(data);
}

void aur__app_mark_disconnected(struct aur__app *app, int rc,
                                const char *detail)
{
    bool commit = false;
    int64_t seq;

    pthread_mutex_lock(&app->mu);
    if (app->closing || app->disconnected) {
        pthread_mutex_unlock(&app->mu);
        return;
    }
    app->disconnected = true;
    app->disconnect_rc = rc;
    /* Cut to fit, as every detail kept in a fixed buffer is. */
    snprintf(app->disconnect_detail, sizeof app->disconnect_detail, "%.*s",
             (int)sizeof app->disconnect_detail - 1, detail);
    app->change_seq++;
    seq = app->change_seq;
    if (app->activated) {
        app->state = AUR__S_UNAVAILABLE;
        aur__set_str(&app->last_error, detail);
        app->restart_required = true;
        commit = true;
    }
    pthread_cond_broadcast(&app->cv);
    pthread_mutex_unlock(&app->mu);
    aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag, "connection lost: %s",
             app->disconnect_detail);
    /* One the freeze went past meanwhile fails at activation (startup.c,
     * "a disconnect since the clean listing"). */
    (void)aur__startup_recheck(app);
    if (!commit || !aur__activation_wait(app->mcp))
        return;
    aur__log(app->mcp->log, AUR_LOG_WARN, app->tag,
             "disconnected; restart required");
    struct json_object *data = json_object_new_object();
    char suffix[48];
    char *summary =
        aur__strdup_printf("MCP App disconnected: %s", app->cfg->package);
    bool ok = aur__json_set(data, "error", json_object_new_string(detail));
    ok = ok && aur__json_set(data, "restart_required",
                             json_object_new_boolean(1));
    data = aur__json_built(data, ok);
    snprintf(suffix, sizeof suffix, "disconnected:%lld", (long long)seq);
    aur__lifecycle_commit(app, "mcp.app.disconnected", suffix, summary, data);
    free(summary);
    json_object_put(data);
}

static void listen_acknowledged(struct aur__app *app,
                                struct json_object *params)
{
    struct json_object *honoured = NULL, *v = NULL;
    if (!is_listen_id(app, subscription_id(params)))
        return;
    json_object_object_get_ex(params, "notifications", &honoured);
    json_object_object_get_ex(honoured, "toolsListChanged", &v);
    pthread_mutex_lock(&app->mu);
    if (!app->listen_acked) {
        app->listen_acked = true;
        /* All startup needs of the ack (no copy to make). */
        app->listen_tools_honoured = json_object_is_type(v, json_type_boolean)
                                     && json_object_get_boolean(v);
        pthread_cond_broadcast(&app->cv);
    }
    pthread_mutex_unlock(&app->mu);
}

/* An extension that lists method, or NULL. */
static struct aur__ext_session *ext_for(struct aur__app *app,
                                        const char *method)
{
    for (size_t i = 0; i < app->next; i++) {
        const char *const *m = app->ext[i].p->ops.e.methods;
        for (; m && *m; m++)
            if (strcmp(*m, method) == 0)
                return &app->ext[i];
    }
    return NULL;
}

static void on_notification(void *ud, const char *method,
                            struct json_object *params,
                            struct json_object *msg, unsigned stamp)
{
    struct aur__app *app = ud;
    struct aur__ext_session *s = ext_for(app, method);
    (void)msg;

    /* Past close's drain: an extension only counts it (as arriving
     * inactive); nothing is acted on, committed or waited for. */
    if (stamp & AUR__RPC_OVERDUE)
        stamp &= ~(unsigned)(STAMP_ACTIVE | STAMP_COMMIT);
    /* Active at arrival: acted on once activation's commits are in. */
    if ((stamp & (STAMP_ACTIVE | STAMP_COMMIT)) &&
        !aur__activation_wait(app->mcp))
        stamp &= ~(unsigned)(STAMP_ACTIVE | STAMP_COMMIT);
    if (s) {
        struct aur_error err;
        bool accepted;
        void *session;
        pthread_mutex_lock(&app->mu);
        accepted = s->active;
        session = s->session;
        pthread_mutex_unlock(&app->mu);
        aur_error_clear(&err);
        if (accepted &&
            s->p->ops.e.on_notify(s->p->state, session, method, params,
                                  (stamp & STAMP_ACTIVE) != 0, &err) < 0)
            aur__log(app->mcp->log, AUR_LOG_WARN, app->tag,
                     "%s: %s rejected: %s", s->p->name, method, err.msg);
        return;
    }
    if (strcmp(method, "notifications/tools/list_changed") == 0) {
        if (stamp & STAMP_COMMIT)
            commit_change(app);
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        struct json_object *rid = NULL;
        json_object_object_get_ex(params, "requestId", &rid);
        if (is_listen_id(app, rid))
            aur__app_mark_disconnected(
                app, AUR_E_CLOSED, "the server ended the change subscription");
    } else {
        aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag,
                 "notification %.64s ignored", method);
    }
}

static struct json_object *on_request(void *ud, const char *method,
                                      struct json_object *params)
{
    struct aur__app *app = ud;
    bool modern;
    (void)params;
    pthread_mutex_lock(&app->mu);
    modern = app->modern;
    pthread_mutex_unlock(&app->mu);
    /* Legacy servers may ping; nothing else they could ask (roots,
     * sampling, elicitation) was declared, so the rest gets -32601. */
    if (!modern && strcmp(method, "ping") == 0)
        return json_object_new_object();
    aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag,
             "server request %.64s refused", method);
    return NULL;
}

static void on_response(void *ud, struct json_object *msg)
{
    struct aur__app *app = ud;
    struct json_object *id = NULL, *e, *c;
    json_object_object_get_ex(msg, "id", &id);
    if (!is_listen_id(app, id))
        return;
    if (json_object_object_get_ex(msg, "error", &e)) {
        pthread_mutex_lock(&app->mu);
        bool acked = app->listen_acked;
        if (!acked) {
            app->listen_error = json_object_object_get_ex(e, "code", &c)
                                    ? json_object_get_int(c)
                                    : -32603;
            if (!app->listen_error)
                app->listen_error = -32603;
            pthread_cond_broadcast(&app->cv);
        }
        pthread_mutex_unlock(&app->mu);
        if (!acked)
            return;
    }
    aur__app_mark_disconnected(app, AUR_E_CLOSED,
                               "the server ended the change subscription");
}

/* The listen request ended without a response (the transport said so):
 * before its acknowledgement that is a failed subscription, after it the
 * end of the change stream. */
static void on_ended(void *ud, struct json_object *id,
                     const struct aur__rpc_end *end)
{
    struct aur__app *app = ud;
    char detail[300];
    bool acked;
    if (!is_listen_id(app, id))
        return;
    pthread_mutex_lock(&app->mu);
    acked = app->listen_acked;
    if (!acked) {
        app->listen_error = -32603;
        aur__set_str(&app->listen_end, end->msg);
        pthread_cond_broadcast(&app->cv);
    }
    pthread_mutex_unlock(&app->mu);
    if (!acked)
        return;
    snprintf(detail, sizeof detail, "the change subscription ended: %s",
             end->msg);
    aur__app_mark_disconnected(app, AUR_E_CLOSED, detail);
}

static void on_closed(void *ud, const struct aur_error *why)
{
    struct aur__app *app = ud;
    char detail[300];
    snprintf(detail, sizeof detail, "connection closed%s%s",
             why && why->msg[0] ? ": " : "", why ? why->msg : "");
    aur__app_mark_disconnected(
        app, why && why->code == AUR_E_NOMEM ? AUR_E_NOMEM : AUR_E_CLOSED,
        detail);
}

static unsigned on_ordered(void *ud, const char *method,
                           struct json_object *params)
{
    struct aur__app *app = ud;
    unsigned stamp = STAMP_SEEN;

    AUR_PERTURB("events.arrival");
    if (strcmp(method, "notifications/tools/list_changed") == 0 &&
        !ext_for(app, method))
        return count_change(app, params);
    /* Quick and never blocking, so handled here: every modern App sends
     * one, and it alone would wake a dispatch worker. */
    if (strcmp(method, "notifications/subscriptions/acknowledged") == 0 &&
        !ext_for(app, method)) {
        listen_acknowledged(app, params);
        return AUR__RPC_DROP;
    }
    /* Events flow once the whole startup is through (registry, agents,
     * the frozen commits): one read before that is dropped, not queued,
     * even though its App was frozen already. */
    if (!__atomic_load_n(&app->mcp->active, __ATOMIC_ACQUIRE))
        return stamp;
    pthread_mutex_lock(&app->mu);
    if (!app->closing)
        stamp |= STAMP_ACTIVE;
    pthread_mutex_unlock(&app->mu);
    return stamp;
}

/*
 * A top-level array the connection refused (docs/protocol.md, Batches):
 * a legacy server that batches where its version does not allow it.  It
 * may have carried a tools/list_changed, so before the freeze it counts
 * as a change and the listing pages again (within the relist budget; a
 * server that keeps sending them fails its startup, as a catalog that
 * keeps changing does): a freeze never rests on a catalog that may be
 * stale.  After activation it is only the dropped frame the transport
 * logs; restart_required is not set on a guess.  On the transport's
 * thread, like the change count it mirrors (count_change).
 */
static void on_batch_refused(void *ud)
{
    struct aur__app *app = ud;
    bool counted = false;

    pthread_mutex_lock(&app->mu);
    if (!app->modern && !app->activated && !app->closing) {
        ++app->change_seq;
        app->changes++;
        pthread_cond_broadcast(&app->cv);
        counted = true;
    }
    pthread_mutex_unlock(&app->mu);
    if (!counted)
        return;
    aur__log(app->mcp->log, AUR_LOG_WARN, app->tag,
             "refused a JSON-RPC batch; it may have announced a catalog "
             "change, so it counts as one");
    aur__startup_recheck(app);
}

const struct aur__rpc_handlers aur__app_handlers_template = {
    .ordered = on_ordered,
    .notification = on_notification,
    .request = on_request,
    .response = on_response,
    .ended = on_ended,
    .closed = on_closed,
    .batch_refused = on_batch_refused,
    .reply_scan = aur__call_reply_scan,
};
