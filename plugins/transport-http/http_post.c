/*
 * http_post.c - one HTTP exchange of transport-http: build the headers,
 * run the curl transfer (and our own 307/308 hops), read a JSON or SSE
 * body, and decide what reaches the sink.  The request-end convention it
 * implements is documented at the top of http_plugin.c.
 *
 * Every transfer runs on a per-thread multi handle so cancel() and close()
 * can interrupt curl_multi_poll at once (curl_multi_wakeup) instead of
 * waiting for a progress callback.  The poll wakes at least once a second
 * to re-check the deadline.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "aur_perturb.h"

#define MAX_HOPS 5
#define ERR_BODY_MAX 65536     /* a non-2xx body we try to read as JSON */
#define GRACE_MS 1000          /* let the core's own timeout fire first */
#define SERIAL (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

enum body { B_UNSET, B_JSON, B_SSE, B_ERR, B_DISCARD };

/* One hop's transfer state. */
struct xfer {
    struct http_job *j;
    struct aur_conn *c;
    CURL *e;
    long status;
    enum body btype;
    char *buf;
    size_t len, cap, limit;
    struct sse_parser sse;
    bool got_response; /* the request's response reached the sink */
    bool established;  /* listen: a notification arrived on the stream */
    bool too_big;
    bool done; /* we ended the body on purpose */
    size_t body_off; /* request body bytes handed to curl */
    int attempts;    /* connections this hop was about to use */
    bool announced;  /* J_GET: its status went to get_state */
    bool *sent;      /* the job's: a request may have left (every hop) */
};

int http_curl_init(struct http_curl *hc)
{
    hc->multi = curl_multi_init();
    hc->easy = curl_easy_init();
    if (!hc->multi || !hc->easy) {
        http_curl_free(hc);
        return AUR_E_NOMEM;
    }
    return AUR_OK;
}

void http_curl_free(struct http_curl *hc)
{
    if (hc->easy)
        curl_easy_cleanup(hc->easy);
    if (hc->multi)
        curl_multi_cleanup(hc->multi);
    hc->easy = NULL;
    hc->multi = NULL;
}

void http_job_free(struct http_job *j)
{
    if (!j)
        return;
    free(j->body);
    json_object_put(j->id);
    curl_slist_free_all(j->hdrs);
    free(j);
}

/* ------------------------------------------------------------------ */
/* Headers                                                            */
/* ------------------------------------------------------------------ */

/* "name: v"; an empty v keeps curl's meaning of "name:" (do not send
 * curl's own header of that name), as for Expect. */
static int add_hdr(struct curl_slist **l, const char *name, const char *v)
{
    char small[1024], *line = small;
    struct curl_slist *n;
    size_t nl = strlen(name), vl = strlen(v), need = nl + vl + 3;

    if (need > HTTP_MAX_HEADER)
        return AUR_E_LIMIT;
    if (need > sizeof small && !(line = malloc(need)))
        return AUR_E_NOMEM;
    memcpy(line, name, nl);
    memcpy(line + nl, ": ", 2);
    memcpy(line + nl + 2, v, vl + 1);
    n = curl_slist_append(*l, line);
    if (line != small)
        free(line);
    if (!n)
        return AUR_E_NOMEM;
    *l = n;
    return AUR_OK;
}

int http_add_encoded(struct curl_slist **l, const char *name,
                     struct json_object *v)
{
    char num[32], *enc;
    const char *s;
    int rc;

    switch (json_object_get_type(v)) {
    case json_type_string:
        enc = http_header_value(json_object_get_string(v),
                                (size_t)json_object_get_string_len(v));
        if (!enc)
            return AUR_E_NOMEM;
        if (enc[0]) {
            rc = add_hdr(l, name, enc);
        } else {
            /* An empty string is a value, not an absent one: curl sends
             * "name;" as a header with no content. */
            char line[300];
            struct curl_slist *n = NULL;
            rc = (size_t)snprintf(line, sizeof line, "%s;", name) <
                         sizeof line
                     ? AUR_OK
                     : AUR_E_LIMIT;
            if (rc == AUR_OK && !(n = curl_slist_append(*l, line)))
                rc = AUR_E_NOMEM;
            if (n)
                *l = n;
        }
        free(enc);
        return rc;
    case json_type_int:
        snprintf(num, sizeof num, "%lld", (long long)json_object_get_int64(v));
        s = num;
        break;
    case json_type_boolean:
        s = json_object_get_boolean(v) ? "true" : "false";
        break;
    default:
        return AUR_OK; /* null, absent or not a primitive: no header */
    }
    return add_hdr(l, name, s);
}

