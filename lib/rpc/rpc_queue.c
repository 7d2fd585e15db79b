/*
 * rpc_queue.c - the dispatch queue and its thread (see rpc_int.h).
 *
 * Notifications, server requests, responses to detached requests and the
 * end of the connection are handled one at a time on this thread, in
 * arrival order, so the owner's handlers never run concurrently.  The
 * thread is made when an item is queued and there is none, and ends after
 * IDLE_MS with nothing to do: an App costs its transport's reader alone
 * except while it is sending what needs handling.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "log.h"
#include "rpc_int.h"

#include <json-c/json.h>

/* How long a full queue makes the reader wait before it sheds. */
#define QUEUE_WAIT_MS 10000
/* How long close lets the dispatch thread finish what arrived before it
 * began (what arrives later is stamped as such and handled cheaply).
 * What is still queued then is handed over AUR__RPC_OVERDUE: counted by
 * its handler (an event as dropped), never silently freed. */
#define DRAIN_MS 2000
/* How long the dispatch thread waits for more before it ends.  Long
 * enough that a steady trickle (a log line a second) keeps one thread,
 * short enough that a burst's threads are gone soon after it. */
#ifndef AUR__RPC_IDLE_MS
#define AUR__RPC_IDLE_MS 1000
#endif

/* No room for q: the count bound, or the byte bound (a queue holding
 * nothing always takes one message, however big).  r->mu held. */
static bool queue_full(const struct aur__rpc *r, const struct aur__qitem *q)
{
    if (r->qlen >= r->lim.max_queue)
        return true;
    return r->lim.max_queue_bytes && r->qbytes > 0 &&
           r->qbytes + q->mem > r->lim.max_queue_bytes;
}

/* The dispatch thread, made when an item is queued and none runs (none
 * once close began: what arrives then is only freed).  One that ended
 * idle is joined first: it left the lock for good before it said so, so
 * the join waits for nothing but its return.  Tried again with each item
 * it could not be made for; returns the errno to log, the first time
 * only, else 0.  r->mu held. */
static int start_thread(struct aur__rpc *r)
{
    int e;

    if (r->thread_started || r->stopping)
        return 0;
    if (r->thread_idle) {
        pthread_join(r->thread, NULL);
        r->thread_idle = false;
    }
    e = pthread_create(&r->thread, NULL, aur__rpc_dispatch_main, r);
    if (e == 0) {
        r->thread_started = true;
        return 0;
    }
    if (r->thread_failed)
        return 0;
    r->thread_failed = true;
    return e;
}

void aur__rpc_enqueue(struct aur__rpc *r, struct aur__qitem *q, bool bounded,
                      bool first)
{
    pthread_mutex_lock(&r->mu);
    /* Backpressure, not loss: a flooding server waits for us (its pipe
     * fills up) until the dispatch thread has caught up; only a
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
    int e = start_thread(r);
    pthread_cond_signal(&r->qcv);
    pthread_mutex_unlock(&r->mu);
    if (e)
        aur__log(r->h.log, AUR_LOG_ERROR, r->tag,
                 "cannot start the dispatch thread (%s): what the server "
                 "sends that answers no request waits unhandled",
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

void *aur__rpc_dispatch_main(void *arg)
{
    struct aur__rpc *r = arg;
    aur_deadline drain_dl = AUR_NO_DEADLINE;
    size_t freed = 0; /* the bytes of the item handled last */

    for (;;) {
        struct aur__qitem *q;
        pthread_mutex_lock(&r->mu);
        /* Its bytes counted until its tree was gone (released here, under
         * the lock this loop takes anyway). */
        if (freed) {
            r->qbytes -= freed;
            pthread_cond_signal(&r->qspace);
            freed = 0;
        }
        if (r->handling) {
            r->handling = false;
            pthread_cond_broadcast(&r->hcv);
        }
        if (!r->qhead && !r->stopping) {
            aur_deadline idle = aur__now_ms() + AUR__RPC_IDLE_MS;
            while (!r->qhead && !r->stopping)
                if (aur__cond_wait_until(&r->qcv, &r->mu, idle) ==
                    ETIMEDOUT)
                    break;
            /* Nothing came: end.  The next item makes a thread anew
             * (start_thread joins this one), and close joins it. */
            if (!r->qhead && !r->stopping) {
                r->thread_started = false;
                r->thread_idle = true;
                pthread_mutex_unlock(&r->mu);
                /* (a new item's start_thread joins this thread) */
                AUR_PERTURB("rpc.idle_exit");
                return NULL;
            }
        }
        /* from close's start: a handler busy then uses up the drain */
        if (r->stopping && drain_dl == AUR_NO_DEADLINE)
            drain_dl = r->stop_ms + DRAIN_MS;
        q = r->qhead;
        /* Closing: what arrived before is still handled until the drain
         * deadline, and after it only counted (bounded by the queue's
         * bound, each quick); an empty queue ends the thread. */
        if (!q) {
            uint64_t overdue = r->stats.overdue;
            pthread_mutex_unlock(&r->mu);
            if (overdue)
                aur__log(r->h.log, AUR_LOG_WARN, r->tag,
                         "close: %llu server messages that arrived before "
                         "it were not handled within its %d ms drain "
                         "(events among them are counted as dropped)",
                         (unsigned long long)overdue, DRAIN_MS);
            break;
        }
        bool overdue = r->stopping && aur__now_ms() >= drain_dl;
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
        freed = q->mem;
        free(q);
    }
    return NULL;
}

void aur__rpc_queue_free(struct aur__rpc *r)
{
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
