/*
 * http_response.c - what comes back on one HTTP exchange of
 * transport-http: the body's type (JSON, SSE, an error body), the
 * messages it carries and which of them reach the sink, and how the
 * request ends when no response of its own does (on_request_end, the
 * convention at the top of http_plugin.c), or the connection with it
 * (on_closed).
 *
 * Separate from the transfer (http_post.c), which runs curl and the
 * redirect hops and hands each hop's bytes and end here; nothing here
 * calls back into it.  Thread rules: the job's own thread; the sink and
 * the connection's flags under c->mu as marked in http_int.h.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#define ERR_BODY_MAX 65536     /* a non-2xx body we try to read as JSON */

/* ------------------------------------------------------------------ */
/* Sink                                                               */
/* ------------------------------------------------------------------ */

bool http_job_stopped(struct http_job *j)
{
    struct aur_conn *c = j->c;
    bool r;
    pthread_mutex_lock(&c->mu);
    r = j->cancelled || (c->closing && j->kind != J_DELETE);
    pthread_mutex_unlock(&c->mu);
    return r;
}

static void deliver(struct http_job *j, struct json_object *m)
{
    struct aur_conn *c = j->c;
    bool drop;
    pthread_mutex_lock(&c->mu);
    /* A DELETE's body is nobody's: stop's DELETE runs before closing. */
    drop = j->kind == J_DELETE || j->cancelled || c->closing || c->reported;
    pthread_mutex_unlock(&c->mu);
    if (drop)
        json_object_put(m);
    else
        c->sink.on_message(c->sink.ctx, m);
}

void http_report_closed(struct aur_conn *c, int code, const char *why)
{
    struct aur_error e;
    bool go;
    pthread_mutex_lock(&c->mu);
    go = !c->reported && !c->closing;
    c->reported = true;
    pthread_mutex_unlock(&c->mu);
    if (!go)
        return;
    aur_fail(&e, code, 0, "%s", why);
    HTTP_LOG(c, AUR_LOG_WARN, "%s: %s", c->package, why);
    c->sink.on_closed(c->sink.ctx, &e);
}

/*
 * The request ends without a JSON-RPC response of its own: tell the host
 * through on_request_end (ABI 1.3), with what only we know: whether any
 * of it may have left (the job's sent flag, never a guess in the other
 * direction) and the last HTTP status.  error: the JSON-RPC error object
 * the server sent with a non-2xx status (borrowed), or NULL.
 */
void http_end_request(struct http_xfer *x, int code, struct json_object *error,
                      const char *fmt, ...)
{
    struct aur_conn *c = x->c;
    struct aur_request_end e;
    char msg[AUR_ERR_MSG_SIZE];
    va_list ap;
    bool drop;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    HTTP_LOG(c, AUR_LOG_INFO, "%s: %s %s", c->package,
             x->j->method[0] ? x->j->method : "request", msg);
    if (!x->j->id || (x->j->kind != J_REQUEST && x->j->kind != J_LISTEN))
        return;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    e.code = code;
    e.delivered = *x->sent || x->status > 0;
    e.http_status = (int32_t)x->status;
    e.msg = msg;
    e.error = error;
    pthread_mutex_lock(&c->mu);
    drop = x->j->cancelled || c->closing || c->reported;
    pthread_mutex_unlock(&c->mu);
    if (!drop && AUR_HAS(&c->sink, on_request_end))
        c->sink.on_request_end(c->sink.ctx, x->j->id, &e);
}

/* The legacy initialize result names the version and (in the response
 * headers) the session for every later request. */
