/*
 * rpc.c - correlation, the dispatch queue and the sink (see rpc.h).
 */
#include "aur_setup.h"

#include "clock.h"
#include "log.h"
#include "jsonx.h"
#include "rpc.h"

#include <json-c/json.h>

#define NBUCKETS 64
#define QUEUE_WAIT_MS 10000

enum pstate { P_WAITING = 0, P_DONE, P_CLOSED, P_CANCELLED };

struct aur__pending {
    struct json_object *id; /* as sent, with its JSON type */
    int64_t num;
    char *sid; /* NULL for integer ids */
    pthread_cond_t cv;
    struct json_object *reply;
    char *text;   /* or the reply's joined text (call_reply.c) */
    bool text_ok; /* the waiter takes a reply as text */
    enum pstate state;
    bool in_table;
    bool detached; /* its reply goes to dispatch; freed at close */
    /* 1 (the owner) + 1 while deliver_response signals after unlocking:
     * the last one out frees. */
    int refs;
    struct aur__pending *next;
    struct aur__pending *dnext; /* r->detached list */
};

struct qitem {
    struct json_object *msg; /* NULL = the connection closed */
    unsigned gen;
    bool has_err;
    struct aur_error err;
    struct qitem *next;
};

struct aur__rpc {
    const struct aur_transport_ops *ops;
    void *tstate;
    struct aur_conn *conn;
    struct aur_sink sink;
    struct aur__rpc_handlers h;
    struct aur__rpc_limits lim;
    char tag[192];

    pthread_mutex_t mu; /* everything below */
    struct aur__pending *table[NBUCKETS];
    struct aur__pending *detached;
    size_t npending;
    size_t text_waiters; /* text_ok entries; read without mu by sink_text */
    int64_t next_id;
    bool closed;
    struct aur_error close_err; /* why the transport ended, for waiters */
    bool cancelled;
    unsigned gen; /* bumped by reopen: stale queue items are dropped */
    struct aur__rpc_stats stats;
    /* notification budget (see aur__rpc_limits) */
    int64_t tokens;    /* in thousandths of a message */
    int64_t refill_at; /* aur__now_ms of the last refill */
    bool faulty;       /* also read without mu (atomic) on the fast path */
    bool close_reported; /* handlers.closed is queued for this gen */
    pthread_cond_t fcv;  /* wakes readers parked on a faulty connection */

    pthread_cond_t qcv;
    pthread_cond_t qspace; /* signalled when the queue has room */
    struct qitem *qhead, *qtail;
    size_t qlen;
    bool stopping;
    pthread_t thread;
    bool thread_started;
};

