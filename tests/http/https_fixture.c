/*
 * https_fixture.c - loopback HTTPS test server for check_transport_http.
 *
 *   https_fixture --cert PEM --key PEM --log FILE
 *
 * Listens on four random 127.0.0.1 ports and prints "A B C D\n":
 *   A, B  TLS servers with the same routes (B is a different origin)
 *   C     plain TCP: logs "PLAIN-CONN" if anything connects (an http://
 *         downgrade must never reach it)
 *   D     accepts TCP and never speaks: a stalled TLS handshake
 * The behaviour is chosen by the request path (see route()), so one
 * fixture process serves every scenario of a test.  Each request is
 * logged as one line: port, method, path, whether Authorization was
 * present (never its value), the MCP header values and all header names.
 * Thread per connection (at most 64), Connection: close on every
 * response but the keep-alive route's (/ka, which serves one request
 * after another on a connection).  Exits on stdin EOF or after 60 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAX_CONNS 64
#define MAX_HEAD 65536
#define MAX_BODY (1 << 20)

static SSL_CTX *ctx;
static FILE *logf_;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int ports[4];
static int active, conns; /* (act_mu) conns: TLS connections so far */
static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;

static void logline(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&log_mu);
    va_start(ap, fmt);
    vfprintf(logf_, fmt, ap);
    va_end(ap);
    fputc('\n', logf_);
    fflush(logf_);
    pthread_mutex_unlock(&log_mu);
}

/* Logs "ALPN <the protocols the client offered>" for every handshake
 * that offers any, and takes http/1.1 (this server speaks no other). */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char h11[] = "\x08http/1.1";
    char offered[256];
    size_t n = 0;

    (void)ssl;
    (void)arg;
    for (unsigned int i = 0, len; i < inlen; i += len) {
        len = in[i++];
        if (n && n + 1 < sizeof offered)
            offered[n++] = ',';
        for (unsigned int k = 0; k < len && i + k < inlen; k++)
            if (n + 1 < sizeof offered)
                offered[n++] = (char)in[i + k];
    }
    offered[n] = '\0';
    logline("ALPN %s", offered);
    return SSL_select_next_proto((unsigned char **)out, outlen, h11,
                                 sizeof h11 - 1, in,
                                 inlen) == OPENSSL_NPN_NEGOTIATED
               ? SSL_TLSEXT_ERR_OK
               : SSL_TLSEXT_ERR_NOACK;
}

/* How a connection ends once its last request is served. */
enum conn_end {
    END_NOTIFY, /* TLS close_notify, then FIN */
    END_FIN,    /* FIN without close_notify */
    END_RST,    /* RST (SO_LINGER 0), without close_notify */
};

struct req {
    SSL *ssl;
    int fd;
    char port; /* 'A' or 'B' */
    int conn, seq;     /* the connection's number, the request's on it */
    bool keep;         /* answered without Connection: close: read the
                        * next request on this connection */
    enum conn_end end; /* set by the route */
    char method[16], path[512], query[512];
    char hnames[2048];
    char session[256], mproto[64], mmethod[128], mname[256];
    char xparams[16384]; /* " mcp-param-<n>=[<value>]" per header */
    bool auth;
    char *body;
    size_t blen;
    struct json_object *msg; /* parsed body or NULL */
    char id[128];            /* JSON text of the id, "" if none */
    char rpc_method[128];
};

static bool send_all(struct req *r, const char *b, size_t n)
{
    while (n > 0) {
        int w = SSL_write(r->ssl, b, (int)n);
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

static void respond(struct req *r, int status, const char *ctype,
                    const char *extra, const char *body)
{
    char head[2048];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d X\r\n%s%s%s%sContent-Length: %zu\r\n"
                     "%s\r\n",
                     status, ctype ? "Content-Type: " : "", ctype ? ctype : "",
                     ctype ? "\r\n" : "", extra ? extra : "", blen,
                     r->keep ? "" : "Connection: close\r\n");
    if (send_all(r, head, (size_t)n) && blen)
        send_all(r, body, blen);
}

static bool sse_head(struct req *r, const char *extra)
{
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Cache-Control: no-cache\r\n%sConnection: close\r\n\r\n",
                     extra ? extra : "");
    return send_all(r, head, (size_t)n);
}

