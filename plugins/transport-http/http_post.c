/*
 * http_post.c - one HTTP exchange of transport-http: build the headers,
 * run the curl transfer (and our own 307/308 hops).  What the body says
 * and what reaches the sink is http_response.c's; the request-end
 * convention both implement is documented at the top of http_plugin.c.
 *
 * Every transfer runs on a per-thread multi handle so cancel() and close()
 * can interrupt curl_multi_poll at once (curl_multi_wakeup) instead of
 * waiting for a progress callback.  The poll wakes at least once a second
 * to re-check the deadline.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <json-c/json.h>
#include <openssl/err.h>

#include "aur_perturb.h"
#include "fdlimit.h"

#define GRACE_MS 1000          /* let the core's own timeout fire first */
#define SERIAL (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

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

int http_job_headers(struct aur_conn *c, struct http_job *j,
                     struct json_object *msg, struct aur_error *err)
{
    struct json_object *params = NULL, *meta = NULL, *v = NULL;
    const char *method = http_str_member(msg, "method");
    struct curl_slist **l = &j->hdrs;
    int rc;

    json_object_object_get_ex(msg, "params", &params);
    if (method && strlen(method) < sizeof j->method)
        strcpy(j->method, method);
    rc = http_add_hdr(l, "Content-Type", "application/json");
    if (rc == AUR_OK)
        rc = http_add_hdr(l, "Accept", "application/json, text/event-stream");
    if (rc == AUR_OK) /* no 100-continue round trip for big bodies */
        rc = http_add_hdr(l, "Expect", "");
    if (rc != AUR_OK)
        goto out;
    if (c->proto_set && c->modern) {
        /* docs/protocol.md, "HTTP request headers". */
        rc = http_add_hdr(l, "MCP-Protocol-Version", c->version);
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
            ver = http_str_member(meta,
                                  "io.modelcontextprotocol/protocolVersion");
        if (ver && http_visible_ascii(ver))
            rc = http_add_hdr(l, "MCP-Protocol-Version", ver);
        if (rc == AUR_OK)
            rc = http_add_hdr(l, "Mcp-Method", method);
    } else if (!c->proto_set && method && strcmp(method, "initialize") == 0) {
        /* Legacy initialize: no MCP-* headers at all. */
    } else if (c->proto_set || c->init_seen) {
        /* Legacy, including notifications/initialized which the core sends
         * before set_protocol: version and session from the init result. */
        if (c->session) {
            rc = http_add_hdr(l, "Mcp-Session-Id", c->session);
            j->with_session = rc == AUR_OK;
        }
        if (rc == AUR_OK && c->version[0])
            rc = http_add_hdr(l, "MCP-Protocol-Version", c->version);
    }
out:
    if (rc != AUR_OK)
        return aur_fail(err, rc, 0, rc == AUR_E_NOMEM ? "out of memory"
                                                      : "header too long");
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* Transfer                                                           */
/* ------------------------------------------------------------------ */

/* Deadline of the current wait, or AUR_NO_DEADLINE. */
static aur_deadline wait_deadline(struct http_xfer *x)
{
    struct http_job *j = x->j;
    if (j->kind == J_LISTEN || j->kind == J_GET) {
        /* Streams: only the way to the response headers is bounded. */
        return x->head_done ? AUR_NO_DEADLINE : j->dl;
    }
    if (j->kind == J_DELETE || j->dl == AUR_NO_DEADLINE)
        return j->dl;
    return j->dl + GRACE_MS;
}

/*
 * Every header line of every response of a stream, interim ones too.  A
 * stream is judged once the head of its final response is complete, at
 * the blank line that ends it: libcurl knows the status from the status
 * line on, before the Content-Type that follows (it may come in a later
 * read), and a 103 Early Hints has a status of its own.
 */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct http_xfer *x = ud;
    size_t len = size * n;
    long st = 0;

    if ((len == 2 && p[0] == '\r' && p[1] == '\n') ||
        (len == 1 && p[0] == '\n')) {
        curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &st);
        if (st >= 200)
            x->head_done = true;
    }
    return len;
}

/* The legacy GET's head is in: up when the server has the stream (200
 * text/event-stream), anything else says it is not offered. */
static void announce_get(struct http_xfer *x)
{
    long st = 0;
    char *ct = NULL;

    curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_getinfo(x->e, CURLINFO_CONTENT_TYPE, &ct);
    x->announced = true;
    http_get_state(x->c, st == 200 && ct &&
                                 strncasecmp(ct, "text/event-stream", 17) == 0
                             ? HTTP_GET_UP
                             : HTTP_GET_ENDED);
}