static size_t bucket_of(int64_t num, const char *sid)
{
    uint64_t h = (uint64_t)num;
    if (sid) {
        h = 1469598103934665603ull;
        for (const char *p = sid; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return (size_t)(h % NBUCKETS);
}

/* Unlink p from the table; r->mu held. */
static void table_remove(struct aur__rpc *r, struct aur__pending *p)
{
    struct aur__pending **pp;
    if (!p->in_table)
        return;
    pp = &r->table[bucket_of(p->num, p->sid)];
    while (*pp && *pp != p)
        pp = &(*pp)->next;
    if (*pp)
        *pp = p->next;
    p->in_table = false;
    p->next = NULL;
    r->npending--;
    if (p->text_ok)
        __atomic_store_n(&r->text_waiters, r->text_waiters - 1,
                         __ATOMIC_RELAXED);
}

static struct aur__pending *table_find(struct aur__rpc *r, int64_t num,
                                       const char *sid)
{
    struct aur__pending *p = r->table[bucket_of(num, sid)];
    for (; p; p = p->next) {
        if (sid ? (p->sid && strcmp(p->sid, sid) == 0)
                : (!p->sid && p->num == num))
            return p;
    }
    return NULL;
}

static void pending_free(struct aur__pending *p)
{
    if (!p || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    json_object_put(p->id);
    json_object_put(p->reply);
    free(p->text);
    pthread_cond_destroy(&p->cv);
    free(p->sid);
    free(p);
}

/* Fail every table entry with state s; r->mu held. */
static void fail_all(struct aur__rpc *r, enum pstate s)
{
    for (size_t b = 0; b < NBUCKETS; b++) {
        struct aur__pending *p = r->table[b], *next;
        for (; p; p = next) {
            next = p->next;
            p->state = s;
            p->in_table = false;
            p->next = NULL;
            pthread_cond_signal(&p->cv);
        }
        r->table[b] = NULL;
    }
    r->npending = 0;
    __atomic_store_n(&r->text_waiters, 0, __ATOMIC_RELAXED);
}

static void enqueue(struct aur__rpc *r, struct json_object *msg,
                    const struct aur_error *why, bool bounded)
{
    struct qitem *q;
    pthread_mutex_lock(&r->mu);
    /* Backpressure, not loss: a flooding server waits for us (its pipe
     * fills up) until the dispatch thread has caught up; only a
     * dispatcher stuck for QUEUE_WAIT_MS makes us drop. */
    if (bounded && r->qlen >= r->lim.max_queue) {
        aur_deadline dl = aur__now_ms() + QUEUE_WAIT_MS;
        while (r->qlen >= r->lim.max_queue && !r->stopping)
            if (aur__cond_wait_until(&r->qspace, &r->mu, dl) == ETIMEDOUT)
                break;
    }
    if (bounded && r->qlen >= r->lim.max_queue) {
        r->stats.dropped_notifications++;
        pthread_mutex_unlock(&r->mu);
        if ((r->stats.dropped_notifications & 1023) == 1)
            aur__log(AUR_LOG_WARN, r->tag,
                     "notification queue full: dropping server messages");
        json_object_put(msg);
        return;
    }
    q = calloc(1, sizeof *q);
    if (!q) {
        pthread_mutex_unlock(&r->mu);
        json_object_put(msg);
        return;
    }
    q->msg = msg;
    q->gen = r->gen;
    if (why) {
        q->has_err = true;
        q->err = *why;
    }
    if (r->qtail)
        r->qtail->next = q;
    else
        r->qhead = q;
    r->qtail = q;
    r->qlen++;
    pthread_cond_signal(&r->qcv);
    pthread_mutex_unlock(&r->mu);
}

/*
 * The close item of a faulty connection goes to the head of the queue:
 * the App is marked unavailable at once, not after the notifications it
 * sent within budget, which are still handled afterwards.
 */
static void enqueue_close_first(struct aur__rpc *r, const struct aur_error *why)
{
    struct qitem *q = calloc(1, sizeof *q);
    if (!q)
        return;
    q->has_err = true;
    q->err = *why;
    pthread_mutex_lock(&r->mu);
    q->gen = r->gen;
    q->next = r->qhead;
    r->qhead = q;
    if (!r->qtail)
        r->qtail = q;
    r->qlen++;
    pthread_cond_signal(&r->qcv);
    pthread_mutex_unlock(&r->mu);
}

/* p got its reply (or text): wake its waiter.  r->mu held; released. */
static void complete(struct aur__rpc *r, struct aur__pending *p)
{
    table_remove(r, p);
    p->state = P_DONE;
    /* Signal after unlocking, so the woken waiter does not block at once
     * on r->mu (two more futex calls and a context switch per call); the
     * extra reference keeps p alive until then. */
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->mu);
    pthread_cond_signal(&p->cv);
    pending_free(p);
}

static void deliver_response(struct aur__rpc *r, struct json_object *msg,
                             struct json_object *id)
{
    struct aur__pending *p;
    int64_t num = 0;
    const char *sid = NULL;

    if (json_object_is_type(id, json_type_string))
        sid = json_object_get_string(id);
    else if (json_object_is_type(id, json_type_int))
        num = json_object_get_int64(id);
    else
        goto drop;

    pthread_mutex_lock(&r->mu);
    p = table_find(r, num, sid);
    if (p && p->detached) {
        table_remove(r, p);
        pthread_mutex_unlock(&r->mu);
        enqueue(r, msg, NULL, false);
        return;
    }
    if (p) {
        p->reply = msg;
        complete(r, p);
        return;
    }
    r->stats.dropped_frames++;
    pthread_mutex_unlock(&r->mu);
    aur__log(AUR_LOG_DEBUG, r->tag, "dropped a response nobody waits for");
    json_object_put(msg);
    return;
drop:
    pthread_mutex_lock(&r->mu);
    r->stats.dropped_frames++;
    pthread_mutex_unlock(&r->mu);
    aur__log(AUR_LOG_WARN, r->tag, "dropped a response with an unusable id");
    json_object_put(msg);
}

/* Set while this thread is inside the transport's send_text: a transport
 * may read replies on the sending thread (transport-stdio does, for a lone
 * tools/call), and such a reader is not parked: its own request failed
 * with the connection, and it stops reading within a few ms. */
static _Thread_local bool in_send_text;

/*
 * A faulty connection is not read any further: the reader is parked here
 * (QUEUE_WAIT_MS per message at most) until close or reopen, so a flooding
 * server stalls on its full pipe instead of costing us a core.  r->mu held.
 */
static void park_faulty(struct aur__rpc *r)
{
    unsigned gen = r->gen;
    aur_deadline dl = aur__now_ms() + QUEUE_WAIT_MS;
    if (in_send_text)
        return;
    while (r->faulty && r->gen == gen && !r->stopping)
        if (aur__cond_wait_until(&r->fcv, &r->mu, dl) == ETIMEDOUT)
            break;
}

/* One server-initiated message spends a token; false = the bucket is
 * empty and the connection has just become faulty. */
static bool spend_token(struct aur__rpc *r)
{
    struct aur_error why;
    int64_t now, cap;

    if (r->lim.notify_rate <= 0)
        return true;
    pthread_mutex_lock(&r->mu);
    if (r->faulty) {
        park_faulty(r);
        pthread_mutex_unlock(&r->mu);
        return false;
    }
    now = aur__now_ms();
    cap = r->lim.notify_burst * 1000;
    if (now > r->refill_at) {
        r->tokens += (now - r->refill_at) * r->lim.notify_rate;
        r->refill_at = now;
    }
    if (r->tokens > cap)
        r->tokens = cap;
    if (r->tokens >= 1000) {
        r->tokens -= 1000;
        pthread_mutex_unlock(&r->mu);
        return true;
    }
    aur_fail(&why, AUR_E_LIMIT, 0,
             "%s: notification budget exceeded (more than "
             "notification_burst = %lld at once or "
             "max_notifications_per_second = %lld on average): the App is "
             "treated as faulty",
             r->tag, (long long)r->lim.notify_burst,
             (long long)r->lim.notify_rate);
    __atomic_store_n(&r->faulty, true, __ATOMIC_RELEASE);
    r->stats.faulty = true;
    r->closed = true;
    r->close_err = why;
    fail_all(r, P_CLOSED);
    bool report = !r->close_reported;
    r->close_reported = true;
    pthread_mutex_unlock(&r->mu);
    aur__log(AUR_LOG_WARN, r->tag, "%s", why.msg);
    if (report)
        enqueue_close_first(r, &why);
    return false;
}

/* The sink: every inbound message from the transport, on its thread. */
static void sink_message(void *ctx, struct json_object *msg)
{
    struct aur__rpc *r = ctx;
    struct json_object *v, *id = NULL, *method = NULL;

    if (__atomic_load_n(&r->faulty, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&r->mu);
        park_faulty(r);
        pthread_mutex_unlock(&r->mu);
        json_object_put(msg);
        return;
    }
    static const char *const keys[] = {"jsonrpc", "method", "id", "result",
                                       "error"};
    struct json_object *m[5];
    bool has[5];

    aur__json_pick(msg, keys, m, has, 5);
    v = m[0], method = m[1], id = m[2];
    if (!json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), "2.0") != 0)
        goto malformed;
    bool has_id = has[2];
    if (method) {
        if (!json_object_is_type(method, json_type_string))
            goto malformed;
        /* Counted before anything else sees it: a flood is detected
         * here, on the reader, without being queued. */
        if (!spend_token(r)) {
            json_object_put(msg);
            return;
        }
        if (!has_id && r->h.ordered) {
            struct json_object *params = NULL;
            json_object_object_get_ex(msg, "params", &params);
            if (!r->h.ordered(r->h.ud, json_object_get_string(method),
                              params)) {
                json_object_put(msg);
                return;
            }
        }
        /* Requests and notifications go to the dispatch thread, both
         * under the queue bound: a server that sends requests and never
         * reads our answers would otherwise grow the queue for ever.
         * One shed after QUEUE_WAIT_MS simply gets no answer. */
        enqueue(r, msg, NULL, true);
        return;
    }
    if (has_id && has[3] != has[4]) {
        deliver_response(r, msg, id);
        return;
    }
malformed:
    pthread_mutex_lock(&r->mu);
    r->stats.dropped_frames++;
    pthread_mutex_unlock(&r->mu);
    aur__log(AUR_LOG_WARN, r->tag, "dropped a message that is not JSON-RPC 2.0");
    json_object_put(msg);
}

