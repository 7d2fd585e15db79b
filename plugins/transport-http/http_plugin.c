/*
 * http_plugin.c - transport-http's backend: MCP Streamable HTTP over
 * libcurl (docs/protocol.md, Framing; the [http] keys:
 * docs/transports.md).  Built into transport-http-libcurl.so, which the
 * front (http_front.c) loads on first use.
 *
 * ---- What reaches the sink for a request (the core relies on it) -----
 *
 * Every request POST ends in exactly one of these, unless the core
 * cancelled it or closed the connection:
 *
 *  1. The server's response, through on_message, when a 2xx JSON or SSE
 *     body carries a response with the request's id.  A response may only
 *     answer the request its own stream carried: one naming another id,
 *     or a second one, is dropped and logged (a redirect to another
 *     origin cannot answer anyone else's request either).  An error with
 *     id null on our own stream is ours: our id is pinned on it.
 *  2. on_request_end with code AUR_E_RPC and the server's error object,
 *     when a non-2xx body IS a JSON-RPC error for this request (400
 *     -32022, 404 -32601, ...): the server's words with their status.
 *  3. on_request_end otherwise: a non-2xx without a JSON-RPC error body,
 *     202 to a request, a 2xx with an unusable body or a stream that
 *     ended before the response, a body or SSE event over the size limit,
 *     301/302/303 (never followed), an invalid redirect hop (http://,
 *     userinfo, fragment), a redirect loop or more than 5 hops, connection
 *     refused, DNS or TLS failure, reset, our own deadline (the request
 *     deadline + 1 s, so the core's timeout normally fires first), and a
 *     stop that found the request still queued (delivered 0: no worker
 *     ever saw it; http_close.c).
 *     delivered is 0 only when no attempt of any hop ever reached the
 *     point where libcurl writes the request (its pre-request callback):
 *     resolving, connecting and the TLS handshake.  From that callback on
 *     the request may have left; libcurl's silent re-send of a request
 *     whose reused connection died is refused there (one attempt per
 *     hop), so a request is never written twice and such a failure is
 *     reported as delivered.  http_status is the last hop's status.
 *
 * No message is ever invented: nothing a server sends can set a fact the
 * host relies on (delivered, status).
 *
 * Connection-level outcomes (sink->on_closed, AUR_E_CLOSED):
 *   "session expired (HTTP 404)"  a legacy request or GET carrying the
 *       Mcp-Session-Id got 404; no silent re-initialize.
 *   "listen stream ended"  the modern subscriptions/listen stream ended or
 *       failed after it had delivered a notification (the ack).  Before
 *       that, its failure ends the listen request (rules 2-3).
 *   "legacy GET stream ended"  the standalone GET stream ended after it
 *       was up: changes pushed from then on could not reach us.
 *
 * Listening (the listen hook, legacy era): the standalone GET stream is
 * opened once notifications/initialized has been answered, and the hook
 * waits until the whole head of its final answer is in (http_post.c,
 * on_header): 200 text/event-stream (the server has it) or anything else
 * (not offered: AUR_DECLINE), so the first tools/list is only sent once
 * a change can reach us.
 *
 * ---- Settings ([transport-http] in host.ini, all optional; read by the
 * front, http_front.c) -----------------------------------------------
 *   max_body_bytes   16777216 (1024 .. 1073741824): one request or JSON
 *                    response body
 *   max_event_bytes  16777216 (1024 .. 1073741824): one SSE line/event
 *   max_concurrent   8 (1 .. 64): POSTs in flight per connection
 *   max_queued       1024 (1 .. 65536): POSTs waiting for a worker; more
 *                    make send fail with AUR_E_LIMIT
 *
 * Endpoint keys ([http], http_config.c, plus the host's): url (https, no
 * userinfo/fragment), auth_env (a variable NAME read with getenv at open;
 * the token never appears in logs, errors or status), ca_file (relative
 * to config_dir; trusted IN ADDITION to the system bundle
 * /etc/ssl/certs/ca-certificates.crt: one certificate store of both, made
 * at open, http_trust.c), package, timeout_ms (the
 * connect bound and the fallback when a call has no deadline).
 *
 * Threads: send queues the POST for a worker (up to max_concurrent
 * workers per connection, each with its own curl multi+easy so connections
 * are reused) and returns; a request POST sent while nothing else runs
 * is run by the caller of send for a few milliseconds first
 * (http_assist.c).  subscriptions/listen (modern) and the legacy
 * GET stream run on their own threads and connections (at most
 * MAX_STREAMS).  Sink calls come from those threads and from a caller of
 * send; close joins them all.
 * stop begins the end without waiting (http_close.c says what each does).
 * notifications/initialized is a barrier: no later POST starts and the
 * legacy GET is not opened until its exchange has ended.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include "env_rule.h"
#include "mono.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#define SERIAL (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define MAX_PEM (16u << 20)

/* ------------------------------------------------------------------ */
/* open (stop and close: http_close.c)                                */
/* ------------------------------------------------------------------ */

