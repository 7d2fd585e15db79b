/*
 * we_plugin.c - ext-world-events: business events from MCP servers into
 * the world journal (aurora-semantics §4.2, §4.3, §8).
 *
 * event_mode world_events: declares org.aurorabot/world-events {"version":
 * 1}, requires the server to negotiate it strictly (§4.3) and takes
 * notifications/org.aurorabot/world-events/event.  event_mode
 * legacy_aurora_event: takes notifications/message whose logger is
 * "aurora/event" (other loggers are ordinary logs and are ignored).
 * Either way a valid event after activation becomes one
 * mcp.event.received commit, idempotent by its event id (§8.4).
 *
 * No host.ini settings.
 *
 * Threads: accept_server may run for several Apps at once (the session
 * list is locked); on_notify runs on one App's dispatch thread, serialised
 * per App, so a session's seen-set needs no lock.  end_session only
 * retires a session: an on_notify that raced with the App's close may
 * still hold it, so sessions are freed at fini.
 *
 * Logs carry counts and field names only, never event contents (§13).
 */
#include "we_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* At most this many event ids are remembered per session to tell
 * duplicates from new events (counting only: idempotency itself is the
 * journal's). */
#define SEEN_MAX (1u << 16)

enum mode { MODE_WORLD = 1, MODE_LEGACY = 2 };

struct session {
    struct session *next;
    struct aur_self *self;
    enum mode mode;
    char *app_scope; /* aurora:mcp:<P> */
    char *source;    /* mcp:<P> */
    char *id_prefix; /* mcp:<P>:event: */
    size_t id_prefix_len;
    atomic_bool ended;
    atomic_uint_fast64_t accepted, duplicates, rejected, dropped;
    /* rejected, by reason */
    atomic_uint_fast64_t bad_payload, conflicts, write_failures;
    uint64_t *seen; /* open addressing, 0 = empty */
    size_t seen_cap, seen_n;
};

struct state {
    const struct aur_host *host;
    struct aur_self *self;
    pthread_mutex_t mu;
    struct session *sessions; /* every session ever made, freed at fini */
};

static const char *const methods[] = {WE_METHOD_EVENT, WE_METHOD_MESSAGE,
                                      NULL};

static char *cat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb);
        memcpy(s + la + lb, c, lc + 1);
    }
    return s;
}

static void session_free(struct session *s)
{
    free(s->app_scope);
    free(s->source);
    free(s->id_prefix);
    free(s->seen);
    free(s);
}

/* ---------------------------------------------------------------- */
/* Duplicate counting                                               */
/* ---------------------------------------------------------------- */

static uint64_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static bool seen_grow(struct session *s)
{
    size_t cap = s->seen_cap ? s->seen_cap * 2 : 256;
    uint64_t *v = calloc(cap, sizeof *v);
    if (!v)
        return false;
    for (size_t i = 0; i < s->seen_cap; i++) {
        if (!s->seen[i])
            continue;
        size_t j = (size_t)s->seen[i] & (cap - 1);
        while (v[j])
            j = (j + 1) & (cap - 1);
        v[j] = s->seen[i];
    }
    free(s->seen);
    s->seen = v;
    s->seen_cap = cap;
    return true;
}

/* true if id was seen before; remembers it otherwise (while there is
 * room: past SEEN_MAX new ids are simply not remembered). */
static bool seen_check_add(struct session *s, const char *id)
{
    uint64_t h = hash_id(id);
    size_t j;

    if (s->seen_cap) {
        for (j = (size_t)h & (s->seen_cap - 1); s->seen[j];
             j = (j + 1) & (s->seen_cap - 1))
            if (s->seen[j] == h)
                return true;
    }
    if (s->seen_n >= SEEN_MAX)
        return false;
    if ((s->seen_n + 1) * 2 > s->seen_cap && !seen_grow(s))
        return false;
    for (j = (size_t)h & (s->seen_cap - 1); s->seen[j];
         j = (j + 1) & (s->seen_cap - 1))
        ;
    s->seen[j] = h;
    s->seen_n++;
    return false;
}

