/*
 * lifecycle.c - the world commits of the startup transaction:
 * mcp.app.starting / ready / failed and mcp.catalog.frozen, written per
 * App in config order after the Apps' threads are done, so the journal
 * reads the same whatever the timing was.
 *
 * Each group (the startup commits of every App, then the frozen ones) is
 * one batch: one transaction in the journal.  A transaction a commit made
 * a start of 300 Apps write 14 046 WAL pages and sync 449 times
 * (docs/journal.md).  A storage failure loses the whole group, never a
 * part of it; every commit it held is logged as not written.
 */
#include "aur_setup.h"

#include "engine.h"
#include "jsonx.h"
#include "log.h"

#include <errno.h>
#include <json-c/json.h>

/* One commit of a group and what it owns.  Items never move once added
 * (the group is sized at its start), so c may point into them. */
struct lc_item {
    struct aur__app *app;
    char *id, *source, *scope, *summary;
    const char *scopes[1];
    struct json_object *data;
    struct aur_commit c;
};

struct lc_group {
    struct lc_item *v;
    size_t n, cap;
};

static void lc_init(struct lc_group *g, size_t cap)
{
    g->n = 0;
    g->cap = cap ? cap : 1;
    g->v = calloc(g->cap, sizeof *g->v);
    if (!g->v)
        g->cap = 0;
}

static void item_free(struct lc_item *it)
{
    free(it->id);
    free(it->source);
    free(it->scope);
    free(it->summary);
    json_object_put(it->data);
}

/* Add kind of app to g: summary and data transfer (NULL: out of memory,
 * logged like a journal error and nothing of it kept). */
static void lc_add(struct lc_group *g, struct aur__app *app, const char *kind,
                   const char *suffix, char *summary,
                   struct json_object *data, const char *when)
{
    struct aur_mcp *mcp = app->mcp;
    const char *pkg = app->cfg->package;
    struct lc_item it = {.app = app, .summary = summary, .data = data}, *slot;

    it.id = aur__strdup_printf("mcp:%s:%s:%s", mcp->startup_id, pkg, suffix);
    it.source = aur__strdup_printf("mcp:%s", pkg);
    it.scope = aur__strdup_printf("aurora:mcp:%s", pkg);
    if (g->n == g->cap || !it.id || !it.source || !it.scope || !summary ||
        !data) {
        aur__log(mcp->log, AUR_LOG_ERROR, app->tag,
                 "lifecycle commit %s not written: out of memory", kind);
        item_free(&it);
        return;
    }
    slot = &g->v[g->n++];
    *slot = it;
    slot->scopes[0] = slot->scope;
    slot->c = (struct aur_commit){
        .struct_size = sizeof slot->c,
        .commit_id = slot->id,
        .kind = kind,
        .source = slot->source,
        .summary = slot->summary,
        .occurred_at = when,
        .scopes = slot->scopes,
        .n_scopes = 1,
        .data = slot->data,
    };
}

/* Write g, log what was not written, free it.  One batch, unless a
 * runtime's own writer takes the commits: it only knows one at a time,
 * and then each failure keeps its own message. */