static const char *str_member(struct json_object *o, const char *k)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

int http_job_headers(struct aur_conn *c, struct http_job *j,
                     struct json_object *msg, struct aur_error *err)
{
    struct json_object *params = NULL, *meta = NULL, *v = NULL;
    const char *method = str_member(msg, "method");
    struct curl_slist **l = &j->hdrs;
    int rc;

    json_object_object_get_ex(msg, "params", &params);
    if (method && strlen(method) < sizeof j->method)
        strcpy(j->method, method);
    rc = add_hdr(l, "Content-Type", "application/json");
    if (rc == AUR_OK)
        rc = add_hdr(l, "Accept", "application/json, text/event-stream");
    if (rc == AUR_OK) /* no 100-continue round trip for big bodies */
        rc = add_hdr(l, "Expect", "");
    if (rc != AUR_OK)
        goto out;
    if (c->proto_set && c->modern) {
        /* mcp-wire.md §(e) "Request headers". */
        rc = add_hdr(l, "MCP-Protocol-Version", c->version);
        if (rc == AUR_OK && method) {
            struct json_object *m = json_object_new_string(method);
            rc = m ? http_add_encoded(l, "Mcp-Method", m) : AUR_E_NOMEM;
            json_object_put(m);
        }
        if (rc == AUR_OK && method &&
            (strcmp(method, "tools/call") == 0 ||
             strcmp(method, "prompts/get") == 0) &&
            json_object_object_get_ex(params, "name", &v))
            rc = http_add_encoded(l, "Mcp-Name", v);
        if (rc == AUR_OK && method && strcmp(method, "resources/read") == 0 &&
            json_object_object_get_ex(params, "uri", &v))
            rc = http_add_encoded(l, "Mcp-Name", v);
        if (rc == AUR_OK && method && strcmp(method, "tools/call") == 0) {
            /* SEP-2243: the annotated arguments, by the last listing. */
            int xrc = http_xh_call_headers(c, params, l, err);
            if (xrc != AUR_OK)
                return xrc;
        }
        if (method && strcmp(method, "tools/list") == 0)
            j->xh_page = json_object_object_get_ex(params, "cursor", NULL)
                             ? 2
                             : 1;
    } else if (!c->proto_set && method &&
               strcmp(method, "server/discover") == 0) {
        /* The probe names its version in the body's envelope. */
        const char *ver = NULL;
        if (json_object_object_get_ex(params, "_meta", &meta))
            ver = str_member(meta, "io.modelcontextprotocol/protocolVersion");
        if (ver && http_visible_ascii(ver))
            rc = add_hdr(l, "MCP-Protocol-Version", ver);
        if (rc == AUR_OK)
            rc = add_hdr(l, "Mcp-Method", method);
    } else if (!c->proto_set && method && strcmp(method, "initialize") == 0) {
        /* Legacy initialize: no MCP-* headers at all (§g). */
    } else if (c->proto_set || c->init_seen) {
        /* Legacy, including notifications/initialized which the core sends
         * before set_protocol: version and session from the init result. */
        if (c->session) {
            rc = add_hdr(l, "Mcp-Session-Id", c->session);
            j->with_session = rc == AUR_OK;
        }
        if (rc == AUR_OK && c->version[0])
            rc = add_hdr(l, "MCP-Protocol-Version", c->version);
    }
out:
    if (rc != AUR_OK)
        return aur_fail(err, rc, 0, rc == AUR_E_NOMEM ? "out of memory"
                                                      : "header too long");
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* Sink                                                               */
/* ------------------------------------------------------------------ */

static bool job_stopped(struct http_job *j)
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
    drop = j->cancelled || c->closing || c->reported;
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
static void end_request(struct xfer *x, int code, struct json_object *error,
                        const char *fmt, ...) AUR_PRINTF(4, 5);
static void end_request(struct xfer *x, int code, struct json_object *error,
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
static void capture_init(struct xfer *x, struct json_object *result)
{
    struct aur_conn *c = x->c;
    const char *ver = str_member(result, "protocolVersion");
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
static void handle_one(struct xfer *x, struct json_object *m)
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

static void handle_value(struct xfer *x, struct json_object *v)
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
    struct xfer *x = ud;
    struct json_object *v = NULL;
    struct aur_error err;

    if (strcmp(ev->type, "message") != 0 || ev->data_len == 0)
        return 0; /* priming events and other types (§e rule 8) */
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
/* Transfer                                                           */
/* ------------------------------------------------------------------ */

static void classify(struct xfer *x)
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

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = sz * n;
    int rc;

    if (x->btype == B_UNSET)
        classify(x);
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
        if (x->len + len > x->cap) {
            size_t cap = x->cap ? x->cap : 4096;
            char *b;
            while (cap < x->len + len)
                cap *= 2;
            if (!(b = realloc(x->buf, cap))) {
                x->too_big = true;
                return 0;
            }
            x->buf = b;
            x->cap = cap;
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
static void get_state(struct aur_conn *c, int state)
{
    pthread_mutex_lock(&c->mu);
    if (c->get_state < state)
        c->get_state = state;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Deadline of the current wait, or AUR_NO_DEADLINE. */
static aur_deadline wait_deadline(struct xfer *x)
{
    struct http_job *j = x->j;
    if (j->kind == J_LISTEN || j->kind == J_GET) {
        long st = 0;
        /* Streams: only the way to the response headers is bounded. */
        curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &st);
        return st ? AUR_NO_DEADLINE : j->dl;
    }
    if (j->kind == J_DELETE || j->dl == AUR_NO_DEADLINE)
        return j->dl;
    return j->dl + GRACE_MS;
}

static CURLcode perform(struct http_curl *hc, struct xfer *x, bool *timed_out)
{
    const struct aur_host *h = HTTP_HOST(x->c);
    struct http_job *j = x->j;
    CURLcode cc = CURLE_OK;
    CURLMsg *msg;
    int running = 1, left;

    if (curl_multi_add_handle(hc->multi, hc->easy) != CURLM_OK)
        return CURLE_OUT_OF_MEMORY;
    pthread_mutex_lock(&x->c->mu);
    j->multi = hc->multi;
    pthread_mutex_unlock(&x->c->mu);
    for (;;) {
        if (job_stopped(j)) {
            cc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        if (curl_multi_perform(hc->multi, &running) != CURLM_OK) {
            cc = CURLE_OUT_OF_MEMORY;
            break;
        }
        if (j->kind == J_GET && !x->announced) {
            long st = 0;
            curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &st);
            if (st) {
                char *ct = NULL;
                curl_easy_getinfo(x->e, CURLINFO_CONTENT_TYPE, &ct);
                x->announced = true;
                get_state(x->c, st == 200 && ct &&
                                        strncasecmp(ct, "text/event-stream",
                                                    17) == 0
                                    ? HTTP_GET_UP
                                    : HTTP_GET_ENDED);
            }
        }
        if (!running) {
            msg = curl_multi_info_read(hc->multi, &left);
            cc = msg && msg->msg == CURLMSG_DONE ? msg->data.result
                                                 : CURLE_RECV_ERROR;
            break;
        }
        int64_t wait = 1000, rem = aur_remaining_ms(h, wait_deadline(x));
        if (rem == 0) {
            *timed_out = true;
            cc = CURLE_OPERATION_TIMEDOUT;
            break;
        }
        curl_multi_poll(hc->multi, NULL, 0, (int)(rem < wait ? rem : wait),
                        NULL);
    }
    pthread_mutex_lock(&x->c->mu);
    j->multi = NULL;
    pthread_mutex_unlock(&x->c->mu);
    curl_multi_remove_handle(hc->multi, hc->easy);
    return cc;
}

/*
 * Called by libcurl on every attempt, once the connection (TCP + TLS) is
 * up and right before the request's first byte is written.  From here on
 * the request may have reached the server, on this hop and for the whole
 * job (sticky across hops).  libcurl silently re-sends a request whose
 * reused keep-alive connection died; a second attempt in one hop is that
 * re-send, and it is refused: a request that may have been written once
 * is never written again, and its fate is reported as unknown.  (Judging
 * only the last attempt is how a delivered call once came back "not
 * sent: Failed to connect".)
 */
static int on_prereq(void *ud, char *ip, char *local_ip, int port,
                     int local_port)
{
    struct xfer *x = ud;
    (void)ip;
    (void)local_ip;
    (void)port;
    (void)local_port;
    *x->sent = true;
    AUR_PERTURB("http.prereq");
    return ++x->attempts > 1 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

/* The request body goes through a read callback, not POSTFIELDS, and
 * cannot be rewound either (on_prereq already refuses a re-send; this is
 * the second lock on the same door): the exchange then fails with
 * CURLE_SEND_FAIL_REWIND and is reported as delivered, i.e. unknown. */
static size_t read_body(char *dst, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t left = x->j->len - x->body_off, k = size * n < left ? size * n
                                                                : left;

    memcpy(dst, x->j->body + x->body_off, k);
    x->body_off += k;
    return k;
}

static int no_rewind(void *ud, curl_off_t off, int origin)
{
    (void)ud;
    (void)off;
    (void)origin;
    return CURL_SEEKFUNC_CANTSEEK;
}

static int setup(struct http_curl *hc, struct xfer *x, const char *url,
                 bool same_origin, struct curl_slist **hdrs, char *errbuf)
{
    struct http_job *j = x->j;
    struct aur_conn *c = x->c;
    CURL *e = hc->easy;
    int64_t ct = aur_remaining_ms(HTTP_HOST(c), j->dl);

    curl_easy_reset(e);
    *hdrs = NULL;
    for (struct curl_slist *s = j->hdrs; s; s = s->next) {
        struct curl_slist *n = curl_slist_append(*hdrs, s->data);
        if (!n)
            return AUR_E_NOMEM;
        *hdrs = n;
    }
    /* The token goes to the configured origin only, never across. */
    if (c->auth_header && same_origin) {
        struct curl_slist *n = curl_slist_append(*hdrs, c->auth_header);
        if (!n)
            return AUR_E_NOMEM;
        *hdrs = n;
    }
    if (ct > c->timeout_ms)
        ct = c->timeout_ms;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->ca_blob) {
        struct curl_blob b = {c->ca_blob, c->ca_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    }
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(ct > 0 ? ct : 1));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, *hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, x);
    if (j->kind == J_LISTEN || j->kind == J_GET)
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (j->kind == J_GET) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (j->kind == J_DELETE) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    } else {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, read_body);
        curl_easy_setopt(e, CURLOPT_READDATA, x);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, no_rewind);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->len);
    }
    return AUR_OK;
}

