/*
 * we_plugin.c - ext-world-events: business events from MCP servers into
 * the world journal (docs/protocol.md, org.aurorabot/world-events).
 *
 * event_mode world_events: declares org.aurorabot/world-events {"version":
 * 1}, requires the server to negotiate it strictly and takes
 * notifications/org.aurorabot/world-events/event.  event_mode
 * legacy_aurora_event: takes notifications/message whose logger is
 * "aurora/event" (other loggers are ordinary logs and are ignored).
 * Either way a valid event after activation becomes one
 * mcp.event.received commit, idempotent by its event id.
 *
 * No host.ini settings.
 *
 * Threads: accept_server may run for several Apps at once (the session
 * list is locked); on_notify runs on one App's dispatch thread, serialised
 * per App, and only validates and queues: each session's writer thread
 * commits the queue in batches (we_writer.c).  end_session closes the
 * queue, commits what it holds and joins the writer; the session itself
 * is freed at fini, since an on_notify that raced with the App's close
 * may still hold it.
 *
 * Logs carry counts and field names only, never event contents.
 */
#include "we_int.h"

#include <stdlib.h>
#include <string.h>

struct state {
    const struct aur_host *host;
    struct aur_self *self;
    pthread_mutex_t mu;
    struct we_session *sessions; /* every session ever made, freed at fini */
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

/* Strict: an object whose key set is exactly {"version"}, value integer 1. */
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
    struct we_session *s;
    enum we_mode mode;

    if (mode_is(app, "world_events")) {
        /* The core checks the era and transport first; these repeat it
         * so the plugin never serves a combination the README rules out. */
        if (!app->modern ||
            (app->transport && strcmp(app->transport, "stdio") != 0) ||
            !negotiated(S->host, server_caps))
            return aur_fail(err, AUR_E_NEGOTIATION, 0,
                            "MCP server did not strictly negotiate the "
                            "event extension: " WE_CAP_KEY);
        mode = WE_MODE_WORLD;
    } else if (mode_is(app, "legacy_aurora_event")) {
        if (app->modern)
            return aur_fail(err, AUR_E_NEGOTIATION, 0,
                            "legacy_aurora_event is only allowed with "
                            "handshake-era servers");
        mode = WE_MODE_LEGACY;
    } else {
        return AUR_DECLINE;
    }
    if (!app->package || !app->package[0])
        return aur_fail(err, AUR_E_INVAL, 0, "the App has no package");