/* ---------------------------------------------------------------- */
/* Negotiation                                                      */
/* ---------------------------------------------------------------- */

static bool mode_is(const struct aur_app_info *app, const char *word)
{
    return app->event_mode && strcmp(app->event_mode, word) == 0;
}

static int declare_caps(void *st, const struct aur_app_info *app,
                        struct json_object *caps, struct aur_error *err)
{
    (void)st;
    if (!mode_is(app, "world_events"))
        return AUR_DECLINE;
    struct json_object *v = json_object_new_object();
    if (!v || json_object_object_add(v, "version", json_object_new_int(1)) ||
        json_object_object_add(caps, WE_CAP_KEY, v)) {
        json_object_put(v);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    return AUR_OK;
}

/* The JSON integer 1 exactly: not 1.0, "1" or true. */
static bool is_integer_one(const struct aur_host *h, struct json_object *v)
{
    char buf[32];
    if (AUR_HAS(h, json_integer_text))
        return h->json_integer_text(v, buf, sizeof buf) == AUR_OK &&
               strcmp(buf, "1") == 0;
    return json_object_is_type(v, json_type_int) &&
           json_object_get_int64(v) == 1;
}

/* §4.3: an object whose key set is exactly {"version"}, value integer 1. */
static bool negotiated(const struct aur_host *h, struct json_object *caps)
{
    struct json_object *exts, *ext, *ver;
    return json_object_object_get_ex(caps, "extensions", &exts) &&
           json_object_is_type(exts, json_type_object) &&
           json_object_object_get_ex(exts, WE_CAP_KEY, &ext) &&
           json_object_is_type(ext, json_type_object) &&
           json_object_object_length(ext) == 1 &&
           json_object_object_get_ex(ext, "version", &ver) &&
           is_integer_one(h, ver);
}

static int accept_server(void *st, const struct aur_app_info *app,
                         struct json_object *server_caps, void **session,
                         struct aur_error *err)
{
    struct state *S = st;
    struct session *s;
    enum mode mode;

    if (mode_is(app, "world_events")) {
        /* The core checks the era and transport first; these repeat it
         * so the plugin never serves a combination §8.1 rules out. */
        if (!app->modern ||
            (app->transport && strcmp(app->transport, "stdio") != 0) ||
            !negotiated(S->host, server_caps))
            return aur_fail(err, AUR_E_NEGOTIATION, 0,
                            "MCP server did not strictly negotiate the "
                            "event extension: " WE_CAP_KEY);
        mode = MODE_WORLD;
    } else if (mode_is(app, "legacy_aurora_event")) {
        if (app->modern)
            return aur_fail(err, AUR_E_NEGOTIATION, 0,
                            "legacy_aurora_event is only allowed with "
                            "handshake-era servers");
        mode = MODE_LEGACY;
    } else {
        return AUR_DECLINE;
    }
    if (!app->package || !app->package[0])
        return aur_fail(err, AUR_E_INVAL, 0, "the App has no package");

