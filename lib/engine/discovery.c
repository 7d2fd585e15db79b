/*
 * discovery.c - phases "catalog/listen" and "tools/list" of one App.
 *
 * The change observer is installed before the first tools/list, so a
 * change that happens while we page is never missed; a change seen while
 * paging discards what was read and pages again (a bounded number of
 * times).  A catalog known to be stale is never kept.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "grow.h"
#include "jsonx.h"
#include "log.h"
#include "names.h"

#include <json-c/json.h>

int aur__app_listen(struct aur__app *app, aur_deadline dl,
                    struct aur_error *err)
{
    struct json_object *tools, *lc, *params, *filter;
    bool ok;
    int rc = AUR_OK;

    if (!app->modern) {
        /* Legacy servers push notifications/tools/list_changed on the
         * session unasked, on a channel the transport may still have to
         * establish (legacy HTTP: the standalone GET stream): wait for it,
         * so no change during the listing can be missed. */
        rc = aur__rpc_listen(app->rpc, dl, err);
        return rc == AUR_DECLINE ? AUR_OK : rc;
    }
    /* A server that does not advertise tools.listChanged has promised a
     * static catalog: there is nothing to subscribe to. */
    if (!json_object_object_get_ex(app->server_caps, "tools", &tools) ||
        !json_object_object_get_ex(tools, "listChanged", &lc) ||
        !json_object_get_boolean(lc) ||
        !json_object_is_type(lc, json_type_boolean))
        return AUR_OK;

    params = json_object_new_object();
    filter = json_object_new_object();
    ok = aur__json_set(filter, "toolsListChanged", json_object_new_boolean(1));
    ok = aur__json_set(params, "notifications", filter) && ok;
    ok = ok && aur__json_set(params, "_meta", aur__app_envelope(app));
    if (!ok) {
        json_object_put(params);
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    rc = aur__rpc_request_detached(app->rpc, "subscriptions/listen", params,
                                   app->listen_id, dl, err);
    if (rc != AUR_OK)
        return rc;
    app->listening = true;

    pthread_mutex_lock(&app->mu);
    while (!app->listen_acked && !app->listen_error && !app->disconnected &&
           !app->closing) {
        if (aur__cond_wait_until(&app->cv, &app->mu, dl) == ETIMEDOUT)
            break;
    }
    if (app->listen_acked) {
        if (!app->listen_tools_honoured)
            rc = aur_fail(err, AUR_E_PROTOCOL, 0,
                          "server did not accept the tools list-changed "
                          "subscription");
    } else if (app->listen_error && app->listen_end) {
        rc = aur_fail(err, AUR_E_PROTOCOL, 0, "subscriptions/listen: %s",
                      app->listen_end);
    } else if (app->listen_error) {
        rc = aur_fail(err, AUR_E_RPC, app->listen_error,
                      "subscriptions/listen: JSON-RPC error %d",
                      app->listen_error);
    } else if (app->disconnected) {
        rc = aur_fail(err, app->disconnect_rc, 0, "%s",
                      app->disconnect_detail);
    } else if (app->closing) {
        rc = aur_fail(err, AUR_E_CANCELLED, 0, "cancelled");
    } else {
        rc = aur_fail(err, AUR_E_TIMEOUT, 0,
                      "no subscription acknowledgement before the deadline");
    }
    pthread_mutex_unlock(&app->mu);
    return rc;
}

void aur__tool_free(struct aur__tool *t)
{
    if (!t)
        return;
    free(t->id);
    free(t->raw_name);
    free(t->description);
    json_object_put(t->schema);
    free(t->schema_text);
    json_object_put(t->scopes);
    free(t->json);
    free(t);
}

/*
 * What the host keeps for a tool, charged to the App's max_app_memory_bytes
 * account (rpc.h) for as long as the tool lives: its strings, the
 * schema's canonical text among them.  The scopes are
 * the App's shared defaults or an extension's (small).
 */
static size_t chunk(size_t n)
{
    n = (n + 8 + 15) & ~(size_t)15;
    return n < 32 ? 32 : n;
}

static size_t tool_mem(const struct aur__tool *t)
{
    return chunk(sizeof *t) + aur__json_mem(t->schema) +
           chunk(t->schema_len + 1) +
           chunk(strlen(t->id) + 1) + chunk(strlen(t->raw_name) + 1) +
           chunk(t->description_len + 1);
}

