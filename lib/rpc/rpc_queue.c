/*
 * rpc_queue.c - the dispatch queue of one connection (see rpc_int.h).
 *
 * Notifications, server requests, responses to detached requests and the
 * end of the connection are handled one at a time, in arrival order, so
 * the owner's handlers never run concurrently.  They run on the workers
 * every connection shares (rpc_pool.h): the connection's job is pushed
 * when an item is queued and it has none listed or running, and a worker
 * handles a batch of items, then lets the others have their turn.  An
 * App costs its transport's reader alone while it is quiet, and a
 * thousand that notify at once share a few threads.  close handles what
 * is left on its own thread.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "log.h"
#include "rpc_int.h"

#include <json-c/json.h>

/* How long a full queue makes the reader wait before it sheds. */
#define QUEUE_WAIT_MS 10000
/* Items a worker handles for one connection before the others' turn. */
#define BATCH 32

_Thread_local struct aur__rpc *aur__rpc_running;

/* No room for q: the count bound, or the byte bound (a queue holding
 * nothing always takes one message, however big).  r->mu held. */
static bool queue_full(const struct aur__rpc *r, const struct aur__qitem *q)
{
    if (r->qlen >= r->lim.max_queue)
        return true;
    return r->lim.max_queue_bytes && r->qbytes > 0 &&
           r->qbytes + q->mem > r->lim.max_queue_bytes;
}

void aur__rpc_enqueue(struct aur__rpc *r, struct aur__qitem *q, bool bounded,
                      bool first)
{
    pthread_mutex_lock(&r->mu);
    /* Backpressure, not loss: a flooding server waits for us (its pipe
     * fills up) until its handling has caught up; only a
     * dispatcher stuck for QUEUE_WAIT_MS makes us drop.  Both bounds
     * wait the same way: max_queue messages, max_queue_bytes of them. */
    if (bounded && queue_full(r, q)) {
        aur_deadline dl = aur__now_ms() + QUEUE_WAIT_MS;
        while (queue_full(r, q) && !r->stopping)
            if (aur__cond_wait_until(&r->qspace, &r->mu, dl) == ETIMEDOUT)
                break;
    }
    if (bounded && queue_full(r, q)) {
        bool bytes = r->qlen < r->lim.max_queue;
        r->stats.dropped_notifications++;
        uint64_t n = r->stats.dropped_notifications;
        pthread_mutex_unlock(&r->mu);
        if ((n & 1023) == 1)
            aur__log(r->h.log, AUR_LOG_WARN, r->tag,
                     "notification queue full (%s): dropping server "
                     "messages",
                     bytes ? "max_queued_bytes" : "4096 messages");
        json_object_put(q->msg);
        json_object_put(q->end_id);
        free(q);
        return;
    }
    q->gen = r->gen;
    if (first) {
        q->next = r->qhead;
        r->qhead = q;
        if (!r->qtail)
            r->qtail = q;
    } else {
        q->next = NULL;
        if (r->qtail)
            r->qtail->next = q;
        else
            r->qhead = q;
        r->qtail = q;
    }
    r->qlen++;
    r->qbytes += q->mem;
    if (r->qbytes > r->stats.queue_bytes_peak)
        r->stats.queue_bytes_peak = r->qbytes;
    /* Its turn, unless it has one (listed, run by a worker, or close's
     * for good).  A worker that cannot be made leaves the job listed: the
     * next item tries again, as does any other connection's push, and
     * close handles it at the latest. */
    int e = 0;
    if (!r->sched) {
        r->sched = true;
        e = aur__pool_push(&r->job);
    } else if (r->sched_failed && !r->stopping) {
        e = aur__pool_kick();
    }
    if (e && !r->sched_failed)
        r->sched_failed = true; /* logged once */
    else
        e = 0;
    pthread_mutex_unlock(&r->mu);
    if (e)
        aur__log(r->h.log, AUR_LOG_ERROR, r->tag,
                 "cannot start a dispatch thread (%s): what the server "
                 "sends that answers no request waits until one can be "
                 "made, or until close",
                 strerror(e));
}

bool aur__rpc_enqueue_msg(struct aur__rpc *r, struct json_object *msg,
                          size_t mem, unsigned stamp, bool bounded)
{
    struct aur__qitem *q = calloc(1, sizeof *q);
    if (!q) {
        json_object_put(msg);
        return false;
    }
    q->msg = msg;
    q->mem = mem;
    q->stamp = stamp;
    aur__rpc_enqueue(r, q, bounded, false);
    return true;
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
        aur__log(r->h.log, AUR_LOG_DEBUG, r->tag, "could not answer %s: %s",
                 method, err.msg);
    json_object_put(reply);
}

