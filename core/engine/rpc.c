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
    enum pstate state;
    bool in_table;
    bool detached; /* its reply goes to dispatch; freed at close */
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
    int64_t next_id;
    bool closed;
    struct aur_error close_err; /* why the transport ended, for waiters */
    bool cancelled;
    unsigned gen; /* bumped by reopen: stale queue items are dropped */
    struct aur__rpc_stats stats;

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
    if (!p)
        return;
    json_object_put(p->id);
    json_object_put(p->reply);
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
                     "notification queue full: dropping notifications");
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
        table_remove(r, p);
        p->reply = msg;
        p->state = P_DONE;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&r->mu);
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

/* The sink: every inbound message from the transport, on its thread. */
static void sink_message(void *ctx, struct json_object *msg)
{
    struct aur__rpc *r = ctx;
    struct json_object *v, *id = NULL, *method = NULL;

    if (!json_object_is_type(msg, json_type_object) ||
        !json_object_object_get_ex(msg, "jsonrpc", &v) ||
        !json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), "2.0") != 0)
        goto malformed;
    json_object_object_get_ex(msg, "method", &method);
    bool has_id = json_object_object_get_ex(msg, "id", &id);
    if (method) {
        if (!json_object_is_type(method, json_type_string))
            goto malformed;
        if (!has_id && r->h.ordered) {
            struct json_object *params = NULL;
            json_object_object_get_ex(msg, "params", &params);
            if (!r->h.ordered(r->h.ud, json_object_get_string(method),
                              params)) {
                json_object_put(msg);
                return;
            }
        }
        /* Requests and notifications go to the dispatch thread; only
         * notifications can be shed under a flood. */
        enqueue(r, msg, NULL, !has_id);
        return;
    }
    bool has_result = json_object_object_get_ex(msg, "result", NULL);
    bool has_error = json_object_object_get_ex(msg, "error", NULL);
    if (has_id && has_result != has_error) {
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

static void sink_closed(void *ctx, const struct aur_error *why)
{
    struct aur__rpc *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    if (why && why->code != AUR_OK)
        r->close_err = *why;
    fail_all(r, P_CLOSED);
    pthread_mutex_unlock(&r->mu);
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
    r->sink.struct_size = sizeof r->sink;
    r->sink.ctx = r;
    r->sink.on_message = sink_message;
    r->sink.on_closed = sink_closed;

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
    pthread_mutex_unlock(&r->mu);
    rc = r->ops->reopen(r->conn, dl, err);
    pthread_mutex_lock(&r->mu);
    /* Whatever the old connection reported belongs to the old gen. */
    r->gen++;
    r->closed = rc != AUR_OK;
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

static int request(struct aur__rpc *r, const char *method,
                   struct json_object *params, const char *params_json,
                   size_t params_len, const char *sid, bool detached,
                   aur_deadline dl, struct aur__pending **out,
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
    p->detached = detached;
    pthread_mutex_lock(&r->mu);
    if (r->cancelled || r->closed || r->npending >= r->lim.max_pending) {
        rc = r->cancelled ? aur_fail(err, AUR_E_CANCELLED, 0, "cancelled")
             : r->closed  ? aur_fail(err, AUR_E_CLOSED, 0, "connection closed")
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
    return request(r, method, params, NULL, 0, sid, false, dl, out, err);
}

int aur__rpc_request_text(struct aur__rpc *r, const char *method,
                          const char *params_json, size_t params_len,
                          aur_deadline dl, struct aur__pending **out,
                          struct aur_error *err)
{
    return request(r, method, NULL, params_json, params_len, NULL, false, dl,
                   out, err);
}

static int send_text(struct aur__rpc *r, const char *method,
                     struct aur__pending *p, const char *params_json,
                     size_t params_len, aur_deadline dl,
                     struct aur_error *err)
{
    char head[160], *line;
    int hn = snprintf(head, sizeof head,
                      "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\","
                      "\"params\":",
                      (long long)p->num, method);
    size_t len;
    int rc;

    if (hn < 0 || (size_t)hn >= sizeof head)
        return aur_fail(err, AUR_E_INVAL, 0, "method name too long");
    len = (size_t)hn + params_len + 1;
    line = malloc(len + 1);
    if (!line)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    memcpy(line, head, (size_t)hn);
    memcpy(line + hn, params_json, params_len);
    line[len - 1] = '}';
    line[len] = '\0';
    if (AUR_HAS(r->ops, send_text)) {
        rc = r->ops->send_text(r->conn, line, len, dl, err);
    } else {
        struct json_object *msg = NULL;
        rc = aur__json_parse(line, len, 128, &msg, err);
        if (rc == AUR_OK)
            rc = r->ops->send(r->conn, msg, dl, err);
        json_object_put(msg);
    }
    free(line);
    return rc;
}

int aur__rpc_request_detached(struct aur__rpc *r, const char *method,
                              struct json_object *params, const char *sid,
                              aur_deadline dl, struct aur_error *err)
{
    return request(r, method, params, NULL, 0, sid, true, dl, NULL, err);
}

int aur__rpc_wait(struct aur__rpc *r, struct aur__pending *p,
                  aur_deadline dl, bool keep_on_timeout,
                  struct json_object **reply, struct aur_error *err)
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
        break;
    case P_CLOSED:
        /* Keep the transport's reason (e.g. a line over the budget) in
         * the text: it is what status and the journal show. */
        if (r->close_err.code != AUR_OK)
            rc = aur_fail(err, AUR_E_CLOSED, r->close_err.code,
                          "connection closed: %s (%s)", r->close_err.msg,
                          aur_rc_word(r->close_err.code));
        else
            rc = aur_fail(err, AUR_E_CLOSED, 0, "connection closed");
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
    pthread_mutex_unlock(&r->mu);
    if (closed) {
        json_object_put(params);
        return aur_fail(err, AUR_E_CLOSED, 0, "connection closed");
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
