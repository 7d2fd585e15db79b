/*
 * rpc.h - JSON-RPC over one transport connection: the single receive path.
 *
 * The transport hands every inbound message to the sink.  Responses are
 * correlated to waiting requests right there, on the transport's thread, so
 * a call costs no extra thread hop.  Notifications and server-to-client
 * requests are queued for the connection's dispatch: its items are handled
 * one at a time, in arrival order, on one of the worker threads every
 * connection shares (rpc_pool.h), or by close for what is left.
 *
 * Ids: requests get integers from a per-connection counter that never
 * repeats; the probe and listen requests use strings the caller picks, so
 * the two spaces cannot collide (ids are type-sensitive).
 *
 * Threads: aur__rpc_request / _notify / _wait may be called from any
 * thread, concurrently.  aur__rpc_open and aur__rpc_close belong to the
 * owner.  Handlers run on the connection's dispatch: one at a time, in
 * order, on a shared worker or close's thread (never the owner's other
 * threads, never two at once).
 */
#ifndef AUR_RPC_H
#define AUR_RPC_H

#include "aur_setup.h"

#include <pthread.h>

struct json_object;
struct aur__rpc;
struct aur__pending;
struct aur__log;

/*
 * How a request ended without a JSON-RPC response of its own: what the
 * transport observed (aur_request_end), or what this layer decided (a
 * response it had to refuse).  Never read out of a message's data.
 */
struct aur__rpc_end {
    bool ended;      /* false: the request got its response */
    int code;        /* aur_rc */
    bool delivered;  /* false only when no byte can have reached the server */
    int http_status; /* 0 = none; also set for a response that came with a
                        non-2xx HTTP status */
    char msg[AUR_ERR_MSG_SIZE];
};

/* Stamps handlers.ordered gives a notification at arrival. */
#define AUR__RPC_DROP 0u /* drop it now */
/* Set by this layer on an item that arrived before close began but is
 * handled after close's drain time ran out: the handler must only count
 * it (quick, no waits, no writes), never act on it. */
#define AUR__RPC_OVERDUE 0x80000000u

/* What the owner hears about, always on the connection's dispatch. */
struct aur__rpc_handlers {
    void *ud;
    struct aur__log *log; /* where this layer's lines go; NULL: the
                           * process default */
    /* Optional, on the transport's thread, for each notification as it
     * arrives, before it is queued: its effect is ordered with the
     * responses around it on the wire, and what was true at arrival is
     * judged at arrival.  Must be quick and must not send.  Returns
     * AUR__RPC_DROP or a stamp (non-zero) that notification receives. */
    unsigned (*ordered)(void *ud, const char *method,
                        struct json_object *params);
    /* A notification (borrowed) and its arrival stamp (1 without
     * ordered), with AUR__RPC_OVERDUE added past close's drain time. */
    void (*notification)(void *ud, const char *method,
                         struct json_object *params, struct json_object *msg,
                         unsigned stamp);
    /* A server-to-client request (borrowed).  Return a new result object
     * (transfer) or NULL to answer -32601 method not found. */
    struct json_object *(*request)(void *ud, const char *method,
                                   struct json_object *params);
    /* The response to a detached request (borrowed). */
    void (*response)(void *ud, struct json_object *msg);
    /* A detached request (id borrowed) ended without a response. */
    void (*ended)(void *ud, struct json_object *id,
                  const struct aur__rpc_end *end);
    /* The connection ended (once).  why NULL = clean EOF. */
    void (*closed)(void *ud, const struct aur_error *why);
    /* Optional, on the transport's thread: a top-level array was refused
     * (batches not allowed on this session, or a malformed batch).  It
     * may have carried any message, a change notice included.  Must be
     * quick and must not send. */
    void (*batch_refused)(void *ud);
    /* Optional, on the transport's thread: read a response straight from
     * its text, without a tree, for a waiter that takes text
     * (aur__rpc_request_text with text_ok).  True with the id and the
     * text (transfer) the waiter gets; false, nothing allocated: the
     * frame goes the general way.  The protocol layer hands this in
     * (MCP's tools/call reply, aur__call_reply_scan); this layer knows
     * no method's result. */
    bool (*reply_scan)(const char *buf, size_t len, int64_t *id,
                       char **text, size_t *text_len);
};