static void capture_init(struct http_xfer *x, struct json_object *result)
{
    struct aur_conn *c = x->c;
    const char *ver = http_str_member(result, "protocolVersion");
    struct curl_header *h = NULL;
    const char *sid = NULL;

    if (curl_easy_header(x->e, "Mcp-Session-Id", 0, CURLH_HEADER, -1, &h) ==
            CURLHE_OK &&
        h && http_visible_ascii(h->value) && strlen(h->value) <= 512)
        sid = h->value;
    pthread_mutex_lock(&c->mu);
    if (!c->proto_set) {
        c->init_seen = true;
        if (ver && http_visible_ascii(ver) && strlen(ver) < sizeof c->version)
            strcpy(c->version, ver);
        free(c->session);
        c->session = sid ? strdup(sid) : NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

/*
 * One message of a 2xx body.  A response may answer only the request
 * this very stream carried: a response naming any other id (or a second
 * one) is dropped and logged, whatever origin the stream came from.  An
 * error without a usable id on our own stream is ours (we pin our id).
 */
static void handle_one(struct http_xfer *x, struct json_object *m)
{
    struct json_object *id = NULL, *res = NULL, *error = NULL;
    bool has_id, is_resp, match;

    if (!json_object_is_type(m, json_type_object)) {
        HTTP_LOG(x->c, AUR_LOG_DEBUG, "%s: non-object message dropped",
                 x->c->package);
        json_object_put(m);
        return;
    }
    has_id = json_object_object_get_ex(m, "id", &id);
    is_resp = !json_object_object_get_ex(m, "method", NULL) &&
              (json_object_object_get_ex(m, "result", &res) ||
               json_object_object_get_ex(m, "error", &error));
    if (!is_resp) {
        if (x->j->kind == J_LISTEN)
            x->established = true;
        deliver(x->j, m);
        return;
    }
    match = x->j->id && has_id && json_object_equal(id, x->j->id);
    if (!match && x->j->id && error &&
        json_object_is_type(error, json_type_object) &&
        (!id || json_object_is_type(id, json_type_null))) {
        struct json_object *pin = NULL;
        /* A copy: m leaves for the host's threads, j->id stays ours. */
        if (json_object_deep_copy(x->j->id, &pin, NULL) != 0) {
            json_object_put(m);
            return;
        }
        json_object_object_add(m, "id", pin);
        match = true;
    }
    if (!match || x->got_response) {
        HTTP_LOG(x->c, AUR_LOG_WARN, "%s: dropped a response on the stream "
                 "of %s that does not answer it", x->c->package,
                 x->j->method[0] ? x->j->method : "a request");
        json_object_put(m);
        return;
    }
    if (res && strcmp(x->j->method, "initialize") == 0 &&
        json_object_is_type(res, json_type_object))
        capture_init(x, res);
    if (res && x->j->xh_page && json_object_is_type(res, json_type_object))
        http_xh_on_list(x->c, x->j->xh_page == 1, res);
    x->got_response = true;
    deliver(x->j, m);
}

static void handle_value(struct http_xfer *x, struct json_object *v)
{
    if (json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++)
            handle_one(x, json_object_get(json_object_array_get_idx(v, i)));
        json_object_put(v);
    } else {
        handle_one(x, v);
    }
}

static int on_event(void *ud, const struct sse_event *ev)
{
    struct http_xfer *x = ud;
    struct json_object *v = NULL;
    struct aur_error err;

    if (strcmp(ev->type, "message") != 0 || ev->data_len == 0)
        return 0; /* priming events and other event types */
    if (HTTP_HOST(x->c)->json_parse(ev->data, ev->data_len, &v, &err) !=
        AUR_OK) {
        HTTP_LOG(x->c, AUR_LOG_WARN, "%s: unparsable SSE event (%zu bytes) "
                 "skipped", x->c->package, ev->data_len);
        return 0;
    }
    handle_value(x, v);
    /* A request's stream has done its job once the response is in. */
    return x->got_response && x->j->kind == J_REQUEST;
}

/* ------------------------------------------------------------------ */
/* Body                                                               */
/* ------------------------------------------------------------------ */

void http_xfer_classify(struct http_xfer *x)
{
    char *ct = NULL;
    char essence[64] = "";

    curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &x->status);
    curl_easy_getinfo(x->e, CURLINFO_CONTENT_TYPE, &ct);
    if (ct) {
        size_t n = strcspn(ct, ";");
        while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
            n--;
        if (n < sizeof essence) {
            memcpy(essence, ct, n);
            essence[n] = '\0';
        }
    }
    if (x->status >= 200 && x->status < 300) {
        if (strcasecmp(essence, "application/json") == 0) {
            x->btype = B_JSON;
            x->limit = x->c->st->max_body;
        } else if (strcasecmp(essence, "text/event-stream") == 0) {
            x->btype = B_SSE;
        } else {
            x->btype = B_DISCARD;
        }
    } else if (x->status >= 400) {
        x->btype = B_ERR;
        x->limit = ERR_BODY_MAX;
    } else {
        x->btype = B_DISCARD;
    }
}

size_t http_xfer_on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct http_xfer *x = ud;
    size_t len = sz * n;
    int rc;

    if (x->btype == B_UNSET)
        http_xfer_classify(x);
    switch (x->btype) {
    case B_SSE:
        rc = sse_feed(&x->sse, p, len, on_event, x);
        if (rc == SSE_STOPPED)
            x->done = true;
        else if (rc < 0)
            x->too_big = true;
        return rc == SSE_OK ? len : 0;
    case B_JSON:
    case B_ERR:
        if (len > x->limit - x->len) {
            x->too_big = true;
            return 0;
        }
        {
            char *b = aur__grow(x->buf, &x->cap, x->len + len, 1, 4096,
                                x->limit);
            if (!b) {
                x->too_big = true;
                return 0;
            }
            x->buf = b;
        }
        memcpy(x->buf + x->len, p, len);
        x->len += len;
        return len;
    default:
        return len;
    }
}

