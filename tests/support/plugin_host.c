/*
 * plugin_host.c - the test host vtable, its log, the sink recorder and
 * plugin loading shared by the ABI-level suites (see plugin_host.h).
 */
#define _GNU_SOURCE
#include "plugin_host.h"

#include "path_rule.h"
#include "slack.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Config and clock                                                   */
/* ------------------------------------------------------------------ */

void cfg_add(struct aur_cfg *c, const char *k, const char *v)
{
    ck_assert_uint_lt(c->n, PH_CFG_MAX);
    c->k[c->n] = k;
    c->v[c->n++] = v;
}

static const char *t_cfg_str(const struct aur_cfg *c, const char *key,
                             const char *dflt)
{
    const char *r = dflt;
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->k[i], key) == 0)
            r = c->v[i];
    return r;
}

static size_t t_cfg_count(const struct aur_cfg *c, const char *key)
{
    size_t n = 0;
    for (size_t i = 0; c && i < c->n; i++)
        n += strcmp(c->k[i], key) == 0;
    return n;
}

static const char *t_cfg_str_at(const struct aur_cfg *c, const char *key,
                                size_t idx)
{
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->k[i], key) == 0 && idx-- == 0)
            return c->v[i];
    return NULL;
}

static int t_cfg_int(const struct aur_cfg *c, const char *key, int64_t dflt,
                     int64_t *out, struct aur_error *err)
{
    const char *s = t_cfg_str(c, key, NULL);
    char *end;
    long long v;

    if (!s) {
        *out = dflt;
        return AUR_OK;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return aur_fail(err, AUR_E_CONFIG, 0, "%s: not an integer", key);
    *out = v;
    return AUR_OK;
}

/* Only the two words the real config accepts. */
static int t_cfg_bool(const struct aur_cfg *c, const char *key, int dflt,
                      int *out, struct aur_error *err)
{
    const char *s = t_cfg_str(c, key, NULL);

    if (!s)
        *out = dflt;
    else if (strcmp(s, "true") == 0)
        *out = 1;
    else if (strcmp(s, "false") == 0)
        *out = 0;
    else
        return aur_fail(err, AUR_E_CONFIG, 0, "%s: not a boolean", key);
    return AUR_OK;
}

/* "<key>[#i]: <what>": the test config has no file or lines. */
static int t_cfg_fail(const struct aur_cfg *c, const char *key, size_t i,
                      struct aur_error *err, const char *fmt, ...)
{
    char what[200];
    va_list ap;

    (void)c;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return aur_fail(err, AUR_E_CONFIG, 0, "%s#%zu: %s", key ? key : "",
                    i == SIZE_MAX ? 0 : i, what);
}

static int t_cfg_line(const struct aur_cfg *c, const char *key, size_t i)
{
    (void)c, (void)key;
    return i == SIZE_MAX ? 0 : (int)i + 1;
}

/* The host's rule (lib/aurx/path_rule.c) over the test's sections. */
static char *t_cfg_path(const struct aur_cfg *c, const char *key, size_t i,
                        unsigned flags, struct aur_error *err)
{
    const char *dir = t_cfg_str(c, "config_dir", NULL);
    const char *v = i == SIZE_MAX ? t_cfg_str(c, key, NULL)
                                  : t_cfg_str_at(c, key, i);
    const char *why = NULL;
    char *rel, *out = NULL;

    if (!v) {
        aur_fail(err, AUR_E_INVAL, 0, "%s: no such value", key);
        return NULL;
    }
    if (!dir) {
        if (v[0] != '/')
            t_cfg_fail(c, key, i, err, "must be an absolute path");
        return v[0] == '/' ? strdup(v) : NULL;
    }
    rel = strdup(v);
    if (!(why = aur__rel_path_problem(rel))) {
        if (flags & AUR_PATH_CONFINED)
            aur__resolve_under(dir, rel, &out, &why);
        else
            out = aur__path_join(dir, rel);
    }
    free(rel);
    if (!out)
        t_cfg_fail(c, key, i, err, "%s", why ? why : "out of memory");
    return out;
}

int64_t t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------------ */
/* Log                                                                */
/* ------------------------------------------------------------------ */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 20];
static size_t log_len;

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
    AUR_PRINTF(3, 4);
