/*
 * negotiate.c - phase "connect": open the transport, pick the protocol era
 * (docs/protocol.md) and let extensions see the server's capabilities.
 *
 * Revision 2026-07-28 is preferred: a server/discover probe with the full
 * modern envelope.  An answer that shows a legacy server falls back to
 * the legacy initialize handshake; an outage, a broken budget or an
 * incompatible modern server fails the App (the classifier C1-C4 below,
 * docs/protocol.md).  No config knob can choose the version.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "fdlimit.h"
#include "jsonx.h"
#include "log.h"

#include <json-c/json.h>

#define MODERN_VERSION "2026-07-28"
#define LEGACY_OFFER "2025-11-25"
/* A silent server on a stream (stdio) costs this much of the App's deadline at most
 * before we treat it as legacy (docs/protocol.md, case C4). */
#define PROBE_MAX_MS 10000

static const char *const legacy_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL};

static bool is_legacy_version(const char *v)
{
    for (size_t i = 0; v && legacy_versions[i]; i++)
        if (strcmp(v, legacy_versions[i]) == 0)
            return true;
    return false;
}

static struct json_object *client_info(void)
{
    struct json_object *o = json_object_new_object();
    bool ok = aur__json_set(o, "name", json_object_new_string("aurora-mcp"));
    ok = ok && aur__json_set(o, "version",
                             json_object_new_string(AUR_VERSION_STRING));
    return aur__json_built(o, ok);
}

struct json_object *aur__app_envelope(struct aur__app *app)
{
    struct json_object *m = json_object_new_object();
    bool ok = aur__json_set(
        m, "io.modelcontextprotocol/protocolVersion",
        json_object_new_string(app->modern ? app->version : MODERN_VERSION));
    ok = ok && aur__json_set(m, "io.modelcontextprotocol/clientCapabilities",
                             aur__json_copy(app->client_caps));
    ok = ok && aur__json_set(m, "io.modelcontextprotocol/clientInfo",
                             client_info());
    return aur__json_built(m, ok);
}

/* A server's error message is data, not ours: keep it printable and
 * short before it reaches status. */
static void rpc_error_text(struct json_object *e, int *code, char *buf,
                           size_t size)
{
    struct json_object *c = NULL, *m = NULL;
    json_object_object_get_ex(e, "code", &c);
    json_object_object_get_ex(e, "message", &m);
    *code = json_object_is_type(c, json_type_int) ? json_object_get_int(c) : 0;
    snprintf(buf, size, "%s",
             json_object_is_type(m, json_type_string) ? json_object_get_string(m)
                                                      : "");
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
}

int aur__app_send(struct aur__app *app, const char *method,
                  struct json_object *params, const char *sid,
                  aur_deadline dl, struct aur__pending **p,
                  struct aur_error *err)
{
    if (!params)
        params = json_object_new_object();
    if (!params ||
        ((app->modern || (sid && strcmp(method, "server/discover") == 0)) &&
         !aur__json_set(params, "_meta", aur__app_envelope(app)))) {
        json_object_put(params);
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    return aur__rpc_request(app->rpc, method, params, sid, dl, p, err);
}

int aur__app_result(struct aur__app *app, struct aur__pending *p,
                    const char *method, aur_deadline dl,
                    struct json_object **result, struct aur__rpc_end *end,
                    struct aur_error *err)
{
    struct json_object *reply = NULL, *v;
    int rc;