/* Append the file at path to b (bounded), ending in a newline.  0 or an
 * errno. */
static int slurp(const char *path, struct aur__buf *b)
{
    FILE *f = fopen(path, "rb");
    char chunk[8192];
    size_t n;
    int rc = 0;

    if (!f)
        return errno ? errno : EIO;
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = aur__buf_put(b, chunk, n, MAX_PEM - 2);
    if (!rc && ferror(f))
        rc = EIO;
    fclose(f);
    if (!rc && b->p) /* a file without a final newline */
        rc = aur__buf_put(b, "\n", 1, MAX_PEM - 1);
    return rc;
}

static int open_cfg(struct aur_conn *c, const struct aur_cfg *ep,
                    struct aur_error *err)
{
    const struct aur_host *h = c->st->host;
    const char *url = h->cfg_str(ep, "url", NULL);
    const char *auth = h->cfg_str(ep, "auth_env", NULL);
    char *ca = NULL;
    struct aur_error uerr;
    int rc;

    if (http_url_check(url, &c->url, c->origin, &uerr) != AUR_OK)
        return aur_fail(err, AUR_E_CONFIG, 0, "[http] url: %s", uerr.msg);
    rc = h->cfg_int(ep, "timeout_ms", 30000, &c->timeout_ms, err);
    if (rc != AUR_OK)
        return rc;
    if (c->timeout_ms < 1)
        c->timeout_ms = 1;
    if (auth) {
        const char *tok;
        if (!aur__valid_env_name(auth))
            return aur_fail(err, AUR_E_CONFIG, 0,
                            "[http] auth_env is not a variable name");
        tok = getenv(auth);
        if (!tok || !*tok)
            return aur_fail(err, AUR_E_CONFIG, 0,
                            "[http] auth_env: %s is not set", auth);
        if (!http_visible_ascii(tok))
            return aur_fail(err, AUR_E_CONFIG, 0,
                            "[http] auth_env: the value of %s is not a "
                            "usable bearer token", auth);
        if (asprintf(&c->auth_header, "Authorization: Bearer %s", tok) < 0) {
            c->auth_header = NULL;
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        }
    }
    if (h->cfg_str(ep, "ca_file", NULL)) {
        struct aur__buf pem = {0};
        int e;
        if (!(ca = h->cfg_path(ep, "ca_file", SIZE_MAX, 0, err)))
            return err->code;
        /* Trusted in addition to the system bundle (http_trust.c). */
        e = slurp(ca, &pem);
        free(ca);
        if (!e && !(c->trust = http_trust_new(pem.p ? pem.p : "", pem.n)))
            e = ENOMEM;
        free(pem.p);
        if (e == ENOMEM)
            return aur_fail(err, AUR_E_NOMEM, e, "out of memory");
        if (e)
            return aur_fail(err, AUR_E_CONFIG, e,
                            "[http] ca_file cannot be read: %s",
                            strerror(e));
    }
    return AUR_OK;
}

static int http_open(void *state, const struct aur_cfg *ep,
                     const struct aur_sink *sink, aur_deadline dl,
                     struct aur_conn **out, uint32_t *out_caps,
                     struct aur_error *err)
{
    struct http_state *st = state;
    const char *pkg = st->host->cfg_str(ep, "package", "?");
    struct aur_conn *c = calloc(1, sizeof *c);
    int rc;