static bool sse_send(struct req *r, const char *fmt, ...)
{
    char buf[16384];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return n > 0 && (size_t)n < sizeof buf && send_all(r, buf, (size_t)n);
}

/* Hold the response open until the client hangs up (bounded). */
static void wait_gone(struct req *r, int ms)
{
    char b[256];
    for (int i = 0; i < ms / 50; i++) {
        struct pollfd p = {r->fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
            int n = SSL_read(r->ssl, b, sizeof b);
            if (n <= 0) {
                logline("GONE path=%s", r->path);
                return;
            }
        }
    }
    logline("HELD path=%s", r->path);
}

static void header(struct req *r, char *name, char *val)
{
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    if (strlen(r->hnames) + strlen(name) + 2 < sizeof r->hnames) {
        if (r->hnames[0])
            strcat(r->hnames, ",");
        strcat(r->hnames, name);
    }
    if (strcmp(name, "authorization") == 0)
        r->auth = true;
    else if (strcmp(name, "mcp-session-id") == 0)
        snprintf(r->session, sizeof r->session, "%s", val);
    else if (strcmp(name, "mcp-protocol-version") == 0)
        snprintf(r->mproto, sizeof r->mproto, "%s", val);
    else if (strcmp(name, "mcp-method") == 0)
        snprintf(r->mmethod, sizeof r->mmethod, "%s", val);
    else if (strcmp(name, "mcp-name") == 0)
        snprintf(r->mname, sizeof r->mname, "%s", val);
    else if (strncmp(name, "mcp-param-", 10) == 0) {
        size_t l = strlen(r->xparams);
        snprintf(r->xparams + l, sizeof r->xparams - l, " %s=[%s]", name,
                 val);
    }
}

/* Read one request.  false on a broken or oversized one. */
static bool read_req(struct req *r)
{
    char *buf = malloc(MAX_HEAD + 1), *end, *line, *save;
    size_t len = 0, clen = 0;
    bool ok = false;

    if (!buf)
        return false;
    while (len < MAX_HEAD) {
        int n = SSL_read(r->ssl, buf + len, (int)(MAX_HEAD - len));
        if (n <= 0)
            goto out;
        len += (size_t)n;
        buf[len] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")))
            break;
    }
    if (!(end = strstr(buf, "\r\n\r\n")))
        goto out;
    *end = '\0';
    line = strtok_r(buf, "\r\n", &save);
    if (!line || sscanf(line, "%15s %511s", r->method, r->path) != 2)
        goto out;
    char *q = strchr(r->path, '?');
    if (q) {
        snprintf(r->query, sizeof r->query, "%s", q + 1);
        *q = '\0';
    }
    while ((line = strtok_r(NULL, "\r\n", &save))) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ')
            v++;
        if (strcasecmp(line, "content-length") == 0)
            clen = strtoul(v, NULL, 10);
        header(r, line, v);
    }
    if (clen > MAX_BODY)
        goto out;
    r->body = malloc(clen + 1);
    if (!r->body)
        goto out;
    size_t have = len - (size_t)(end + 4 - buf);
    if (have > clen)
        have = clen;
    memcpy(r->body, end + 4, have);
    while (have < clen) {
        int n = SSL_read(r->ssl, r->body + have, (int)(clen - have));
        if (n <= 0)
            goto out;
        have += (size_t)n;
    }
    r->body[clen] = '\0';
    r->blen = clen;
    ok = true;
out:
    free(buf);
    return ok;
}

static void parse_body(struct req *r)
{
    struct json_object *v;
    if (!r->blen)
        return;
    r->msg = json_tokener_parse(r->body);
    if (json_object_object_get_ex(r->msg, "id", &v))
        snprintf(r->id, sizeof r->id, "%s",
                 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    if (json_object_object_get_ex(r->msg, "method", &v))
        snprintf(r->rpc_method, sizeof r->rpc_method, "%s",
                 json_object_get_string(v));
}

static void result(struct req *r, int status)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"method\":\"%s\","
             "\"auth\":%s,\"port\":\"%c\"}}",
             r->id, r->rpc_method, r->auth ? "true" : "false", r->port);
    respond(r, status, "application/json", NULL, body);
}