    /* end: aur__rpc_wait fills it on every path */
    rc = aur__rpc_wait(app->rpc, p, dl, false, &reply, end, err);
    if (rc != AUR_OK)
        return rc;
    if (json_object_object_get_ex(reply, "error", &v)) {
        char msg[200];
        int code;
        rpc_error_text(v, &code, msg, sizeof msg);
        rc = aur_fail(err, AUR_E_RPC, code, "%s: JSON-RPC error %d: %s", method,
                      code, msg);
        /* Keep the error object for callers that classify it. */
        *result = json_object_get(v);
        json_object_put(reply);
        return rc;
    }
    json_object_object_get_ex(reply, "result", &v);
    if (!json_object_is_type(v, json_type_object)) {
        json_object_put(reply);
        return aur_fail(err, AUR_E_PROTOCOL, 0, "%s: result is not an object",
                        method);
    }
    if (app->modern) {
        struct json_object *rt;
        /* Absent = complete; anything else is not a result these
         * methods may have. */
        if (json_object_object_get_ex(v, "resultType", &rt) &&
            !aur__json_str_is(rt, "complete")) {
            json_object_put(reply);
            return aur_fail(err, AUR_E_PROTOCOL, 0,
                            "%s: unexpected resultType", method);
        }
    }
    *result = json_object_get(v);
    json_object_put(reply);
    return AUR_OK;
}

int aur__app_call(struct aur__app *app, const char *method,
                  struct json_object *params, const char *sid,
                  aur_deadline dl, struct json_object **result,
                  struct aur__rpc_end *end, struct aur_error *err)
{
    struct aur__pending *p;
    int rc;

    if (end)
        memset(end, 0, sizeof *end);
    rc = aur__app_send(app, method, params, sid, dl, &p, err);
    if (rc != AUR_OK)
        return rc;
    return aur__app_result(app, p, method, dl, result, end, err);
}

enum verdict { V_MODERN, V_LEGACY_ALIVE, V_LEGACY_DEAD, V_RETRY, V_FAIL };

static bool list_has(struct json_object *arr, const char *s, bool *other_modern)
{
    bool found = false;
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        const char *v = aur__json_name(json_object_array_get_idx(arr, i));
        if (!v)
            continue;
        if (strcmp(v, s) == 0)
            found = true;
        else if (other_modern && !is_legacy_version(v) &&
                 strcmp(v, "2024-10-07") != 0)
            *other_modern = true;
    }
    return found;
}

/* What a -32022 error (code, its error object) lists in data.supported. */
enum unsupported { U_NONE, U_MUTUAL, U_OTHER_MODERN };

static enum unsupported unsupported_version(int code, struct json_object *e)
{
    struct json_object *data, *sup;
    bool other_modern = false;

    if (code != -32022 || !json_object_object_get_ex(e, "data", &data) ||
        !json_object_object_get_ex(data, "supported", &sup) ||
        !json_object_is_type(sup, json_type_array) ||
        json_object_array_length(sup) == 0)
        return U_NONE;
    if (list_has(sup, MODERN_VERSION, &other_modern))
        return U_MUTUAL;
    return other_modern ? U_OTHER_MODERN : U_NONE;
}

static int incompatible(struct aur_error *err)
{
    return aur_fail(err, AUR_E_NEGOTIATION, -32022,
                    "incompatible modern server: no common protocol "
                    "version (we speak " MODERN_VERSION ")");
}

/* HTTP: only a 4xx other than 401/403 is era evidence; auth failures,
 * server errors, network failures and unusable answers are an outage. */
static bool era_evidence_status(int status)
{
    return status >= 400 && status <= 499 && status != 401 && status != 403;
}

/* The common classifier C1-C4 of the dual-era fallback (docs/protocol.md).
 * end: what the transport knows of how the probe travelled. */
static enum verdict classify_probe(int rc, struct json_object *res,
                                   const struct aur__rpc_end *end,
                                   const struct aur_error *perr, bool stream,
                                   struct aur_error *err)
{
    struct json_object *sv;
    if (rc == AUR_OK) {
        if (json_object_object_get_ex(res, "supportedVersions", &sv) &&
            json_object_is_type(sv, json_type_array) &&
            list_has(sv, MODERN_VERSION, NULL))
            return V_MODERN;
        return V_LEGACY_ALIVE;
    }
    if (rc == AUR_E_RPC) {
        /* The server's JSON-RPC error; with an HTTP status only when it
         * came with a non-2xx one. */
        if (end->http_status && !era_evidence_status(end->http_status)) {
            aur_fail(err, AUR_E_NEGOTIATION, end->http_status,
                     "server/discover probe: HTTP %d: %s", end->http_status,
                     perr->msg);
            return V_FAIL;
        }
        switch (unsupported_version(perr->detail, res)) {
        case U_MUTUAL:
            return V_RETRY;
        case U_OTHER_MODERN:
            incompatible(err);
            return V_FAIL;
        default:
            return V_LEGACY_ALIVE;
        }
    }
    /* No JSON-RPC answer at all: a 4xx without one is an old server. */
    if (end->ended && era_evidence_status(end->http_status))
        return V_LEGACY_ALIVE;
    /* A budget the server broke (a frame too long, a notification
     * flood) is no era evidence: the App fails with it as it is. */
    if (rc == AUR_E_CLOSED && perr->detail == AUR_E_LIMIT) {
        aur_fail(err, rc, perr->detail, "%s", perr->msg);
        return V_FAIL;
    }
    if (!end->ended && (rc == AUR_E_TIMEOUT || rc == AUR_E_CLOSED) && stream)
        return V_LEGACY_DEAD;
    /* On HTTP silence is an outage, not era evidence. */
    aur_fail(err, rc, perr->detail, "server/discover probe: %s", perr->msg);
    return V_FAIL;
}