    if (!c)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    c->st = st;
    c->sink = *sink;
    c->package = strdup(pkg);
    c->workers = calloc((size_t)st->max_workers, sizeof *c->workers);
    if (!c->package || !c->workers) {
        http_conn_free(c);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    rc = open_cfg(c, ep, err);
    if (rc != AUR_OK) {
        http_conn_free(c);
        return rc;
    }
    pthread_mutex_init(&c->mu, NULL);
    aur__mono_cond_init(&c->cv);
    HTTP_LOG(c, AUR_LOG_DEBUG, "%s: HTTP endpoint %s%s", c->package,
             c->origin, c->auth_header ? " (with bearer token)" : "");
    *out = c;
    *out_caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_SESSION;
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* send / set_protocol / cancel                                       */
/* ------------------------------------------------------------------ */

static int http_send(struct aur_conn *c, struct json_object *msg,
                     aur_deadline dl, struct aur_error *err)
{
    struct http_job *j;
    struct json_object *id = NULL;
    const char *text;
    size_t len;
    int rc;

    /* Every refusal here happens before a worker saw the job: nothing
     * of it left, which is what AUR_E_NOT_SENT says. */
    if (!json_object_is_type(msg, json_type_object))
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_INVAL,
                        "message is not an object");
    text = json_object_to_json_string_length(msg, SERIAL, &len);
    if (!text)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_NOMEM, "out of memory");
    if (len > c->st->max_body)
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_LIMIT,
                        "message of %zu bytes is over the %zu-byte limit",
                        len, c->st->max_body);
    j = calloc(1, sizeof *j);
    if (!j || !(j->body = malloc(len + 1))) {
        free(j);
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_NOMEM, "out of memory");
    }
    memcpy(j->body, text, len + 1);
    j->len = len;
    j->c = c;
    j->dl = dl == AUR_NO_DEADLINE ? aur_deadline_in(c->st->host,
                                                    c->timeout_ms)
                                  : dl;
    pthread_mutex_lock(&c->mu);
    if (c->closing || c->reported) {
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED, "connection closed");
        goto fail;
    }
    if (c->stopping) {
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_CLOSED,
                      "the connection is closing");
        goto fail;
    }
    rc = http_job_headers(c, j, msg, err);
    if (rc != AUR_OK)
        goto fail;
    if (j->method[0] && json_object_object_get_ex(msg, "id", &id)) {
        /* A copy: msg is the core's, and json-c reference counts are not
         * atomic; the worker thread owns this one. */
        if (json_object_deep_copy(id, &j->id, NULL) != 0) {
            rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_NOMEM, "out of memory");
            goto fail;
        }
        j->kind = c->proto_set && c->modern &&
                          strcmp(j->method, "subscriptions/listen") == 0
                      ? J_LISTEN
                      : J_REQUEST;
    } else {
        j->kind = J_NOTIFY;
        /* The legacy handshake ends with this notification; a server may
         * refuse (or misorder) requests that overtake it on another
         * connection, so it completes before anything later starts
         * (docs/protocol.md, the legacy handshake). */
        j->barrier = strcmp(j->method, "notifications/initialized") == 0;
    }
    if (j->kind == J_REQUEST && http_assist(c, j))
        return AUR_OK; /* ran on this thread, or a worker finishes it */
    rc = j->kind == J_LISTEN ? http_start_stream_locked(c, j, err)
                             : http_enqueue_locked(c, j, err);
    if (rc != AUR_OK)
        goto fail;
    if (j->barrier)
        c->barriers++;
    pthread_mutex_unlock(&c->mu);
    return AUR_OK;
fail:
    pthread_mutex_unlock(&c->mu);
    http_job_free(j);
    if (rc != AUR_E_NOT_SENT) {
        char why[AUR_ERR_MSG_SIZE];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = aur_fail(err, AUR_E_NOT_SENT, rc, "%s", why);
    }
    return rc;
}