    s = calloc(1, sizeof *s);
    if (!s)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    s->self = app->self ? app->self : S->self;
    s->mode = mode;
    s->app_scope = cat3("aurora:mcp:", app->package, "");
    s->source = cat3("mcp:", app->package, "");
    s->id_prefix = cat3("mcp:", app->package, ":event:");
    atomic_init(&s->ended, false);
    atomic_init(&s->accepted, 0);
    atomic_init(&s->duplicates, 0);
    atomic_init(&s->rejected, 0);
    atomic_init(&s->dropped, 0);
    atomic_init(&s->bad_payload, 0);
    atomic_init(&s->conflicts, 0);
    atomic_init(&s->write_failures, 0);
    if (!s->app_scope || !s->source || !s->id_prefix) {
        session_free(s);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    s->id_prefix_len = strlen(s->id_prefix);
    pthread_mutex_lock(&S->mu);
    s->next = S->sessions;
    S->sessions = s;
    pthread_mutex_unlock(&S->mu);
    *session = s;
    return AUR_OK;
}

/* ---------------------------------------------------------------- */
/* Events                                                           */
/* ---------------------------------------------------------------- */

/* The payload this notification carries for s's mode, or NULL when it is
 * not an event at all (*is_event = false). */
static struct json_object *payload_of(struct session *s, const char *method,
                                      struct json_object *params,
                                      bool *is_event)
{
    struct json_object *logger, *data = NULL;

    *is_event = false;
    if (strcmp(method, WE_METHOD_EVENT) == 0) {
        *is_event = s->mode == MODE_WORLD;
        return params;
    }
    if (strcmp(method, WE_METHOD_MESSAGE) != 0 || s->mode != MODE_LEGACY)
        return NULL;
    /* Never a generic log route: only this logger's data is an event. */
    if (!json_object_object_get_ex(params, "logger", &logger) ||
        !json_object_is_type(logger, json_type_string) ||
        strcmp(json_object_get_string(logger), WE_LEGACY_LOGGER) != 0)
        return NULL;
    *is_event = true;
    json_object_object_get_ex(params, "data", &data);
    return data;
}

static int commit_event(struct state *S, struct session *s,
                        const struct we_event *ev, struct aur_error *err)
{
    size_t idl = strlen(ev->event_id);
    char *commit_id = malloc(s->id_prefix_len + idl + 1);
    struct json_object *data = json_object_new_object();
    const char *scopes[2] = {ev->scope, s->app_scope};
    int rc;

    if (!commit_id || !data) {
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        goto out;
    }
    memcpy(commit_id, s->id_prefix, s->id_prefix_len);
    memcpy(commit_id + s->id_prefix_len, ev->event_id, idl + 1);
    if (json_object_object_add(data, "event_id",
                               json_object_new_string(ev->event_id)) ||
        json_object_object_add(data, "event_kind",
                               json_object_new_string(ev->kind)) ||
        json_object_object_add(data, "data",
                               ev->data ? json_object_get(ev->data)
                                        : json_object_new_object())) {
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        goto out;
    }
    struct aur_commit c = {
        .struct_size = sizeof c,
        .commit_id = commit_id,
        .kind = "mcp.event.received",
        .source = s->source,
        .summary = ev->summary,
        .occurred_at = ev->occurred_at,
        .scopes = scopes,
        .n_scopes = strcmp(ev->scope, s->app_scope) == 0 ? 1 : 2,
        .data = data,
    };
    rc = S->host->world_write(s->self, &c, err);
    /* The journal's text would name the commit id; keep ours generic. */
    if (rc == AUR_E_CONFLICT)
        aur_fail(err, AUR_E_CONFLICT, 0,
                 "event_id already committed with different content");
out:
    json_object_put(data);
    free(commit_id);
    return rc;
}

static int on_notify(void *st, void *session, const char *method,
                     struct json_object *params, int active,
                     struct aur_error *err)
{
    struct state *S = st;
    struct session *s = session;
    struct json_object *payload;
    struct we_event ev;
    bool is_event;
    int rc;