struct aur__rpc_limits {
    size_t max_pending;      /* outstanding requests at once */
    size_t max_queue;        /* queued notifications before the reader
                                waits (backpressure), then drops */
    /* The same bound in bytes: the memory of the queued messages (as
     * aur__json_mem counts their trees).  A message bigger than the whole
     * budget still enters an empty queue.  0 = none. */
    size_t max_queue_bytes;
    /*
     * The memory the connection's parsed messages may hold outside the
     * queue (max_app_memory_bytes): a message while it is parsed, a
     * response until its waiter takes it, and what the owner charges
     * with aur__rpc_mem_adjust (the catalog).  A message that would take
     * more than what is left is refused while it is parsed (a response
     * ends its request with AUR_E_LIMIT naming the key).  0 = none.
     */
    size_t max_mem;
    /*
     * Server-initiated messages (notifications and requests), counted at
     * intake on the transport's thread: a token bucket of notify_burst
     * tokens refilled at notify_rate per second.  An empty bucket makes
     * the connection faulty: it counts as closed with AUR_E_LIMIT (every
     * waiter fails, handlers.closed hears why) and nothing more is read
     * from it until close or reopen.  notify_rate 0 = no limit.
     */
    int64_t notify_rate;
    int64_t notify_burst;
};

/*
 * Open the transport (ops from the plugin, state its init state) and hold
 * the shared dispatch workers.  tag names the App in logs.  On failure nothing is
 * left running.
 */
int aur__rpc_open(const struct aur_transport_ops *ops, void *tstate,
                  const struct aur_cfg *endpoint,
                  const struct aur__rpc_handlers *h,
                  const struct aur__rpc_limits *lim, const char *tag,
                  aur_deadline dl, struct aur__rpc **out,
                  struct aur_error *err);

/* Handle what is queued (bounded, on this thread), close the
 * transport (bounded by dl), fail every waiter with AUR_E_CLOSED and
 * free.  NULL allowed. */
void aur__rpc_close(struct aur__rpc *r, aur_deadline dl);
/* Begin the close without waiting (the transport's stop, when it has
 * one): the server is told to leave and its escalation runs toward dl
 * while the owner closes others.  aur__rpc_close still follows.  The
 * owner's thread, never concurrent with close or reopen. */
void aur__rpc_stop(struct aur__rpc *r, aur_deadline dl);
/* The transport's cork hook (ABI 1.6), when it has one: on is
 * AUR_CORK_ON, _TRY or _OFF (aur_plugin.h).  The caller keeps r from
 * closing in between (app->batched).  false: r cannot hold requests. */
bool aur__rpc_cork(struct aur__rpc *r, int on);

/* Restart the transport from scratch (transport reopen hook), failing
 * current waiters.  AUR_E_STATE if the transport cannot.  When it
 * returns, no handler of the old connection runs or will run: what was
 * queued is dropped, and one in progress on a dispatch worker has
 * returned (AUR_E_TIMEOUT, nothing restarted, if it did not by dl). */
int aur__rpc_reopen(struct aur__rpc *r, aur_deadline dl,
                    struct aur_error *err);

/* Wait until the transport's server-push channel is established (its
 * listen hook, ABI 1.3); AUR_OK without the hook. */
int aur__rpc_listen(struct aur__rpc *r, aur_deadline dl, struct aur_error *err);

/* From now on a top-level array from the server is a JSON-RPC batch,
 * each element taken in order as its own message (docs/protocol.md,
 * Batches): only for a session that negotiated revision 2025-03-26, and
 * called before anything tells the server the session is up. */
void aur__rpc_allow_batches(struct aur__rpc *r);

