/*
 * aur-perturb-server - the MCP stdio server of the timing-perturbation
 * property tests (tests/perturb/, docs/timing-perturbation.md).
 *
 * One program, three behaviours (--mode), each writing the ground truth
 * the driver checks the host against into --log (one line per fact,
 * written with write(2) before the act it describes becomes visible to
 * the host, so a host that saw something always finds it logged):
 *
 *   change  the tool catalog REALLY changes: every change bumps a
 *           generation number that is part of every tool name
 *           (g<gen>_t<i>) and of the tool count; a change is announced
 *           with notifications/tools/list_changed at random pages and
 *           moments of the listing (before an answer, after it, in the
 *           same write, after a short pause), at most --changes times,
 *           plus optionally once in the same write as the last page
 *           (--post-change) and once before the listing can begin
 *           (--pre-change: before the initialize answer, like go-sdk
 *           servers; modern: right after the listen acknowledgement).
 *           Log: "gen <g> <why>" for every generation, "list <page> <gen>"
 *           for every page answered.
 *   events  floods numbered valid org.aurorabot/world-events events
 *           (event_id e<i>) from its first instruction on, on the one
 *           ordered stdout, while serving requests.  Log: "lastpage <n>"
 *           = events e0..e<n-1> were written before the last tools/list
 *           answer; "mark <n>" = the tools/call "mark" was read when e<n>
 *           was next; "stop <n>" = the flood stopped after e<n-1> (the
 *           "stop" answer follows every event on the stream).
 *   kill    the tools/call of tool "effect" kills the server (SIGKILL,
 *           by its own hand) at a chosen moment: --kill before (after the
 *           request started to arrive, nothing read), early (soon after
 *           the last page, whether or not a call came), mid-read (after
 *           reading --kill-param per mille of the request line, at least
 *           one byte and never the newline), after-effect (whole request
 *           read, effect done, no answer), mid-reply (half the answer
 *           written), after-reply (the whole answer written).  Log:
 *           "died <mode> read <bytes> reply <none|partial|full>" just
 *           before the kill.
 *
 * Eras: --era modern (server/discover, subscriptions/listen, envelope)
 * or legacy (initialize; server/discover answered -32601 like TS SDK v1).
 *
 * Single-threaded; json-c only.  Private to the tests.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define NAME "aur-perturb-server"
#define MODERN "2026-07-28"
#define LEGACY "2025-11-25"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_SUB "io.modelcontextprotocol/subscriptionId"
#define WE_METHOD "notifications/org.aurorabot/world-events/event"
#define WE_CAPS "{\"org.aurorabot/world-events\":{\"version\":1}}"

enum mode { M_CHANGE, M_EVENTS, M_KILL };
enum kill {
    K_BEFORE,
    K_EARLY,
    K_MID_READ,
    K_AFTER_EFFECT,
    K_MID_REPLY,
    K_AFTER_REPLY,
};
static const char *const kill_words[] = {"before",       "early",
                                         "mid-read",     "after-effect",
                                         "mid-reply",    "after-reply"};

static struct {
    enum mode mode;
    bool modern;
    uint64_t rng;
    int log_fd;
    /* change */
    unsigned base_tools, page_size, changes_left;
    bool pre_change, post_change;
    unsigned gen;
    /* events */
    bool flooding;
    uint64_t next_event;
    unsigned pace_us, burst;
    /* kill */
    enum kill kill;
    unsigned kill_param;
    size_t kill_len; /* a lower bound of the call line's length */
    bool armed; /* the listing is over: the next line is the call */
    /* state */
    char listen_id[256];
    bool listen_id_is_string;
    bool listed_once;
} S = {.log_fd = -1};

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */
/* ------------------------------------------------------------------ */