/* A non-2xx body that is a JSON-RPC error for this request (its id, or
 * none): the server's words, which end the request with that status. */
static bool non2xx_error(struct xfer *x, struct json_object *v)
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
    end_request(x, AUR_E_RPC, e, "HTTP %ld", x->status);
    return true;
}

/* After a complete hop that was not a redirect: the body's verdict. */
static void finish(struct xfer *x)
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
            end_request(x, AUR_E_PROTOCOL, NULL, "HTTP 202 to a request");
        else if (!ok2xx)
            end_request(x, AUR_E_PROTOCOL, NULL,
                        "HTTP %ld without a JSON-RPC error body", x->status);
        else if (x->btype == B_SSE)
            end_request(x, AUR_E_IO, NULL,
                        "HTTP %ld: the stream ended before the response",
                        x->status);
        else
            end_request(x, AUR_E_PROTOCOL, NULL,
                        "HTTP %ld with an unusable body", x->status);
    }
}

/* Sessions and listen streams: what the end of this exchange means for
 * the connection. */
static void after(struct xfer *x)
{
    struct http_job *j = x->j;
    bool get_up = false;
    if (j->kind == J_GET) {
        pthread_mutex_lock(&x->c->mu);
        get_up = x->c->get_state == HTTP_GET_UP;
        pthread_mutex_unlock(&x->c->mu);
        get_state(x->c, HTTP_GET_ENDED);
    }
    if (job_stopped(j))
        return;
    if (j->with_session && x->status == 404 && j->kind != J_DELETE)
        http_report_closed(x->c, AUR_E_CLOSED, "session expired (HTTP 404)");
    else if (j->kind == J_LISTEN && x->established)
        http_report_closed(x->c, AUR_E_CLOSED, "listen stream ended");
    else if (get_up)
        /* Changes pushed from now on could not reach us. */
        http_report_closed(x->c, AUR_E_CLOSED, "legacy GET stream ended");
}