static void lc_write(struct aur_mcp *mcp, struct lc_group *g)
{
    const struct aur_commit **v = NULL;
    int *res = NULL;
    struct aur_error err;

    aur_error_clear(&err);
    if (g->n && !mcp->have_writer) {
        v = calloc(g->n, sizeof *v);
        res = calloc(g->n, sizeof *res);
        if (v && res) {
            for (size_t i = 0; i < g->n; i++)
                v[i] = &g->v[i].c;
            (void)aur__world_append_batch(mcp, v, g->n, res, &err);
        } else {
            free(res);
            res = NULL;
            (void)aur_fail(&err, AUR_E_NOMEM, ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < g->n; i++) {
        struct lc_item *it = &g->v[i];
        int r;
        if (mcp->have_writer) {
            aur_error_clear(&err);
            r = aur__world_append(mcp, &it->c, &err);
        } else {
            r = res ? res[i] : AUR_E_NOMEM;
        }
        if (r != AUR_OK && r != AUR_DECLINE)
            aur__log(mcp->log, AUR_LOG_ERROR, it->app->tag,
                     "lifecycle commit %s not written: %s", it->c.kind,
                     err.msg[0] ? err.msg : aur_strerror(r));
        item_free(it);
    }
    free(v);
    free(res);
    free(g->v);
    g->v = NULL;
    g->n = g->cap = 0;
}

void aur__lifecycle_commit_at(struct aur__app *app, const char *kind,
                              const char *suffix, const char *summary,
                              struct json_object *data, const char *when)
{
    struct lc_group g;

    lc_init(&g, 1);
    lc_add(&g, app, kind, suffix, summary ? strdup(summary) : NULL,
           data ? json_object_get(data) : NULL, when);
    lc_write(app->mcp, &g);
}

void aur__lifecycle_commit(struct aur__app *app, const char *kind,
                           const char *suffix, const char *summary,
                           struct json_object *data)
{
    aur__lifecycle_commit_at(app, kind, suffix, summary, data, NULL);
}

/* The mcp.app.failed commit of a into g (when: NULL = now). */
static void add_failed(struct lc_group *g, struct aur__app *a,
                       const char *phase, int rc, const char *why,
                       const char *when)
{
    char *e = aur__strdup_printf("%s: %s", aur_rc_word(rc), why);
    struct json_object *data = json_object_new_object();
    bool ok = aur__json_set(data, "phase", json_object_new_string(phase));

    ok = ok && aur__json_set(data, "error",
                             json_object_new_string(e ? e : why));
    lc_add(g, a, "mcp.app.failed", "failed",
           aur__strdup_printf("MCP App startup failed: %s", a->cfg->package),
           aur__json_built(data, ok), when);
    free(e);
}

void aur__commit_failed(struct aur__app *a, const char *phase, int rc,
                        const char *why, const char *when)
{
    struct lc_group g;

    lc_init(&g, 1);
    add_failed(&g, a, phase, rc, why, when);
    lc_write(a->mcp, &g);
}

void aur__write_startup_commits(struct aur_mcp *mcp)
{
    struct lc_group g;

    lc_init(&g, 2 * mcp->napps); /* starting, then ready or failed */
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        const char *pkg = a->cfg->package;
        struct json_object *data;
        if (!a->began)
            continue;
        lc_add(&g, a, "mcp.app.starting", "starting",
               aur__strdup_printf("Connecting MCP App: %s", pkg),
               json_object_new_object(), a->t_starting);
        if (a->start_rc != AUR_OK) {
            add_failed(&g, a, a->phase, a->start_rc, a->error, a->t_done);
            continue;
        }
        data = json_object_new_object();
        bool ok = aur__json_set(data, "protocol_version",
                                json_object_new_string(a->version));
        ok = ok && aur__json_set(data, "tool_count",
                                 json_object_new_int64((int64_t)a->ntools));
        lc_add(&g, a, "mcp.app.ready", "ready",
               aur__strdup_printf("MCP App ready: %s", pkg),
               aur__json_built(data, ok), a->t_done);
    }
    lc_write(mcp, &g);
}

void aur__write_frozen_commits(struct aur_mcp *mcp)
{
    struct lc_group g;

    lc_init(&g, mcp->napps);
    for (size_t i = 0; i < mcp->napps; i++) {
        struct aur__app *a = &mcp->apps[i];
        struct json_object *data, *ids;
        if (!a->frozen)
            continue;
        bool ok = true;
        data = json_object_new_object();
        ids = json_object_new_array();
        for (size_t t = 0; ok && t < a->ntools; t++)
            ok = aur__json_push(ids, json_object_new_string(a->tools[t]->id));
        ok = aur__json_set(data, "tool_ids", aur__json_built(ids, ok)) && ok;
        ok = ok && aur__json_set(data, "tool_count",
                                 json_object_new_int64((int64_t)a->ntools));
        lc_add(&g, a, "mcp.catalog.frozen", "catalog-frozen",
               aur__strdup_printf("MCP tool catalog frozen: %s",
                                  a->cfg->package),
               aur__json_built(data, ok), NULL);
    }
    lc_write(mcp, &g);
}