/* Tell the transport the negotiated protocol (if it cares). */
int aur__rpc_set_protocol(struct aur__rpc *r, int modern, const char *version,
                          struct aur_error *err);

/*
 * Send a request.  params (transfer, may be NULL) becomes the "params"
 * member.  sid: a string id, or NULL for the next integer id.  *out is a
 * handle to wait on; release it with aur__rpc_wait or aur__rpc_abandon.
 */
int aur__rpc_request(struct aur__rpc *r, const char *method,
                     struct json_object *params, const char *sid,
                     aur_deadline dl, struct aur__pending **out,
                     struct aur_error *err);

/*
 * Like aur__rpc_request (integer id), with params already serialised
 * (params_json: one compact JSON object, borrowed).  Sent as text when the
 * transport takes text, else parsed and sent as an object.  text_ok:
 * the waiter (aur__rpc_wait_text) also takes a reply in the form the
 * handlers' reply_scan gives, when the transport hands in text.
 * On failure *maybe_sent says whether any byte may have left: false when
 * this layer refused before the transport saw it or the transport said
 * AUR_E_NOT_SENT; true for every other transport failure.
 */
int aur__rpc_request_text(struct aur__rpc *r, const char *method,
                          const char *params_json, size_t params_len,
                          bool text_ok, aur_deadline dl,
                          struct aur__pending **out, bool *maybe_sent,
                          struct aur_error *err);

/* Send a long-lived request (subscriptions/listen): nobody waits for it;
 * its response, if one ever comes, goes to handlers.response on the
 * connection's dispatch.  params (transfer). */
int aur__rpc_request_detached(struct aur__rpc *r, const char *method,
                              struct json_object *params, const char *sid,
                              aur_deadline dl, struct aur_error *err);

/*
 * Wait for the response to p until dl.  On AUR_OK *reply (transfer) is the
 * whole response object (result or error member).  Otherwise
 * AUR_E_TIMEOUT (dl passed), AUR_E_CLOSED (connection lost while
 * waiting), AUR_E_CANCELLED (aur__rpc_cancel_waiters), or the code of a
 * request end (end->ended).  end (may be NULL) is always filled: ended,
 * delivered and http_status (also for a reply that came with a non-2xx
 * HTTP status).  p is released in every case, except on AUR_E_TIMEOUT
 * when keep_on_timeout is set (then wait again or abandon).
 */
int aur__rpc_wait(struct aur__rpc *r, struct aur__pending *p,
                  aur_deadline dl, bool keep_on_timeout,
                  struct json_object **reply, struct aur__rpc_end *end,
                  struct aur_error *err);
/* Like aur__rpc_wait; for a request sent with text_ok, a reply that came
 * as text sets *text (transfer, *text_len its length, which may hold
 * U+0000) and leaves *reply NULL.  Exactly one of the two is set on
 * AUR_OK; *text is only touched then. */
int aur__rpc_wait_text(struct aur__rpc *r, struct aur__pending *p,
                       aur_deadline dl, bool keep_on_timeout,
                       struct json_object **reply, char **text,
                       size_t *text_len, struct aur__rpc_end *end,
                       struct aur_error *err);

/*
 * A request nobody waits on (aur_mcp_call_start): when its response, its
 * end, or the connection's close, loss or cancel comes, on_done(ud, p,
 * locked) runs instead of waking a waiter:
 *   locked false: on the thread that delivered it (the transport's, or
 *     one inside a send), no lock of this layer held;
 *   locked true: with r->mu held (close, loss, cancel, reopen): it may
 *     only hand p on, under a lock of its own that it never holds while
 *     taking r->mu.
 * It may run more than once (say, a close after a response): the first
 * to win aur__rpc_claim(p) ends the call.  Whoever does collects p with
 * aur__rpc_wait_text (it does not wait then) or aur__rpc_abandon, which
 * release the one reference *out holds.  Then aur__rpc_request_pending
 * sends it.  text_ok as for aur__rpc_request_text.
 */
