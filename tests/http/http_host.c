/*
 * http_host.c - test host, sink recorder, certificates and fixture
 * process of check_transport_http (see http_host.h).
 */
#define _GNU_SOURCE
#include "http_host.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define QCAP 256

void cfg_add(struct aur_cfg *c, const char *k, const char *v)
{
    ck_assert_uint_lt(c->n, 32);
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

static int t_cfg_bool(const struct aur_cfg *c, const char *key, int dflt,
                      int *out, struct aur_error *err)
{
    const char *s = t_cfg_str(c, key, NULL);
    *out = s ? strcmp(s, "true") == 0 : dflt;
    return AUR_OK;
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

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 18];
static size_t log_len;

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
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
};

/* ---- recorder ------------------------------------------------------ */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct json_object *q[QCAP];
    size_t head, tail;
    int messages, closed, code;
    char msg[AUR_ERR_MSG_SIZE];
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void on_message(void *ctx, struct json_object *m)
{
    pthread_mutex_lock(&R.mu);
    R.messages++;
    if (R.tail - R.head < QCAP)
        R.q[R.tail++ % QCAP] = m;
    else
        json_object_put(m);
    pthread_cond_broadcast(&R.cv);
    pthread_mutex_unlock(&R.mu);
}

static void on_closed(void *ctx, const struct aur_error *why)
{
    pthread_mutex_lock(&R.mu);
    R.closed++;
    R.code = why ? why->code : 0;
    snprintf(R.msg, sizeof R.msg, "%s", why ? why->msg : "");
    pthread_cond_broadcast(&R.cv);
    pthread_mutex_unlock(&R.mu);
}

const struct aur_sink SINK = {sizeof SINK, NULL, on_message, on_closed};

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

struct json_object *wait_id(const char *id, int ms)
{
    int64_t until = t_now() + ms;
    struct json_object *m, *v;
    while ((m = next_msg((int)(until > t_now() ? until - t_now() : 0)))) {
        if (json_object_object_get_ex(m, "id", &v) &&
            json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), id) == 0)
            return m;
        json_object_put(m);
    }
    return NULL;
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

int closed_count(void)
{
    int n;
    pthread_mutex_lock(&R.mu);
    n = R.closed;
    pthread_mutex_unlock(&R.mu);
    return n;
}

int closed_code(void) { return R.code; }
const char *closed_msg(void) { return R.msg; }

int msg_count(void)
{
    int n;
    pthread_mutex_lock(&R.mu);
    n = R.messages;
    pthread_mutex_unlock(&R.mu);
    return n;
}

/* ---- certificates and fixture ---------------------------------------- */

char CERT_DIR[256];
int PORT[4];
static pid_t fx_pid;
static int fx_in = -1;
static char fx_logpath[300];