static void sse_script(struct req *r, const char *nl)
{
    if (!sse_head(r, NULL))
        return;
    sse_send(r, "id: p1%sretry: 2000%sdata: %s%s", nl, nl, nl, nl);
    sse_send(r, ": keepalive%s%s", nl, nl);
    sse_send(r, "event: message%sdata: {\"jsonrpc\":\"2.0\",%sdata: "
             "\"method\":\"notifications/progress\",\"params\":{\"p\":1}}%s%s",
             nl, nl, nl, nl);
    sse_send(r, "event: other%sdata: {\"jsonrpc\":\"2.0\",\"method\":"
             "\"should/not\"}%s%s", nl, nl, nl);
    sse_send(r, "event: message%sdata: {\"jsonrpc\":\"2.0\",\"id\":%s,"
             "\"result\":{\"ok\":true}}%s%s", nl, r->id, nl, nl);
}

static void redirect(struct req *r, int status, const char *loc)
{
    char extra[700];
    snprintf(extra, sizeof extra, "Location: %s\r\n", loc);
    respond(r, status, "text/plain", extra, "moved");
}

/* x-mcp-header (SEP-2243) tool lists.  XH_OK are valid (t_ok covers every
 * value type, a nested path, and schema text that only looks like an
 * annotation); every XH_BAD tool breaks exactly one rule. */
#define XH_OK                                                                 \
    "{\"name\":\"t_ok\",\"inputSchema\":{\"type\":\"object\",\"properties\":{" \
    "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"          \
    "\"priority\":{\"type\":\"integer\",\"x-mcp-header\":\"Priority\"},"     \
    "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"       \
    "\"debug\":{\"type\":\"boolean\",\"x-mcp-header\":\"Debug\"},"           \
    "\"empty\":{\"type\":\"string\",\"x-mcp-header\":\"EmptyVal\"},"         \
    "\"method_val\":{\"type\":\"string\",\"x-mcp-header\":\"Method\"},"      \
    "\"nonascii\":{\"type\":\"string\",\"x-mcp-header\":\"NonAscii\"},"      \
    "\"padded\":{\"type\":\"string\",\"x-mcp-header\":\"Padded\"},"          \
    "\"inner\":{\"type\":\"string\",\"x-mcp-header\":\"Inner_Space\"},"      \
    "\"nested\":{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":"    \
    "\"string\",\"x-mcp-header\":\"Zone\"}}},"                               \
    "\"x-mcp-header\":{\"type\":\"string\"},"                                \
    "\"plain\":{\"type\":\"string\",\"default\":{\"x-mcp-header\":\"No\"},"  \
    "\"examples\":[{\"x-mcp-header\":\"No2\"}]},"                            \
    "\"score\":{\"type\":\"number\"}}}},"                                    \
    "{\"name\":\"t_plain\",\"inputSchema\":{\"type\":\"object\"}}"

#define XH_BAD1(name, prop)                                                   \
    "{\"name\":\"" name "\",\"inputSchema\":{\"type\":\"object\","           \
    "\"properties\":{" prop "}}}"
