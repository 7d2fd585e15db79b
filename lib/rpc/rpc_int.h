/*
 * rpc_int.h - private to the JSON-RPC layer (rpc.c, rpc_recv.c,
 * rpc_queue.c).
 *
 *   rpc.c        open, close, reopen; the caller's side: request, wait,
 *                abandon, notify
 *   rpc_recv.c   the sink the transport calls: correlation of responses
 *                and request ends, the notification budget, what is
 *                refused and why
 *   rpc_queue.c  the dispatch queue (notifications, server requests,
 *                detached responses, the close item) and its handling
 *   rpc_pool.c   the worker threads shared by every connection
 *                (rpc_pool.h: knows jobs, not connections)
 *
 * Calls go rpc.c -> rpc_recv.c -> rpc_queue.c -> rpc_pool.c, never back
 * (a pool worker runs a connection through its job's function pointer).
 *
 * Locking: r->mu guards every field below it in struct aur__rpc and
 * every pending's state, reply, text and end.  Nothing is called with
 * r->mu held that could take another lock of ours, except the transport
 * never: the transport is only called without r->mu.
 */
#ifndef AUR_RPC_INT_H
#define AUR_RPC_INT_H

#include "aur_setup.h"

#include "rpc.h"
#include "rpc_pool.h"

#include <pthread.h>

#define AUR__RPC_BUCKETS 64

enum aur__pstate { P_WAITING = 0, P_DONE, P_ENDED, P_CLOSED, P_CANCELLED };

struct aur__pending {
    struct json_object *id; /* as sent, with its JSON type; own object */
    int64_t num;
    char *sid; /* NULL for integer ids */
    pthread_cond_t cv;
    struct json_object *reply;
    char *text;   /* or the reply's joined text (call_reply.c) */
    size_t text_len;
    bool text_ok; /* the waiter takes a reply as text */
    enum aur__pstate state;
    size_t mem; /* reply's charge on r->held until the waiter takes it */
    struct aur__rpc_end end; /* P_ENDED, and http_status of a P_DONE
                                reply that came with a non-2xx status */
    bool in_table;
    bool detached; /* its reply goes to dispatch; freed at close */
    /* aur__rpc_pending_new: no waiter; its end is told to on_done. */
    aur__rpc_done_fn *on_done;
    void *ud;
    int claimed; /* aur__rpc_claim (atomic) */
    /* 1 (the owner) + 1 while a completion signals after unlocking: the
     * last one out frees. */
    int refs;
    struct aur__pending *next;
    struct aur__pending *dnext; /* r->detached list */
};

struct aur__qitem {
    struct json_object *msg; /* NULL: the connection closed, or an end */
    size_t mem; /* msg's memory, counted in r->qbytes */
    unsigned gen;
    unsigned stamp; /* what handlers.ordered said when it arrived */
    bool has_err;
    struct aur_error err;
    struct json_object *end_id; /* a detached request's end (own object) */
    struct aur__rpc_end end;
    struct aur__qitem *next;
};

/* How long close lets what arrived before it be handled (what arrives
 * later is stamped as such and handled cheaply).  What is still queued
 * then is handed over AUR__RPC_OVERDUE: counted by its handler (an event
 * as dropped), never silently freed. */
#define AUR__RPC_DRAIN_MS 2000

struct aur__rpc {
    const struct aur_transport_ops *ops;
    void *tstate;
    struct aur_conn *conn;
    struct aur_sink sink;
    struct aur__rpc_handlers h;
    struct aur__rpc_limits lim;
    char tag[192];

    pthread_mutex_t mu; /* everything below */
    struct aur__pending *table[AUR__RPC_BUCKETS];
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
    /* A top-level array is a batch to take, not a malformed frame (the
     * session negotiated 2025-03-26); set once, read by the reader
     * without mu (atomic). */
    bool batches;
    bool close_reported; /* handlers.closed is queued for this gen */
    /* The item that reports this gen's close, made while memory was
     * there: an App must hear that its connection ended even when that
     * happened for want of memory. */
    struct aur__qitem *close_item;
    pthread_cond_t fcv;  /* wakes readers parked on a faulty connection */