static void t_log(struct aur_self *self, int level, const char *fmt, ...)
{
    char line[16384];
    va_list ap;
    int p, n;

    p = snprintf(line, sizeof line, "%d [%s] ", level,
                 self ? self->tag : "-");
    if (p < 0 || (size_t)p >= sizeof line)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line + p, sizeof line - (size_t)p, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    n += p;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    pthread_mutex_lock(&log_mu);
    if (log_len + (size_t)n + 2 < sizeof log_buf) {
        memcpy(log_buf + log_len, line, (size_t)n);
        log_len += (size_t)n;
        log_buf[log_len++] = '\n';
        log_buf[log_len] = '\0';
    }
    pthread_mutex_unlock(&log_mu);
}

bool log_has(const char *needle)
{
    bool r;
    pthread_mutex_lock(&log_mu);
    r = strstr(log_buf, needle) != NULL;
    pthread_mutex_unlock(&log_mu);
    return r;
}

int log_count(const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&log_mu);
    for (const char *p = log_buf; (p = strstr(p, needle)); p++)
        n++;
    pthread_mutex_unlock(&log_mu);
    return n;
}

bool log_wait(const char *needle, int ms)
{
    H_WAIT_UNTIL(log_has(needle), ms, 10);
    return log_has(needle);
}

char *log_copy(size_t *len)
{
    char *s;
    pthread_mutex_lock(&log_mu);
    s = malloc(log_len + 1);
    if (s) {
        memcpy(s, log_buf, log_len + 1);
        *len = log_len;
    }
    pthread_mutex_unlock(&log_mu);
    ck_assert_ptr_nonnull(s);
    return s;
}

const char *log_text(void)
{
    return log_buf;
}

void log_clear(void)
{
    pthread_mutex_lock(&log_mu);
    log_len = 0;
    log_buf[0] = '\0';
    pthread_mutex_unlock(&log_mu);
}

/* ------------------------------------------------------------------ */
/* The vtable                                                         */
/* ------------------------------------------------------------------ */

static int t_world_write(struct aur_self *self, const struct aur_commit *c,
                         struct aur_error *err)
{
    return aur_fail(err, AUR_E_STATE, 0, "no world in this test");
}

static int t_json_parse(const char *buf, size_t len, struct json_object **out,
                        struct aur_error *err)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *v;
    int rc = AUR_OK;

    if (!tok)
        return aur_fail(err, AUR_E_NOMEM, 0, "no tokener");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    v = json_tokener_parse_ex(tok, buf, (int)len);
    if (!v || json_tokener_get_error(tok) != json_tokener_success ||
        json_tokener_get_parse_end(tok) != len) {
        json_object_put(v);
        rc = aur_fail(err, AUR_E_PROTOCOL, 0, "bad JSON");
    } else {
        *out = v;
    }
    json_tokener_free(tok);
    return rc;
}

static int t_json_integer_text(struct json_object *v, char *buf, size_t size)
{
    if (!json_object_is_type(v, json_type_int))
        return AUR_E_INVAL;
    snprintf(buf, size, "%lld", (long long)json_object_get_int64(v));
    return AUR_OK;
}

const struct aur_host H = {
    .struct_size = sizeof(struct aur_host),
    .abi_version = AUR_ABI_VERSION,
    .log = t_log,
    .now_ms = t_now,
    .cfg_str = t_cfg_str,
    .cfg_count = t_cfg_count,
    .cfg_str_at = t_cfg_str_at,
    .cfg_int = t_cfg_int,
    .cfg_bool = t_cfg_bool,
    .world_write = t_world_write,
    .json_parse = t_json_parse,
    .json_integer_text = t_json_integer_text,
    .cfg_fail = t_cfg_fail,
    .cfg_line = t_cfg_line,
    .cfg_path = t_cfg_path,
};

/* ------------------------------------------------------------------ */
/* Sink recorder                                                      */
/* ------------------------------------------------------------------ */