#define XH_BAD                                                                \
    XH_BAD1("bad_empty", "\"v\":{\"type\":\"string\",\"x-mcp-header\":\"\"}") \
    "," XH_BAD1("bad_space",                                                 \
                "\"v\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}") \
    "," XH_BAD1("bad_colon", "\"v\":{\"type\":\"string\",\"x-mcp-header\":"  \
                             "\"Region:Primary\"}")                          \
    "," XH_BAD1("bad_nonascii", "\"v\":{\"type\":\"string\",\"x-mcp-header\"" \
                                ":\"R\\u00e9gion\"}")                        \
    "," XH_BAD1("bad_tab", "\"v\":{\"type\":\"string\",\"x-mcp-header\":"    \
                           "\"Region\\t1\"}")                                \
    "," XH_BAD1("bad_crlf", "\"v\":{\"type\":\"string\",\"x-mcp-header\":"   \
                            "\"A\\r\\nX-Evil: 1\"}")                         \
    "," XH_BAD1("bad_notstring",                                             \
                "\"v\":{\"type\":\"string\",\"x-mcp-header\":5}")            \
    "," XH_BAD1("bad_dup_case",                                              \
                "\"a\":{\"type\":\"string\",\"x-mcp-header\":\"MyField\"},"  \
                "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"myfield\"}")  \
    "," XH_BAD1("bad_dup_nested",                                            \
                "\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"},"     \
                "\"n\":{\"type\":\"object\",\"properties\":{\"z\":{\"type\":" \
                "\"string\",\"x-mcp-header\":\"ZONE\"}}}")                   \
    "," XH_BAD1("bad_object",                                                \
                "\"v\":{\"type\":\"object\",\"x-mcp-header\":\"Data\"}")     \
    "," XH_BAD1("bad_array", "\"v\":{\"type\":\"array\",\"items\":{\"type\":" \
                             "\"string\"},\"x-mcp-header\":\"Items\"}")      \
    "," XH_BAD1("bad_null",                                                  \
                "\"v\":{\"type\":\"null\",\"x-mcp-header\":\"Nil\"}")        \
    "," XH_BAD1("bad_number",                                                \
                "\"v\":{\"type\":\"number\",\"x-mcp-header\":\"Score\"}")    \
    "," XH_BAD1("bad_notype", "\"v\":{\"x-mcp-header\":\"Any\"}")            \
    "," XH_BAD1("bad_typelist", "\"v\":{\"type\":[\"string\",\"null\"],"     \
                                "\"x-mcp-header\":\"Opt\"}")                 \
    "," XH_BAD1("bad_items", "\"v\":{\"type\":\"array\",\"items\":{\"type\":" \
                             "\"string\",\"x-mcp-header\":\"Item\"}}")       \
    "," XH_BAD1("bad_anyof", "\"v\":{\"anyOf\":[{\"type\":\"string\","       \
                             "\"x-mcp-header\":\"A\"}]}")                    \
    "," XH_BAD1("bad_allof_props",                                           \
                "\"v\":{\"type\":\"object\",\"allOf\":[{\"properties\":{"    \
                "\"w\":{\"type\":\"string\",\"x-mcp-header\":\"W\"}}}]}")    \
    "," XH_BAD1("bad_additional",                                            \
                "\"v\":{\"type\":\"object\",\"additionalProperties\":{"      \
                "\"type\":\"string\",\"x-mcp-header\":\"Add\"}}")            \
    ",{\"name\":\"bad_ref\",\"inputSchema\":{\"type\":\"object\","           \
    "\"$defs\":{\"d\":{\"type\":\"string\",\"x-mcp-header\":\"D\"}},"        \
    "\"properties\":{\"v\":{\"$ref\":\"#/$defs/d\"}}}}"                      \
    ",{\"name\":\"bad_ifthen\",\"inputSchema\":{\"type\":\"object\","        \
    "\"properties\":{\"k\":{\"type\":\"string\"}},\"if\":{\"properties\":{"  \
    "\"k\":{\"const\":\"a\"}}},\"then\":{\"properties\":{\"v\":{\"type\":"   \
    "\"string\",\"x-mcp-header\":\"V\"}}}}}"                                 \
    ",{\"name\":\"bad_not\",\"inputSchema\":{\"type\":\"object\",\"not\":{"  \
    "\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"V\"}}}}}" \
    ",{\"name\":\"bad_root\",\"inputSchema\":{\"type\":\"object\","          \
    "\"x-mcp-header\":\"Root\",\"properties\":{}}}"

/* Answer a tools/list (query xh; cursor p2 = the second page of query
 * paged; params.variant "b" = t_ok without annotations) or a tools/call
 * (the headers are in the REQ log line). */