/*
 * The sink for text (ABI 1.2).  The reply to a call whose waiter takes
 * text is read without a tree when it has the common shape
 * (call_reply.c); everything else is parsed as host json_parse does and
 * goes through sink_message.  on_response hears a response's integer id
 * before its waiter is woken.
 */
static int sink_text(void *ctx, const char *buf, size_t len,
                     void (*on_response)(void *arg, int64_t id), void *arg,
                     struct aur_error *err)
{
    struct aur__rpc *r = ctx;
    struct json_object *msg = NULL, *id, *m;
    struct aur__pending *p;
    int64_t num;
    char *text;
    int rc;

    /* Only while a call waits for text: a tools/list page would be
     * scanned to its end for nothing.  The count is read without mu; a
     * stale zero only sends a reply down the general path. */
    if (__atomic_load_n(&r->text_waiters, __ATOMIC_ACQUIRE) &&
        !__atomic_load_n(&r->faulty, __ATOMIC_ACQUIRE) &&
        aur__call_reply_scan(buf, len, &num, &text)) {
        if (on_response)
            on_response(arg, num);
        on_response = NULL;
        pthread_mutex_lock(&r->mu);
        p = table_find(r, num, NULL);
        if (p && p->text_ok) {
            p->text = text;
            complete(r, p);
            return AUR_OK;
        }
        pthread_mutex_unlock(&r->mu);
        free(text);
    }
    rc = aur__json_parse(buf, len, AUR__JSON_MAX_DEPTH, &msg, err);
    if (rc == AUR_OK && !json_object_is_type(msg, json_type_object))
        rc = aur_fail(err, AUR_E_PROTOCOL, 0, "not a JSON object");
    if (rc != AUR_OK) {
        json_object_put(msg);
        return rc;
    }
    if (on_response && json_object_object_get_ex(msg, "id", &id) &&
        json_object_is_type(id, json_type_int) &&
        !json_object_object_get_ex(msg, "method", &m) &&
        json_object_get_int64(id) >= 0)
        on_response(arg, json_object_get_int64(id));
    sink_message(r, msg);
    return AUR_OK;
}