/* bounded: the era is still unknown, so a silent stream may be a legacy
 * server and gets only part of the deadline; a server that has shown
 * itself modern gets all of it. */
static int probe(struct aur__app *app, aur_deadline dl, int attempt,
                 bool bounded, struct json_object **caps,
                 struct aur_error *err)
{
    struct json_object *res = NULL, *c;
    struct aur__rpc_end end;
    struct aur_error perr;
    char sid[32];
    /* On one lasting stream a legacy server may leave the probe
     * unanswered; on request/response transports silence is an outage. */
    bool stream = app->cfg->transport->caps & AUR_TCAP_STREAM;
    int64_t left = aur_remaining_ms(&app->mcp->host, dl);
    aur_deadline pdl = dl;
    enum verdict v;
    int rc;

    if (stream && bounded)
        pdl = aur__now_ms() + (left / 2 < PROBE_MAX_MS ? left / 2 : PROBE_MAX_MS);
    snprintf(sid, sizeof sid, "aur-probe-%d", attempt);
    rc = aur__app_call(app, "server/discover", NULL, sid, pdl, &res, &end,
                       &perr);
    v = classify_probe(rc, res, &end, &perr, stream, err);
    if (v == V_MODERN) {
        if (json_object_object_get_ex(res, "capabilities", &c) &&
            json_object_is_type(c, json_type_object))
            *caps = json_object_get(c);
        else
            *caps = json_object_new_object();
    }
    json_object_put(res);
    aur__log(app->mcp->log, AUR_LOG_DEBUG, app->tag, "probe %d: %s", attempt,
             v == V_MODERN          ? "modern"
             : v == V_LEGACY_ALIVE  ? "legacy (answered)"
             : v == V_LEGACY_DEAD   ? "legacy (silent or exited)"
             : v == V_RETRY         ? "retry"
                                    : "failed");
    return (int)v;
}

/*
 * The legacy handshake.  *modern: the server refused initialize with
 * -32022 listing our modern version, so it is modern after all (it took
 * a probe that timed out and pinned itself, or it only woke after the
 * probe window): nothing is sent after the refusal, and the caller asks
 * server/discover again on this process (mcp-wire.md, stdio step 6).
 */
static int legacy_initialize(struct aur__app *app, aur_deadline dl,
                             bool *modern, struct json_object **caps,
                             struct aur_error *err)
{
    struct json_object *params = json_object_new_object(), *res = NULL, *v;
    struct aur__rpc_end end;
    const char *ver;
    bool ok;
    int rc;

