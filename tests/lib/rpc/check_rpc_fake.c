/*
 * check_rpc_fake.c - the fake transport and the handler recorder of the
 * check_rpc suites (see check_rpc_fake.h).  The transport asserts the
 * ABI's promises the layer must keep towards it: no send after close,
 * and every message it is handed is one JSON-RPC 2.0 object.
 */
#include "check_rpc_fake.h"

#include <stdarg.h>
#include <stdio.h>

#include "jsonx.h"

struct aur_conn fk;
struct fk_events ev;

static int fk_open_hook(void *state, const struct aur_cfg *endpoint,
                        const struct aur_sink *sink, aur_deadline dl,
                        struct aur_conn **out, uint32_t *out_caps,
                        struct aur_error *err)
{
    if (fk.open_rc != AUR_OK)
        return aur_fail(err, fk.open_rc, 0, "fake open refused");
    fk.sink = *sink;
    fk.open = true;
    *out = &fk;
    *out_caps = 0;
    return AUR_OK;
}

static int record(struct aur_conn *c, const char *text, size_t len,
                  struct aur_error *err)
{
    int rc = AUR_OK;

    pthread_mutex_lock(&c->mu);
    /* A real transport has freed c once close() returned. */
    ck_assert_msg(c->open, "send on a closed connection");
    ck_assert_uint_lt(c->nsent, FK_MAX_SENT);
    c->sent[c->nsent++] = strndup(text, len);
    if (c->send_rc != AUR_OK && c->send_fail_left != 0) {
        if (c->send_fail_left > 0)
            c->send_fail_left--;
        rc = aur_fail(err, c->send_rc, 0, "fake send failed");
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void after_send(struct aur_conn *c, int rc, struct json_object *msg)
{
    if (rc == AUR_OK && c->on_send)
        c->on_send(c, msg);
}

static int fk_send(struct aur_conn *c, struct json_object *msg,
                   aur_deadline dl, struct aur_error *err)
{
    const char *t =
        json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
    struct json_object *v = NULL;
    int rc;

    ck_assert(json_object_object_get_ex(msg, "jsonrpc", &v) &&
              aur__json_str_is(v, "2.0"));
    rc = record(c, t, strlen(t), err);
    __atomic_add_fetch(&c->send_calls, 1, __ATOMIC_RELAXED);
    after_send(c, rc, msg);
    return rc;
}

static int fk_send_text(struct aur_conn *c, const char *json, size_t len,
                        aur_deadline dl, struct aur_error *err)
{
    struct json_object *msg = json_tokener_parse(json);
    int rc;

    ck_assert_msg(msg, "send_text got unparsable text: %.*s", (int)len, json);
    rc = record(c, json, len, err);
    __atomic_add_fetch(&c->send_text_calls, 1, __ATOMIC_RELAXED);
    after_send(c, rc, msg);
    json_object_put(msg);
    return rc;
}

static void fk_close(struct aur_conn *c, aur_deadline dl)
{
    if (c->has_reader)
        pthread_join(c->reader, NULL);
    c->has_reader = false;
    pthread_mutex_lock(&c->mu);
    c->open = false;
    c->closes++;
    pthread_mutex_unlock(&c->mu);
}

static void fk_cancel(struct aur_conn *c, struct json_object *id)
{
    pthread_mutex_lock(&c->mu);
    json_object_array_add(c->cancelled, aur__json_copy(id));
    pthread_mutex_unlock(&c->mu);
}

static int fk_reopen(struct aur_conn *c, aur_deadline dl,
                     struct aur_error *err)
{
    pthread_mutex_lock(&c->mu);
    c->reopens++;
    pthread_mutex_unlock(&c->mu);
    if (c->reopen_rc != AUR_OK)
        return aur_fail(err, c->reopen_rc, 0, "fake reopen refused");
    return AUR_OK;
}

static int fk_listen(struct aur_conn *c, aur_deadline dl,
                     struct aur_error *err)
{
    c->listens++;
    if (c->listen_rc < 0)
        return aur_fail(err, c->listen_rc, 0, "fake listen failed");
    return c->listen_rc;
}

static int fk_set_protocol(struct aur_conn *c,
                           const struct aur_protocol_info *info,
                           struct aur_error *err)
{
    c->proto_modern = info->modern;
    snprintf(c->proto_version, sizeof c->proto_version, "%s", info->version);
    return AUR_OK;
}

const struct aur_transport_ops fk_ops_min = {
    .struct_size = sizeof(struct aur_transport_ops),
    .open = fk_open_hook,
    .send = fk_send,
    .close = fk_close,
};

const struct aur_transport_ops fk_ops_full = {
    .struct_size = sizeof(struct aur_transport_ops),
    .open = fk_open_hook,
    .send = fk_send,
    .close = fk_close,
    .cancel = fk_cancel,
    .reopen = fk_reopen,
    .send_text = fk_send_text,
    .set_protocol = fk_set_protocol,
    .listen = fk_listen,
};

/* ---- the recorder ------------------------------------------------- */

static void note_thread(void)
{
    if (pthread_equal(pthread_self(), ev.test_thread))
        ev.off_thread = false;
}

static unsigned h_ordered(void *ud, const char *method,
                          struct json_object *params)
{
    pthread_mutex_lock(&ev.mu);
    ev.ordered_calls++;
    /* On the transport's thread, before queueing: ours when we feed. */
    if (!pthread_equal(pthread_self(), ev.test_thread))
        ev.ordered_on_caller = false;
    pthread_mutex_unlock(&ev.mu);
    return strncmp(method, "drop/", 5) == 0 ? AUR__RPC_DROP : ev.ordered_stamp;
}

static void h_batch_refused(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&ev.mu);
    ev.batch_refused++;
    pthread_mutex_unlock(&ev.mu);
}

static void h_notification(void *ud, const char *method,
                           struct json_object *params, struct json_object *msg,
                           unsigned stamp)
{
    struct json_object *n = json_object_new_object();

    json_object_object_add(n, "method", json_object_new_string(method));
    json_object_object_add(n, "params", aur__json_copy(params));
    json_object_object_add(n, "stamp", json_object_new_int64(stamp));
    pthread_mutex_lock(&ev.mu);
    note_thread();
    if (strlen(ev.order) + 1 < sizeof ev.order)
        strcat(ev.order, "n");
    json_object_array_add(ev.notes, n);
    ev.nnotes++;
    if (strcmp(method, "sync") == 0)
        ev.nsync++;
    pthread_cond_broadcast(&ev.cv);
    ev.in_handler++;
    while (ev.gate_closed)
        pthread_cond_wait(&ev.cv, &ev.mu);
    ev.in_handler--;
    pthread_mutex_unlock(&ev.mu);
}

static struct json_object *h_request(void *ud, const char *method,
                                     struct json_object *params)
{
    struct json_object *res = NULL;