/* The hop's transfer begins: its handle joins the multi, where cancel
 * and close can wake it. */
static bool hop_add(struct http_run *r)
{
    if (curl_multi_add_handle(r->hc->multi, r->hc->easy) != CURLM_OK)
        return false;
    pthread_mutex_lock(&r->x.c->mu);
    r->j->multi = r->hc->multi;
    pthread_mutex_unlock(&r->x.c->mu);
    r->in_hop = true;
    return true;
}

static void hop_remove(struct http_run *r)
{
    pthread_mutex_lock(&r->x.c->mu);
    r->j->multi = NULL;
    pthread_mutex_unlock(&r->x.c->mu);
    curl_multi_remove_handle(r->hc->multi, r->hc->easy);
    r->in_hop = false;
}

/* Turn the curl loop until the hop's transfer is over (true, r->cc set)
 * or until the absolute time until (false; AUR_NO_DEADLINE: never). */
static bool hop_poll(struct http_run *r, aur_deadline until)
{
    struct http_xfer *x = &r->x;
    const struct aur_host *h = HTTP_HOST(x->c);
    struct http_job *j = r->j;
    CURLMsg *msg;
    int running = 1, left;

    for (;;) {
        if (http_job_stopped(j)) {
            r->cc = CURLE_ABORTED_BY_CALLBACK;
            return true;
        }
        if (curl_multi_perform(r->hc->multi, &running) != CURLM_OK) {
            r->cc = CURLE_OUT_OF_MEMORY;
            return true;
        }
        if (j->kind == J_GET && !x->announced && x->head_done)
            announce_get(x);
        if (!running) {
            msg = curl_multi_info_read(r->hc->multi, &left);
            r->cc = msg && msg->msg == CURLMSG_DONE ? msg->data.result
                                                    : CURLE_RECV_ERROR;
            return true;
        }
        int64_t wait = 1000, rem = aur_remaining_ms(h, wait_deadline(x));
        if (rem == 0) {
            r->timed_out = true;
            r->cc = CURLE_OPERATION_TIMEDOUT;
            return true;
        }
        if (until != AUR_NO_DEADLINE) {
            int64_t left_ms = aur_remaining_ms(h, until);
            if (left_ms == 0)
                return false;
            if (left_ms < wait)
                wait = left_ms;
        }
        curl_multi_poll(r->hc->multi, NULL, 0,
                        (int)(rem < wait ? rem : wait), NULL);
    }
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
    struct http_xfer *x = ud;
    (void)ip;
    (void)local_ip;
    (void)port;
    (void)local_port;
    *x->sent = true;
    AUR_PERTURB("http.prereq");
    if (++x->attempts > 1) {
        x->resend_refused = true;
        return CURL_PREREQFUNC_ABORT;
    }
    /* What libcurl said before this attempt is of a pooled connection it
     * found dead and dropped (a close_notify it could not write): not
     * this request's fate, which would otherwise be told in its words. */
    x->errbuf[0] = '\0';
    return CURL_PREREQFUNC_OK;
}

/* The request body goes through a read callback, not POSTFIELDS, and
 * cannot be rewound either (on_prereq already refuses a re-send; this is
 * the second lock on the same door): the exchange then fails with
 * CURLE_SEND_FAIL_REWIND and is reported as delivered, i.e. unknown. */
static size_t read_body(char *dst, size_t size, size_t n, void *ud)
{
    struct http_xfer *x = ud;
    size_t left = x->j->len - x->body_off, k = size * n < left ? size * n
                                                                : left;

    memcpy(dst, x->j->body + x->body_off, k);
    x->body_off += k;
    return k;
}

static int no_rewind(void *ud, curl_off_t off, int origin)
{
    struct http_xfer *x = ud;
    (void)off;
    (void)origin;
    x->resend_refused = true;
    return CURL_SEEKFUNC_CANTSEEK;
}

/* curl's own socket() (close-on-exec added), for what curl does not
 * tell: the errno of a socket that could not be made (its
 * CURLINFO_OS_ERRNO stays 0 then).  libcurl keeps the first words it
 * writes and no later ones; emptied here, a failed connect is told in
 * its generic words rather than a dropped pooled connection's. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose,
                                 struct curl_sockaddr *a)
{
    struct http_xfer *x = ud;
    int fd;

    (void)purpose;
    x->errbuf[0] = '\0'; /* see on_prereq: a new connection's own words */
    fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd < 0) {
        if (aur__fd_exhausted(errno))
            x->fd_errno = errno;
        return CURL_SOCKET_BAD;
    }
    return fd;
}

/* A file TLS could not open for lack of a descriptor (the CA bundle:
 * curl says only "error setting certificate file") is a system error in
 * this thread's OpenSSL queue, which is cleared before each transfer. */