    ok = aur__json_set(params, "protocolVersion",
                       json_object_new_string(LEGACY_OFFER));
    ok = ok && aur__json_set(params, "capabilities",
                             aur__json_copy(app->client_caps));
    ok = ok && aur__json_set(params, "clientInfo", client_info());
    if (!ok) {
        json_object_put(params);
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    *modern = false;
    rc = aur__app_call(app, "initialize", params, NULL, dl, &res, &end, err);
    if (rc == AUR_E_RPC) {
        enum unsupported u = unsupported_version(err->detail, res);
        json_object_put(res);
        if (u == U_MUTUAL)
            *modern = true;
        return u == U_MUTUAL         ? AUR_OK
               : u == U_OTHER_MODERN ? incompatible(err)
                                     : rc;
    }
    if (rc != AUR_OK) {
        /* No JSON-RPC answer to either era, only an HTTP 400/404/405: an
         * old HTTP+SSE server, which we deliberately do not speak. */
        if (end.ended && (end.http_status == 400 || end.http_status == 404 ||
                          end.http_status == 405))
            rc = aur_fail(err, AUR_E_NEGOTIATION, end.http_status,
                          "server appears to use the deprecated 2024-11-05 "
                          "HTTP+SSE transport (not supported)");
        json_object_put(res);
        return rc;
    }
    ver = json_object_object_get_ex(res, "protocolVersion", &v)
              ? aur__json_name(v)
              : NULL;
    if (!is_legacy_version(ver)) {
        rc = aur_fail(err, AUR_E_NEGOTIATION, 0,
                      "initialize answered an unsupported protocol version");
        goto out;
    }
    /* Before initialized tells the server the session is up: a batch it
     * sends from then on is taken (docs/protocol.md, Batches).  A reopen
     * takes it back. */
    if (strcmp(ver, "2025-03-26") == 0)
        aur__rpc_allow_batches(app->rpc);
    rc = aur__rpc_notify(app->rpc, "notifications/initialized", NULL, dl, err);
    if (rc != AUR_OK)
        goto out; /* no session: its version and caps are not the App's */
    pthread_mutex_lock(&app->mu); /* status reads it */
    snprintf(app->version, sizeof app->version, "%s", ver);
    pthread_mutex_unlock(&app->mu);
    if (json_object_object_get_ex(res, "capabilities", &v) &&
        json_object_is_type(v, json_type_object))
        *caps = json_object_get(v);
    else
        *caps = json_object_new_object();
out:
    json_object_put(res);
    return rc;
}

static int declare_extensions(struct aur__app *app, struct aur_error *err)
{
    struct json_object *exts = json_object_new_object();
    struct aur_mcp *mcp = app->mcp;
    int rc = AUR_OK;

    if (!exts)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; i < mcp->nexts; i++) {
        struct aur__plugin *p = mcp->exts[i];
        if (!AUR_HAS(&p->ops.e, declare_caps))
            continue;
        rc = p->ops.e.declare_caps(p->state, &app->info, exts, err);
        if (rc < 0)
            goto out;
    }
    rc = AUR_OK;
    app->client_caps = json_object_new_object();
    if (!app->client_caps ||
        (json_object_object_length(exts) > 0 &&
         !aur__json_set(app->client_caps, "extensions",
                        json_object_get(exts))))
        rc = aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
out:
    json_object_put(exts);
    return rc;
}

/* The extension list itself (app->ext[i].p, app->next) was laid down
 * before the connection opened; the receive threads read it from then
 * on.  What accept_server decides is published under app->mu. */
static int accept_extensions(struct aur__app *app, struct aur_error *err)
{
    for (size_t i = 0; i < app->next; i++) {
        struct aur__ext_session *s = &app->ext[i];
        struct aur__plugin *p = s->p;
        void *session = NULL;
        int rc;
        if (!AUR_HAS(&p->ops.e, accept_server))
            continue;
        rc = p->ops.e.accept_server(p->state, &app->info, app->server_caps,
                                    &session, err);
        if (rc < 0)
            return rc;
        pthread_mutex_lock(&app->mu);
        s->session = session;
        s->active = rc == AUR_OK;
        pthread_mutex_unlock(&app->mu);
    }
    return AUR_OK;
}

/* The event modes are bound to an era (docs/protocol.md). */
static int check_event_mode(struct aur__app *app, struct aur_error *err)
{
    if (app->cfg->event_mode == AUR__EV_LEGACY && app->modern)
        return aur_fail(err, AUR_E_NEGOTIATION, 0,
                        "legacy_aurora_event is only allowed with "
                        "handshake-era servers (negotiated %s)",
                        app->version);
    if (app->cfg->event_mode == AUR__EV_WORLD && !app->modern)
        return aur_fail(err, AUR_E_NEGOTIATION, 0,
                        "world_events needs revision " MODERN_VERSION
                        " (negotiated %s)",
                        app->version);
    return AUR_OK;
}