    s = calloc(1, sizeof *s);
    if (!s)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    s->host = S->host;
    s->batched = AUR_ABI_MINOR_OF(S->host->abi_version) >= 1 &&
               AUR_HAS(S->host, world_write_batch);
    s->self = app->self ? app->self : S->self;
    s->mode = mode;
    s->app_scope = cat3("aurora:mcp:", app->package, "");
    s->source = cat3("mcp:", app->package, "");
    s->id_prefix = cat3("mcp:", app->package, ":event:");
    atomic_init(&s->ended, false);
    atomic_init(&s->committed, 0);
    atomic_init(&s->duplicates, 0);
    atomic_init(&s->rejected, 0);
    atomic_init(&s->dropped, 0);
    atomic_init(&s->bad_payload, 0);
    atomic_init(&s->conflicts, 0);
    atomic_init(&s->write_failures, 0);
    atomic_init(&s->queued, 0);
    if (!s->app_scope || !s->source || !s->id_prefix ||
        we_writer_init(s, err) != AUR_OK) {
        we_session_free(s);
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
static struct json_object *payload_of(struct we_session *s, const char *method,
                                      struct json_object *params,
                                      bool *is_event)
{
    struct json_object *logger, *data = NULL;

    *is_event = false;
    if (strcmp(method, WE_METHOD_EVENT) == 0) {
        *is_event = s->mode == WE_MODE_WORLD;
        return params;
    }
    if (strcmp(method, WE_METHOD_MESSAGE) != 0 || s->mode != WE_MODE_LEGACY)
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

/* An event the host will not commit: counted always, logged the first
 * time and every 4096th after (a close can drop a whole queue of them). */
static void drop(struct state *S, struct we_session *s,
                 struct aur_error *err)
{
    uint_fast64_t n = atomic_fetch_add(&s->dropped, 1) + 1;
    if (n == 1 || n % 4096 == 0)
        S->host->log(s->self, AUR_LOG_WARN,
                     "event dropped: host not active (%llu so far)",
                     (unsigned long long)n);
    aur_fail(err, AUR_E_STATE, 0, "event dropped: host not active");
}

/* A valid event is queued and AUR_OK returned; whether it was new, a
 * repeat or a conflict is known once its batch is committed, and shows in
 * the counters (and, for refusals, in one log line per batch). */
static int on_notify(void *st, void *session, const char *method,
                     struct json_object *params, int active,
                     struct aur_error *err)
{
    struct state *S = st;
    struct we_session *s = session;
    struct json_object *payload;
    struct we_event ev;
    bool is_event;
    int rc;

    if (!s || !method)
        return AUR_DECLINE;
    payload = payload_of(s, method, params, &is_event);
    if (!is_event)
        return AUR_DECLINE;
    atomic_fetch_add(&s->received, 1);
    /* Before activation and once close began (judged when the event
     * arrived), events are gone: not queued, not replayed. */
    if (!active || atomic_load(&s->ended)) {
        drop(S, s, err);
        return AUR_DECLINE;
    }
    rc = we_event_parse(payload, &ev, err);
    if (rc == AUR_OK)
        rc = we_writer_submit(s, &ev, err);
    if (rc == AUR_E_STATE) {
        drop(S, s, err); /* close began while we validated */
        return AUR_DECLINE;
    }
    if (rc != AUR_OK) {
        atomic_fetch_add(&s->rejected, 1);
        atomic_fetch_add(rc == AUR_E_EVENT ? &s->bad_payload
                                           : &s->write_failures,
                         1);
    }
    return rc;
}

/* Commits what is queued before the App is gone: everything accepted
 * while the App was active reaches the journal. */
static void end_session(void *st, void *session)
{
    struct state *S = st;
    struct we_session *s = session;
    if (!s)
        return;
    we_writer_stop(s);
    S->host->log(s->self, AUR_LOG_DEBUG,
                 "events: %llu received, %llu accepted, %llu duplicates, "
                 "%llu rejected, %llu dropped",
                 (unsigned long long)atomic_load(&s->received),
                 (unsigned long long)atomic_load(&s->committed),
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
 * anyone (events are best-effort, without ack or replay); "queued" are
 * valid events accepted but not yet answered by the journal (they move
 * to committed, duplicates or rejected within a transaction's time). */
static int we_status(void *st, void *session, struct json_object *out,
                     struct aur_error *err)
{
    struct we_session *s = session;
    struct json_object *why;
    (void)st;
    (void)err;
    if (!s)
        return AUR_DECLINE;
    pthread_mutex_lock(&s->mu); /* one consistent batch state */
    add_count(out, "received", &s->received);
    add_count(out, "committed", &s->committed);
    add_count(out, "duplicates", &s->duplicates);
    add_count(out, "dropped_inactive", &s->dropped);
    add_count(out, "rejected", &s->rejected);
    add_count(out, "queued", &s->queued);
    why = json_object_new_object();
    add_count(why, "invalid_payload", &s->bad_payload);
    add_count(why, "commit_conflict", &s->conflicts);
    add_count(why, "journal_error", &s->write_failures);
    pthread_mutex_unlock(&s->mu);
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
    /* a session whose App never reached end_session still commits what
     * it holds (the host's writer outlives its plugins' sessions) */
    for (struct we_session *s = S->sessions, *n; s; s = n) {
        n = s->next;
        we_writer_stop(s);
        we_session_free(s);
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

/* Its host.ini section's keys (ABI 1.4: the host refuses others). */
static const struct aur_cfg_key we_settings[] = {
    {NULL, 0, 0},
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi);

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    static const struct aur_plugin_desc desc = {
        /* 1.0: later services are tested before use (AUR_HAS). */
        AUR_DESC_HEADER_MIN(AUR_KIND_EXTENSION, 0),
        .name = "ext-world-events",
        .version = "1.0.0",
        .summary = "business events from MCP servers into the world journal",
        .init = we_init,
        .fini = we_fini,
        .ops = &we_ops,
        .settings = we_settings,
    };
    (void)host_abi;
    return &desc;
}