static int tls_fd_errno(void)
{
    unsigned long e;
    int found = 0;

    while ((e = ERR_get_error()) != 0)
        if (ERR_SYSTEM_ERROR(e) && aur__fd_exhausted(ERR_GET_REASON(e)))
            found = ERR_GET_REASON(e);
    return found;
}

static int setup(struct http_curl *hc, struct http_xfer *x, const char *url,
                 bool same_origin, struct curl_slist **hdrs, char *errbuf)
{
    struct http_job *j = x->j;
    struct aur_conn *c = x->c;
    CURL *e = hc->easy;
    int64_t ct = aur_remaining_ms(HTTP_HOST(c), j->dl);

    struct curl_slist *send_hdrs = j->hdrs;

    curl_easy_reset(e);
    *hdrs = NULL;
    /* The token goes to the configured origin only, never across: a hop
     * that carries it gets a copy of the job's list with it added (the
     * job's own list never holds it). */
    if (c->auth_header && same_origin) {
        struct curl_slist *n;
        for (struct curl_slist *s = j->hdrs; s; s = s->next) {
            if (!(n = curl_slist_append(*hdrs, s->data)))
                return AUR_E_NOMEM;
            *hdrs = n;
        }
        if (!(n = curl_slist_append(*hdrs, c->auth_header)))
            return AUR_E_NOMEM;
        send_hdrs = *hdrs = n;
    }
    if (ct > c->timeout_ms)
        ct = c->timeout_ms;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    /* HTTP/1.1 alone, offered as such in the TLS handshake: when a
     * request counts as sent (README.md, the transport-outcome
     * convention) is worked out and tested for it; libcurl would take
     * HTTP/2 from a server that offers it, with other ends to a request
     * (streams refused or reset, GOAWAY) none of which is tested. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->trust) {
        /* ca_file: curl loads no bundle, the App's store is used
         * (http_trust.c says why). */
        curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
        curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, http_trust_ctx);
        curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, c->trust);
    }
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(ct > 0 ? ct : 1));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, send_hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_xfer_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, x);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, x);
    if (j->kind == J_LISTEN || j->kind == J_GET) {
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    }
    if (j->kind == J_GET) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (j->kind == J_DELETE) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    } else {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, read_body);
        curl_easy_setopt(e, CURLOPT_READDATA, x);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, no_rewind);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->len);
    }
    return AUR_OK;
}

static bool seen_url(char **seen, int n, const char *u)
{
    for (int i = 0; i < n; i++)
        if (strcmp(seen[i], u) == 0)
            return true;
    return false;
}

/* The hop's transfer state, fresh, and its curl options. */
static bool hop_start(struct http_run *r)
{
    struct http_xfer *x = &r->x;
    struct aur_conn *c = r->j->c;

    memset(x, 0, sizeof *x);
    x->j = r->j;
    x->c = c;
    x->e = r->hc->easy;
    x->sent = &r->sent;
    x->errbuf = r->errbuf;
    sse_init(&x->sse, c->st->max_event);
    r->errbuf[0] = '\0';
    r->timed_out = false;
    r->cc = CURLE_OK;
    if (setup(r->hc, x, r->seen[r->nseen - 1],
              strcmp(r->origin, c->origin) == 0, &r->hdrs,
              r->errbuf) != AUR_OK || !hop_add(r)) {
        curl_slist_free_all(r->hdrs);
        r->hdrs = NULL;
        http_end_request(x, AUR_E_NOMEM, NULL, "transport: out of memory");
        http_xfer_after(x);
        return false;
    }
    ERR_clear_error();
    return true;
}

/* The hop's transfer is over (r->cc): true when the job has ended, false
 * when it goes on to a redirect's next hop. */