typedef void aur__rpc_done_fn(void *ud, struct aur__pending *p, bool locked);
int aur__rpc_pending_new(bool text_ok, aur__rpc_done_fn *on_done, void *ud,
                         struct aur__pending **out, struct aur_error *err);
/* Send p's request (params_json as for aur__rpc_request_text).  From the
 * moment p is in the table on_done may run, even before this returns.
 * On failure p is out of the table, *maybe_sent as for _request_text,
 * and p's end is the caller's to decide (after winning the claim). */
int aur__rpc_request_pending(struct aur__rpc *r, struct aur__pending *p,
                             const char *method, const char *params_json,
                             size_t params_len, aur_deadline dl,
                             bool *maybe_sent, struct aur_error *err);
/* true for the first caller only, ever, for p. */
bool aur__rpc_claim(struct aur__pending *p);
/* One more reference on p, and its release (any thread). */
void aur__rpc_pending_ref(struct aur__pending *p);
void aur__rpc_pending_put(struct aur__pending *p);

/* Forget p: a late response is dropped.  cancel = also tell the server
 * (transport cancel hook, else notifications/cancelled). */
void aur__rpc_abandon(struct aur__rpc *r, struct aur__pending *p,
                      bool cancel);

/* The id p was sent with (borrowed). */
struct json_object *aur__rpc_pending_id(struct aur__pending *p);

/* Send a notification; params (transfer, may be NULL). */
int aur__rpc_notify(struct aur__rpc *r, const char *method,
                    struct json_object *params, aur_deadline dl,
                    struct aur_error *err);

/* Wake every waiter with AUR_E_CANCELLED, now and for later waits. */
void aur__rpc_cancel_waiters(struct aur__rpc *r);

/* True once the transport reported the connection closed. */
bool aur__rpc_is_closed(struct aur__rpc *r);

/* Counters for status and tests. */
struct aur__rpc_stats {
    uint64_t dropped_frames;   /* responses nobody waited for, bad shapes */
    uint64_t dropped_notifications; /* server messages shed, queue full */
    uint64_t overdue; /* handled only as counted: close's drain ran out */
    bool faulty;               /* the notification budget was exceeded */
    uint64_t refused_memory;   /* messages refused for max_mem */
    size_t queue_bytes_peak;   /* the most the queue held, in bytes */
    int64_t held_peak;         /* the most charged outside the queue */
};
void aur__rpc_get_stats(struct aur__rpc *r, struct aur__rpc_stats *s);

/*
 * The memory account of max_mem (aur__rpc_limits).  The owner charges
 * what it keeps of the messages (delta > 0: the catalog, a page while its
 * tools are bound) and releases it (delta < 0).  Never fails: what is
 * charged only lowers what later messages may take.  Any thread.
 */
void aur__rpc_mem_adjust(struct aur__rpc *r, int64_t delta);
/* What is left of that account now (INT64_MAX: no max_mem); a snapshot
 * that the reader may lower at any moment.  Any thread. */
int64_t aur__rpc_mem_left(struct aur__rpc *r);

/*
 * For the calling thread only: while aur__rpc_keep_reply is true, the
 * response aur__rpc_wait / _wait_text hands over stays charged, and its
 * charge is added to aur__rpc_kept_reply (the caller releases it with
 * aur__rpc_mem_adjust once the tree is gone).  Lets a caller that keeps
 * a big reply for a while (a tools/list page) keep it counted.
 */
extern _Thread_local bool aur__rpc_keep_reply;
extern _Thread_local int64_t aur__rpc_kept_reply;

/*
 * rpc_recv.c: the id of a frame that does not parse, read leniently: the
 * first member "id" directly inside the outermost object whose value is
 * an integer (1, *num) or a string without escapes (2, copied into sid).
 * 0: none found.  Used only to end at once, as refused, the request such
 * a frame claims to answer, instead of letting it wait for its deadline.
 */
int aur__rpc_peek_id(const char *buf, size_t len, int64_t *num, char *sid,
                     size_t sid_size);

#endif