static void sink_closed(void *ctx, const struct aur_error *why)
{
    struct aur__rpc *r = ctx;
    bool report;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    /* A faulty connection already told everyone why it ended. */
    if (why && why->code != AUR_OK && !r->faulty)
        r->close_err = *why;
    fail_all(r, P_CLOSED);
    report = !r->close_reported;
    r->close_reported = true;
    pthread_mutex_unlock(&r->mu);
    if (report)
        enqueue(r, NULL, why, false);
}

static void answer_request(struct aur__rpc *r, struct json_object *msg,
                           const char *method, struct json_object *params)
{
    struct json_object *id = NULL, *reply = json_object_new_object();
    struct json_object *result = NULL;
    struct aur_error err;

    json_object_object_get_ex(msg, "id", &id);
    if (r->h.request)
        result = r->h.request(r->h.ud, method, params);
    json_object_object_add(reply, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(reply, "id", json_object_get(id));
    if (result) {
        json_object_object_add(reply, "result", result);
    } else {
        struct json_object *e = json_object_new_object();
        json_object_object_add(e, "code", json_object_new_int(-32601));
        json_object_object_add(e, "message",
                               json_object_new_string("Method not found"));
        json_object_object_add(reply, "error", e);
    }
    if (r->ops->send(r->conn, reply, aur__now_ms() + 5000, &err) != AUR_OK)
        aur__log(AUR_LOG_DEBUG, r->tag, "could not answer %s: %s", method,
                 err.msg);
    json_object_put(reply);
}

static void *dispatch_main(void *arg)
{
    struct aur__rpc *r = arg;
    for (;;) {
        struct qitem *q;
        pthread_mutex_lock(&r->mu);
        while (!r->qhead && !r->stopping)
            pthread_cond_wait(&r->qcv, &r->mu);
        q = r->qhead;
        if (!q || r->stopping) {
            /* Closing: what is still queued is dropped, not handled. */
            pthread_mutex_unlock(&r->mu);
            break;
        }
        r->qhead = q->next;
        if (!r->qhead)
            r->qtail = NULL;
        r->qlen--;
        pthread_cond_signal(&r->qspace);
        bool stale = q->gen != r->gen;
        pthread_mutex_unlock(&r->mu);

        if (stale) {
            /* From a connection that reopen replaced. */
        } else if (!q->msg) {
            if (r->h.closed)
                r->h.closed(r->h.ud, q->has_err ? &q->err : NULL);
        } else {
            struct json_object *m = NULL, *params = NULL;
            json_object_object_get_ex(q->msg, "method", &m);
            json_object_object_get_ex(q->msg, "params", &params);
            const char *method = json_object_get_string(m);
            if (!method) {
                if (r->h.response)
                    r->h.response(r->h.ud, q->msg);
            } else if (json_object_object_get_ex(q->msg, "id", NULL))
                answer_request(r, q->msg, method, params);
            else if (r->h.notification)
                r->h.notification(r->h.ud, method, params, q->msg);
        }
        json_object_put(q->msg);
        free(q);
    }
    return NULL;
}

int aur__rpc_open(const struct aur_transport_ops *ops, void *tstate,
                  const struct aur_cfg *endpoint,
                  const struct aur__rpc_handlers *h,
                  const struct aur__rpc_limits *lim, const char *tag,
                  aur_deadline dl, struct aur__rpc **out,
                  struct aur_error *err)
{
    struct aur__rpc *r = calloc(1, sizeof *r);
    uint32_t caps = 0;
    int rc;

    if (!r)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    r->ops = ops;
    r->tstate = tstate;
    r->h = *h;
    r->lim = *lim;
    snprintf(r->tag, sizeof r->tag, "%s", tag);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->qcv, NULL);
    aur__cond_init(&r->qspace);
    aur__cond_init(&r->fcv);
    r->tokens = r->lim.notify_burst * 1000;
    r->refill_at = aur__now_ms();
    r->sink.struct_size = sizeof r->sink;
    r->sink.ctx = r;
    r->sink.on_message = sink_message;
    r->sink.on_closed = sink_closed;
    r->sink.on_text = sink_text;

    if (pthread_create(&r->thread, NULL, dispatch_main, r) != 0) {
        rc = aur_fail(err, AUR_E_NOMEM, errno, "cannot start dispatch thread");
        goto fail;
    }
    r->thread_started = true;
    rc = ops->open(tstate, endpoint, &r->sink, dl, &r->conn, &caps, err);
    if (rc != AUR_OK)
        goto fail;
    *out = r;
    return AUR_OK;
fail:
    aur__rpc_close(r, dl);
    return rc;
}