/* Caller holds c->mu: the legacy standalone GET stream. */
static int http_set_protocol(struct aur_conn *c,
                             const struct aur_protocol_info *info,
                             struct aur_error *err)
{
    if (!info || !info->version || !http_visible_ascii(info->version) ||
        strlen(info->version) >= sizeof c->version)
        return aur_fail(err, AUR_E_INVAL, 0, "bad protocol version");
    pthread_mutex_lock(&c->mu);
    c->proto_set = true;
    c->modern = info->modern != 0;
    strcpy(c->version, info->version);
    if (c->modern) {
        free(c->session); /* never a session in the modern era */
        c->session = NULL;
    } else if (!c->get_started && !c->closing && !c->stopping &&
               !c->reported) {
        if (c->barriers > 0)
            c->get_pending = true; /* after notifications/initialized */
        else
            http_start_get_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    return AUR_OK;
}

/* ABI 1.3 listen: the legacy standalone GET stream is up (AUR_OK), or
 * known not to be offered (AUR_DECLINE).  Modern servers push on the
 * subscriptions/listen stream the core opens itself. */
static int http_listen(struct aur_conn *c, aur_deadline dl,
                       struct aur_error *err)
{
    int rc = AUR_OK;
    pthread_mutex_lock(&c->mu);
    if (c->proto_set && !c->modern) {
        while (c->get_state == HTTP_GET_NONE && !c->closing &&
               !c->stopping && !c->reported &&
               (c->get_started || c->get_pending)) {
            int64_t rem = aur_remaining_ms(c->st->host, dl);
            if (rem == 0)
                break;
            http_timed_wait(c, rem < 1000 ? rem : 1000);
        }
        if (c->get_state == HTTP_GET_UP)
            rc = AUR_OK;
        else if (c->get_state == HTTP_GET_ENDED)
            rc = AUR_DECLINE;
        else if (c->closing || c->stopping || c->reported)
            rc = aur_fail(err, AUR_E_CLOSED, 0, "connection closed");
        else if (!c->get_started && !c->get_pending)
            rc = aur_fail(err, AUR_E_IO, 0, "the legacy GET stream could not "
                          "be started");
        else
            rc = aur_fail(err, AUR_E_TIMEOUT, 0, "the legacy GET stream was "
                          "not answered before the deadline");
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void http_cancel(struct aur_conn *c, struct json_object *id)
{
    struct http_job *dropped = NULL, **pp, *prev = NULL;

    if (!id)
        return;
    pthread_mutex_lock(&c->mu);
    for (pp = &c->queue; *pp;) {
        struct http_job *j = *pp;
        if (j->id && json_object_equal(j->id, id)) {
            *pp = j->next;
            c->queued--;
            j->next = dropped;
            dropped = j;
            continue;
        }
        prev = j;
        pp = &j->next;
    }
    c->queue_tail = prev;
    http_abort_in(c->running, id);
    http_abort_in(c->streams, id);
    /* Legacy HTTP: a dropped connection is not a cancellation. */
    if (c->proto_set && !c->modern && !c->closing && !c->stopping &&
        !c->reported) {
        struct json_object *m = json_object_new_object(), *p;
        struct http_job *n = calloc(1, sizeof *n);
        struct aur_error err;
        const char *t;
        p = json_object_new_object();
        struct json_object *rid = NULL;
        if (json_object_deep_copy(id, &rid, NULL) != 0)
            rid = NULL;
        json_object_object_add(p, "requestId", rid);
        json_object_object_add(p, "reason",
                               json_object_new_string("cancelled by the host"));
        json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(
            m, "method", json_object_new_string("notifications/cancelled"));
        json_object_object_add(m, "params", p);
        t = json_object_to_json_string_ext(m, SERIAL);
        if (n && t && (n->body = strdup(t))) {
            n->len = strlen(t);
            n->c = c;
            n->kind = J_NOTIFY;
            n->dl = aur_deadline_in(c->st->host, c->timeout_ms);
            if (http_job_headers(c, n, m, &err) != AUR_OK ||
                http_enqueue_locked(c, n, &err) != AUR_OK) {
                http_job_free(n);
            }
        } else if (n) {
            http_job_free(n);
        }
        json_object_put(m);
    }
    pthread_mutex_unlock(&c->mu);
    while (dropped) {
        struct http_job *n = dropped->next;
        http_job_free(dropped);
        dropped = n;
    }
}

/* The operations the front forwards to.  curl_global_init runs here,
 * once, on the first use of any HTTP App (no curl_global_cleanup: the
 * host may unload the front while another library in the process still
 * uses curl, and this module is never unloaded). */
static const struct aur_transport_ops OPS = {
    .struct_size = sizeof(struct aur_transport_ops),
    .caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_SESSION,
    .open = http_open,
    .send = http_send,
    .close = http_close,
    .stop = http_stop,
    .set_protocol = http_set_protocol,
    .cancel = http_cancel,
    .listen = http_listen,
    .check = http_check,
    .preflight = http_preflight,
};

AUR_EXPORT const struct aur_transport_ops *aur_http_backend_entry(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? &OPS : NULL;
}