static uint64_t rnd(void)
{
    uint64_t z = (S.rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned below(unsigned n) { return n ? (unsigned)(rnd() % n) : 0; }

static void sleep_us(unsigned us)
{
    struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(0); /* the host is gone: nothing left to do */
        buf += n;
        len -= (size_t)n;
    }
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;
    if (S.log_fd < 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (write(S.log_fd, line, (size_t)n) < 0) {
        /* nothing to report to */
    }
}

static void die(enum kill how, size_t read_bytes, const char *reply)
{
    logf_("died %s read %zu reply %s", kill_words[how], read_bytes, reply);
    kill(getpid(), SIGKILL);
    _exit(9);
}

/* A growing text buffer of output lines that leave in ONE write. */
struct out {
    char *buf;
    size_t len, cap;
};

static void out_add(struct out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 4096;
        while (cap < o->len + n + 1)
            cap *= 2;
        o->buf = realloc(o->buf, cap);
        if (!o->buf)
            _exit(1);
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void out_msg(struct out *o, struct json_object *msg)
{
    size_t n;
    const char *t = json_object_to_json_string_length(
        msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    out_add(o, t, n);
    out_add(o, "\n", 1);
    json_object_put(msg);
}

static void out_flush(struct out *o)
{
    if (o->len)
        write_all(STDOUT_FILENO, o->buf, o->len);
    o->len = 0;
}

static struct json_object *msg_new(struct json_object *id)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    if (id)
        json_object_object_add(m, "id", json_object_get(id));
    return m;
}

static struct json_object *result_msg(struct json_object *id,
                                      struct json_object *res, bool cacheable)
{
    struct json_object *m = msg_new(id);
    if (S.modern) {
        struct json_object *meta = json_object_new_object(),
                           *info = json_object_new_object();
        json_object_object_add(res, "resultType",
                               json_object_new_string("complete"));
        if (cacheable) {
            json_object_object_add(res, "ttlMs", json_object_new_int(0));
            json_object_object_add(res, "cacheScope",
                                   json_object_new_string("private"));
        }
        json_object_object_add(info, "name", json_object_new_string(NAME));
        json_object_object_add(info, "version", json_object_new_string("1"));
        json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", info);
        json_object_object_add(res, "_meta", meta);
    }
    json_object_object_add(m, "result", res);
    return m;
}

static struct json_object *error_msg(struct json_object *id, int code,
                                     const char *text)
{
    struct json_object *m = msg_new(id), *e = json_object_new_object();
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(text));
    json_object_object_add(m, "error", e);
    return m;
}

static struct json_object *notification(const char *method,
                                        struct json_object *params)
{
    struct json_object *m = msg_new(NULL);
    json_object_object_add(m, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(m, "params", params);
    return m;
}

static struct json_object *list_changed(void)
{
    struct json_object *p = NULL;
    if (S.modern && S.listen_id[0]) {
        struct json_object *meta = json_object_new_object();
        p = json_object_new_object();
        json_object_object_add(
            meta, META_SUB,
            S.listen_id_is_string ? json_object_new_string(S.listen_id)
                                  : json_object_new_int64(
                                        strtoll(S.listen_id, NULL, 10)));
        json_object_object_add(p, "_meta", meta);
    }
    return notification("notifications/tools/list_changed", p);
}

/* Bumps the generation (logged first) and queues its announcement. */
static void change(struct out *o, const char *why)
{
    S.gen++;
    logf_("gen %u %s", S.gen, why);
    out_msg(o, list_changed());
}

/* ------------------------------------------------------------------ */
/* Events                                                             */
/* ------------------------------------------------------------------ */

static void send_events(unsigned n)
{
    char buf[64 * 320];
    size_t len = 0;
    for (unsigned i = 0; i < n; i++) {
        int k = snprintf(
            buf + len, sizeof buf - len,
            "{\"jsonrpc\":\"2.0\",\"method\":\"" WE_METHOD "\",\"params\":"
            "{\"event_id\":\"e%llu\",\"scope\":\"perturb:flood\","
            "\"kind\":\"test.flood\",\"occurred_at\":\"2026-12-02T07:00:00Z\","
            "\"summary\":\"flood %llu\"}}\n",
            (unsigned long long)S.next_event,
            (unsigned long long)S.next_event);
        len += (size_t)k;
        S.next_event++;
        if (sizeof buf - len < 320)
            break;
    }
    write_all(STDOUT_FILENO, buf, len);
}

/* ------------------------------------------------------------------ */
/* Requests                                                           */
/* ------------------------------------------------------------------ */

static bool modern_envelope(struct json_object *params)
{
    struct json_object *meta, *v;
    return params && json_object_object_get_ex(params, "_meta", &meta) &&
           json_object_object_get_ex(meta, META_VERSION, &v) &&
           json_object_is_type(v, json_type_string) &&
           strcmp(json_object_get_string(v), MODERN) == 0;
}

static struct json_object *capabilities(void)
{
    struct json_object *caps = json_object_new_object(),
                       *tools = json_object_new_object();
    json_object_object_add(tools, "listChanged", json_object_new_boolean(1));
    json_object_object_add(caps, "tools", tools);
    if (S.mode == M_EVENTS)
        json_object_object_add(caps, "extensions",
                               json_tokener_parse(WE_CAPS));
    return caps;
}

static void handle_discover(struct out *o, struct json_object *id,
                            struct json_object *params)
{
    struct json_object *res, *v;
    if (!S.modern) {
        out_msg(o, error_msg(id, -32601, "Method not found"));
        return;
    }
    if (!modern_envelope(params)) {
        out_msg(o, error_msg(id, -32602, "Invalid _meta envelope"));
        return;
    }
    res = json_object_new_object();
    v = json_object_new_array();
    json_object_array_add(v, json_object_new_string(MODERN));
    json_object_object_add(res, "supportedVersions", v);
    json_object_object_add(res, "capabilities", capabilities());
    out_msg(o, result_msg(id, res, true));
}

static void handle_initialize(struct out *o, struct json_object *id)
{
    struct json_object *res, *info;
    if (S.modern) {
        struct json_object *m = msg_new(id), *e = json_object_new_object(),
                           *d = json_object_new_object(),
                           *sup = json_object_new_array();
        json_object_array_add(sup, json_object_new_string(MODERN));
        json_object_object_add(d, "supported", sup);
        json_object_object_add(e, "code", json_object_new_int(-32022));
        json_object_object_add(e, "message", json_object_new_string(
                                                 "Unsupported protocol version"));
        json_object_object_add(e, "data", d);
        json_object_object_add(m, "error", e);
        out_msg(o, m);
        return;
    }
    /* go-sdk style: the catalog changes while the session is set up */
    if (S.mode == M_CHANGE && S.pre_change) {
        S.pre_change = false;
        change(o, "pre");
        if (below(2)) { /* sometimes in a write of its own, a bit earlier */
            out_flush(o);
            sleep_us(below(1500));
        }
    }
    res = json_object_new_object();
    info = json_object_new_object();
    json_object_object_add(res, "protocolVersion", json_object_new_string(LEGACY));
    json_object_object_add(res, "capabilities", capabilities());
    json_object_object_add(info, "name", json_object_new_string(NAME));
    json_object_object_add(info, "version", json_object_new_string("1"));
    json_object_object_add(res, "serverInfo", info);
    out_msg(o, result_msg(id, res, false));
}

static void handle_listen(struct out *o, struct json_object *id,
                          struct json_object *params)
{
    struct json_object *p, *meta, *honoured, *filter, *want;
    if (!S.modern) {
        out_msg(o, error_msg(id, -32601, "Method not found"));
        return;
    }
    if (!modern_envelope(params)) {
        out_msg(o, error_msg(id, -32602, "Invalid _meta envelope"));
        return;
    }
    S.listen_id_is_string = json_object_is_type(id, json_type_string);
    snprintf(S.listen_id, sizeof S.listen_id, "%s", json_object_get_string(id));
    honoured = json_object_new_object();
    if (json_object_object_get_ex(params, "notifications", &filter) &&
        json_object_object_get_ex(filter, "toolsListChanged", &want) &&
        json_object_get_boolean(want))
        json_object_object_add(honoured, "toolsListChanged",
                               json_object_new_boolean(1));
    p = json_object_new_object();
    meta = json_object_new_object();
    json_object_object_add(p, "notifications", honoured);
    json_object_object_add(meta, META_SUB, json_object_get(id));
    json_object_object_add(p, "_meta", meta);
    out_msg(o, notification("notifications/subscriptions/acknowledged", p));
    if (S.mode == M_CHANGE && S.pre_change) {
        /* before the first tools/list can possibly be sent */
        S.pre_change = false;
        change(o, "pre");
    }
}

static unsigned tool_count(void)
{
    return S.mode == M_CHANGE ? S.base_tools + S.gen % 3 : S.base_tools;
}

static struct json_object *tool(unsigned i)
{
    struct json_object *t = json_object_new_object();
    struct json_object *schema = json_object_new_object(),
                       *props = json_object_new_object(),
                       *text = json_object_new_object();
    char name[64];
    if (S.mode == M_CHANGE)
        snprintf(name, sizeof name, "g%u_t%u", S.gen, i);
    else if (S.mode == M_EVENTS)
        snprintf(name, sizeof name, i == 0 ? "mark" : i == 1 ? "stop" : "t%u",
                 i);
    else
        snprintf(name, sizeof name, i == 0 ? "effect" : "t%u", i);
    json_object_object_add(t, "name", json_object_new_string(name));
    json_object_object_add(t, "description",
                           json_object_new_string("perturbation test tool"));
    json_object_object_add(text, "type", json_object_new_string("string"));
    json_object_object_add(props, "text", text);
    json_object_object_add(schema, "type", json_object_new_string("object"));
    json_object_object_add(schema, "properties", props);
    json_object_object_add(t, "inputSchema", schema);
    return t;
}

static unsigned cursor_page(struct json_object *params)
{
    struct json_object *c;
    const char *s;
    if (!params || !json_object_object_get_ex(params, "cursor", &c) || !c)
        return 1;
    s = json_object_get_string(c);
    if (!s || s[0] != 'p')
        return 0;
    return (unsigned)strtoul(s + 1, NULL, 10);
}

/* Where, relative to this page's answer, a change lands. */
enum when { W_NONE, W_BEFORE, W_AFTER, W_SAME, W_PAUSE };

static void handle_list(struct out *o, struct json_object *id,
                        struct json_object *params)
{
    unsigned page = cursor_page(params), total, from, to, ps;
    struct json_object *res, *arr;
    enum when w = W_NONE;
    bool last;

    if (S.modern && !modern_envelope(params)) {
        out_msg(o, error_msg(id, -32602, "Invalid _meta envelope"));
        return;
    }
    if (page == 0) {
        out_msg(o, error_msg(id, -32602, "Invalid cursor"));
        return;
    }
    if (S.mode == M_CHANGE && S.changes_left > 0 && below(100) < 35) {
        w = (enum when)(1 + below(4));
        S.changes_left--;
    }
    if (w == W_BEFORE) {
        change(o, "list-before");
        if (below(2)) {
            out_flush(o);
            sleep_us(below(1000));
        }
    }
    total = tool_count();
    ps = S.page_size ? S.page_size : total;
    from = (page - 1) * ps;
    to = from + ps < total ? from + ps : total;
    last = to >= total;
    res = json_object_new_object();
    arr = json_object_new_array();
    for (unsigned i = from; i < to; i++)
        json_object_array_add(arr, tool(i));
    json_object_object_add(res, "tools", arr);
    if (!last) {
        char cur[32];
        snprintf(cur, sizeof cur, "p%u", page + 1);
        json_object_object_add(res, "nextCursor", json_object_new_string(cur));
    }
    logf_("list %u %u%s", page, S.gen, last ? " last" : "");
    if (S.mode == M_EVENTS && last)
        logf_("lastpage %llu", (unsigned long long)S.next_event);
    out_msg(o, result_msg(id, res, true));
    if (S.mode == M_CHANGE && last && S.post_change) {
        /* the listing is over: announced in the same write as its end */
        S.post_change = false;
        change(o, "post");
    }
    /* "-last": after the answer that ended a listing pass */
    switch (w) {
    case W_SAME:
        change(o, last ? "list-same-last" : "list-same");
        break;
    case W_AFTER:
        out_flush(o);
        change(o, last ? "list-after-last" : "list-after");
        break;
    case W_PAUSE:
        out_flush(o);
        sleep_us(below(3000));
        change(o, last ? "list-pause-last" : "list-pause");
        break;
    default:
        break;
    }
    if (last)
        S.listed_once = true;
    if (S.mode == M_KILL && last) {
        out_flush(o);
        S.armed = true;
        if (S.kill == K_EARLY) {
            sleep_us(S.kill_param);
            die(K_EARLY, 0, "none");
        }
    }
}

static void handle_call(struct out *o, struct json_object *id,
                        struct json_object *params)
{
    struct json_object *name = NULL, *res, *content, *block;
    const char *n;
    char text[64];

    if (S.modern && !modern_envelope(params)) {
        out_msg(o, error_msg(id, -32602, "Invalid _meta envelope"));
        return;
    }
    if (params)
        json_object_object_get_ex(params, "name", &name);
    n = name ? json_object_get_string(name) : "";
    snprintf(text, sizeof text, "ok:%s", n);
    if (S.mode == M_EVENTS && strcmp(n, "mark") == 0) {
        logf_("mark %llu", (unsigned long long)S.next_event);
    } else if (S.mode == M_EVENTS && strcmp(n, "stop") == 0) {
        S.flooding = false;
        logf_("stop %llu", (unsigned long long)S.next_event);
        snprintf(text, sizeof text, "%llu", (unsigned long long)S.next_event);
    }
    res = json_object_new_object();
    content = json_object_new_array();
    block = json_object_new_object();
    json_object_object_add(block, "type", json_object_new_string("text"));
    json_object_object_add(block, "text", json_object_new_string(text));
    json_object_array_add(content, block);
    json_object_object_add(res, "content", content);
    out_msg(o, result_msg(id, res, false));
}

static void handle_line(struct out *o, const char *line, size_t len)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *msg = json_tokener_parse_ex(tok, line, (int)len);
    struct json_object *method, *id = NULL, *params = NULL;
    const char *m;
    json_tokener_free(tok);
    if (!msg || !json_object_is_type(msg, json_type_object) ||
        !json_object_object_get_ex(msg, "method", &method)) {
        json_object_put(msg);
        return; /* responses (none expected) and junk */
    }
    m = json_object_get_string(method);
    json_object_object_get_ex(msg, "params", &params);
    if (!json_object_object_get_ex(msg, "id", &id)) {
        json_object_put(msg); /* initialized, cancelled: nothing to do */
        return;
    }
    if (strcmp(m, "server/discover") == 0)
        handle_discover(o, id, params);
    else if (strcmp(m, "initialize") == 0)
        handle_initialize(o, id);
    else if (strcmp(m, "subscriptions/listen") == 0)
        handle_listen(o, id, params);
    else if (strcmp(m, "tools/list") == 0)
        handle_list(o, id, params);
    else if (strcmp(m, "tools/call") == 0)
        handle_call(o, id, params);
    else if (strcmp(m, "ping") == 0 && !S.modern)
        out_msg(o, result_msg(id, json_object_new_object(), false));
    else
        out_msg(o, error_msg(id, -32601, "Method not found"));
    json_object_put(msg);
}

/* ------------------------------------------------------------------ */
/* The kill-mid-call request: read byte-exact, die where told         */
/* ------------------------------------------------------------------ */

static void killing_call(const char *pending, size_t npending)
{
    size_t got = npending, cap = npending + 65536, stop_at = 0;
    char *buf = malloc(cap), *nl;
    struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};

    if (!buf)
        _exit(1);
    memcpy(buf, pending, npending);
    if (S.kill == K_BEFORE) {
        /* the request started to arrive: die without reading a byte */
        if (npending == 0)
            while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
                ;
        die(K_BEFORE, npending, "none");
    }
    if (S.kill == K_MID_READ) {
        /* --kill-param per mille of a lower bound of the line length:
         * at least one byte, never the newline */
        size_t lb = S.kill_len > 1 ? S.kill_len : 2;
        stop_at = (size_t)((double)lb * S.kill_param / 1000.0);
        if (stop_at < 1)
            stop_at = 1;
        if (stop_at >= lb)
            stop_at = lb - 1;
    }
    for (;;) {
        nl = got ? memchr(buf, '\n', got) : NULL;
        if (S.kill == K_MID_READ && got >= stop_at)
            die(K_MID_READ, got, "none");
        if (nl)
            break;
        if (got == cap) {
            cap *= 2;
            if (!(buf = realloc(buf, cap)))
                _exit(1);
        }
        size_t want = cap - got;
        if (S.kill == K_MID_READ) {
            if (want > stop_at - got)
                want = stop_at - got;
            if (want > 4096) /* a slow reader */
                want = 1 + below(4096);
        }
        ssize_t n = read(STDIN_FILENO, buf + got, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(0); /* the host closed stdin; no call came */
        got += (size_t)n;
    }
    size_t line_len = (size_t)(nl - buf) + 1;
    logf_("effect read %zu", got);
    if (S.kill == K_AFTER_EFFECT)
        die(K_AFTER_EFFECT, got, "none");
    struct json_tokener *tok = json_tokener_new();
    struct json_object *msg =
        json_tokener_parse_ex(tok, buf, (int)(line_len - 1));
    struct json_object *id = NULL, *res, *content, *block;
    struct out o = {0};
    json_tokener_free(tok);
    if (msg)
        json_object_object_get_ex(msg, "id", &id);
    res = json_object_new_object();
    content = json_object_new_array();
    block = json_object_new_object();
    json_object_object_add(block, "type", json_object_new_string("text"));
    json_object_object_add(block, "text", json_object_new_string("done"));
    json_object_array_add(content, block);
    json_object_object_add(res, "content", content);
    out_msg(&o, result_msg(id, res, false));
    json_object_put(msg);
    if (S.kill == K_MID_REPLY) {
        write_all(STDOUT_FILENO, o.buf, o.len / 2 ? o.len / 2 : 1);
        die(K_MID_REPLY, got, "partial");
    }
    out_flush(&o);
    logf_("replied full");
    if (S.kill_param)
        sleep_us(S.kill_param);
    die(K_AFTER_REPLY, got, "full");
}

/* ------------------------------------------------------------------ */
/* Main loop                                                          */
/* ------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr,
            "usage: " NAME " --mode change|events|kill --era modern|legacy\n"
            "  [--seed N] [--log FILE] [--tools N] [--page-size M]\n"
            "  change: [--changes K] [--pre-change] [--post-change]\n"
            "  events: [--pace-us U] [--burst B]\n"
            "  kill:   --kill before|early|mid-read|after-effect|mid-reply|"
            "after-reply [--kill-param P] [--kill-len BYTES]\n");
    return 2;
}

int main(int argc, char **argv)
{
    char *buf;
    size_t len = 0, cap = 1 << 16;
    struct out o = {0};
    const char *logpath = NULL;

    S.base_tools = 3;
    S.burst = 16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--pre-change") == 0) {
            S.pre_change = true;
            continue;
        }
        if (strcmp(a, "--post-change") == 0) {
            S.post_change = true;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "change") == 0)
                S.mode = M_CHANGE;
            else if (strcmp(v, "events") == 0)
                S.mode = M_EVENTS;
            else if (strcmp(v, "kill") == 0)
                S.mode = M_KILL;
            else
                return usage();
        } else if (strcmp(a, "--era") == 0) {
            S.modern = strcmp(v, "modern") == 0;
        } else if (strcmp(a, "--seed") == 0) {
            S.rng = strtoull(v, NULL, 10) * 0x2545f4914f6cdd1dull + 7;
        } else if (strcmp(a, "--log") == 0) {
            logpath = v;
        } else if (strcmp(a, "--tools") == 0) {
            S.base_tools = (unsigned)atoi(v);
        } else if (strcmp(a, "--page-size") == 0) {
            S.page_size = (unsigned)atoi(v);
        } else if (strcmp(a, "--changes") == 0) {
            S.changes_left = (unsigned)atoi(v);
        } else if (strcmp(a, "--pace-us") == 0) {
            S.pace_us = (unsigned)atoi(v);
        } else if (strcmp(a, "--burst") == 0) {
            S.burst = (unsigned)atoi(v);
        } else if (strcmp(a, "--kill") == 0) {
            bool ok = false;
            for (size_t k = 0; k < sizeof kill_words / sizeof *kill_words; k++)
                if (strcmp(v, kill_words[k]) == 0) {
                    S.kill = (enum kill)k;
                    ok = true;
                }
            if (!ok)
                return usage();
        } else if (strcmp(a, "--kill-param") == 0) {
            S.kill_param = (unsigned)atoi(v);
        } else if (strcmp(a, "--kill-len") == 0) {
            S.kill_len = (size_t)strtoull(v, NULL, 10);
        } else {
            return usage();
        }
    }
    signal(SIGPIPE, SIG_IGN);
    alarm(120); /* a safety net for leaked processes */
    if (logpath)
        S.log_fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                        0644);
    logf_("start %d", (int)getpid());
    S.flooding = S.mode == M_EVENTS;
    buf = malloc(cap);
    if (!buf)
        return 1;
    for (;;) {
        char *nl;
        /* whole lines first */
        while ((nl = len ? memchr(buf, '\n', len) : NULL)) {
            size_t l = (size_t)(nl - buf);
            if (l > 0)
                handle_line(&o, buf, l);
            out_flush(&o);
            memmove(buf, nl + 1, len - l - 1);
            len -= l + 1;
            if (S.armed) {
                killing_call(buf, len);
                return 0;
            }
        }
        if (S.armed) {
            killing_call(buf, len);
            return 0;
        }
        if (S.flooding) {
            struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
            int r = poll(&p, 1, 0);
            if (r == 0) {
                send_events(S.burst ? S.burst : 1);
                if (S.pace_us)
                    sleep_us(S.pace_us);
                continue;
            }
        }
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                return 1;
        }
        ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    logf_("eof");
    free(buf);
    free(o.buf);
    return 0;
}