static int64_t tools_mem(struct aur__app *app, size_t from)
{
    int64_t m = 0;
    for (size_t i = from; i < app->ntools; i++)
        m += (int64_t)tool_mem(app->tools[i]);
    return m;
}

static void free_tools(struct aur__app *app)
{
    for (size_t i = 0; i < app->ntools; i++)
        aur__tool_free(app->tools[i]);
    free(app->tools);
    app->tools = NULL;
    app->ntools = app->tools_cap = 0;
}

/* s[0..n) without surrounding whitespace, as a new string (*len its
 * bytes, which may hold U+0000). */
static char *strip_dup(const char *s, size_t n, size_t *len)
{
    const char *e = s + n;
    char *d;
    while (s < e && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
        s++;
    while (e > s && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r')))
        e--;
    *len = (size_t)(e - s);
    if ((d = malloc(*len + 1))) {
        memcpy(d, s, *len);
        d[*len] = '\0';
    }
    return d;
}

/* execution.taskSupport is "required": the tool only runs as a task,
 * which this host does not speak. */
static bool needs_task(struct json_object *tj)
{
    struct json_object *ex, *ts;
    return json_object_object_get_ex(tj, "execution", &ex) &&
           json_object_object_get_ex(ex, "taskSupport", &ts) &&
           aur__json_str_is(ts, "required");
}

/* {"observe":["aurora:mcp:<package>"],"publish":[the same]}; NULL: out
 * of memory. */
static struct json_object *default_scopes(const char *package)
{
    struct json_object *o = json_object_new_object();
    const char *dirs[] = {"observe", "publish"};
    char *scope = aur__strdup_printf("aurora:mcp:%s", package);
    bool ok = scope != NULL;

    for (size_t i = 0; ok && i < 2; i++) {
        struct json_object *a = json_object_new_array();
        ok = aur__json_push(a, json_object_new_string(scope));
        ok = aur__json_set(o, dirs[i], aur__json_built(a, ok)) && ok;
    }
    free(scope);
    return aur__json_built(o, ok);
}

/* The raw names of one listing pass (borrowed from its tools), hashed:
 * a catalog may hold max_tools names, too many to compare pairwise. */
struct name_set {
    const char **slot;
    size_t cap, n; /* cap a power of two, at least twice n */
};

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static bool name_set_has(const struct name_set *ns, const char *name)
{
    if (!ns->cap)
        return false;
    for (size_t i = name_hash(name) & (ns->cap - 1); ns->slot[i];
         i = (i + 1) & (ns->cap - 1))
        if (strcmp(ns->slot[i], name) == 0)
            return true;
    return false;
}

/* name must not be in the set yet.  false: out of memory. */
static bool name_set_add(struct name_set *ns, const char *name)
{
    if (2 * (ns->n + 1) > ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 64;
        const char **v = calloc(cap, sizeof *v);
        if (!v)
            return false;
        for (size_t i = 0; i < ns->cap; i++) {
            if (!ns->slot[i])
                continue;
            size_t j = name_hash(ns->slot[i]) & (cap - 1);
            while (v[j])
                j = (j + 1) & (cap - 1);
            v[j] = ns->slot[i];
        }
        free(ns->slot);
        ns->slot = v;
        ns->cap = cap;
    }
    size_t j = name_hash(name) & (ns->cap - 1);
    while (ns->slot[j])
        j = (j + 1) & (ns->cap - 1);
    ns->slot[j] = name;
    ns->n++;
    return true;
}

/* One tool from a tools/list page (the rules: docs/protocol.md). */
static int bind_tool(struct aur__app *app, struct name_set *names,
                     struct json_object *defaults, struct json_object *tj,
                     struct aur_error *err)
{
    const char *pkg = app->cfg->package;
    struct json_object *name, *schema, *type, *desc;
    struct aur__tool *t = NULL;
    const char *raw;
    int rc;

    if (!json_object_is_type(tj, json_type_object))
        return aur_fail(err, AUR_E_CATALOG, 0, "a tool is not a JSON object");
    if (!json_object_object_get_ex(tj, "name", &name) ||
        !json_object_is_type(name, json_type_string))
        return aur_fail(err, AUR_E_CATALOG, 0, "a tool has no string name");
    /* A name holding U+0000 is no name: it must not freeze as its
     * prefix. */
    if (!(raw = aur__json_name(name)))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "tool name contains U+0000: %s/%.80s", pkg,
                        json_object_get_string(name));
    if (!aur__valid_raw_name(raw))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "tool name cannot form a valid Aurora tool id: "
                        "%s/%.80s",
                        pkg, raw);
    if (name_set_has(names, raw))
        return aur_fail(err, AUR_E_CATALOG, 0, "duplicate tool name: %s",
                        raw);
    if (!json_object_object_get_ex(tj, "inputSchema", &schema) ||
        !json_object_is_type(schema, json_type_object) ||
        !json_object_object_get_ex(schema, "type", &type) ||
        !aur__json_str_is(type, "object"))
        return aur_fail(err, AUR_E_CATALOG, 0,
                        "tool input schema must be an object schema: "
                        "aur.mcp.%s.%s",
                        pkg, raw);
    char *id = aur__strdup_printf("aur.mcp.%s.%s", pkg, raw);
    char *schema_text = NULL;
    size_t schema_len = 0;
    rc = id ? aur__tool_budget_check(app, id, tj, &schema_text, &schema_len,
                                     err)
            : aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (rc == AUR_OK && (int)app->ntools >= app->mcp->cfg->max_tools)
        rc = aur_fail(err, AUR_E_LIMIT, 0, "too many tools (more than %d)",
                      app->mcp->cfg->max_tools);
    if (rc == AUR_OK && !(t = calloc(1, sizeof *t)))
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (rc != AUR_OK) {
        free(id);
        free(schema_text);
        return rc;
    }
    t->app = app;
    t->id = id;
    t->schema_text = schema_text;
    t->schema_len = schema_len;
    t->raw_name = strdup(raw);
    if (json_object_object_get_ex(tj, "description", &desc) &&
        json_object_is_type(desc, json_type_string))
        t->description = strip_dup(json_object_get_string(desc),
                                   (size_t)json_object_get_string_len(desc),
                                   &t->description_len);
    if (!t->description || !t->description_len) {
        free(t->description);
        t->description = aur__strdup_printf("MCP tool: %s", raw);
        t->description_len = t->description ? strlen(t->description) : 0;
    }
    if (!t->raw_name || !t->description) {
        aur__tool_free(t);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    t->task_required = needs_task(tj);
    /* The text alone is kept (aur_mcp_tool_at makes the tree when
     * asked); a tool without it keeps the tree. */
    t->schema = schema_text ? NULL : json_object_get(schema);

    /* Tools whose scopes are the App's defaults share one read-only
     * object (1.6 KB of json-c per tool otherwise); an extension that may
     * declare others gets a copy of its own to change. */
    struct aur_tool_ref ref = {sizeof ref, t->id, t->raw_name};
    for (size_t i = 0; i < app->next; i++) {
        struct aur__ext_session *s = &app->ext[i];
        if (!s->active || !AUR_HAS(&s->p->ops.e, validate_tool))
            continue;
        if (!t->scopes && !(t->scopes = aur__json_copy(defaults))) {
            aur__tool_free(t);
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        }
        rc = s->p->ops.e.validate_tool(s->p->state, s->session, &ref, tj,
                                       t->scopes, err);
        if (rc < 0) {
            aur__tool_free(t);
            return rc;
        }
    }
    if (t->scopes && json_object_equal(t->scopes, defaults)) {
        json_object_put(t->scopes);
        t->scopes = NULL;
    }
    if (!t->scopes)
        t->scopes = json_object_get(defaults);
    struct aur__tool **grown = aur__grow(app->tools, &app->tools_cap,
                                         app->ntools + 1, sizeof *grown, 16,
                                         SIZE_MAX);
    if (!grown || !name_set_add(names, t->raw_name)) {
        if (grown)
            app->tools = grown;
        aur__tool_free(t);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    app->tools = grown;
    app->tools[app->ntools++] = t;
    return AUR_OK;
}

static int64_t changes_now(struct aur__app *app)
{
    int64_t c;
    pthread_mutex_lock(&app->mu);
    c = app->changes;
    pthread_mutex_unlock(&app->mu);
    return c;
}

/*
 * The cursors a pass has seen, as 64-bit hashes of their bytes: a cursor
 * is opaque and may be large, and only the one in use is kept whole.  A
 * repeat is what the check is for; two different cursors sharing a hash
 * (odds about n^2 / 2^65) would be taken for one.
 */
struct cursors {
    uint64_t *h;
    size_t n, cap;
};

static uint64_t bytes_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* true: seen before (or no memory to remember it: paging stops). */
static bool cursors_seen_add(struct cursors *c, const char *s, size_t n)
{
    uint64_t h = bytes_hash(s, n);
    for (size_t i = 0; i < c->n; i++)
        if (c->h[i] == h)
            return true;
    uint64_t *g = aur__grow(c->h, &c->cap, c->n + 1, sizeof *g, 16, SIZE_MAX);
    if (!g)
        return true;
    c->h = g;
    c->h[c->n++] = h;
    return false;
}

/* The tools of an earlier pass go, and their charge with them (what
 * tools_mem says of a tool does not change while it lives). */
static void drop_tools(struct aur__app *app)
{
    aur__rpc_mem_adjust(app->rpc, -tools_mem(app, 0));
    free_tools(app);
}

/* Ask for page number *pages (cursor: transfer, NULL for the first). */
static int ask_page(struct aur__app *app, struct json_object *cursor,
                    int *pages, aur_deadline dl, struct aur__pending **p,
                    struct aur_error *err)
{
    struct json_object *params;

    if (++*pages > app->mcp->cfg->max_pages) {
        json_object_put(cursor);
        return aur_fail(err, AUR_E_LIMIT, 0, "too many tools/list pages "
                        "(more than %d)", app->mcp->cfg->max_pages);
    }
    if (!(params = json_object_new_object())) {
        json_object_put(cursor);
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    if (cursor)
        json_object_object_add(params, "cursor", cursor);
    AUR_PERTURB("discovery.page");
    return aur__app_send(app, "tools/list", params, NULL, dl, p, err);
}

/* The page's nextCursor: *cursor (new, transfer) or NULL on the last
 * page.  Only the cursor in use is kept whole (a copy: the page it came
 * in is freed before it is sent); earlier ones only as hashes. */
static int next_cursor(struct json_object *res, struct cursors *seen,
                       struct json_object **cursor, struct aur_error *err)
{
    struct json_object *next;

    *cursor = NULL;
    if (!json_object_object_get_ex(res, "nextCursor", &next) || !next)
        return AUR_OK;
    const char *cs = json_object_get_string(next);
    size_t cl = (size_t)json_object_get_string_len(next);
    if (!json_object_is_type(next, json_type_string))
        return aur_fail(err, AUR_E_PROTOCOL, 0,
                        "tools/list nextCursor is not a string");
    if (cursors_seen_add(seen, cs, cl))
        return aur_fail(err, AUR_E_PROTOCOL, 0,
                        "tools/list returned a repeated cursor");
    /* Every byte, U+0000 included: it goes back as it came. */
    if (!(*cursor = json_object_new_string_len(cs, (int)cl)))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    return AUR_OK;
}

/*
 * Whether the next page may be asked for before this one's tools are
 * bound, so that the server writes it while we bind (a page's round trip
 * then costs the slower of the two, not their sum).  Only with room left
 * in the App's memory account for this page's tools and one more page of
 * its size: an App whose pages fit one at a time is never refused
 * because two were held at once.
 */
static bool may_ask_early(struct aur__app *app, int64_t page_mem)
{
    return page_mem <= aur__rpc_mem_left(app->rpc) / 2;
}

/* One full pass over every page.  *stale = a change arrived meanwhile;
 * *began = the change count the pass began with. */
static int one_pass(struct aur__app *app, aur_deadline dl, bool *stale,
                    int64_t *began, struct aur_error *err)
{
    struct cursors seen = {0};
    struct name_set names = {0};
    struct json_object *defaults = default_scopes(app->cfg->package);
    struct aur__pending *p = NULL; /* the page asked for, not yet read */
    int64_t before = changes_now(app);
    int pages = 0, rc = AUR_OK;

    drop_tools(app);
    if (!defaults)
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    else
        rc = ask_page(app, NULL, &pages, dl, &p, err);
    while (rc == AUR_OK && p) {
        struct json_object *res = NULL, *tools, *cursor = NULL;

        /* The page stays charged to the App's memory account while its
         * tools are bound, so what the server sends meanwhile is bounded
         * by what is left. */
        aur__rpc_keep_reply = true;
        aur__rpc_kept_reply = 0;
        rc = aur__app_result(app, p, "tools/list", dl, &res, NULL, err);
        p = NULL;
        aur__rpc_keep_reply = false;
        int64_t page_mem = aur__rpc_kept_reply;
        size_t first = app->ntools, n = 0;
        if (rc == AUR_OK &&
            (!json_object_object_get_ex(res, "tools", &tools) ||
             !json_object_is_type(tools, json_type_array)))
            rc = aur_fail(err, AUR_E_PROTOCOL, 0,
                          "tools/list result has no tools array");
        if (rc == AUR_OK)
            rc = next_cursor(res, &seen, &cursor, err);
        /* No point reading the rest of a stale catalog. */
        if (cursor && changes_now(app) != before) {
            json_object_put(cursor);
            cursor = NULL;
        }
        if (rc == AUR_OK && cursor && may_ask_early(app, page_mem)) {
            rc = ask_page(app, cursor, &pages, dl, &p, err);
            cursor = NULL;
        }
        AUR_PERTURB("discovery.bind"); /* the early page may come first */
        if (rc == AUR_OK) {
            n = json_object_array_length(tools);
            for (size_t i = 0; i < n && rc == AUR_OK; i++)
                rc = bind_tool(app, &names, defaults,
                               json_object_array_get_idx(tools, i), err);
        }
        /* What the tools keep (their schema subtrees of the page, their
         * strings) is charged before the page is released, so nothing
         * is ever uncounted; for a moment the schemas count twice. */
        int64_t kept = tools_mem(app, first);
        aur__rpc_mem_adjust(app->rpc, kept);
        json_object_put(res);
        aur__rpc_mem_adjust(app->rpc, -page_mem);
        if (rc == AUR_OK)
            aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag,
                     "tools/list page %d: %zu tools, %lld bytes kept of "
                     "%lld%s", pages - (p ? 1 : 0), n, (long long)kept,
                     (long long)page_mem, p || cursor ? ", more" : "");
        if (rc == AUR_OK && cursor && changes_now(app) == before)
            rc = ask_page(app, cursor, &pages, dl, &p, err);
        else
            json_object_put(cursor);
        if (p && (rc != AUR_OK || changes_now(app) != before)) {
            /* Asked early for a page this pass will not read: its answer
             * is dropped when it comes. */
            aur__rpc_abandon(app->rpc, p, false);
            p = NULL;
        }
    }
    free(seen.h);
    free(names.slot);
    json_object_put(defaults); /* the tools hold their references */
    *stale = changes_now(app) != before;
    *began = before;
    return rc;
}

int aur__app_list_tools(struct aur__app *app, aur_deadline dl, int *relists,
                        struct aur_error *err)
{
    int max_relist = app->mcp->cfg->max_relist;
    /* The last pass that failed on its own (a bad page, a duplicate
     * name) while the catalog also changed: named when the budget runs
     * out, or the change would hide it. */
    char last_fail[AUR_ERR_MSG_SIZE] = "";
    for (;;) {
        bool stale = false;
        int64_t began;
        int rc = one_pass(app, dl, &stale, &began, err);
        if (rc != AUR_OK && !stale)
            return rc;
        snprintf(last_fail, sizeof last_fail, "%s",
                 rc != AUR_OK ? err->msg : "");
        if (!stale) {
            /* Any change from here on, however late, is seen against
             * this count: by the freeze, or after it as a restart. */
            pthread_mutex_lock(&app->mu);
            app->listed_changes = began;
            pthread_mutex_unlock(&app->mu);
            return AUR_OK;
        }
        if (++*relists > max_relist)
            break;
        aur__log(app->mcp->log, AUR_LOG_INFO, app->tag,
                 "tool catalog changed during startup; paging again");
    }
    drop_tools(app);
    return aur_fail(err, AUR_E_CHANGED, 0,
                    "the tool catalog changed during startup %d times; no "
                    "clean pass%s%s",
                    max_relist + 1,
                    last_fail[0] ? "; the last pass also failed: " : "",
                    last_fail);
}