static void xh_route(struct req *r)
{
    struct json_object *params = NULL, *v = NULL;
    char body[32768];
    const char *cursor = NULL, *variant = "";

    json_object_object_get_ex(r->msg, "params", &params);
    if (json_object_object_get_ex(params, "cursor", &v))
        cursor = json_object_get_string(v);
    if (json_object_object_get_ex(params, "variant", &v))
        variant = json_object_get_string(v);
    if (strcmp(r->rpc_method, "tools/list") != 0) {
        result(r, 200);
        return;
    }
    if (strcmp(variant, "b") == 0)
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
                 "\"result\":{\"tools\":[{\"name\":\"t_ok\",\"inputSchema\":"
                 "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":"
                 "\"string\"}}}}]}}", r->id);
    else if (strstr(r->query, "paged") && !cursor)
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
                 "\"result\":{\"tools\":[" XH_OK "],\"nextCursor\":\"p2\"}}",
                 r->id);
    else if (strstr(r->query, "paged"))
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
                 "\"result\":{\"tools\":[{\"name\":\"t_page2\","
                 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"k\":"
                 "{\"type\":\"string\",\"x-mcp-header\":\"K\"}}}},"
                 XH_BAD1("bad_empty", "\"v\":{\"type\":\"string\","
                         "\"x-mcp-header\":\"\"}") "]}}", r->id);
    else
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
                 "\"result\":{\"tools\":[" XH_OK "," XH_BAD "]}}", r->id);
    respond(r, 200, "application/json", NULL, body);
}

/* The integer after "<name>=" in the query, or dflt. */
static long query_int(const struct req *r, const char *name, long dflt)
{
    size_t n = strlen(name);
    for (const char *q = r->query; (q = strstr(q, name)); q++)
        if ((q == r->query || q[-1] == '&') && q[n] == '=')
            return strtol(q + n + 1, NULL, 10);
    return dflt;
}

/* Keep-alive (/ka): each request is answered on its connection, which
 * then waits for the next (idle=rst: is reset 100 ms later), except a
 * request with id "die": read whole, never answered, its connection
 * ends as query end= says (notify: TLS close_notify and FIN, fin: FIN
 * alone, rst: RST).  The listener stays open, so a request the client
 * re-sends by itself on a new connection arrives: every one is logged
 * with its connection and its place there, "KA conn=C seq=S id=I", to
 * be counted across connections. */
static void keep_alive(struct req *r)
{
    logline("KA conn=%d seq=%d id=%s", r->conn, r->seq, r->id);
    if (strcmp(r->id, "\"die\"") != 0) {
        r->keep = true;
        result(r, 200);
        if (strstr(r->query, "idle=rst")) {
            /* Answered as kept alive, then reset while idle: the client
             * finds it dead in its pool when it next sends. */
            usleep(100 * 1000);
            r->keep = false;
            r->end = END_RST;
        }
        return;
    }
    if (strstr(r->query, "end=rst"))
        r->end = END_RST;
    else if (strstr(r->query, "end=fin"))
        r->end = END_FIN;
}

/* The legacy GET stream's response head, in one write unless the query
 * says: getsplit, the status line, a pause, then the header lines; get103,
 * an interim 103 Early Hints, a pause, then the head; getstall, the status
 * line and nothing more until the client hangs up (false: no stream). */
static bool get_head(struct req *r)
{
    static const char status[] = "HTTP/1.1 200 OK\r\n";
    static const char rest[] = "Content-Type: text/event-stream\r\n"
                               "Cache-Control: no-cache\r\n"
                               "Connection: close\r\n\r\n";
    static const char hints[] = "HTTP/1.1 103 Early Hints\r\n"
                                "Link: </hint>; rel=preload\r\n\r\n";

    if (strstr(r->query, "get103")) {
        if (!send_all(r, hints, sizeof hints - 1))
            return false;
        usleep(300 * 1000);
    } else if (strstr(r->query, "getsplit") || strstr(r->query, "getstall")) {
        if (!send_all(r, status, sizeof status - 1))
            return false;
        if (strstr(r->query, "getstall")) {
            wait_gone(r, 10000);
            return false;
        }
        usleep(300 * 1000);
        return send_all(r, rest, sizeof rest - 1);
    }
    return sse_head(r, NULL);
}

/* Legacy routes (any path starting /legacy).  Query deldelay=MS: the
 * DELETE is logged on arrival and answered MS later (a server slow to
 * end its session).  The GET stream: noget, answered 405; getend, it
 * ends 0.5 s after its notification; get_head's words for its head. */