    pthread_cond_t qcv;    /* a worker gave the turn back (close waits) */
    pthread_cond_t qspace; /* signalled when the queue has room */
    /* A handler runs for an item of handling_gen (on a pool worker or
     * close's thread); reopen waits on hcv until a handler of the old
     * connection is done. */
    bool handling;
    unsigned handling_gen;
    pthread_cond_t hcv;
    struct aur__qitem *qhead, *qtail;
    size_t qlen;
    size_t qbytes; /* memory of the queued items and the one handled */
    int64_t held;  /* max_mem account: replies not yet taken, owner
                      charges (aur__rpc_mem_adjust); read without mu by
                      the reader (atomic) */
    bool stopping;  /* close began: the queue drains on close's thread */
    aur_deadline stop_ms; /* when close began (AUR__RPC_DRAIN_MS from it) */
    /* The connection's turn in the shared dispatch pool (rpc_pool.h):
     * true from the moment its job is pushed until the worker that ran
     * it finds its queue empty, so one thread at most handles its items.
     * close takes the turn for good (aur__rpc_queue_drain). */
    bool sched;
    bool sched_failed; /* no worker could be made for it: logged once */
    struct aur__pool_job job; /* the pool's fields are the pool's lock's */
};

/* ---- rpc_recv.c ---------------------------------------------------- */

/* Fill r->sink with the receive hooks. */
void aur__rpc_sink_init(struct aur__rpc *r);

/* The pending table; r->mu held. */
struct aur__pending *aur__rpc_table_find(struct aur__rpc *r, int64_t num,
                                         const char *sid);
void aur__rpc_table_add(struct aur__rpc *r, struct aur__pending *p);
void aur__rpc_table_remove(struct aur__rpc *r, struct aur__pending *p);
/* Fail every table entry with state s. */
void aur__rpc_fail_all(struct aur__rpc *r, enum aur__pstate s);
/* Drop one reference (any thread, no lock). */
void aur__rpc_pending_free(struct aur__pending *p);
/* Set while this thread is inside the transport's send_text: a transport
 * may read replies on the sending thread (transport-stdio does, for a
 * lone tools/call), and such a reader is never parked on a faulty
 * connection. */
extern _Thread_local bool aur__rpc_in_send_text;
/* The connection whose item this thread is handling, or NULL: a handler
 * that reopens its own connection must not wait for itself. */
extern _Thread_local struct aur__rpc *aur__rpc_running;

/* ---- rpc_queue.c --------------------------------------------------- */

/* Queue an item for handling off the reader (q allocated by the caller,
 * transfer).  bounded: wait for room (backpressure) up to a bound, then
 * shed it (counted).  first: put it at the head.  Takes r->mu. */
void aur__rpc_enqueue(struct aur__rpc *r, struct aur__qitem *q, bool bounded,
                      bool first);
/* A message item (msg transfer, mem its memory) with its arrival
 * stamp.  false: out of memory, msg freed and lost (the caller gives the
 * connection up: aur__rpc_lost). */
bool aur__rpc_enqueue_msg(struct aur__rpc *r, struct json_object *msg,
                          size_t mem, unsigned stamp, bool bounded);
/* A message of len bytes (0: a request's end) was lost for want of
 * memory: the connection is given up (rpc_recv.c, go_faulty) with
 * AUR_E_NOMEM.  Takes r->mu. */
void aur__rpc_lost(struct aur__rpc *r, size_t len);
/* Set the connection's pool job up and hold the pool (open, before
 * anything that can fail: aur__rpc_queue_free releases it). */
void aur__rpc_queue_init(struct aur__rpc *r);
/* Close's part: take the connection's turn from the pool (waiting for
 * a worker that runs it), then handle what is queued on this thread,
 * under the drain rules, and log what was overdue.  Nothing is scheduled
 * for r afterwards.  r->stopping set by the caller. */
void aur__rpc_queue_drain(struct aur__rpc *r);
/* Free what is left in the queue and release the pool (close, after
 * the drain and the transport's close). */
void aur__rpc_queue_free(struct aur__rpc *r);

#endif
