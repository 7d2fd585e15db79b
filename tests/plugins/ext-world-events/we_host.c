/*
 * we_host.c - the test host of check_ext_world_events (we_host.h).
 */
#define _GNU_SOURCE 1

#include "we_host.h"
#include "support/slack.h"

#include <aurora/aur_plugin.h>
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct rec commits[MAXC];
size_t ncommits;
int write_calls;
char logbuf[65536];
size_t loglen;

/* host state shared with the plugin's writer thread */
pthread_mutex_t hmu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t hcv = PTHREAD_COND_INITIALIZER;
bool gate_closed;     /* world_write_batch waits while set */
int batch_calls;      /* world_write_batch calls entered */
size_t batch_sizes[16];
int batch_delay_ms;   /* each world_write_batch sleeps this long */
const char *fail_summary; /* a batch holding it fails whole */

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
    AUR_PRINTF(3, 4);
void *log_watch;
int64_t rejected_at_log = -1;

static void t_log(struct aur_self *self, int level, const char *fmt, ...)
{
    va_list ap;
    size_t start;
    (void)self;
    pthread_mutex_lock(&hmu);
    start = loglen;
    loglen += (size_t)snprintf(logbuf + loglen, sizeof logbuf - loglen,
                               "%d ", level);
    va_start(ap, fmt);
    loglen += (size_t)vsnprintf(logbuf + loglen, sizeof logbuf - loglen, fmt,
                                ap);
    va_end(ap);
    loglen += (size_t)snprintf(logbuf + loglen, sizeof logbuf - loglen, "\n");
    bool rejection = log_watch && strstr(logbuf + start, " rejected: ");
    pthread_mutex_unlock(&hmu);
    ck_assert_uint_lt(loglen, sizeof logbuf);
    if (rejection)
        rejected_at_log = count_of(log_watch, "rejected");
}

static int64_t t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int t_int_text(struct json_object *v, char *buf, size_t size)
{
    if (!json_object_is_type(v, json_type_int))
        return AUR_E_INVAL;
    snprintf(buf, size, "%lld", (long long)json_object_get_int64(v));
    return AUR_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, duplicates collapsed: the journal's scope set. */
static size_t scope_set(const struct aur_commit *c, char **out)
{
    size_t n = 0;
    ck_assert_uint_ge(c->n_scopes, 1);
    ck_assert_uint_le(c->n_scopes, 4);
    for (size_t i = 0; i < c->n_scopes; i++)
        out[n++] = strdup(c->scopes[i]);
    qsort(out, n, sizeof *out, cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && strcmp(out[k - 1], out[i]) == 0)
            free(out[i]);
        else
            out[k++] = out[i];
    }
    return k;
}

/* One commit against the store (hmu held): AUR_OK = written,
 * AUR_DECLINE = present with the same content, AUR_E_CONFLICT. */