void aur__rpc_close(struct aur__rpc *r, aur_deadline dl)
{
    if (!r)
        return;
    /* The dispatch thread stops first: it may answer server requests
     * through the transport, which must not be closed under it.  What
     * arrives from now on is only queued and freed below. */
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_signal(&r->qcv);
    pthread_cond_broadcast(&r->qspace);
    pthread_cond_broadcast(&r->fcv);
    pthread_mutex_unlock(&r->mu);
    if (r->thread_started)
        pthread_join(r->thread, NULL);
    if (r->conn)
        r->ops->close(r->conn, dl);
    r->conn = NULL;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    fail_all(r, P_CLOSED);
    pthread_mutex_unlock(&r->mu);
    for (struct aur__pending *p = r->detached, *n; p; p = n) {
        n = p->dnext;
        pending_free(p);
    }
    for (struct qitem *q = r->qhead, *n; q; q = n) {
        n = q->next;
        json_object_put(q->msg);
        free(q);
    }
    pthread_cond_destroy(&r->qcv);
    pthread_cond_destroy(&r->qspace);
    pthread_cond_destroy(&r->fcv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int aur__rpc_reopen(struct aur__rpc *r, aur_deadline dl,
                    struct aur_error *err)
{
    int rc;
    if (!AUR_HAS(r->ops, reopen))
        return aur_fail(err, AUR_E_STATE, 0, "transport cannot reopen");
    pthread_mutex_lock(&r->mu);
    r->gen++;
    fail_all(r, P_CLOSED);
    /* A reader parked on the old connection must let it close. */
    pthread_cond_broadcast(&r->fcv);
    pthread_mutex_unlock(&r->mu);
    rc = r->ops->reopen(r->conn, dl, err);
    pthread_mutex_lock(&r->mu);
    /* Whatever the old connection reported belongs to the old gen; a
     * fresh process starts with a full budget. */
    r->gen++;
    r->closed = rc != AUR_OK;
    r->close_reported = false;
    __atomic_store_n(&r->faulty, false, __ATOMIC_RELEASE);
    r->tokens = r->lim.notify_burst * 1000;
    r->refill_at = aur__now_ms();
    if (rc == AUR_OK)
        aur_error_clear(&r->close_err);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int aur__rpc_set_protocol(struct aur__rpc *r, int modern, const char *version,
                          struct aur_error *err)
{
    struct aur_protocol_info info = {sizeof info, modern, version};
    if (!AUR_HAS(r->ops, set_protocol))
        return AUR_OK;
    return r->ops->set_protocol(r->conn, &info, err);
}

static struct json_object *envelope(const char *method,
                                    struct json_object *params,
                                    struct json_object *id)
{
    struct json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    if (id)
        json_object_object_add(m, "id", json_object_get(id));
    json_object_object_add(m, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(m, "params", params);
    return m;
}

static int send_text(struct aur__rpc *r, const char *method,
                     struct aur__pending *p, const char *params_json,
                     size_t params_len, aur_deadline dl,
                     struct aur_error *err);

/* AUR_E_CLOSED with the transport's reason (e.g. a budget that was
 * exceeded) in the text: it is what status and the journal show.
 * r->mu held. */
static int fail_closed(struct aur__rpc *r, struct aur_error *err)
{
    if (r->close_err.code != AUR_OK)
        return aur_fail(err, AUR_E_CLOSED, r->close_err.code,
                        "connection closed: %s (%s)", r->close_err.msg,
                        aur_rc_word(r->close_err.code));
    return aur_fail(err, AUR_E_CLOSED, 0, "connection closed");
}

static int request(struct aur__rpc *r, const char *method,
                   struct json_object *params, const char *params_json,
                   size_t params_len, const char *sid, bool detached,
                   bool text_ok, aur_deadline dl, struct aur__pending **out,
                   struct aur_error *err)
{
    struct aur__pending *p = calloc(1, sizeof *p);
    struct json_object *msg;
    int rc;

    if (!p || (sid && !(p->sid = strdup(sid)))) {
        free(p);
        json_object_put(params);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    aur__cond_init(&p->cv);
    p->refs = 1;
    p->detached = detached;
    p->text_ok = text_ok;
    pthread_mutex_lock(&r->mu);
    if (r->cancelled || r->closed || r->npending >= r->lim.max_pending) {
        rc = r->cancelled ? aur_fail(err, AUR_E_CANCELLED, 0, "cancelled")
             : r->closed  ? fail_closed(r, err)
                          : aur_fail(err, AUR_E_LIMIT, 0,
                                     "too many outstanding requests (%zu)",
                                     r->lim.max_pending);
        pthread_mutex_unlock(&r->mu);
        pending_free(p);
        json_object_put(params);
        return rc;
    }
    if (sid) {
        p->id = json_object_new_string(sid);
    } else {
        p->num = r->next_id++;
        p->id = json_object_new_int64(p->num);
    }
    /* In the table before the bytes leave: the reply may beat send(). */
    size_t b = bucket_of(p->num, p->sid);
    p->next = r->table[b];
    r->table[b] = p;
    p->in_table = true;
    r->npending++;
    if (text_ok)
        __atomic_store_n(&r->text_waiters, r->text_waiters + 1,
                         __ATOMIC_RELEASE);
    if (detached) {
        p->dnext = r->detached;
        r->detached = p;
    }
    pthread_mutex_unlock(&r->mu);

    if (params_json) {
        rc = send_text(r, method, p, params_json, params_len, dl, err);
    } else {
        msg = envelope(method, params, p->id);
        rc = r->ops->send(r->conn, msg, dl, err);
        json_object_put(msg);
    }
    if (rc != AUR_OK) {
        pthread_mutex_lock(&r->mu);
        table_remove(r, p);
        pthread_mutex_unlock(&r->mu);
        if (!detached)
            pending_free(p);
        return rc;
    }
    if (out)
        *out = p;
    return AUR_OK;
}

int aur__rpc_request(struct aur__rpc *r, const char *method,
                     struct json_object *params, const char *sid,
                     aur_deadline dl, struct aur__pending **out,
                     struct aur_error *err)
{
    return request(r, method, params, NULL, 0, sid, false, false, dl, out,
                   err);
}

int aur__rpc_request_text(struct aur__rpc *r, const char *method,
                          const char *params_json, size_t params_len,
                          bool text_ok, aur_deadline dl,
                          struct aur__pending **out, struct aur_error *err)
{
    return request(r, method, NULL, params_json, params_len, NULL, false,
                   text_ok, dl, out, err);
}

static int send_text(struct aur__rpc *r, const char *method,
                     struct aur__pending *p, const char *params_json,
                     size_t params_len, aur_deadline dl,
                     struct aur_error *err)
{
    static const char h1[] = "{\"jsonrpc\":\"2.0\",\"id\":",
                      h2[] = ",\"method\":\"", h3[] = "\",\"params\":";
    char head[160], local[2048], *line = local; /* calls fit on the stack */
    char digits[24];
    size_t nd = 0, ml = strlen(method), len;
    uint64_t v = (uint64_t)p->num; /* ids count up from 0 */
    int hn, rc;

    /* By hand: snprintf was a tenth of a call's instructions. */
    if (sizeof h1 + sizeof h2 + sizeof h3 + sizeof digits + ml > sizeof head)
        return aur_fail(err, AUR_E_INVAL, 0, "method name too long");
    do
        digits[nd++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    memcpy(head, h1, sizeof h1 - 1);
    hn = (int)(sizeof h1 - 1);
    while (nd)
        head[hn++] = digits[--nd];
    memcpy(head + hn, h2, sizeof h2 - 1);
    hn += (int)(sizeof h2 - 1);
    memcpy(head + hn, method, ml);
    hn += (int)ml;
    memcpy(head + hn, h3, sizeof h3 - 1);
    hn += (int)(sizeof h3 - 1);
    len = (size_t)hn + params_len + 1;
    if (len >= sizeof local && !(line = malloc(len + 1)))
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    memcpy(line, head, (size_t)hn);
    memcpy(line + hn, params_json, params_len);
    line[len - 1] = '}';
    line[len] = '\0';
    if (AUR_HAS(r->ops, send_text)) {
        in_send_text = true;
        rc = r->ops->send_text(r->conn, line, len, dl, err);
        in_send_text = false;
    } else {
        struct json_object *msg = NULL;
        rc = aur__json_parse(line, len, AUR__JSON_MAX_DEPTH, &msg, err);
        if (rc == AUR_OK)
            rc = r->ops->send(r->conn, msg, dl, err);
        json_object_put(msg);
    }
    if (line != local)
        free(line);
    return rc;
}

int aur__rpc_request_detached(struct aur__rpc *r, const char *method,
                              struct json_object *params, const char *sid,
                              aur_deadline dl, struct aur_error *err)
{
    return request(r, method, params, NULL, 0, sid, true, false, dl, NULL,
                   err);
}

int aur__rpc_wait(struct aur__rpc *r, struct aur__pending *p,
                  aur_deadline dl, bool keep_on_timeout,
                  struct json_object **reply, struct aur_error *err)
{
    return aur__rpc_wait_text(r, p, dl, keep_on_timeout, reply, NULL, err);
}

int aur__rpc_wait_text(struct aur__rpc *r, struct aur__pending *p,
                       aur_deadline dl, bool keep_on_timeout,
                       struct json_object **reply, char **text,
                       struct aur_error *err)
{
    int rc = AUR_OK;
    pthread_mutex_lock(&r->mu);
    while (p->state == P_WAITING) {
        if (aur__cond_wait_until(&p->cv, &r->mu, dl) == ETIMEDOUT &&
            p->state == P_WAITING)
            break;
    }
    switch (p->state) {
    case P_DONE:
        *reply = p->reply;
        p->reply = NULL;
        if (text) {
            *text = p->text;
            p->text = NULL;
        }
        break;
    case P_CLOSED:
        /* Keep the transport's reason (e.g. a line over the budget). */
        rc = fail_closed(r, err);
        break;
    case P_CANCELLED:
        rc = aur_fail(err, AUR_E_CANCELLED, 0, "cancelled");
        break;
    case P_WAITING:
        rc = aur_fail(err, AUR_E_TIMEOUT, 0, "no response before the deadline");
        if (keep_on_timeout) {
            pthread_mutex_unlock(&r->mu);
            return rc;
        }
        table_remove(r, p);
        break;
    }
    pthread_mutex_unlock(&r->mu);
    pending_free(p);
    return rc;
}

struct json_object *aur__rpc_pending_id(struct aur__pending *p)
{
    return p->id;
}

void aur__rpc_abandon(struct aur__rpc *r, struct aur__pending *p, bool cancel)
{
    bool was_waiting;
    if (!p)
        return;
    pthread_mutex_lock(&r->mu);
    was_waiting = p->state == P_WAITING && !r->closed;
    table_remove(r, p);
    pthread_mutex_unlock(&r->mu);
    if (cancel && was_waiting) {
        if (AUR_HAS(r->ops, cancel)) {
            r->ops->cancel(r->conn, p->id);
        } else {
            struct json_object *params = json_object_new_object();
            json_object_object_add(params, "requestId", json_object_get(p->id));
            json_object_object_add(params, "reason",
                                   json_object_new_string("abandoned by host"));
            aur__rpc_notify(r, "notifications/cancelled", params,
                            aur__now_ms() + 1000, NULL);
        }
    }
    pending_free(p);
}

int aur__rpc_notify(struct aur__rpc *r, const char *method,
                    struct json_object *params, aur_deadline dl,
                    struct aur_error *err)
{
    struct json_object *msg;
    int rc;
    pthread_mutex_lock(&r->mu);
    bool closed = r->closed;
    if (closed)
        rc = fail_closed(r, err);
    pthread_mutex_unlock(&r->mu);
    if (closed) {
        json_object_put(params);
        return rc;
    }
    msg = envelope(method, params, NULL);
    rc = r->ops->send(r->conn, msg, dl, err);
    json_object_put(msg);
    return rc;
}

void aur__rpc_cancel_waiters(struct aur__rpc *r)
{
    pthread_mutex_lock(&r->mu);
    r->cancelled = true;
    fail_all(r, P_CANCELLED);
    pthread_mutex_unlock(&r->mu);
}

bool aur__rpc_is_closed(struct aur__rpc *r)
{
    bool c;
    pthread_mutex_lock(&r->mu);
    c = r->closed;
    pthread_mutex_unlock(&r->mu);
    return c;
}

void aur__rpc_get_stats(struct aur__rpc *r, struct aur__rpc_stats *s)
{
    pthread_mutex_lock(&r->mu);
    *s = r->stats;
    pthread_mutex_unlock(&r->mu);
}