/* A transport that ran out of descriptors (its errno in err->detail:
 * positive, where HTTP statuses and JSON-RPC codes never are EMFILE or
 * ENFILE) is said so in words, with the limit, unless it said so itself:
 * "out of file descriptors (EMFILE, limit 1024): <the transport's
 * message>".  Any transport, ours or not. */
static int say_fd_exhausted(int rc, struct aur_error *err)
{
    char what[96];
    size_t w, m;

    if (rc == AUR_OK || !aur__fd_exhausted(err->detail) ||
        strstr(err->msg, AUR__FD_WORDS))
        return rc;
    aur__fd_text(err->detail, what, sizeof what - 2);
    strcat(what, ": ");
    w = strlen(what);
    m = strnlen(err->msg, sizeof err->msg - 1);
    if (w + m > sizeof err->msg - 1) /* the end of the message goes */
        m = sizeof err->msg - 1 - w;
    memmove(err->msg + w, err->msg, m);
    memcpy(err->msg, what, w);
    err->msg[w + m] = '\0';
    return rc;
}

/* A fresh process: what the old one's end said is no longer true. */
static int reopen(struct aur__app *app, aur_deadline dl, struct aur_error *err)
{
    int rc = say_fd_exhausted(aur__rpc_reopen(app->rpc, dl, err), err);
    if (rc != AUR_OK)
        return rc;
    pthread_mutex_lock(&app->mu);
    app->disconnected = false;
    app->disconnect_rc = AUR_OK;
    app->disconnect_detail[0] = '\0';
    pthread_mutex_unlock(&app->mu);
    return AUR_OK;
}

static void set_modern(struct aur__app *app)
{
    pthread_mutex_lock(&app->mu); /* the receive threads and status */
    app->modern = true;
    snprintf(app->version, sizeof app->version, MODERN_VERSION);
    pthread_mutex_unlock(&app->mu);
}

/* A server that refused initialize for our modern version: one more
 * server/discover on the same process, under what is left of the App's
 * deadline, must confirm it; anything else fails the App. */
static int modern_after_all(struct aur__app *app, aur_deadline dl,
                            int attempt, struct json_object **caps,
                            struct aur_error *err)
{
    struct aur_error perr;
    int v;

    aur__log(app->mcp->log, AUR_LOG_INFO, app->tag,
             "initialize refused with -32022 listing " MODERN_VERSION
             ": the server is modern after all");
    v = probe(app, dl, attempt, false, caps, &perr);
    if (v == V_MODERN) {
        set_modern(app);
        return AUR_OK;
    }
    if (v == V_RETRY)
        return aur_fail(err, AUR_E_NEGOTIATION, -32022,
                        "server rejected " MODERN_VERSION
                        " twice while listing it as supported");
    if (v == V_FAIL)
        return aur_fail(err, perr.code, perr.detail,
                        "initialize refused with -32022 listing "
                        MODERN_VERSION ", then %s", perr.msg);
    return aur_fail(err, AUR_E_NEGOTIATION, 0,
                    "initialize refused with -32022 listing " MODERN_VERSION
                    ", but server/discover did not confirm it");
}

/* The legacy handshake, or the modern era after all (see
 * legacy_initialize); attempt numbers the probe that would follow.
 * in_place: on the process that answered the probe, which may die of
 * initialize: then once more on a fresh one. */
static int handshake(struct aur__app *app, aur_deadline dl, int attempt,
                     bool in_place, struct json_object **caps,
                     struct aur_error *err)
{
    bool modern;
    int rc = legacy_initialize(app, dl, &modern, caps, err);
    if (rc == AUR_E_CLOSED && in_place && reopen(app, dl, err) == AUR_OK)
        rc = legacy_initialize(app, dl, &modern, caps, err);
    if (rc == AUR_OK && modern)
        rc = modern_after_all(app, dl, attempt, caps, err);
    return rc;
}

