/*
 * events.c - what an App's server tells us on its own: notifications,
 * server requests, the end of the listen stream and of the connection.
 * Everything here runs on the App's dispatch thread.
 *
 * One notification reaches exactly one handler: a method an extension
 * lists goes to that extension only; the core handles the rest.
 */
#include "aur_setup.h"

#include "clock.h"
#include "engine.h"
#include "log.h"

#include <json-c/json.h>

/* The frozen tool ids in discovery order (new array, transfer). */
static struct json_object *frozen_ids(struct aur__app *app)
{
    struct json_object *a = json_object_new_array();
    for (size_t i = 0; i < app->ntools; i++)
        json_object_array_add(a, json_object_new_string(app->tools[i]->id));
    return a;
}

static bool is_listen_id(struct aur__app *app, struct json_object *id)
{
    return app->listen_id[0] && json_object_is_type(id, json_type_string) &&
           strcmp(json_object_get_string(id), app->listen_id) == 0;
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

/* Counted on the transport's thread (see ordered below), so a change
 * sent before a tools/list response is seen before that response. */
static bool count_change(struct aur__app *app, struct json_object *params)
{
    bool commit = false;

    /* Modern servers only push on our subscription; a list_changed for
     * another subscription is not ours to count. */
    if (app->modern) {
        struct json_object *sid = subscription_id(params);
        if (sid && !is_listen_id(app, sid))
            return false;
    }
    pthread_mutex_lock(&app->mu);
    if (!app->closing) {
        app->change_seq++;
        app->changes++;
        if (app->activated && !app->restart_required) {
            app->restart_required = true;
            app->commit_change_seq = app->change_seq;
            commit = true;
        }
        pthread_cond_broadcast(&app->cv);
    }
    pthread_mutex_unlock(&app->mu);
    return commit;
}

/* On the dispatch thread: the one mcp.catalog.changed commit. */
static void commit_change(struct aur__app *app)
{
    int64_t seq;
    pthread_mutex_lock(&app->mu);
    seq = app->commit_change_seq;
    pthread_mutex_unlock(&app->mu);
    aur__log(AUR_LOG_WARN, app->tag,
             "tool catalog changed; restart required to see it");
    struct json_object *data = json_object_new_object();
    char suffix[48];
    char *summary = aur__strdup_printf(
        "MCP tool catalog changed, restart required: %s", app->cfg->package);
    json_object_object_add(data, "restart_required", json_object_new_boolean(1));
    json_object_object_add(data, "frozen_tool_ids", frozen_ids(app));
    snprintf(suffix, sizeof suffix, "catalog-changed:%lld", (long long)seq);
    aur__lifecycle_commit(app, "mcp.catalog.changed", suffix, summary, data);
    free(summary);
    json_object_put(data);
}

void aur__app_mark_disconnected(struct aur__app *app, const char *detail)
{
    bool commit = false;
    int64_t seq;

    pthread_mutex_lock(&app->mu);
    if (app->closing || app->disconnected) {
        pthread_mutex_unlock(&app->mu);
        return;
    }
    app->disconnected = true;
    aur__set_str(&app->disconnect_detail, detail);
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
    if (!commit)
        return;
    aur__log(AUR_LOG_WARN, app->tag, "disconnected; restart required");
    struct json_object *data = json_object_new_object();
    char suffix[48];
    char *summary =
        aur__strdup_printf("MCP App disconnected: %s", app->cfg->package);
    json_object_object_add(data, "error", json_object_new_string(detail));
    json_object_object_add(data, "restart_required", json_object_new_boolean(1));
    snprintf(suffix, sizeof suffix, "disconnected:%lld", (long long)seq);
    aur__lifecycle_commit(app, "mcp.app.disconnected", suffix, summary, data);
    free(summary);
    json_object_put(data);
}

static void listen_acknowledged(struct aur__app *app,
                                struct json_object *params)
{
    struct json_object *honoured = NULL;
    if (!is_listen_id(app, subscription_id(params)))
        return;
    json_object_object_get_ex(params, "notifications", &honoured);
    pthread_mutex_lock(&app->mu);
    if (!app->listen_acked) {
        app->listen_acked = true;
        app->listen_honoured = json_object_get(honoured);
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
                            struct json_object *msg)
{
    struct aur__app *app = ud;
    struct aur__ext_session *s = ext_for(app, method);
    (void)msg;

    if (s) {
        struct aur_error err;
        bool active;
        pthread_mutex_lock(&app->mu);
        active = app->activated && !app->closing;
        pthread_mutex_unlock(&app->mu);
        aur_error_clear(&err);
        if (s->active &&
            s->p->ops.e.on_notify(s->p->state, s->session, method, params,
                                  active, &err) < 0)
            aur__log(AUR_LOG_WARN, app->tag, "%s: %s rejected: %s",
                     s->p->name, method, err.msg);
        return;
    }
    if (strcmp(method, "notifications/tools/list_changed") == 0) {
        commit_change(app); /* only queued when a commit is due */
    } else if (strcmp(method, "notifications/subscriptions/acknowledged") == 0) {
        listen_acknowledged(app, params);
    } else if (strcmp(method, "notifications/cancelled") == 0) {
        struct json_object *rid = NULL;
        json_object_object_get_ex(params, "requestId", &rid);
        if (is_listen_id(app, rid))
            aur__app_mark_disconnected(
                app, "the server ended the change subscription");
    } else {
        aur__log(AUR_LOG_DEBUG, app->tag, "notification %.64s ignored",
                 method);
    }
}

static struct json_object *on_request(void *ud, const char *method,
                                      struct json_object *params)
{
    struct aur__app *app = ud;
    (void)params;
    /* Legacy servers may ping; nothing else they could ask (roots,
     * sampling, elicitation) was declared, so the rest gets -32601. */
    if (!app->modern && strcmp(method, "ping") == 0)
        return json_object_new_object();
    aur__log(AUR_LOG_DEBUG, app->tag, "server request %.64s refused", method);
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
    aur__app_mark_disconnected(app, "the server ended the change subscription");
}

static void on_closed(void *ud, const struct aur_error *why)
{
    struct aur__app *app = ud;
    char detail[300];
    snprintf(detail, sizeof detail, "connection closed%s%s",
             why && why->msg[0] ? ": " : "", why ? why->msg : "");
    aur__app_mark_disconnected(app, detail);
}

static bool on_ordered(void *ud, const char *method, struct json_object *params)
{
    struct aur__app *app = ud;
    if (strcmp(method, "notifications/tools/list_changed") != 0 ||
        ext_for(app, method))
        return true;
    return count_change(app, params);
}

const struct aur__rpc_handlers aur__app_handlers_template = {
    .ordered = on_ordered,
    .notification = on_notification,
    .request = on_request,
    .response = on_response,
    .closed = on_closed,
};