static void handle(struct aur__rpc *r, struct aur__qitem *q, bool overdue)
{
    struct json_object *m = NULL, *params = NULL;
    const char *method;

    if (q->end_id) {
        if (r->h.ended)
            r->h.ended(r->h.ud, q->end_id, &q->end);
        return;
    }
    if (!q->msg) {
        if (r->h.closed)
            r->h.closed(r->h.ud, q->has_err ? &q->err : NULL);
        return;
    }
    json_object_object_get_ex(q->msg, "method", &m);
    json_object_object_get_ex(q->msg, "params", &params);
    method = json_object_get_string(m);
    if (!method) {
        if (r->h.response)
            r->h.response(r->h.ud, q->msg);
    } else if (json_object_object_get_ex(q->msg, "id", NULL)) {
        if (!overdue) /* the server is being closed: no answer is owed */
            answer_request(r, q->msg, method, params);
    } else if (r->h.notification) {
        r->h.notification(r->h.ud, method, params, q->msg,
                          overdue ? q->stamp | AUR__RPC_OVERDUE : q->stamp);
    }
}

/* Handle up to max items, in order, on this thread, which holds the
 * connection's turn.  worker: when it stops, give the turn back unless
 * more waits (then true: the pool lists the job again); close keeps the
 * turn.  While closing, what arrived before close is handled until the
 * drain's deadline, and after it only counted (each quick). */
static bool run_items(struct aur__rpc *r, size_t max, bool worker)
{
    bool again;

    aur__rpc_running = r;
    pthread_mutex_lock(&r->mu);
    for (size_t n = 0; n < max && r->qhead; n++) {
        struct aur__qitem *q = r->qhead;
        bool overdue =
            r->stopping && aur__now_ms() >= r->stop_ms + AUR__RPC_DRAIN_MS;
        /* counted: what the handler only counts (a notification, or a
         * request left unanswered); the close marker and responses are
         * handled as always */
        if (overdue && q->msg &&
            json_object_object_get_ex(q->msg, "method", NULL))
            r->stats.overdue++;
        r->qhead = q->next;
        if (!r->qhead)
            r->qtail = NULL;
        r->qlen--;
        pthread_cond_signal(&r->qspace);
        bool stale = q->gen != r->gen;
        r->handling = !stale;
        r->handling_gen = q->gen;
        pthread_mutex_unlock(&r->mu);

        AUR_PERTURB("rpc.dispatch");
        /* A stale item comes from a connection that reopen replaced. */
        if (!stale)
            handle(r, q, overdue);
        json_object_put(q->msg);
        json_object_put(q->end_id);
        size_t mem = q->mem;
        free(q);

        pthread_mutex_lock(&r->mu);
        /* Its bytes counted until its tree was gone. */
        r->qbytes -= mem;
        pthread_cond_signal(&r->qspace);
        if (r->handling) {
            r->handling = false;
            pthread_cond_broadcast(&r->hcv);
        }
    }
    aur__rpc_running = NULL;
    /* Closing: close takes the turn from here (aur__rpc_queue_drain). */
    again = worker && r->qhead && !r->stopping;
    if (worker && !again) {
        r->sched = false;
        pthread_cond_broadcast(&r->qcv);
    }
    pthread_mutex_unlock(&r->mu);
    /* (given back: close may free r from here) */
    return again;
}

static bool serve(struct aur__pool_job *job)
{
    struct aur__rpc *r =
        (struct aur__rpc *)((char *)job - offsetof(struct aur__rpc, job));
    return run_items(r, BATCH, true);
}

void aur__rpc_queue_init(struct aur__rpc *r)
{
    r->job.run = serve;
    aur__pool_hold();
}

void aur__rpc_queue_drain(struct aur__rpc *r)
{
    pthread_mutex_lock(&r->mu);
    /* A worker in it gives the turn back at its next item (stopping);
     * a job still listed is taken off the list. */
    while (r->sched && !aur__pool_unlink(&r->job))
        pthread_cond_wait(&r->qcv, &r->mu);
    r->sched = true; /* close's, for good: nothing is pushed again */
    pthread_mutex_unlock(&r->mu);
    (void)run_items(r, SIZE_MAX, false);
    pthread_mutex_lock(&r->mu);
    uint64_t overdue = r->stats.overdue;
    pthread_mutex_unlock(&r->mu);
    if (overdue)
        aur__log(r->h.log, AUR_LOG_WARN, r->tag,
                 "close: %llu server messages that arrived before it were "
                 "not handled within its %d ms drain (events among them "
                 "are counted as dropped)",
                 (unsigned long long)overdue, AUR__RPC_DRAIN_MS);
}

void aur__rpc_queue_free(struct aur__rpc *r)
{
    aur__pool_release();
    for (struct aur__qitem *q = r->qhead, *n; q; q = n) {
        n = q->next;
        json_object_put(q->msg);
        json_object_put(q->end_id);
        free(q);
    }
    r->qhead = r->qtail = NULL;
    r->qlen = 0;
    r->qbytes = 0;
}