struct recorder R = {.mu = PTHREAD_MUTEX_INITIALIZER,
                     .cv = PTHREAD_COND_INITIALIZER};

static void on_message(void *ctx, struct json_object *msg)
{
    struct recorder *r = ctx;

    pthread_mutex_lock(&r->mu);
    r->messages++;
    if (r->tail - r->head < QCAP)
        r->q[r->tail++ % QCAP] = msg;
    else
        json_object_put(msg);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void on_closed(void *ctx, const struct aur_error *why)
{
    struct recorder *r = ctx;

    pthread_mutex_lock(&r->mu);
    r->closed++;
    r->why_null = why == NULL;
    r->code = why ? why->code : 0;
    r->detail = why ? why->detail : 0;
    snprintf(r->msg, sizeof r->msg, "%s", why ? why->msg : "");
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* A request's end (ABI 1.3) is recorded in the same queue, as a test-side
 * object: {"id":<id>,"error":<the server's error or {"code":0,
 * "message":msg}>,"_end":{"code","delivered","http_status","msg"}}, so
 * tests find it by id like a response.  No transport ever sends this. */
static void on_request_end(void *ctx, struct json_object *id,
                           const struct aur_request_end *e)
{
    struct json_object *m = json_object_new_object(), *end, *err = NULL;

    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "id",
                           json_object_deep_copy(id, &err, NULL) == 0 ? err
                                                                      : NULL);
    err = NULL;
    if (e->error && json_object_deep_copy(e->error, &err, NULL) != 0)
        err = NULL;
    if (!err) {
        err = json_object_new_object();
        json_object_object_add(err, "code", json_object_new_int(0));
        json_object_object_add(err, "message",
                               json_object_new_string(e->msg ? e->msg : ""));
    }
    json_object_object_add(m, "error", err);
    end = json_object_new_object();
    json_object_object_add(end, "code", json_object_new_int(e->code));
    json_object_object_add(end, "delivered",
                           json_object_new_boolean(e->delivered != 0));
    json_object_object_add(end, "http_status",
                           json_object_new_int(e->http_status));
    json_object_object_add(end, "msg",
                           json_object_new_string(e->msg ? e->msg : ""));
    json_object_object_add(m, "_end", end);
    on_message(ctx, m);
}

/* SINK has no on_text: transports take the json_parse + on_message path
 * with it. */
const struct aur_sink SINK = {sizeof SINK, &R, on_message, on_closed, NULL,
                              on_request_end};

/* TEXT_SINK: an ABI 1.2 host.  Frames arrive as text; each is parsed the
 * way the core does (objects only), recorded like SINK's, and a response
 * with an integer id is announced through on_response first. */
struct text_stats TEXT = {0};

static void text_direct(void *ctx, struct json_object *msg)
{
    (void)ctx;
    __atomic_add_fetch(&TEXT.direct, 1, __ATOMIC_RELAXED);
    json_object_put(msg);
}

static int on_text(void *ctx, const char *buf, size_t len,
                   void (*on_response)(void *arg, int64_t id), void *arg,
                   struct aur_error *err)
{
    struct json_object *msg = NULL, *id;

    __atomic_add_fetch(&TEXT.frames, 1, __ATOMIC_RELAXED);
    if (memchr(buf, '\n', len) || memchr(buf, '\r', len))
        __atomic_add_fetch(&TEXT.with_eol, 1, __ATOMIC_RELAXED);
    if (t_json_parse(buf, len, &msg, err) != AUR_OK)
        return err->code;
    if (!json_object_is_type(msg, json_type_object)) {
        json_object_put(msg);
        return aur_fail(err, AUR_E_PROTOCOL, 0, "not an object");
    }
    if (on_response && json_object_object_get_ex(msg, "id", &id) &&
        json_object_is_type(id, json_type_int) &&
        !json_object_object_get_ex(msg, "method", NULL)) {
        on_response(arg, json_object_get_int64(id));
        __atomic_add_fetch(&TEXT.responses, 1, __ATOMIC_RELAXED);
    }
    on_message(ctx, msg);
    return AUR_OK;
}