static bool seen_url(char **seen, int n, const char *u)
{
    for (int i = 0; i < n; i++)
        if (strcmp(seen[i], u) == 0)
            return true;
    return false;
}

void http_job_run(struct http_curl *hc, struct http_job *j)
{
    struct aur_conn *c = j->c;
    char *seen[MAX_HOPS + 2], origin[HTTP_ORIGIN_SIZE];
    char errbuf[CURL_ERROR_SIZE];
    int nseen = 0;
    bool sent = false; /* any attempt of any hop may have written it */
    struct xfer x;

    memset(&x, 0, sizeof x);
    x.j = j;
    x.c = c;
    x.e = hc->easy;
    x.sent = &sent;
    snprintf(origin, sizeof origin, "%s", c->origin);
    if (!hc->easy || !(seen[nseen] = strdup(c->url))) {
        end_request(&x, AUR_E_NOMEM, NULL, "transport: out of memory");
        if (j->kind == J_GET)
            get_state(c, HTTP_GET_ENDED);
        return;
    }
    nseen++;
    for (;;) {
        struct curl_slist *hdrs = NULL;
        bool timed_out = false;
        const char *url = seen[nseen - 1];
        CURLcode cc;

        memset(&x, 0, sizeof x);
        x.j = j;
        x.c = c;
        x.e = hc->easy;
        x.sent = &sent;
        sse_init(&x.sse, c->st->max_event);
        errbuf[0] = '\0';
        if (setup(hc, &x, url, strcmp(origin, c->origin) == 0, &hdrs,
                  errbuf) != AUR_OK) {
            curl_slist_free_all(hdrs);
            end_request(&x, AUR_E_NOMEM, NULL, "transport: out of memory");
            after(&x);
            break;
        }
        cc = perform(hc, &x, &timed_out);
        curl_slist_free_all(hdrs);
        if (x.btype == B_UNSET)
            classify(&x);
        if (job_stopped(j)) {
            after(&x);
            break; /* cancelled or closing: silence */
        }
        if (cc != CURLE_OK && !x.done && !x.too_big) {
            const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
            if (x.got_response)
                ; /* the response is in: how the stream ended is moot */
            else if (timed_out)
                end_request(&x, AUR_E_TIMEOUT, NULL,
                            "transport: no response before the deadline");
            else if (sent && !x.status)
                end_request(&x, AUR_E_IO, NULL,
                            "transport: the connection was lost after the "
                            "request may have been sent, and it is never "
                            "sent twice (%s)", why);
            else
                end_request(&x, AUR_E_IO, NULL, "transport: %s", why);
            after(&x);
            break;
        }
        if (x.too_big) {
            if (!x.got_response)
                end_request(&x, AUR_E_LIMIT, NULL,
                            "HTTP %ld: response over the size limit",
                            x.status);
            after(&x);
            break;
        }
        if (x.status == 307 || x.status == 308) {
            struct curl_header *h = NULL;
            struct aur_error err;
            char *next = NULL;
            if (curl_easy_header(hc->easy, "Location", 0, CURLH_HEADER, -1,
                                 &h) != CURLHE_OK || !h) {
                end_request(&x, AUR_E_PROTOCOL, NULL,
                            "HTTP %ld without a Location", x.status);
                after(&x);
                break;
            }
            if (http_url_redirect(url, h->value, &next, origin, &err) !=
                AUR_OK) {
                end_request(&x, AUR_E_PROTOCOL, NULL, "HTTP %ld: %s",
                            x.status, err.msg);
                after(&x);
                break;
            }
            if (seen_url(seen, nseen, next) || nseen > MAX_HOPS) {
                bool loop = seen_url(seen, nseen, next);
                free(next);
                end_request(&x, AUR_E_PROTOCOL, NULL,
                            loop ? "HTTP %ld: redirect loop"
                                 : "HTTP %ld: more than 5 redirects",
                            x.status);
                after(&x);
                break;
            }
            seen[nseen++] = next;
            sse_free(&x.sse);
            free(x.buf);
            continue;
        }
        if (x.status >= 300 && x.status < 400) {
            end_request(&x, AUR_E_PROTOCOL, NULL,
                        "HTTP %ld: redirect not followed (only 307 and 308 "
                        "are)", x.status);
            after(&x);
            break;
        }
        sse_finish(&x.sse);
        finish(&x);
        after(&x);
        break;
    }
    sse_free(&x.sse);
    free(x.buf);
    for (int i = 0; i < nseen; i++)
        free(seen[i]);
}
