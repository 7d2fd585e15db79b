/*
 * audit.c - ext-audit: a third-party extension plugin for aurora-mcp,
 * built out of tree against the installed <aurora/aur_plugin.h> only.
 *
 * It negotiates nothing and has no opinion on outcomes: it is active for
 * every App, logs one line per complete tool result ("<tool id> result
 * seen") and, when the App's session ends, how many results it saw.  It
 * never logs arguments or results: the host log is not redacted.
 *
 * Settings ([ext-audit] in host.ini, optional):
 *   summary = true | false   log the per-session count at end_session
 *
 * Threads: accept_server and end_session run on the App's startup and
 * teardown thread; classify runs on the calling thread, possibly on
 * several threads at once for one session, so the counter is atomic and
 * everything else in the session is read-only after accept_server.
 */
#define _POSIX_C_SOURCE 200809L
#include <aurora/aur_plugin.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* One per plugin instance (init may run more than once: no globals). */
struct audit_state {
    const struct aur_host *host;
    struct aur_self *self; /* tags our lines "ext-audit" (app->self would
                            * tag them with the App, and is for writing to
                            * that App's world) */
    int summary;
};

/* One per App, from accept_server to end_session. */
struct audit_session {
    char *package; /* copied: end_session still needs it */
    atomic_ulong results;
};

static int audit_init(const struct aur_host *host, struct aur_self *self,
                      const struct aur_cfg *cfg, void **state,
                      struct aur_error *err)
{
    struct audit_state *st;
    int summary = 1;
    int rc;

    /* Only 1.0 services are used, all of which every 1.x host has. */
    if (!host || !host->log || !host->cfg_bool)
        return aur_fail(err, AUR_E_PLUGIN, 0,
                        "ext-audit needs host->log and host->cfg_bool");
    rc = host->cfg_bool(cfg, "summary", 1, &summary, err);
    if (rc != AUR_OK)
        return rc; /* err names the bad value */
    st = calloc(1, sizeof *st);
    if (!st)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    st->host = host;
    st->self = self;
    st->summary = summary;
    *state = st;
    return AUR_OK;
}

static void audit_fini(void *state)
{
    free(state);
}

/* Active for every App: the server's capabilities do not matter. */
static int audit_accept_server(void *state, const struct aur_app_info *app,
                               struct json_object *server_caps,
                               void **session, struct aur_error *err)
{
    struct audit_session *s = calloc(1, sizeof *s);

    (void)state;
    (void)server_caps;
    if (!s || !(s->package = strdup(app->package ? app->package : "?"))) {
        free(s);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    atomic_init(&s->results, 0);
    *session = s;
    return AUR_OK;
}

/* Sees every complete CallToolResult of an active session and proposes
 * nothing: AUR_OUTCOME_UNSET leaves the core's mapping (and every other
 * extension's proposal) as it is. */
static int audit_classify(void *state, void *session,
                          const struct aur_tool_ref *tool,
                          struct json_object *result, enum aur_outcome *out,
                          struct aur_error *err)
{
    struct audit_state *st = state;
    struct audit_session *s = session;

    (void)result; /* never logged: results may hold anything */
    (void)err;
    atomic_fetch_add_explicit(&s->results, 1, memory_order_relaxed);
    st->host->log(st->self, AUR_LOG_INFO, "%s result seen", tool->id);
    *out = AUR_OUTCOME_UNSET;
    return AUR_OK;
}

static void audit_end_session(void *state, void *session)
{
    struct audit_state *st = state;
    struct audit_session *s = session;

    if (st->summary)
        st->host->log(st->self, AUR_LOG_INFO, "%s: %lu call results seen",
                      s->package, atomic_load(&s->results));
    free(s->package);
    free(s);
}

static const struct aur_extension_ops audit_ops = {
    .struct_size = sizeof audit_ops,
    .cap_key = NULL, /* declares no capability: nothing to negotiate */
    .methods = NULL, /* handles no notification */
    .accept_server = audit_accept_server,
    .classify = audit_classify,
    .end_session = audit_end_session,
};

/* Its host.ini section's keys (ABI 1.4: the host refuses others). */
static const struct aur_cfg_key audit_settings[] = {
    {"summary", 0, 0},
    {NULL, 0, 0},
};

AUR_EXPORT const struct aur_plugin_desc *aur_plugin_entry(uint32_t host_abi)
{
    static const struct aur_plugin_desc desc = {
        /* 1.0: later services are tested before use (AUR_HAS). */
        AUR_DESC_HEADER_MIN(AUR_KIND_EXTENSION, 0),
        .name = "ext-audit",
        .version = "1.0.0",
        .summary = "logs one line per tool result (never its content)",
        .init = audit_init,
        .fini = audit_fini,
        .ops = &audit_ops,
        .settings = audit_settings,
    };
    (void)host_abi; /* built for 1.0, which every 1.x host accepts */
    return &desc;
}