const struct aur_sink TEXT_SINK = {sizeof TEXT_SINK, &R,     text_direct,
                                   on_closed,        on_text, on_request_end};

static void abs_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

struct json_object *next_msg(int ms)
{
    struct json_object *m = NULL;
    struct timespec ts;

    abs_in(&ts, ms);
    pthread_mutex_lock(&R.mu);
    while (R.head == R.tail &&
           pthread_cond_timedwait(&R.cv, &R.mu, &ts) == 0)
        ;
    if (R.head != R.tail)
        m = R.q[R.head++ % QCAP];
    pthread_mutex_unlock(&R.mu);
    return m;
}

const char *method_of(struct json_object *m)
{
    struct json_object *v;
    return json_object_object_get_ex(m, "method", &v)
               ? json_object_get_string(v)
               : "";
}

static bool id_is(struct json_object *m, const char *id)
{
    struct json_object *v;
    return json_object_object_get_ex(m, "id", &v) &&
           json_object_is_type(v, json_type_string) &&
           strcmp(json_object_get_string(v), id) == 0;
}

/* The first queued message that method/id picks within ms. */
static struct json_object *wait_for(const char *method, const char *id,
                                    int ms)
{
    int64_t until = t_now() + ms;
    struct json_object *m;

    while ((m = next_msg((int)(until > t_now() ? until - t_now() : 0)))) {
        if (method ? strcmp(method_of(m), method) == 0 : id_is(m, id))
            return m;
        json_object_put(m);
    }
    return NULL;
}

struct json_object *wait_method(const char *method, int ms)
{
    return wait_for(method, NULL, ms);
}

struct json_object *wait_id(const char *id, int ms)
{
    return wait_for(NULL, id, ms);
}

bool wait_closed(int ms)
{
    struct timespec ts;
    bool r;

    abs_in(&ts, ms);
    pthread_mutex_lock(&R.mu);
    while (R.closed == 0 && pthread_cond_timedwait(&R.cv, &R.mu, &ts) == 0)
        ;
    r = R.closed > 0;
    pthread_mutex_unlock(&R.mu);
    return r;
}

/* One int field of R, read under its lock. */
static int locked(const int *field)
{
    int n;
    pthread_mutex_lock(&R.mu);
    n = *field;
    pthread_mutex_unlock(&R.mu);
    return n;
}

int closed_count(void) { return locked(&R.closed); }
int closed_code(void) { return locked(&R.code); }
int msg_count(void) { return locked(&R.messages); }
const char *closed_msg(void) { return R.msg; }

void drain_queue(void)
{
    struct json_object *m;
    while ((m = next_msg(0)))
        json_object_put(m);
}

/* ------------------------------------------------------------------ */
/* The plugin                                                         */
/* ------------------------------------------------------------------ */

struct aur_self SELF = {"test"};
const struct aur_plugin_desc *D;
const struct aur_transport_ops *OPS;
void *ST;
struct aur_cfg EP;

const struct aur_plugin_desc *load_plugin(const char *so)
{
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    const struct aur_plugin_desc *d;
    aur_entry_fn *entry;

    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    entry = (aur_entry_fn *)dlsym(h, AUR_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    d = entry(AUR_ABI_VERSION);
    ck_assert_ptr_nonnull(d);
    return d;
}

void plugin_up(const char *so, const struct aur_cfg *pc)
{
    struct aur_error err;

    D = load_plugin(so);
    OPS = D->ops;
    ck_assert_msg(D->init(&H, &SELF, pc, &ST, &err) == AUR_OK, "init: %s",
                  err.msg);
}

void down(void)
{
    drain_queue();
    if (D && ST)
        D->fini(ST);
    ST = NULL;
}

const struct aur_sink *OPEN_SINK = &SINK;

struct aur_conn *open_ep(uint32_t *caps)
{
    struct aur_conn *c = NULL;
    struct aur_error err;
    int rc;

    *caps = 0;
    rc = OPS->open(ST, &EP, OPEN_SINK, t_now() + 5000, &c, caps, &err);
    ck_assert_msg(rc == AUR_OK, "open: %s", err.msg);
    ck_assert_ptr_nonnull(c);
    return c;
}