static int store(const struct aur_commit *c, struct aur_error *err)
{
    char *sc[4];
    size_t n;
    ck_assert_ptr_nonnull(c->commit_id);
    ck_assert(json_object_is_type(c->data, json_type_object));
    n = scope_set(c, sc);
    for (size_t i = 0; i < ncommits; i++) {
        struct rec *r = &commits[i];
        if (strcmp(r->commit_id, c->commit_id) != 0)
            continue;
        bool same = strcmp(r->kind, c->kind) == 0 &&
                    strcmp(r->source, c->source) == 0 &&
                    strcmp(r->summary, c->summary) == 0 &&
                    r->n_scopes == n && json_object_equal(r->data, c->data);
        for (size_t k = 0; same && k < n; k++)
            same = strcmp(r->scopes[k], sc[k]) == 0;
        for (size_t k = 0; k < n; k++)
            free(sc[k]);
        if (same)
            return AUR_DECLINE;
        return aur_fail(err, AUR_E_CONFLICT, 0, "commit id %s reused",
                        c->commit_id);
    }
    ck_assert_uint_lt(ncommits, MAXC);
    struct rec *r = &commits[ncommits++];
    r->commit_id = strdup(c->commit_id);
    r->kind = strdup(c->kind);
    r->source = strdup(c->source);
    r->summary = strdup(c->summary);
    r->occurred_at = c->occurred_at ? strdup(c->occurred_at) : NULL;
    memcpy(r->scopes, sc, sizeof sc);
    r->n_scopes = n;
    /* A deep copy: the plugin may drop its references. */
    r->data = json_tokener_parse(json_object_to_json_string(c->data));
    r->data_text = strdup(json_object_to_json_string_ext(
        c->data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    return AUR_OK;
}

/* The ABI 1.0 service: "present" and "written" both answer AUR_OK. */
static int t_write(struct aur_self *self, const struct aur_commit *c,
                   struct aur_error *err)
{
    int rc;
    (void)self;
    pthread_mutex_lock(&hmu);
    write_calls++;
    rc = store(c, err);
    pthread_mutex_unlock(&hmu);
    return rc == AUR_DECLINE ? AUR_OK : rc;
}

static bool wait_gate(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    while (gate_closed)
        if (pthread_cond_timedwait(&hcv, &hmu, &ts) == ETIMEDOUT)
            return false;
    return true;
}

/* The ABI 1.1 service, all or nothing like the journal's transaction. */
static int t_write_batch(struct aur_self *self,
                         const struct aur_commit *const *v, size_t n,
                         int *results, struct aur_error *err)
{
    bool opened;
    (void)self;
    ck_assert_uint_gt(n, 0);
    if (batch_delay_ms)
        usleep((useconds_t)batch_delay_ms * 1000);
    pthread_mutex_lock(&hmu);
    if (batch_calls < 16)
        batch_sizes[batch_calls] = n;
    batch_calls++;
    pthread_cond_broadcast(&hcv);
    opened = wait_gate();
    for (size_t i = 0; i < n && fail_summary; i++)
        if (strcmp(v[i]->summary, fail_summary) == 0)
            opened = false;
    if (!opened) {
        pthread_mutex_unlock(&hmu);
        for (size_t i = 0; i < n; i++)
            results[i] = AUR_E_JOURNAL;
        return aur_fail(err, AUR_E_JOURNAL, 0, "journal: injected failure");
    }
    for (size_t i = 0; i < n; i++)
        results[i] = store(v[i], NULL);
    pthread_mutex_unlock(&hmu);
    return AUR_OK;
}

static const struct aur_host H = {
    .struct_size = sizeof H,
    .abi_version = AUR_ABI_VERSION,
    .log = t_log,
    .now_ms = t_now,
    .world_write = t_write,
    .json_integer_text = t_int_text,
    .world_write_batch = t_write_batch,
};

/* An ABI 1.0 host: the vtable ends before world_write_batch. */
static struct aur_host H10;

static int self_tag;
const struct aur_plugin_desc *D;
const struct aur_extension_ops *OPS;
void *ST;

static void load(const struct aur_host *host)
{
    struct aur_error err;
    void *dl = dlopen(PLUGIN_SO, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl != NULL, "dlopen %s: %s", PLUGIN_SO, dlerror());
    aur_entry_fn *entry = (aur_entry_fn *)dlsym(dl, AUR_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    D = entry(AUR_ABI_VERSION);
    ck_assert_ptr_nonnull(D);
    OPS = D->ops;
    ck_assert_int_eq(D->init(host, (struct aur_self *)&self_tag, NULL, &ST,
                             &err),
                     AUR_OK);
}

void setup(void)
{
    load(&H);
}

void setup_abi10(void)
{
    H10 = H;
    H10.world_write_batch = NULL;
    H10.struct_size = (uint32_t)offsetof(struct aur_host, world_write_batch);
    H10.abi_version = AUR_ABI_MKVER(1, 0);
    load(&H10);
}

void teardown(void)
{
    if (D && ST)
        D->fini(ST);
    ST = NULL;
}

struct aur_app_info app_info(const char *pkg, const char *mode,
                                    int modern)
{
    struct aur_app_info a = {
        .struct_size = sizeof a,
        .package = pkg,
        .transport = "stdio",
        .event_mode = mode,
        .version = modern ? "2026-07-28" : "2025-06-18",
        .modern = modern,
        .self = (struct aur_self *)&self_tag,
    };
    return a;
}

/* accept_server with caps given as JSON text (NULL = {}). */
int accept_mode(const char *pkg, const char *mode, int modern,
                       const char *caps_json, void **sess,
                       struct aur_error *err)
{
    struct aur_app_info a = app_info(pkg, mode, modern);
    struct json_object *caps =
        caps_json ? json_tokener_parse(caps_json) : json_object_new_object();
    int rc;
    ck_assert_msg(caps != NULL ||
                      (caps_json != NULL && strcmp(caps_json, "null") == 0),
                  "bad test JSON %s", caps_json ? caps_json : "(none)");
    *sess = NULL;
    aur_error_clear(err);
    rc = OPS->accept_server(ST, &a, caps, sess, err);
    json_object_put(caps);
    return rc;
}

void *world_session(const char *pkg)
{
    struct aur_error err;
    void *s;
    ck_assert_int_eq(accept_mode(pkg, "world_events", 1, CAPS_OK, &s, &err),
                     AUR_OK);
    ck_assert_ptr_nonnull(s);
    return s;
}

void *legacy_session(void)
{
    struct aur_error err;
    void *s;
    ck_assert_int_eq(
        accept_mode(PKG, "legacy_aurora_event", 0, NULL, &s, &err), AUR_OK);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* A counter of sess's status (-1 if absent). */
int64_t count_of(void *sess, const char *key)
{
    struct json_object *o = json_object_new_object(), *v, *why;
    struct aur_error err;
    int64_t n = -1;
    ck_assert_int_eq(OPS->status(ST, sess, o, &err), AUR_OK);
    if (json_object_object_get_ex(o, key, &v))
        n = json_object_get_int64(v);
    else if (json_object_object_get_ex(o, "rejected_by_reason", &why) &&
             json_object_object_get_ex(why, key, &v))
        n = json_object_get_int64(v);
    json_object_put(o);
    return n;
}

/* Wait (bounded) until the journal has answered for every queued event of
 * sess; then the store and the counters are final for what was sent. */
void settle(void *sess)
{
    H_WAIT_UNTIL(count_of(sess, "queued") == 0, 10000, 1);
    ck_assert_int_eq(count_of(sess, "queued"), 0);
}

/* on_notify with params as JSON text; no waiting. */
int notify_async(void *sess, const char *method,
                        const char *params_json, int active,
                        struct aur_error *err)
{
    struct json_object *p = json_tokener_parse(params_json);
    int rc;
    aur_error_clear(err);
    rc = OPS->on_notify(ST, sess, method, p, active, err);
    json_object_put(p);
    return rc;
}

/* The same, then settle: what a test reads afterwards is final. */
int notify(void *sess, const char *method, const char *params_json,
                  int active, struct aur_error *err)
{
    int rc = notify_async(sess, method, params_json, active, err);
    if (sess)
        settle(sess);
    return rc;
}

void wait_batch_calls(int n)
{
    pthread_mutex_lock(&hmu);
    for (int i = 0; i < 1000 && batch_calls < n; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&hcv, &hmu, &ts);
    }
    ck_assert_int_ge(batch_calls, n);
    pthread_mutex_unlock(&hmu);
}

void open_gate(void)
{
    pthread_mutex_lock(&hmu);
    gate_closed = false;
    pthread_cond_broadcast(&hcv);
    pthread_mutex_unlock(&hmu);
}