static void legacy(struct req *r)
{
    if (strcmp(r->method, "DELETE") == 0) {
        long ms = query_int(r, "deldelay", 0);
        logline("DELETE session=%s", r->session);
        if (ms > 0 && ms <= 10000)
            usleep((useconds_t)ms * 1000);
        respond(r, 200, NULL, NULL, NULL);
        return;
    }
    if (strcmp(r->rpc_method, "initialize") == 0) {
        if (!sse_head(r, "Mcp-Session-Id: sess-1\r\n"))
            return;
        sse_send(r, "id: e1\nretry: 1000\ndata: \n\n");
        sse_send(r, "event: message\nid: e2\ndata: {\"jsonrpc\":\"2.0\","
                 "\"id\":%s,\"result\":{\"protocolVersion\":\"2025-11-25\","
                 "\"capabilities\":{},\"serverInfo\":{\"name\":\"fx\","
                 "\"version\":\"1\"}}}\n\n", r->id);
        return;
    }
    if (strcmp(r->session, "sess-1") != 0) {
        respond(r, 400, "application/json", NULL,
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
                "\"message\":\"Bad Request: No valid session ID provided\"}}");
        return;
    }
    if (strcmp(r->method, "GET") == 0) {
        if (strstr(r->query, "noget")) {
            respond(r, 405, NULL, "Allow: POST\r\n", NULL);
            return;
        }
        if (!get_head(r))
            return;
        sse_send(r, ": hello\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\","
                 "\"method\":\"notifications/tools/list_changed\"}\n\n");
        if (strstr(r->query, "getend"))
            usleep(500 * 1000); /* then the stream ends */
        else
            wait_gone(r, 10000);
        return;
    }
    if (strcmp(r->rpc_method, "expire") == 0) {
        respond(r, 404, "application/json", NULL,
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,"
                "\"message\":\"Session not found\"}}");
        return;
    }
    if (!r->id[0]) {
        respond(r, 202, NULL, NULL, NULL);
        return;
    }
    if (strstr(r->query, "xh")) {
        xh_route(r);
        return;
    }
    result(r, 200);
}

