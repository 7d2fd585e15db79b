/*
 * killpoint_https.c - a loopback HTTPS MCP server (2026-07-28, JSON
 * responses, HTTP/1.1 keep-alive) that dies at one chosen point around one
 * tools/call, for tests/system/check_killpoints.c.
 *
 *   killpoint_https --cert PEM --key PEM --record FILE --point P --how H
 *                   [--conn fresh|reused] [--warm N] [--lifetime S]
 *                   [--late-conns 1]
 *
 * Prints "PORT <n>\n" once it listens on 127.0.0.1.  Serves server/discover
 * (tools without listChanged: the host opens no listen stream), one
 * tools/list page with the tool t0000, and tools/call, answered
 * {"content":[{"type":"text","text":"kp-ok <N>"}]} with N the length of
 * arguments.text.  Notifications get 202.
 *
 * --conn fresh: every response says "Connection: close" and the server
 * closes the connection after it, so every request, the target included,
 * is the first one of a new connection.  --conn reused: connections are
 * kept alive (HTTP/1.1), so after a warm-up call the target normally comes
 * on a connection that already carried a request (the record says which).
 *
 * The target is the first request after tools/list and N (--warm) answered
 * tools/call.  Once armed, the point applies to the first connection that
 * is accepted (tcp-accept, handshake) or that has request bytes (the other
 * points; a connection accepted meanwhile is handshaken and waited on):
 *   gone        at arming, before the target exists: the server goes away
 *   tcp-accept  TCP accepted, before the TLS handshake
 *   handshake   TLS handshake done, nothing read (bytes may be in flight)
 *   before-read request bytes arrived on the connection, none read
 *   headers     after reading exactly the header block
 *   body        after reading the whole body, nothing acted on
 *   effect      after appending the effect record
 *   part-reply  after writing the response headers and half the body
 *   full-reply  after writing the whole response
 * --late-conns 1 (diagnostics): after a close/reset death keep listening;
 * every later connection is recorded ("late conn id=C", then "late
 * tls-fail", "late eof", "late body-eof ..." or "late req conn=C method=M
 * bytes=N": a re-sent request that arrived whole) and reset.
 * Dying (--how): close (close the listening socket first, then TLS
 * close_notify and close every connection; keep running), reset (close the
 * listening socket, then SO_LINGER 0 + close every connection: RST; keep
 * running), exit (exit status 3), sigkill (raise(SIGKILL)).  Either way
 * nothing accepts connections afterwards, so a silent re-send by the
 * client's HTTP library is refused.
 *
 * The record: one line per step, each a single write() on an O_APPEND
 * descriptor, written before the next step (next read, effect, reply,
 * death), so it survives even SIGKILL right after:
 *   start pid=P port=N | conn id=C | tls-fail conn=C
 *   req conn=C seq=S method=M name=N bytes=B      (a served request)
 *   armed | target conn=C fresh=0|1
 *   read total=N        target bytes (headers+body) our SSL_read returned
 *   headers method=M name=N clen=L
 *   method M id=I | effect id=I | reply wrote=N of=M
 *   outq n=N            reply bytes not yet acknowledged by the client's
 *                       kernel when we stopped waiting (0: all arrived)
 *   hello n=N            tcp-accept: the unread ClientHello (not request)
 *   pending raw=N ssl=M  at the death: bytes in the kernel socket buffer
 *                        (TLS records) and decrypted in OpenSSL, unread
 *   kill point=P how=H | gone-done (close/reset: every socket closed)
 * Exits on stdin EOF or after --lifetime seconds (default 120).
 * Single-threaded: one poll loop, blocking TLS with 20 s socket timeouts.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAX_CONNS 64
#define MAX_HEAD 16384
#define MAX_BODY (8u << 20)
#define IO_TIMEOUT_S 20

enum point {
    P_GONE, P_TCP_ACCEPT, P_HANDSHAKE, P_BEFORE_READ, P_HEADERS, P_BODY,
    P_EFFECT, P_PART_REPLY, P_FULL_REPLY,
};
static const char *const point_names[] = {
    "gone", "tcp-accept", "handshake", "before-read", "headers", "body",
    "effect", "part-reply", "full-reply",
};
enum how { H_CLOSE, H_RESET, H_EXIT, H_SIGKILL };
static const char *const how_names[] = {"close", "reset", "exit", "sigkill"};

struct conn {
    int fd;
    SSL *ssl;
    int id;
    int served; /* requests answered on it */
};