/* The legacy GET stream's state (aur_conn.get_state), for the listen
 * hook: it waits until the stream is up or known to be absent. */
void http_get_state(struct aur_conn *c, int state)
{
    pthread_mutex_lock(&c->mu);
    if (c->get_state < state)
        c->get_state = state;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* A non-2xx body that is a JSON-RPC error for this request (its id, or
 * none): the server's words, which end the request with that status. */
static bool non2xx_error(struct http_xfer *x, struct json_object *v)
{
    struct json_object *e = NULL, *id = NULL;
    if (!x->j->id || !json_object_is_type(v, json_type_object) ||
        !json_object_object_get_ex(v, "error", &e) ||
        !json_object_is_type(e, json_type_object))
        return false;
    if (json_object_object_get_ex(v, "id", &id) && id &&
        !json_object_equal(id, x->j->id)) {
        HTTP_LOG(x->c, AUR_LOG_WARN, "%s: an HTTP %ld error body names "
                 "another request; ignored", x->c->package, x->status);
        return false;
    }
    x->got_response = true;
    http_end_request(x, AUR_E_RPC, e, "HTTP %ld", x->status);
    return true;
}

/* After a complete hop that was not a redirect: the body's verdict. */
void http_xfer_finish(struct http_xfer *x)
{
    struct http_job *j = x->j;
    struct aur_conn *c = x->c;
    struct json_object *v = NULL;
    struct aur_error err;
    bool ok2xx = x->status >= 200 && x->status < 300;

    if (x->btype == B_JSON || x->btype == B_ERR) {
        if (x->len > 0 &&
            HTTP_HOST(c)->json_parse(x->buf, x->len, &v, &err) == AUR_OK) {
            if (ok2xx) {
                handle_value(x, v);
            } else {
                /* Only a JSON-RPC error body speaks for a non-2xx. */
                non2xx_error(x, v);
                json_object_put(v);
            }
        } else if (x->len > 0 && ok2xx) {
            HTTP_LOG(c, AUR_LOG_WARN, "%s: HTTP %ld body is not JSON "
                     "(%zu bytes)", c->package, x->status, x->len);
        }
    }
    if (j->kind == J_NOTIFY || j->kind == J_DELETE) {
        if (!ok2xx && !(j->kind == J_DELETE && x->status == 405))
            HTTP_LOG(c, AUR_LOG_WARN, "%s: %s answered HTTP %ld", c->package,
                     j->kind == J_DELETE ? "session DELETE"
                                         : j->method[0] ? j->method
                                                        : "response POST",
                     x->status);
    } else if (j->kind == J_GET) {
        HTTP_LOG(c, AUR_LOG_INFO, "%s: legacy GET stream %s (HTTP %ld)",
                 c->package, x->status == 405 ? "not offered" : "ended",
                 x->status);
    } else if (!x->got_response) {
        if (x->status == 202)
            http_end_request(x, AUR_E_PROTOCOL, NULL, "HTTP 202 to a request");
        else if (!ok2xx)
            http_end_request(x, AUR_E_PROTOCOL, NULL,
                        "HTTP %ld without a JSON-RPC error body", x->status);
        else if (x->btype == B_SSE)
            http_end_request(x, AUR_E_IO, NULL,
                        "HTTP %ld: the stream ended before the response",
                        x->status);
        else
            http_end_request(x, AUR_E_PROTOCOL, NULL,
                        "HTTP %ld with an unusable body", x->status);
    }
}

/* Sessions and listen streams: what the end of this exchange means for
 * the connection. */
void http_xfer_after(struct http_xfer *x)
{
    struct http_job *j = x->j;
    bool get_up = false;
    if (j->kind == J_GET) {
        pthread_mutex_lock(&x->c->mu);
        get_up = x->c->get_state == HTTP_GET_UP;
        pthread_mutex_unlock(&x->c->mu);
        http_get_state(x->c, HTTP_GET_ENDED);
    }
    if (http_job_stopped(j))
        return;
    if (j->with_session && x->status == 404 && j->kind != J_DELETE)
        http_report_closed(x->c, AUR_E_CLOSED, "session expired (HTTP 404)");
    else if (j->kind == J_LISTEN && x->established)
        http_report_closed(x->c, AUR_E_CLOSED, "listen stream ended");
    else if (get_up)
        /* Changes pushed from now on could not reach us. */
        http_report_closed(x->c, AUR_E_CLOSED, "legacy GET stream ended");
}