static void route(struct req *r)
{
    const char *p = r->path;
    char loc[256];

    if (strncmp(p, "/legacy", 7) == 0) {
        legacy(r);
    } else if (strcmp(p, "/mcp") == 0) {
        if (!r->id[0])
            respond(r, 202, NULL, NULL, NULL);
        else
            result(r, 200);
    } else if (strcmp(p, "/xh") == 0) {
        if (!r->id[0])
            respond(r, 202, NULL, NULL, NULL);
        else
            xh_route(r);
    } else if (strcmp(p, "/sse") == 0) {
        sse_script(r, "\n");
    } else if (strcmp(p, "/sse-crlf") == 0) {
        sse_script(r, "\r\n");
    } else if (strcmp(p, "/accepted") == 0) {
        respond(r, 202, NULL, NULL, NULL);
    } else if (strcmp(p, "/e400") == 0) {
        respond(r, 400, "application/json", NULL,
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32022,"
                "\"message\":\"Unsupported protocol version\",\"data\":"
                "{\"supported\":[\"2026-07-28\"]}}}");
    } else if (strcmp(p, "/text404") == 0) {
        respond(r, 404, "text/plain", NULL, "Not found");
    } else if (strcmp(p, "/e500") == 0) {
        respond(r, 500, "text/plain", NULL, "boom");
    } else if (strcmp(p, "/r307x") == 0 || strcmp(p, "/r308x") == 0) {
        snprintf(loc, sizeof loc, "https://127.0.0.1:%d/mcp", ports[1]);
        redirect(r, p[2] == '0' && p[3] == '7' ? 307 : 308, loc);
    } else if (strcmp(p, "/r307same") == 0) {
        redirect(r, 307, "/mcp?same=1");
    } else if (strcmp(p, "/r301") == 0) {
        redirect(r, 301, "/mcp");
    } else if (strcmp(p, "/rhttp") == 0) {
        snprintf(loc, sizeof loc, "http://127.0.0.1:%d/mcp", ports[2]);
        redirect(r, 307, loc);
    } else if (strcmp(p, "/loop") == 0) {
        redirect(r, 307, "/loop");
    } else if (strcmp(p, "/chain") == 0) {
        snprintf(loc, sizeof loc, "/chain?n=%ld", strtol(r->query + 2, NULL,
                                                         10) + 1);
        redirect(r, 308, loc);
    } else if (strcmp(p, "/cross") == 0) {
        /* A stream that answers another request: the "victim" request
         * waits; every other one answers "victim" first, then itself. */
        if (strcmp(r->id, "\"victim\"") == 0) {
            if (sse_head(r, NULL))
                wait_gone(r, 3000);
        } else if (sse_head(r, NULL)) {
            sse_send(r, "data: {\"jsonrpc\":\"2.0\",\"id\":\"victim\","
                     "\"result\":{\"forged\":true}}\n\n");
            sse_send(r, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}"
                     "\n\n", r->id);
        }
    } else if (strcmp(p, "/ka") == 0) {
        keep_alive(r);
    } else if (strcmp(p, "/reset") == 0) {
        r->end = END_RST;
    } else if (strcmp(p, "/trunc") == 0) {
        if (sse_head(r, NULL)) {
            sse_send(r, "data: {\"jsonrpc\":\"2.0\",\"method\":\"n/one\"}\n\n");
            sse_send(r, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n",
                     r->id);
        }
    } else if (strcmp(p, "/big") == 0) {
        if (sse_head(r, NULL)) {
            sse_send(r, "data: \"");
            for (int i = 0; i < 16; i++)
                sse_send(r, "%0512d", 0);
            sse_send(r, "\"\n\n");
        }
    } else if (strcmp(p, "/hold") == 0) {
        /* The answer comes ms=MS (default 500) after the request. */
        long ms = query_int(r, "ms", 500);
        if (ms > 0 && ms <= 10000)
            usleep((useconds_t)ms * 1000);
        result(r, 200);
    } else if (strcmp(p, "/slow") == 0) {
        if (sse_head(r, NULL))
            wait_gone(r, 10000);
    } else if (strcmp(p, "/listen") == 0) {
        if (!sse_head(r, NULL))
            return;
        sse_send(r, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                 "\"notifications/subscriptions/acknowledged\",\"params\":"
                 "{\"notifications\":{\"toolsListChanged\":true},\"_meta\":"
                 "{\"io.modelcontextprotocol/subscriptionId\":%s}}}\n\n",
                 r->id);
        sse_send(r, ": keepalive\n\n");
        usleep(300 * 1000);
        sse_send(r, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                 "\"notifications/tools/list_changed\",\"params\":{\"_meta\":"
                 "{\"io.modelcontextprotocol/subscriptionId\":%s}}}\n\n",
                 r->id);
        if (strstr(r->query, "end"))
            usleep(200 * 1000);
        else
            wait_gone(r, 10000);
    } else {
        respond(r, 404, "text/plain", NULL, "no route");
    }
}

struct conn_arg {
    int fd, which;
};

/* The connection stays: forget the request just served. */
static void next_req(struct req *r)
{
    struct req keep = {.ssl = r->ssl, .fd = r->fd, .port = r->port,
                       .conn = r->conn, .seq = r->seq};

    json_object_put(r->msg);
    free(r->body);
    *r = keep;
}