static int negotiate(struct aur__app *app, aur_deadline dl,
                     struct json_object **caps, struct aur_error *err)
{
    int attempt = 1;
    int v = probe(app, dl, attempt, true, caps, err);
    if (v == V_RETRY)
        v = probe(app, dl, ++attempt, true, caps, err);
    if (v == V_RETRY)
        return aur_fail(err, AUR_E_NEGOTIATION, -32022,
                        "server rejected " MODERN_VERSION
                        " twice while listing it as supported");
    if (v == V_FAIL)
        return err->code;
    if (v == V_MODERN) {
        set_modern(app);
        return AUR_OK;
    }
    if (v == V_LEGACY_DEAD) {
        /* The probe may have killed or wedged a legacy server: start a
         * fresh process for the handshake (docs/protocol.md, C4).  A
         * transport that cannot reopen keeps a connection that is only
         * silent, as mcp-wire.md allows (a late answer to the probe
         * names no request and is dropped); one that ended is lost. */
        if (AUR_HAS(&app->transport->ops.t, reopen) ||
            aur__rpc_is_closed(app->rpc)) {
            int rc = reopen(app, dl, err);
            if (rc != AUR_OK)
                return rc;
        }
    }
    return handshake(app, dl, attempt + 1, v != V_LEGACY_DEAD, caps, err);
}

int aur__app_connect(struct aur__app *app, aur_deadline dl,
                     struct aur_error *err)
{
    struct aur_mcp *mcp = app->mcp;
    struct aur__rpc_handlers h = aur__app_handlers_template;
    struct aur__rpc_limits lim = {
        .max_pending = 4096,
        .max_queue = 4096,
        .max_queue_bytes = (size_t)app->cfg->budgets.queued_bytes,
        .max_mem = (size_t)app->cfg->budgets.app_memory,
        .notify_rate = app->cfg->budgets.notify_rate,
        .notify_burst = app->cfg->budgets.notify_burst,
    };
    struct json_object *caps = NULL;
    int rc;

    h.ud = app;
    h.log = mcp->log;
    rc = declare_extensions(app, err);
    if (rc != AUR_OK)
        return rc;
    /* Laid down before any receive thread exists, never changed after;
     * under the lock for a status read on another thread. */
    pthread_mutex_lock(&app->mu);
    for (size_t i = 0; i < mcp->nexts && i < AUR__MAX_EXT; i++)
        app->ext[i].p = mcp->exts[i];
    app->next = mcp->nexts < AUR__MAX_EXT ? mcp->nexts : AUR__MAX_EXT;
    pthread_mutex_unlock(&app->mu);
    snprintf(app->listen_id, sizeof app->listen_id, "aur-listen-1");
    struct aur__rpc *rpc;
    rc = aur__rpc_open(&app->transport->ops.t, app->transport->state,
                       &app->cfg->endpoint, &h, &lim, app->tag, dl, &rpc, err);
    rc = say_fd_exhausted(rc, err);
    if (rc != AUR_OK)
        return rc;
    pthread_mutex_lock(&app->mu);
    app->rpc = rpc;
    app->opened = true;
    bool cancelled = app->closing;
    pthread_mutex_unlock(&app->mu);
    if (cancelled)
        return aur_fail(err, AUR_E_CANCELLED, 0, "cancelled");
    rc = negotiate(app, dl, &caps, err);
    if (rc == AUR_OK && !caps) /* an empty object it could not make */
        rc = aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    if (rc != AUR_OK)
        return rc;
    app->server_caps = caps;
    app->info.version = app->version;
    app->info.modern = app->modern;
    aur__log(app->mcp->log, AUR_LOG_INFO, app->tag,
             "connected over %s, protocol %s",
             aur__transport_word(app->cfg->transport), app->version);
    rc = aur__rpc_set_protocol(app->rpc, app->modern, app->version, err);
    if (rc != AUR_OK)
        return rc;
    rc = check_event_mode(app, err);
    if (rc != AUR_OK)
        return rc;
    AUR_PERTURB("negotiate.done");
    if (app->modern) {
        struct json_object *env = aur__app_envelope(app);
        app->envelope_text = strdup(json_object_to_json_string_ext(
            env, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(env);
        if (!app->envelope_text)
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    return accept_extensions(app, err);
}