static bool hop_end(struct http_run *r)
{
    struct http_xfer *x = &r->x;
    struct http_job *j = r->j;
    const char *url = r->seen[r->nseen - 1];
    CURLcode cc = r->cc;

    hop_remove(r);
    if (cc != CURLE_OK && !x->fd_errno)
        x->fd_errno = tls_fd_errno();
    ERR_clear_error();
    curl_slist_free_all(r->hdrs);
    r->hdrs = NULL;
    if (x->btype == B_UNSET)
        http_xfer_classify(x);
    if (http_job_stopped(j)) {
        http_xfer_after(x);
        return true; /* cancelled or closing: silence */
    }
    if (cc != CURLE_OK && !x->done && !x->too_big) {
        /* libcurl's words for a re-send it was refused ("seek callback
         * returned error 2") would hide why it tried one. */
        const char *why = x->resend_refused
                              ? "the connection died after the request was "
                                "written, and libcurl's re-send of it was "
                                "refused"
                          : r->errbuf[0] ? r->errbuf
                                         : curl_easy_strerror(cc);
        if (x->got_response)
            ; /* the response is in: how the stream ended is moot */
        else if (r->timed_out)
            http_end_request(x, AUR_E_TIMEOUT, NULL,
                        "transport: no response before the deadline");
        else if (r->sent && !x->status)
            http_end_request(x, AUR_E_IO, NULL,
                        "transport: the connection was lost after the "
                        "request may have been sent, and it is never "
                        "sent twice (%s)", why);
        else if (x->fd_errno) {
            char fb[96];
            http_end_request(x, AUR_E_IO, NULL,
                        "transport: %s: cannot open a connection (%s)",
                        aur__fd_text(x->fd_errno, fb, sizeof fb), why);
        } else
            http_end_request(x, AUR_E_IO, NULL, "transport: %s", why);
        http_xfer_after(x);
        return true;
    }
    if (x->too_big) {
        if (!x->got_response)
            http_end_request(x, AUR_E_LIMIT, NULL,
                        "HTTP %ld: response over the size limit",
                        x->status);
        http_xfer_after(x);
        return true;
    }
    if (x->status == 307 || x->status == 308) {
        struct curl_header *h = NULL;
        struct aur_error err;
        char *next = NULL;
        if (curl_easy_header(r->hc->easy, "Location", 0, CURLH_HEADER, -1,
                             &h) != CURLHE_OK || !h) {
            http_end_request(x, AUR_E_PROTOCOL, NULL,
                        "HTTP %ld without a Location", x->status);
            http_xfer_after(x);
            return true;
        }
        if (http_url_redirect(url, h->value, &next, r->origin, &err) !=
            AUR_OK) {
            http_end_request(x, AUR_E_PROTOCOL, NULL, "HTTP %ld: %s",
                        x->status, err.msg);
            http_xfer_after(x);
            return true;
        }
        if (seen_url(r->seen, r->nseen, next) || r->nseen > HTTP_MAX_HOPS) {
            bool loop = seen_url(r->seen, r->nseen, next);
            free(next);
            http_end_request(x, AUR_E_PROTOCOL, NULL,
                        loop ? "HTTP %ld: redirect loop"
                             : "HTTP %ld: more than 5 redirects",
                        x->status);
            http_xfer_after(x);
            return true;
        }
        r->seen[r->nseen++] = next;
        sse_free(&x->sse);
        free(x->buf);
        x->buf = NULL;
        return false;
    }
    if (x->status >= 300 && x->status < 400) {
        http_end_request(x, AUR_E_PROTOCOL, NULL,
                    "HTTP %ld: redirect not followed (only 307 and 308 "
                    "are)", x->status);
        http_xfer_after(x);
        return true;
    }
    sse_finish(&x->sse);
    http_xfer_finish(x);
    http_xfer_after(x);
    return true;
}

bool http_run_begin(struct http_run *r, struct http_curl *hc,
                    struct http_job *j)
{
    memset(r, 0, sizeof *r);
    r->j = j;
    r->hc = hc;
    r->x.j = j;
    r->x.c = j->c;
    r->x.e = hc->easy;
    r->x.sent = &r->sent;
    snprintf(r->origin, sizeof r->origin, "%s", j->c->origin);
    if (!hc->easy || !(r->seen[0] = strdup(j->c->url))) {
        http_end_request(&r->x, AUR_E_NOMEM, NULL,
                         "transport: out of memory");
        if (j->kind == J_GET)
            http_get_state(j->c, HTTP_GET_ENDED);
        return false;
    }
    r->nseen = 1;
    return hop_start(r);
}

bool http_run_step(struct http_run *r, int64_t ms)
{
    aur_deadline until = ms < 0 ? AUR_NO_DEADLINE
                                : aur_deadline_in(HTTP_HOST(r->x.c), ms);

    for (;;) {
        if (!hop_poll(r, until))
            return false;
        if (hop_end(r) || !hop_start(r))
            return true;
    }
}

void http_run_free(struct http_run *r)
{
    if (r->in_hop)
        hop_remove(r); /* a run left before its end (never, today) */
    curl_slist_free_all(r->hdrs);
    sse_free(&r->x.sse);
    free(r->x.buf);
    for (int i = 0; i < r->nseen; i++)
        free(r->seen[i]);
    memset(r, 0, sizeof *r);
}

void http_job_run(struct http_curl *hc, struct http_job *j)
{
    struct http_run r;

    if (http_run_begin(&r, hc, j))
        (void)http_run_step(&r, -1);
    http_run_free(&r);
}