static void *conn_main(void *arg)
{
    struct conn_arg a = *(struct conn_arg *)arg;
    struct timeval tv = {5, 0};
    struct req r;

    free(arg);
    memset(&r, 0, sizeof r);
    r.fd = a.fd;
    r.port = a.which == 0 ? 'A' : 'B';
    setsockopt(a.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (a.which == 2) {
        logline("PLAIN-CONN");
        goto done;
    }
    if (a.which == 3) {
        char b[512];
        logline("STALL-CONN");
        /* Read and ignore the ClientHello; never answer. */
        for (int i = 0; i < 100; i++) {
            struct pollfd p = {a.fd, POLLIN, 0};
            if (poll(&p, 1, 100) > 0 && read(a.fd, b, sizeof b) <= 0)
                break;
        }
        goto done;
    }
    r.ssl = SSL_new(ctx);
    if (!r.ssl)
        goto done;
    SSL_set_fd(r.ssl, a.fd);
    if (SSL_accept(r.ssl) != 1) {
        logline("TLS-FAIL port=%c", r.port);
        goto done;
    }
    pthread_mutex_lock(&act_mu);
    r.conn = ++conns;
    pthread_mutex_unlock(&act_mu);
    while (read_req(&r)) {
        r.seq++;
        parse_body(&r);
        logline("REQ port=%c method=%s path=%s auth=%d rpc=%s "
                "mcp-method=%s mcp-protocol-version=%s mcp-session-id=%s "
                "mcp-name=%s headers=%s xparams=%s",
                r.port, r.method, r.path, r.auth ? 1 : 0,
                r.rpc_method[0] ? r.rpc_method : "-",
                r.mmethod[0] ? r.mmethod : "-", r.mproto[0] ? r.mproto : "-",
                r.session[0] ? r.session : "-", r.mname[0] ? r.mname : "-",
                r.hnames, r.xparams[0] ? r.xparams : " -");
        route(&r);
        if (!r.keep)
            break;
        next_req(&r);
    }
    if (r.end == END_RST) {
        struct linger lg = {1, 0};
        setsockopt(r.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    } else if (r.end == END_NOTIFY) {
        SSL_shutdown(r.ssl);
    }
done:
    if (r.ssl)
        SSL_free(r.ssl);
    json_object_put(r.msg);
    free(r.body);
    close(a.fd);
    pthread_mutex_lock(&act_mu);
    active--;
    pthread_mutex_unlock(&act_mu);
    return NULL;
}

static int listen_on(int *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        perror("listen");
        exit(2);
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    const char *cert = NULL, *key = NULL, *logp = NULL;
    struct pollfd pf[5];
    time_t start = time(NULL);

    /* A client may close a connection while we still write to it (it
     * stops reading an SSE stream once its response is in, before our
     * close_notify): that must end the connection, not the fixture. */
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--cert") == 0)
            cert = argv[i + 1];
        else if (strcmp(argv[i], "--key") == 0)
            key = argv[i + 1];
        else if (strcmp(argv[i], "--log") == 0)
            logp = argv[i + 1];
    }
    if (!cert || !key || !logp) {
        fprintf(stderr, "usage: https_fixture --cert F --key F --log F\n");
        return 2;
    }
    logf_ = fopen(logp, "a");
    ctx = SSL_CTX_new(TLS_server_method());
    if (!logf_ || !ctx ||
        SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
    for (int i = 0; i < 4; i++) {
        pf[i].fd = listen_on(&ports[i]);
        pf[i].events = POLLIN;
    }
    pf[4].fd = 0;
    pf[4].events = POLLIN;
    printf("%d %d %d %d\n", ports[0], ports[1], ports[2], ports[3]);
    fflush(stdout);
    while (time(NULL) - start < 60) {
        if (poll(pf, 5, 500) <= 0)
            continue;
        if (pf[4].revents) {
            char b[64];
            if (read(0, b, sizeof b) <= 0)
                break;
        }
        for (int i = 0; i < 4; i++) {
            if (!(pf[i].revents & POLLIN))
                continue;
            int fd = accept(pf[i].fd, NULL, NULL);
            struct conn_arg *a;
            pthread_t t;
            if (fd < 0)
                continue;
            pthread_mutex_lock(&act_mu);
            bool full = active >= MAX_CONNS;
            if (!full)
                active++;
            pthread_mutex_unlock(&act_mu);
            if (full || !(a = malloc(sizeof *a))) {
                close(fd);
                continue;
            }
            a->fd = fd;
            a->which = i;
            if (pthread_create(&t, NULL, conn_main, a) != 0) {
                free(a);
                close(fd);
                continue;
            }
            pthread_detach(t);
        }
    }
    /* The connection threads are detached.  Wait (at most 2 s) until each
     * has let go of OpenSSL, then leave without running exit handlers:
     * OpenSSL's own cleanup frees the locks a straggler may still take
     * (ThreadSanitizer reported it as a race). */
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&act_mu);
        bool idle = active == 0;
        pthread_mutex_unlock(&act_mu);
        if (idle)
            break;
        usleep(10000);
    }
    fflush(NULL);
    _exit(0);
}
