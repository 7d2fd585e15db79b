/*
 * lifecycle.c - the world commits of the startup transaction:
 * mcp.app.starting / ready / failed and mcp.catalog.frozen, written per
 * App in config order after the Apps' threads are done, so the journal
 * reads the same whatever the timing was.
 */
#include "aur_setup.h"

#include "engine.h"
#include "jsonx.h"
#include "log.h"

#include <json-c/json.h>

void aur__lifecycle_commit_at(struct aur__app *app, const char *kind,
                              const char *suffix, const char *summary,
                              struct json_object *data, const char *when)
{
    struct aur_mcp *mcp = app->mcp;
    char *id = aur__strdup_printf("mcp:%s:%s:%s", mcp->startup_id,
                                  app->cfg->package, suffix);
    char *source = aur__strdup_printf("mcp:%s", app->cfg->package);
    char *scope = aur__strdup_printf("aurora:mcp:%s", app->cfg->package);
    const char *scopes[] = {scope};
    struct aur_commit c = {
        .struct_size = sizeof c,
        .commit_id = id,
        .kind = kind,
        .source = source,
        .summary = summary,
        .occurred_at = when,
        .scopes = scopes,
        .n_scopes = 1,
        .data = data,
    };
    struct aur_error err;
    /* Like a journal error, running out of memory here is logged and
     * changes nothing of what the commit records. */
    if (!id || !source || !scope || !summary || !data)
        aur__log(app->mcp->log, AUR_LOG_ERROR, app->tag,
                 "lifecycle commit %s not written: out of memory", kind);
    else if (aur__world_append(mcp, &c, &err) != AUR_OK)
        aur__log(app->mcp->log, AUR_LOG_ERROR, app->tag,
                 "lifecycle commit %s not written: %s", kind, err.msg);
    free(id);
    free(source);
    free(scope);
}

void aur__lifecycle_commit(struct aur__app *app, const char *kind,
                           const char *suffix, const char *summary,
                           struct json_object *data)
{
    aur__lifecycle_commit_at(app, kind, suffix, summary, data, NULL);
}

/* The mcp.app.failed commit of an App (when: NULL = now). */
void aur__commit_failed(struct aur__app *a, const char *phase, int rc,
                          const char *why, const char *when)
{
    char *e = aur__strdup_printf("%s: %s", aur_rc_word(rc), why);
    char *summary =
        aur__strdup_printf("MCP App startup failed: %s", a->cfg->package);
    struct json_object *data = json_object_new_object();
    bool ok = aur__json_set(data, "phase", json_object_new_string(phase));
    ok = ok && aur__json_set(data, "error",
                             json_object_new_string(e ? e : why));
    data = aur__json_built(data, ok);
    aur__lifecycle_commit_at(a, "mcp.app.failed", "failed", summary, data,
                             when);
    json_object_put(data);
    free(summary);
    free(e);
}

void aur__write_startup_commits(struct aur_mcp *mcp)
{
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        const char *pkg = a->cfg->package;
        char *summary;
        struct json_object *data;
        if (!a->began)
            continue;
        summary = aur__strdup_printf("Connecting MCP App: %s", pkg);
        data = json_object_new_object();
        aur__lifecycle_commit_at(a, "mcp.app.starting", "starting", summary,
                                 data, a->t_starting);
        free(summary);
        json_object_put(data);
        if (a->start_rc != AUR_OK) {
            aur__commit_failed(a, a->phase, a->start_rc, a->error, a->t_done);
            continue;
        }
        data = json_object_new_object();
        summary = aur__strdup_printf("MCP App ready: %s", pkg);
        bool ok = aur__json_set(data, "protocol_version",
                                json_object_new_string(a->version));
        ok = ok && aur__json_set(data, "tool_count",
                                 json_object_new_int64((int64_t)a->ntools));
        data = aur__json_built(data, ok);
        aur__lifecycle_commit_at(a, "mcp.app.ready", "ready", summary, data,
                                 a->t_done);
        free(summary);
        json_object_put(data);
    }
}

void aur__write_frozen_commits(struct aur_mcp *mcp)
{
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        struct json_object *data, *ids;
        char *summary;
        if (a->state != AUR__S_READY)
            continue;
        bool ok = true;
        data = json_object_new_object();
        ids = json_object_new_array();
        for (size_t t = 0; ok && t < a->ntools; t++)
            ok = aur__json_push(ids, json_object_new_string(a->tools[t]->id));
        ok = aur__json_set(data, "tool_ids", aur__json_built(ids, ok)) && ok;
        ok = ok && aur__json_set(data, "tool_count",
                                 json_object_new_int64((int64_t)a->ntools));
        data = aur__json_built(data, ok);
        summary = aur__strdup_printf("MCP tool catalog frozen: %s",
                                     a->cfg->package);
        aur__lifecycle_commit(a, "mcp.catalog.frozen", "catalog-frozen",
                              summary, data);
        free(summary);
        json_object_put(data);
    }
}