    pthread_mutex_lock(&ev.mu);
    note_thread();
    ev.requests++;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
    if (strcmp(method, "echo") == 0) {
        res = json_object_new_object();
        json_object_object_add(res, "params", aur__json_copy(params));
    }
    return res;
}

static void h_response(void *ud, struct json_object *msg)
{
    pthread_mutex_lock(&ev.mu);
    note_thread();
    json_object_array_add(ev.responses, aur__json_copy(msg));
    ev.nresponses++;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
}

static void h_ended(void *ud, struct json_object *id,
                    const struct aur__rpc_end *end)
{
    struct json_object *e = json_object_new_object();

    json_object_object_add(e, "id", aur__json_copy(id));
    json_object_object_add(e, "code", json_object_new_int(end->code));
    json_object_object_add(e, "delivered",
                           json_object_new_boolean(end->delivered));
    json_object_object_add(e, "msg", json_object_new_string(end->msg));
    pthread_mutex_lock(&ev.mu);
    note_thread();
    json_object_array_add(ev.ended, e);
    ev.nended++;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
}

static void h_closed(void *ud, const struct aur_error *why)
{
    pthread_mutex_lock(&ev.mu);
    note_thread();
    if (strlen(ev.order) + 1 < sizeof ev.order)
        strcat(ev.order, "c");
    ev.closed++;
    ev.closed_why = why != NULL;
    if (why)
        ev.closed_err = *why;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
}

/* A protocol layer's reply_scan, as small as can be: the layer must
 * call it only for a text waiter and hand the waiter what it returns. */
static bool fk_scan(const char *buf, size_t len, int64_t *id, char **text,
                    size_t *text_len)
{
    struct json_object *m = json_tokener_parse(buf), *v = NULL, *t = NULL;
    bool ok = false;

    __atomic_add_fetch(&ev.scans, 1, __ATOMIC_RELAXED);
    if (json_object_object_get_ex(m, "id", &v) &&
        json_object_is_type(v, json_type_int) &&
        json_object_object_get_ex(m, "result", &t) &&
        json_object_object_get_ex(t, "t", &t) &&
        json_object_is_type(t, json_type_string)) {
        *id = json_object_get_int64(v);
        *text = strdup(json_object_get_string(t));
        *text_len = strlen(*text);
        ok = true;
    }
    json_object_put(m);
    return ok;
}

void fk_reset(void)
{
    for (size_t i = 0; i < fk.nsent; i++)
        free(fk.sent[i]);
    json_object_put(fk.cancelled);
    memset(&fk, 0, sizeof fk);
    pthread_mutex_init(&fk.mu, NULL);
    fk.cancelled = json_object_new_array();
    fk.send_fail_left = -1;
    fk.proto_modern = -1;

    json_object_put(ev.notes);
    json_object_put(ev.responses);
    json_object_put(ev.ended);
    memset(&ev, 0, sizeof ev);
    pthread_mutex_init(&ev.mu, NULL);
    aur__mono_cond_init(&ev.cv); /* aur__cond_wait_until's clock */
    ev.notes = json_object_new_array();
    ev.responses = json_object_new_array();
    ev.ended = json_object_new_array();
    ev.off_thread = true;
    ev.ordered_on_caller = true;
    ev.test_thread = pthread_self();
}

struct aur__rpc *fk_open(const struct aur_transport_ops *ops,
                         const struct aur__rpc_limits *lim)
{
    struct aur__rpc_limits dflt = {.max_pending = 16, .max_queue = 64};
    struct aur__rpc_handlers h = {
        .ud = &ev,
        .ordered = ev.ordered_stamp ? h_ordered : NULL,
        .notification = h_notification,
        .request = h_request,
        .response = h_response,
        .ended = h_ended,
        .closed = h_closed,
        .batch_refused = h_batch_refused,
        .reply_scan = ev.scanner ? fk_scan : NULL,
    };
    struct aur__rpc *r = NULL;
    struct aur_error err;
    int rc = aur__rpc_open(ops, NULL, NULL, &h, lim ? lim : &dflt, "app test",
                           fk_in(2000), &r, &err);

    ck_assert_msg(rc == AUR_OK, "open: %s", err.msg);
    ck_assert_ptr_nonnull(r);
    return r;
}

void fk_push(const char *fmt, ...)
{
    struct json_object *msg = NULL;
    struct aur_error err;
    va_list ap;
    char *buf;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&buf, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(n, 0);
    ck_assert_msg(aur__json_parse(buf, (size_t)n, AUR__JSON_MAX_DEPTH, &msg,
                                  &err) == AUR_OK,
                  "test message does not parse: %s", buf);
    free(buf);
    fk.sink.on_message(fk.sink.ctx, msg);
}

int fk_push_text(const char *text, struct aur_error *err)
{
    return fk.sink.on_text(fk.sink.ctx, text, strlen(text), NULL, NULL, err);
}

size_t fk_nsent(void)
{
    size_t n;
    pthread_mutex_lock(&fk.mu);
    n = fk.nsent;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

struct json_object *fk_sent(size_t i)
{
    struct json_object *v;

    pthread_mutex_lock(&fk.mu);
    ck_assert_uint_lt(i, fk.nsent);
    v = json_tokener_parse(fk.sent[i]);
    pthread_mutex_unlock(&fk.mu);
    ck_assert_ptr_nonnull(v);
    return v;
}

int64_t fk_sent_id(size_t i)
{
    struct json_object *m = fk_sent(i), *id = NULL;
    int64_t v;

    ck_assert(json_object_object_get_ex(m, "id", &id));
    ck_assert(json_object_is_type(id, json_type_int));
    v = json_object_get_int64(id);
    json_object_put(m);
    return v;
}

struct aur__pending *fk_request(struct aur__rpc *r, const char *method,
                                int64_t *id)
{
    struct aur__pending *p = NULL;
    struct aur_error err;
    size_t before = fk_nsent();
    int rc = aur__rpc_request(r, method, json_object_new_object(), NULL,
                              fk_in(5000), &p, &err);

    ck_assert_msg(rc == AUR_OK, "request %s: %s", method, err.msg);
    ck_assert_uint_eq(fk_nsent(), before + 1);
    if (id)
        *id = fk_sent_id(before);
    return p;
}

bool fk_wait_for(const int *counter, int n, int64_t ms)
{
    aur_deadline dl = fk_in(ms);
    bool ok;

    pthread_mutex_lock(&ev.mu);
    while (*counter < n)
        if (aur__cond_wait_until(&ev.cv, &ev.mu, dl) == ETIMEDOUT)
            break;
    ok = *counter >= n;
    pthread_mutex_unlock(&ev.mu);
    return ok;
}

int fk_count(const int *counter)
{
    int n;
    pthread_mutex_lock(&ev.mu);
    n = *counter;
    pthread_mutex_unlock(&ev.mu);
    return n;
}

bool fk_still_waiting(struct aur__rpc *r, struct aur__pending *p)
{
    struct json_object *reply = NULL;
    int rc = aur__rpc_wait(r, p, aur__now_ms() - 1, true, &reply, NULL, NULL);

    json_object_put(reply);
    return rc == AUR_E_TIMEOUT;
}

uint64_t fk_dropped(struct aur__rpc *r)
{
    struct aur__rpc_stats s;
    aur__rpc_get_stats(r, &s);
    return s.dropped_frames;
}

aur_deadline fk_in(int64_t ms)
{
    return aur__now_ms() + ms;
}

int fk_wait_rc(struct aur__rpc *r, struct aur__pending *p, int64_t ms,
               struct aur__rpc_end *end, struct aur_error *err)
{
    struct json_object *reply = NULL;
    int rc = aur__rpc_wait(r, p, fk_in(ms), false, &reply, end, err);
    if (rc != AUR_OK)
        ck_assert_ptr_null(reply);
    json_object_put(reply);
    return rc;
}