    if (!s || !method)
        return AUR_DECLINE;
    payload = payload_of(s, method, params, &is_event);
    if (!is_event)
        return AUR_DECLINE;
    /* §8.1: before activation and once close began, events are gone:
     * not queued, not replayed. */
    if (!active || atomic_load(&s->ended)) {
        atomic_fetch_add(&s->dropped, 1);
        S->host->log(s->self, AUR_LOG_WARN, "event dropped: host not active");
        aur_fail(err, AUR_E_STATE, 0, "event dropped: host not active");
        return AUR_DECLINE;
    }
    rc = we_event_parse(payload, &ev, err);
    if (rc == AUR_OK)
        rc = commit_event(S, s, &ev, err);
    if (rc != AUR_OK) {
        atomic_fetch_add(&s->rejected, 1);
        atomic_fetch_add(rc == AUR_E_EVENT      ? &s->bad_payload
                         : rc == AUR_E_CONFLICT ? &s->conflicts
                                                : &s->write_failures,
                         1);
        return rc;
    }
    if (seen_check_add(s, ev.event_id))
        atomic_fetch_add(&s->duplicates, 1);
    else
        atomic_fetch_add(&s->accepted, 1);
    return AUR_OK;
}

static void end_session(void *st, void *session)
{
    struct state *S = st;
    struct session *s = session;
    if (!s)
        return;
    atomic_store(&s->ended, true);
    S->host->log(s->self, AUR_LOG_DEBUG,
                 "events: %llu accepted, %llu duplicates, %llu rejected, "
                 "%llu dropped",
                 (unsigned long long)atomic_load(&s->accepted),
                 (unsigned long long)atomic_load(&s->duplicates),
                 (unsigned long long)atomic_load(&s->rejected),
                 (unsigned long long)atomic_load(&s->dropped));
}

static void add_count(struct json_object *o, const char *k,
                      atomic_uint_fast64_t *v)
{
    json_object_object_add(o, k,
                           json_object_new_int64((int64_t)atomic_load(v)));
}

/* Counts only: "committed" means written to the journal, not delivered to
 * anyone (events are best-effort, without ack or replay). */
static int we_status(void *st, void *session, struct json_object *out,
                     struct aur_error *err)
{
    struct session *s = session;
    struct json_object *why;
    (void)st;
    (void)err;
    if (!s)
        return AUR_DECLINE;
    add_count(out, "committed", &s->accepted);
    add_count(out, "duplicates", &s->duplicates);
    add_count(out, "dropped_inactive", &s->dropped);
    add_count(out, "rejected", &s->rejected);
    why = json_object_new_object();
    add_count(why, "invalid_payload", &s->bad_payload);
    add_count(why, "commit_conflict", &s->conflicts);
    add_count(why, "journal_error", &s->write_failures);
    json_object_object_add(out, "rejected_by_reason", why);
    return AUR_OK;
}

/* ---------------------------------------------------------------- */
/* The plugin                                                       */
/* ---------------------------------------------------------------- */

static int we_init(const struct aur_host *host, struct aur_self *self,
                   const struct aur_cfg *cfg, void **state,
                   struct aur_error *err)
{
    struct state *S;
    (void)cfg;
    if (!host || !AUR_HAS(host, world_write) || !AUR_HAS(host, log))
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "ext-world-events needs the host's world_write");
    S = calloc(1, sizeof *S);
    if (!S)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (pthread_mutex_init(&S->mu, NULL) != 0) {
        free(S);
        return aur_fail(err, AUR_E_NOMEM, 0, "cannot create a mutex");
    }
    S->host = host;
    S->self = self;
    *state = S;
    return AUR_OK;
}

static void we_fini(void *state)
{
    struct state *S = state;
    if (!S)
        return;
    for (struct session *s = S->sessions, *n; s; s = n) {
        n = s->next;
        session_free(s);
    }
    pthread_mutex_destroy(&S->mu);
    free(S);
}

static const struct aur_extension_ops we_ops = {
    .struct_size = sizeof we_ops,
    .cap_key = WE_CAP_KEY,
    .methods = methods,
    .declare_caps = declare_caps,
    .accept_server = accept_server,
    .on_notify = on_notify,
    .end_session = end_session,
    .status = we_status,
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi);

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    static const struct aur_plugin_desc desc = {
        AUR_DESC_HEADER(AUR_KIND_EXTENSION),
        .name = "ext-world-events",
        .version = "0.1.0",
        .summary = "business events from MCP servers into the world journal",
        .init = we_init,
        .fini = we_fini,
        .ops = &we_ops,
    };
    (void)host_abi;
    return &desc;
}