struct req {
    char head[MAX_HEAD + 1];
    size_t hlen;
    char mmethod[128], mname[256];
    size_t clen;
    bool expect100;
    char *body;
    struct json_object *msg;
};

static SSL_CTX *ctx;
static int rec_fd = -1, lfd = -1;
static struct conn conns[MAX_CONNS];
static int nconns, next_conn_id;
static enum point point;
static enum how how;
static bool reuse;
static unsigned warm;
static bool listed, armed, dead;
static bool late; /* --late-conns: after a close/reset death, keep listening
                   * and record what comes (diagnostics: a silent re-send) */
static unsigned calls;
static size_t tread; /* target bytes read */

static void rec(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    if (rec_fd < 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (write(rec_fd, line, (size_t)n) != n)
        fprintf(stderr, "killpoint_https: record write failed\n");
}

static void drop_conn(struct conn *c, bool graceful)
{
    if (c->fd < 0)
        return;
    if (!graceful) {
        struct linger lg = {1, 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    } else if (c->ssl) {
        SSL_shutdown(c->ssl); /* close_notify; we do not wait for theirs */
    }
    if (c->ssl)
        SSL_free(c->ssl);
    close(c->fd);
    c->ssl = NULL;
    c->fd = -1;
}

/* Records what is unread on the target connection (t may be NULL), then
 * dies the chosen way.  close/reset return (the process lives on with no
 * socket), exit/sigkill do not. */
static void die(struct conn *t)
{
    int raw = 0, sslp = 0;

    if (t && t->fd >= 0 && ioctl(t->fd, FIONREAD, &raw) != 0)
        raw = 0;
    if (t && t->ssl)
        sslp = SSL_pending(t->ssl) + (SSL_has_pending(t->ssl) &&
                                      SSL_pending(t->ssl) == 0);
    if (t && !t->ssl) {
        /* No TLS yet: what waits is the ClientHello, not the request. */
        rec("hello n=%d", raw);
        raw = 0;
    }
    rec("pending raw=%d ssl=%d", raw, sslp);
    rec("kill point=%s how=%s", point_names[point], how_names[how]);
    switch (how) {
    case H_EXIT:
        _exit(3);
    case H_SIGKILL:
        raise(SIGKILL);
        _exit(9);
    case H_CLOSE:
    case H_RESET:
        /* The listening socket first: a re-send must be refused. */
        dead = true;
        if (lfd >= 0 && !late) {
            close(lfd);
            lfd = -1;
        }
        if (t)
            drop_conn(t, how == H_CLOSE);
        for (int i = 0; i < nconns; i++)
            drop_conn(&conns[i], how == H_CLOSE);
        rec("gone-done");
        break;
    }
}

static bool send_all(struct conn *c, const char *b, size_t n)
{
    while (n > 0) {
        int w = SSL_write(c->ssl, b, (int)(n > 1u << 30 ? 1u << 30 : n));
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

static void header_value(struct req *r, const char *name, char *dst,
                         size_t cap)
{
    size_t nl = strlen(name);
    const char *p = r->head;

    dst[0] = '\0';
    while ((p = strstr(p, "\r\n"))) {
        p += 2;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1, *e;
            while (*v == ' ' || *v == '\t')
                v++;
            e = strstr(v, "\r\n");
            if (!e)
                e = v + strlen(v);
            snprintf(dst, cap, "%.*s", (int)(e - v), v);
            return;
        }
    }
}

/* Reads exactly the header block ("\r\n\r\n" included): peeks what is
 * decrypted and consumes no byte past the block.  target: records after
 * every read. */
static bool read_head(struct conn *c, struct req *r, bool target)
{
    char peek[4096], v[64];

    r->hlen = 0;
    for (;;) {
        int n = SSL_peek(c->ssl, peek, sizeof peek);
        size_t take, from;
        bool end = false;
        if (n <= 0)
            return false;
        take = (size_t)n;
        if (r->hlen + take > MAX_HEAD)
            take = MAX_HEAD - r->hlen;
        if (take == 0)
            return false;
        /* Where does the block end, looking across the previous bytes? */
        memcpy(r->head + r->hlen, peek, take);
        from = r->hlen > 3 ? r->hlen - 3 : 0;
        for (size_t i = from; i + 4 <= r->hlen + take; i++)
            if (memcmp(r->head + i, "\r\n\r\n", 4) == 0) {
                take = i + 4 - r->hlen;
                end = true;
                break;
            }
        n = SSL_read(c->ssl, r->head + r->hlen, (int)take);
        if (n <= 0)
            return false;
        r->hlen += (size_t)n;
        if (target) {
            tread += (size_t)n;
            rec("read total=%zu", tread);
        }
        if (end && (size_t)n == take)
            break;
    }
    r->head[r->hlen] = '\0';
    header_value(r, "mcp-method", r->mmethod, sizeof r->mmethod);
    header_value(r, "mcp-name", r->mname, sizeof r->mname);
    header_value(r, "content-length", v, sizeof v);
    r->clen = strtoul(v, NULL, 10);
    header_value(r, "expect", v, sizeof v);
    r->expect100 = strcasecmp(v, "100-continue") == 0;
    return r->clen <= MAX_BODY;
}

static bool read_body(struct conn *c, struct req *r, bool target)
{
    size_t got = 0;

    if (r->expect100 &&
        !send_all(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
        return false;
    r->body = malloc(r->clen + 1);
    if (!r->body)
        return false;
    while (got < r->clen) {
        size_t want = r->clen - got;
        int n = SSL_read(c->ssl, r->body + got,
                         (int)(want > 1u << 30 ? 1u << 30 : want));
        if (n <= 0)
            return false;
        got += (size_t)n;
        if (target) {
            tread += (size_t)n;
            rec("read total=%zu", tread);
        }
    }
    r->body[r->clen] = '\0';
    r->msg = r->clen ? json_tokener_parse(r->body) : NULL;
    return true;
}

static void req_free(struct req *r)
{
    free(r->body);
    json_object_put(r->msg);
    memset(r, 0, sizeof *r);
}

static const char *str_member(struct json_object *o, const char *k)
{
    struct json_object *v;
    if (o && json_object_object_get_ex(o, k, &v) &&
        json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

static const char *id_text(struct json_object *msg)
{
    struct json_object *id;
    if (msg && json_object_object_get_ex(msg, "id", &id))
        return json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
    return NULL;
}

static void finish_modern(struct json_object *res, bool cacheable)
{
    struct json_object *meta = json_object_new_object();
    struct json_object *si = json_object_new_object();

    json_object_object_add(res, "resultType",
                           json_object_new_string("complete"));
    if (cacheable) {
        json_object_object_add(res, "ttlMs", json_object_new_int(0));
        json_object_object_add(res, "cacheScope",
                               json_object_new_string("private"));
    }
    json_object_object_add(si, "name", json_object_new_string("kp-https"));
    json_object_object_add(si, "version", json_object_new_string("1.0.0"));
    json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", si);
    json_object_object_add(res, "_meta", meta);
}

/* The JSON-RPC answer to r as text (malloc'd) and its HTTP status. */
static char *answer(struct req *r, int *status)
{
    const char *method = str_member(r->msg, "method");
    const char *id = id_text(r->msg);
    struct json_object *res = json_object_new_object();
    char *out = NULL;
    bool cacheable = true;

    *status = 200;
    if (method && strcmp(method, "server/discover") == 0) {
        struct json_object *caps = json_object_new_object();
        struct json_object *v = json_object_new_array();
        json_object_array_add(v, json_object_new_string("2026-07-28"));
        json_object_object_add(res, "supportedVersions", v);
        json_object_object_add(caps, "tools", json_object_new_object());
        json_object_object_add(res, "capabilities", caps);
    } else if (method && strcmp(method, "tools/list") == 0) {
        json_object_object_add(res, "tools", json_tokener_parse(
            "[{\"name\":\"t0000\",\"description\":\"kill-point target\","
            "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":"
            "{\"type\":\"string\"}}}}]"));
    } else if (method && strcmp(method, "tools/call") == 0) {
        struct json_object *p = NULL, *a = NULL, *t = NULL;
        char text[64];
        size_t n = 0;
        json_object_object_get_ex(r->msg, "params", &p);
        json_object_object_get_ex(p, "arguments", &a);
        if (json_object_object_get_ex(a, "text", &t) &&
            json_object_is_type(t, json_type_string))
            n = (size_t)json_object_get_string_len(t);
        snprintf(text, sizeof text, "kp-ok %zu", n);
        json_object_object_add(res, "content", json_tokener_parse("[]"));
        {
            struct json_object *b = json_object_new_object(), *arr;
            json_object_object_get_ex(res, "content", &arr);
            json_object_object_add(b, "type", json_object_new_string("text"));
            json_object_object_add(b, "text", json_object_new_string(text));
            json_object_array_add(arr, b);
        }
        cacheable = false;
    } else {
        json_object_put(res);
        *status = 404;
        if (asprintf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{"
                     "\"code\":-32601,\"message\":\"Method not found\"}}",
                     id ? id : "null") < 0)
            out = NULL;
        return out;
    }
    finish_modern(res, cacheable);
    if (asprintf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}",
                 id ? id : "null",
                 json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN))
        < 0)
        out = NULL;
    json_object_put(res);
    return out;
}

/* The whole response (head + body, malloc'd) and where its body starts;
 * close: with "Connection: close". */
static char *response(struct req *r, bool close, size_t *len,
                      size_t *body_at)
{
    int status = 202;
    char *body = NULL, *out = NULL;
    int n;

    if (id_text(r->msg))
        body = answer(r, &status);
    n = asprintf(&out, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n%s\r\n%s",
                 status, status == 200 ? "OK" : status == 202 ? "Accepted"
                                                              : "Not Found",
                 body ? "Content-Type: application/json\r\n" : "",
                 body ? strlen(body) : 0,
                 close ? "Connection: close\r\n" : "", body ? body : "");
    free(body);
    if (n < 0)
        return NULL;
    *len = (size_t)n;
    *body_at = (size_t)(strstr(out, "\r\n\r\n") - out) + 4;
    return out;
}

static void close_conn(struct conn *c)
{
    drop_conn(c, true);
}

/* Until the client's kernel acknowledged all we wrote (bounded): an
 * abortive close (reset) discards what is still unsent, and "the whole
 * reply, then death" must mean the reply did reach the client. */
static void delivered(struct conn *c)
{
    int outq = -1;
    for (int i = 0; i < 5000; i++) {
        if (ioctl(c->fd, SIOCOUTQ, &outq) != 0 || outq <= 0)
            break;
        usleep(1000);
    }
    rec("outq n=%d", outq);
}

/* c: the connection that just answered (NULL: none open). */
static void arm_if_due(struct conn *c)
{
    if (armed || !listed || calls < warm)
        return;
    armed = true;
    rec("armed");
    if (point == P_GONE) {
        /* "Gone after the warm-up" means the warm-up's answer reached
         * the client first: a reset now would discard what is unsent
         * (CI saw the warm-up itself end "connection reset" once in
         * 1000 trials under load). */
        if (c && c->fd >= 0)
            delivered(c);
        die(NULL);
    }
}


/* The target request on c, up to the point. */
static void target(struct conn *c)
{
    struct req r;
    const char *m;
    char *resp;
    size_t len, body_at;

    memset(&r, 0, sizeof r);
    rec("target conn=%d fresh=%d", c->id, c->served == 0);
    if (point <= P_BEFORE_READ) {
        die(c);
        return;
    }
    if (!read_head(c, &r, true)) {
        rec("eof total=%zu", tread);
        die(c);
        return;
    }
    rec("headers method=%s name=%s clen=%zu", r.mmethod[0] ? r.mmethod : "-",
        r.mname[0] ? r.mname : "-", r.clen);
    if (point == P_HEADERS) {
        die(c);
        goto out;
    }
    if (!read_body(c, &r, true)) {
        rec("eof total=%zu", tread);
        die(c);
        goto out;
    }
    m = str_member(r.msg, "method");
    rec("method %s id=%s", m ? m : "-", id_text(r.msg) ? id_text(r.msg) : "-");
    if (point == P_BODY || !m || strcmp(m, "tools/call") != 0) {
        die(c);
        goto out;
    }
    rec("effect id=%s", id_text(r.msg));
    if (point == P_EFFECT) {
        die(c);
        goto out;
    }
    resp = response(&r, false, &len, &body_at);
    if (!resp)
        _exit(1);
    if (point == P_PART_REPLY)
        len = body_at + (len - body_at) / 2;
    if (send_all(c, resp, len)) {
        rec("reply wrote=%zu of=%zu", len, strlen(resp));
        delivered(c);
    } else {
        rec("reply failed");
    }
    free(resp);
    die(c);
out:
    req_free(&r);
}

/* A request before the target: answered in full. */
static void serve(struct conn *c)
{
    struct req r;
    const char *m;
    char *resp;
    size_t len, body_at;
    bool last;

    memset(&r, 0, sizeof r);
    if (!read_head(c, &r, false) || !read_body(c, &r, false)) {
        close_conn(c); /* the client went away */
        req_free(&r);
        return;
    }
    m = str_member(r.msg, "method");
    rec("req conn=%d seq=%d method=%s name=%s bytes=%zu", c->id, c->served,
        m ? m : "-", r.mname[0] ? r.mname : "-", r.hlen + r.clen);
    if (m && id_text(r.msg)) {
        if (strcmp(m, "tools/list") == 0)
            listed = true;
        else if (strcmp(m, "tools/call") == 0)
            calls++;
    }
    /* fresh: "Connection: close" on every answer, so the client closes
     * its end as well and never holds a stale connection it might try
     * first (closing idle kept-alive connections from the server side
     * instead makes libcurl 7.88 send on one of them, get EPIPE and
     * retry on a new connection: not a clean first request). */
    last = !reuse;
    resp = response(&r, last, &len, &body_at);
    if (!resp || !send_all(c, resp, len)) {
        free(resp);
        close_conn(c);
        req_free(&r);
        return;
    }
    free(resp);
    c->served++;
    req_free(&r);
    if (last)
        close_conn(c);
    arm_if_due(c);
}

/* --late-conns: a connection after the death, recorded and reset. */
static void late_conn(int fd)
{
    struct timeval tv = {IO_TIMEOUT_S, 0};
    struct conn c = {fd, NULL, ++next_conn_id, 0};
    struct req r;

    memset(&r, 0, sizeof r);
    rec("late conn id=%d", c.id);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    c.ssl = SSL_new(ctx);
    if (!c.ssl || SSL_set_fd(c.ssl, fd) != 1 || SSL_accept(c.ssl) != 1)
        rec("late tls-fail conn=%d", c.id);
    else if (!read_head(&c, &r, false))
        rec("late eof conn=%d", c.id);
    else if (!read_body(&c, &r, false))
        rec("late body-eof conn=%d headers=%s clen=%zu", c.id,
            r.mmethod[0] ? r.mmethod : "-", r.clen);
    else
        rec("late req conn=%d method=%s bytes=%zu", c.id,
            str_member(r.msg, "method") ? str_member(r.msg, "method") : "-",
            r.hlen + r.clen);
    req_free(&r);
    drop_conn(&c, false);
}

static void accept_one(void)
{
    struct timeval tv = {IO_TIMEOUT_S, 0};
    struct conn *c = NULL;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0)
        return;
    if (dead) {
        late_conn(fd);
        return;
    }
    for (int i = 0; i < nconns; i++)
        if (conns[i].fd < 0)
            c = &conns[i];
    if (!c && nconns < MAX_CONNS)
        c = &conns[nconns++];
    if (!c) {
        close(fd);
        return;
    }
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->id = ++next_conn_id;
    rec("conn id=%d", c->id);
    if (armed && point == P_TCP_ACCEPT) {
        rec("target conn=%d fresh=1", c->id);
        die(c);
        return;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    c->ssl = SSL_new(ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1 || SSL_accept(c->ssl) != 1) {
        rec("tls-fail conn=%d", c->id);
        drop_conn(c, false);
        return;
    }
    if (armed && point == P_HANDSHAKE)
        target(c);
}

static int listen_on(int *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        perror("killpoint_https: listen");
        exit(2);
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static int lookup(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    fprintf(stderr, "killpoint_https: unknown value %s\n", v);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *cert = NULL, *key = NULL, *recp = NULL;
    unsigned lifetime = 120;
    int port;

    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (strcmp(o, "--cert") == 0)
            cert = v;
        else if (strcmp(o, "--key") == 0)
            key = v;
        else if (strcmp(o, "--record") == 0)
            recp = v;
        else if (strcmp(o, "--point") == 0)
            point = (enum point)lookup(v, point_names, 9);
        else if (strcmp(o, "--how") == 0)
            how = (enum how)lookup(v, how_names, 4);
        else if (strcmp(o, "--conn") == 0)
            reuse = strcmp(v, "reused") == 0;
        else if (strcmp(o, "--warm") == 0)
            warm = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(o, "--lifetime") == 0)
            lifetime = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(o, "--late-conns") == 0)
            late = strcmp(v, "1") == 0;
        else {
            fprintf(stderr, "killpoint_https: unknown option %s\n", o);
            return 2;
        }
    }
    if (!cert || !key || !recp) {
        fprintf(stderr, "usage: killpoint_https --cert F --key F --record F "
                        "--point P --how H [--conn fresh|reused] [--warm N] "
                        "[--lifetime S] [--late-conns 1]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    alarm(lifetime);
    rec_fd = open(recp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ctx = SSL_CTX_new(TLS_server_method());
    if (rec_fd < 0 || !ctx ||
        SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
    lfd = listen_on(&port);
    rec("start pid=%d port=%d", (int)getpid(), port);
    printf("PORT %d\n", port);
    fflush(stdout);
    for (;;) {
        struct pollfd pf[MAX_CONNS + 2];
        int idx[MAX_CONNS + 2], n = 0;
        bool busy = false;

        /* Decrypted bytes waiting in OpenSSL do not wake poll. */
        for (int i = 0; i < nconns; i++)
            if (conns[i].fd >= 0 && conns[i].ssl &&
                SSL_has_pending(conns[i].ssl)) {
                busy = true;
                if (armed)
                    target(&conns[i]);
                else
                    serve(&conns[i]);
                break;
            }
        if (busy)
            continue;
        pf[n].fd = STDIN_FILENO;
        pf[n].events = POLLIN;
        idx[n++] = -2;
        if (lfd >= 0) {
            pf[n].fd = lfd;
            pf[n].events = POLLIN;
            idx[n++] = -1;
        }
        for (int i = 0; i < nconns; i++)
            if (conns[i].fd >= 0) {
                pf[n].fd = conns[i].fd;
                pf[n].events = POLLIN;
                idx[n++] = i;
            }
        if (poll(pf, (nfds_t)n, 1000) <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!pf[k].revents)
                continue;
            if (idx[k] == -2) {
                char b[64];
                if (read(STDIN_FILENO, b, sizeof b) <= 0)
                    _exit(0);
            } else if (idx[k] == -1) {
                if (lfd >= 0)
                    accept_one();
            } else if (conns[idx[k]].fd == pf[k].fd) {
                if (armed)
                    target(&conns[idx[k]]);
                else
                    serve(&conns[idx[k]]);
            }
            break; /* state may have changed: poll again */
        }
    }
}