static void run(const char *cmd)
{
    char full[2048];
    snprintf(full, sizeof full, "cd '%s' && %s >/dev/null 2>&1", CERT_DIR,
             cmd);
    if (system(full) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
}

void make_certs(void)
{
    FILE *f;
    snprintf(CERT_DIR, sizeof CERT_DIR, "/tmp/aur-http-XXXXXX");
    if (!mkdtemp(CERT_DIR)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(fx_logpath, sizeof fx_logpath, "%s/ext.cnf", CERT_DIR);
    f = fopen(fx_logpath, "w");
    if (!f)
        exit(1);
    fputs("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\n"
          "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n", f);
    fclose(f);
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
        "-nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=aur-test-ca "
        "-addext basicConstraints=critical,CA:TRUE "
        "-addext keyUsage=critical,keyCertSign");
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-keyout srv.key -out srv.csr -subj /CN=127.0.0.1");
    run("openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -out srv.pem -days 2 -extfile ext.cnf");
}

void fixture_start(void)
{
    int in[2], out[2];
    char cert[300], key[300], buf[128];
    ssize_t n;
    size_t got = 0;

    snprintf(fx_logpath, sizeof fx_logpath, "%s/fx-%d.log", CERT_DIR,
             (int)getpid());
    unlink(fx_logpath);
    snprintf(cert, sizeof cert, "%s/srv.pem", CERT_DIR);
    snprintf(key, sizeof key, "%s/srv.key", CERT_DIR);
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
    fx_pid = fork();
    ck_assert_int_ge(fx_pid, 0);
    if (fx_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(AUR_HTTPS_FIXTURE, "https_fixture", "--cert", cert, "--key",
              key, "--log", fx_logpath, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    fx_in = in[1];
    while (got < sizeof buf - 1 && !memchr(buf, '\n', got)) {
        n = read(out[0], buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
    }
    close(out[0]);
    buf[got] = '\0';
    ck_assert_int_eq(sscanf(buf, "%d %d %d %d", &PORT[0], &PORT[1], &PORT[2],
                            &PORT[3]),
                     4);
}

void fixture_stop(void)
{
    if (fx_pid <= 0)
        return;
    close(fx_in);
    for (int i = 0; i < 100; i++) {
        if (waitpid(fx_pid, NULL, WNOHANG) == fx_pid) {
            fx_pid = 0;
            return;
        }
        sleep_ms(20);
    }
    kill(fx_pid, SIGKILL);
    waitpid(fx_pid, NULL, 0);
    fx_pid = 0;
}

const char *fx_log(void)
{
    static char buf[1 << 16];
    FILE *f = fopen(fx_logpath, "r");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

int fx_count(const char *needle)
{
    int n = 0;
    for (const char *p = fx_log(); (p = strstr(p, needle)); p++)
        n++;
    return n;
}

bool fx_wait(const char *needle, int ms)
{
    for (int i = 0; i < ms / 20; i++) {
        if (fx_count(needle) > 0)
            return true;
        sleep_ms(20);
    }
    return fx_count(needle) > 0;
}

/* ---- plugin ---------------------------------------------------------- */

const struct aur_plugin_desc *D;
const struct aur_transport_ops *OPS;
void *ST;
struct aur_cfg EP;
static int self_tag;

void up2(const char *k1, const char *v1, const char *k2, const char *v2)
{
    static struct aur_cfg pc;
    struct aur_error err;
    void *h = dlopen(HTTP_PLUGIN_SO, RTLD_NOW | RTLD_LOCAL);
    aur_entry_fn *entry;

    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    entry = (aur_entry_fn *)dlsym(h, AUR_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    D = entry(AUR_ABI_VERSION);
    ck_assert_ptr_nonnull(D);
    OPS = D->ops;
    memset(&pc, 0, sizeof pc);
    if (k1)
        cfg_add(&pc, k1, v1);
    if (k2)
        cfg_add(&pc, k2, v2);
    ck_assert_int_eq(D->init(&H, (struct aur_self *)&self_tag, &pc, &ST,
                             &err),
                     AUR_OK);
}

void down(void)
{
    struct json_object *m;
    while ((m = next_msg(0)))
        json_object_put(m);
    if (D && ST)
        D->fini(ST);
    ST = NULL;
}

void ep_path(const char *path)
{
    static char url[512], ca[300];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", PORT[0], path);
    snprintf(ca, sizeof ca, "%s/ca.pem", CERT_DIR);
    memset(&EP, 0, sizeof EP);
    cfg_add(&EP, "url", url);
    cfg_add(&EP, "ca_file", ca);
    cfg_add(&EP, "package", "org.test.http");
    cfg_add(&EP, "timeout_ms", "3000");
}

struct aur_conn *open_ok(void)
{
    struct aur_conn *c = NULL;
    struct aur_error err;
    uint32_t caps = 0;
    int rc = OPS->open(ST, &EP, &SINK, t_now() + 5000, &c, &caps, &err);
    ck_assert_msg(rc == AUR_OK, "open: %s", err.msg);
    ck_assert_ptr_nonnull(c);
    ck_assert(caps & AUR_TCAP_SERVER_PUSH);
    return c;
}

struct json_object *req(const char *id, const char *method)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "id", json_object_new_string(id));
    json_object_object_add(m, "method", json_object_new_string(method));
    json_object_object_add(m, "params", json_object_new_object());
    return m;
}

struct json_object *note(const char *method)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(m, "method", json_object_new_string(method));
    return m;
}

void send_ok(struct aur_conn *c, struct json_object *m)
{
    struct aur_error err;
    int rc = OPS->send(c, m, t_now() + 4000, &err);
    json_object_put(m);
    ck_assert_msg(rc == AUR_OK, "send: %s", err.msg);
}

struct json_object *err_of(struct json_object *m)
{
    struct json_object *e = NULL;
    json_object_object_get_ex(m, "error", &e);
    return e;
}

int err_code(struct json_object *m)
{
    struct json_object *c = NULL;
    json_object_object_get_ex(err_of(m), "code", &c);
    return json_object_get_int(c);
}

bool marker(struct json_object *m, int *status, bool *delivered)
{
    struct json_object *d, *t, *v;
    if (!json_object_object_get_ex(err_of(m), "data", &d) ||
        !json_object_object_get_ex(d, "org.aurorabot/transport", &t))
        return false;
    *status = json_object_object_get_ex(t, "http_status", &v)
                  ? json_object_get_int(v)
                  : -1;
    *delivered = json_object_object_get_ex(t, "delivered", &v) &&
                 json_object_get_boolean(v);
    return true;
}

void setup(void)
{
    log_len = 0;
    log_buf[0] = '\0';
    fixture_start();
}

void teardown(void)
{
    down();
    fixture_stop();
}
