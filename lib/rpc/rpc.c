/*
 * rpc.c - one JSON-RPC connection: open, close, reopen, and the caller's
 * side of a request (see rpc.h; the receive side is rpc_recv.c, the
 * dispatch queue rpc_queue.c, its shared workers rpc_pool.c).
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "rpc_int.h"

#include <json-c/json.h>

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
    aur__mono_cond_init(&r->qcv);
    aur__mono_cond_init(&r->qspace);
    aur__mono_cond_init(&r->fcv);
    aur__mono_cond_init(&r->hcv);
    r->tokens = r->lim.notify_burst * 1000;
    r->refill_at = aur__now_ms();
    aur__rpc_sink_init(r);
    aur__rpc_queue_init(r);

    if (!(r->close_item = calloc(1, sizeof *r->close_item))) {
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        goto fail;
    }
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
    AUR_PERTURB("rpc.close");
    /* What was queued is handled first (boundedly, on this thread): a
     * handler may answer server requests through the transport, which
     * must not be closed under it.  What arrives after that is only
     * queued and freed below. */
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    r->stop_ms = aur__now_ms();
    pthread_cond_broadcast(&r->qspace);
    pthread_cond_broadcast(&r->fcv);
    pthread_mutex_unlock(&r->mu);
    aur__rpc_queue_drain(r);
    if (r->conn)
        r->ops->close(r->conn, dl);
    r->conn = NULL;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    aur__rpc_fail_all(r, P_CLOSED);
    pthread_mutex_unlock(&r->mu);
    for (struct aur__pending *p = r->detached, *n; p; p = n) {
        n = p->dnext;
        aur__rpc_pending_free(p);
    }
    aur__rpc_queue_free(r);
    free(r->close_item);
    pthread_cond_destroy(&r->qcv);
    pthread_cond_destroy(&r->qspace);
    pthread_cond_destroy(&r->fcv);
    pthread_cond_destroy(&r->hcv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void aur__rpc_stop(struct aur__rpc *r, aur_deadline dl)
{
    if (r && r->conn && AUR_HAS(r->ops, stop))
        r->ops->stop(r->conn, dl);
}

bool aur__rpc_cork(struct aur__rpc *r, int on)
{
    if (!r || !r->conn || !AUR_HAS(r->ops, cork))
        return false;
    r->ops->cork(r->conn, on);
    return true;
}

int aur__rpc_reopen(struct aur__rpc *r, aur_deadline dl,
                    struct aur_error *err)
{
    int rc;
    if (!AUR_HAS(r->ops, reopen))
        return aur_fail(err, AUR_E_STATE, 0, "transport cannot reopen");
    pthread_mutex_lock(&r->mu);
    if (r->cancelled) { /* no process started only to be closed */
        pthread_mutex_unlock(&r->mu);
        return aur_fail(err, AUR_E_CANCELLED, 0, "cancelled");
    }
    r->gen++;
    /* The fresh process has negotiated nothing yet. */
    __atomic_store_n(&r->batches, false, __ATOMIC_RELEASE);
    aur__rpc_fail_all(r, P_CLOSED);
    /* A reader parked on the old connection must let it close. */
    pthread_cond_broadcast(&r->fcv);
    /* What the old connection said is queued as stale now and dropped,
     * but a dispatch worker may be inside a handler of it already: its
     * effect (the old end's "disconnected", a reply to the old process)
     * must land before the owner starts on the new connection, not after
     * it.  Bounded by dl; a handler's own waits are bounded too. */
    while (r->handling && r->handling_gen != r->gen &&
           aur__rpc_running != r) /* not from its own handler */
        if (aur__cond_wait_until(&r->hcv, &r->mu, dl) == ETIMEDOUT) {
            pthread_mutex_unlock(&r->mu);
            return aur_fail(err, AUR_E_TIMEOUT, 0,
                            "the old connection's handler outlived the "
                            "deadline");
        }
    pthread_mutex_unlock(&r->mu);
    rc = r->ops->reopen(r->conn, dl, err);
    pthread_mutex_lock(&r->mu);
    /* Whatever the old connection reported belongs to the old gen; a
     * fresh process starts with a full budget. */
    r->gen++;
    r->closed = rc != AUR_OK;
    r->close_reported = false;
    if (!r->close_item)
        r->close_item = calloc(1, sizeof *r->close_item);
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

int aur__rpc_listen(struct aur__rpc *r, aur_deadline dl, struct aur_error *err)
{
    if (!AUR_HAS(r->ops, listen))
        return AUR_OK;
    return r->ops->listen(r->conn, dl, err);
}

/* The message (params: transfer), or NULL when memory ran out. */
static struct json_object *envelope(const char *method,
                                    struct json_object *params,
                                    struct json_object *id)
{
    struct json_object *m = json_object_new_object();
    bool ok = aur__json_set(m, "jsonrpc", json_object_new_string("2.0"));

    ok = ok && (!id || aur__json_set(m, "id", aur__json_copy(id)));
    ok = ok && aur__json_set(m, "method", json_object_new_string(method));
    if (params && ok)
        ok = aur__json_set(m, "params", params);
    else
        json_object_put(params);
    if (ok)
        return m;
    json_object_put(m);
    return NULL;
}

/* AUR_E_CLOSED with the transport's reason (e.g. a budget that was
 * exceeded) in the text: it is what status and the journal show.
 * r->mu held. */
static int fail_closed(struct aur__rpc *r, struct aur_error *err)
{
    /* A connection given up for want of memory says so: the policy of
     * aur_host.h is AUR_E_NOMEM wherever memory ran out. */
    if (r->close_err.code == AUR_E_NOMEM)
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "%s", r->close_err.msg);
    if (r->close_err.code != AUR_OK)
        return aur_fail(err, AUR_E_CLOSED, r->close_err.code,
                        "connection closed: %s (%s)", r->close_err.msg,
                        aur_rc_word(r->close_err.code));
    return aur_fail(err, AUR_E_CLOSED, 0, "connection closed");
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
        return aur_fail(err, AUR_E_NOT_SENT, 0, "method name too long");
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
        return aur_fail(err, AUR_E_NOT_SENT, AUR_E_NOMEM, "out of memory");
    /* (request turns that into AUR_E_NOMEM, still not sent) */
    memcpy(line, head, (size_t)hn);
    memcpy(line + hn, params_json, params_len);
    line[len - 1] = '}';
    line[len] = '\0';
    if (AUR_HAS(r->ops, send_text)) {
        aur__rpc_in_send_text = true;
        rc = r->ops->send_text(r->conn, line, len, dl, err);
        aur__rpc_in_send_text = false;
    } else {
        struct json_object *msg = NULL;
        rc = aur__json_parse(line, len, AUR__JSON_MAX_DEPTH, &msg, err);
        if (rc != AUR_OK)
            rc = aur_fail(err, AUR_E_NOT_SENT, rc, "unparsable request");
        else
            rc = r->ops->send(r->conn, msg, dl, err);
        json_object_put(msg);
    }
    if (line != local)
        free(line);
    return rc;
}

static struct aur__pending *pending_alloc(const char *sid, bool detached,
                                          bool text_ok)
{
    /* malloc, not calloc: one a call, and glibc's calloc never takes
     * from the thread's cache of freed chunks. */
    struct aur__pending *p = malloc(sizeof *p);

    if (!p)
        return NULL;
    *p = (struct aur__pending){
        .refs = 1, .detached = detached, .text_ok = text_ok};
    if (sid && !(p->sid = strdup(sid))) {
        free(p);
        return NULL;
    }
    aur__mono_cond_init(&p->cv);
    return p;
}

/*
 * Put p in the table and send its request.  *maybe_sent (may be NULL)
 * says, on failure, whether the transport may have written any of it:
 * only AUR_E_NOT_SENT from the transport, or a refusal before the
 * transport saw it, says no.  On failure p is out of the table again.
 */
static int send_pending(struct aur__rpc *r, struct aur__pending *p,
                        const char *method, struct json_object *params,
                        const char *params_json, size_t params_len,
                        aur_deadline dl, bool *maybe_sent,
                        struct aur_error *err)
{
    struct json_object *msg;
    int rc;

    if (maybe_sent)
        *maybe_sent = false;
    pthread_mutex_lock(&r->mu);
    if (r->cancelled || r->closed || r->npending >= r->lim.max_pending) {
        rc = r->cancelled ? aur_fail(err, AUR_E_CANCELLED, 0, "cancelled")
             : r->closed  ? fail_closed(r, err)
                          : aur_fail(err, AUR_E_LIMIT, 0,
                                     "too many outstanding requests (%zu)",
                                     r->lim.max_pending);
        pthread_mutex_unlock(&r->mu);
        json_object_put(params);
        return rc;
    }
    if (p->sid) {
        p->id = json_object_new_string(p->sid);
    } else {
        p->num = r->next_id++;
        p->id = json_object_new_int64(p->num);
    }
    if (!p->id) {
        pthread_mutex_unlock(&r->mu);
        json_object_put(params);
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    }
    /* In the table before the bytes leave: the reply may beat send().
     * An answer before they could have left is forged; a transport that
     * holds or delays the request drops it meanwhile (aur_plugin.h, cork;
     * transport-stdio's stdio_ids.c), which leaves the few steps from here
     * to its write(). */
    aur__rpc_table_add(r, p);
    if (p->detached) {
        p->dnext = r->detached;
        r->detached = p;
    }
    pthread_mutex_unlock(&r->mu);

    AUR_PERTURB("rpc.send");
    if (params_json) {
        rc = send_text(r, method, p, params_json, params_len, dl, err);
    } else if (!(msg = envelope(method, params, p->id))) {
        rc = aur_fail(err, AUR_E_NOT_SENT, AUR_E_NOMEM, "out of memory");
    } else {
        rc = r->ops->send(r->conn, msg, dl, err);
        json_object_put(msg);
    }
    if (rc != AUR_OK) {
        if (maybe_sent)
            *maybe_sent = rc != AUR_E_NOT_SENT;
        /* Not sent for want of memory: the policy's own code. */
        if (rc == AUR_E_NOT_SENT && err && err->detail == AUR_E_NOMEM)
            rc = err->code = AUR_E_NOMEM;
        pthread_mutex_lock(&r->mu);
        aur__rpc_table_remove(r, p);
        pthread_mutex_unlock(&r->mu);
    }
    return rc;
}

/* One request with a waiter (or detached): send_pending's rules. */
static int request(struct aur__rpc *r, const char *method,
                   struct json_object *params, const char *params_json,
                   size_t params_len, const char *sid, bool detached,
                   bool text_ok, aur_deadline dl, struct aur__pending **out,
                   bool *maybe_sent, struct aur_error *err)
{
    struct aur__pending *p = pending_alloc(sid, detached, text_ok);
    int rc;

    if (maybe_sent)
        *maybe_sent = false;
    if (!p) {
        json_object_put(params);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    rc = send_pending(r, p, method, params, params_json, params_len, dl,
                      maybe_sent, err);
    if (rc != AUR_OK) {
        /* A detached one that got into the table stays on r->detached,
         * freed at close. */
        if (!detached || !p->id)
            aur__rpc_pending_free(p);
        return rc;
    }
    if (out)
        *out = p;
    return AUR_OK;
}

int aur__rpc_pending_new(bool text_ok, aur__rpc_done_fn *on_done, void *ud,
                         struct aur__pending **out, struct aur_error *err)
{
    struct aur__pending *p = pending_alloc(NULL, false, text_ok);

    if (!(*out = p))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    p->on_done = on_done;
    p->ud = ud;
    return AUR_OK;
}

int aur__rpc_request_pending(struct aur__rpc *r, struct aur__pending *p,
                             const char *method, const char *params_json,
                             size_t params_len, aur_deadline dl,
                             bool *maybe_sent, struct aur_error *err)
{
    int rc;

    /* p may end (on_done, then its collection) while the bytes leave. */
    aur__rpc_pending_ref(p);
    rc = send_pending(r, p, method, NULL, params_json, params_len, dl,
                      maybe_sent, err);
    aur__rpc_pending_put(p);
    return rc;
}

bool aur__rpc_claim(struct aur__pending *p)
{
    return __atomic_exchange_n(&p->claimed, 1, __ATOMIC_ACQ_REL) == 0;
}

void aur__rpc_pending_ref(struct aur__pending *p)
{
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
}

void aur__rpc_pending_put(struct aur__pending *p)
{
    aur__rpc_pending_free(p);
}

int aur__rpc_request(struct aur__rpc *r, const char *method,
                     struct json_object *params, const char *sid,
                     aur_deadline dl, struct aur__pending **out,
                     struct aur_error *err)
{
    return request(r, method, params, NULL, 0, sid, false, false, dl, out,
                   NULL, err);
}

int aur__rpc_request_text(struct aur__rpc *r, const char *method,
                          const char *params_json, size_t params_len,
                          bool text_ok, aur_deadline dl,
                          struct aur__pending **out, bool *maybe_sent,
                          struct aur_error *err)
{
    return request(r, method, NULL, params_json, params_len, NULL, false,
                   text_ok, dl, out, maybe_sent, err);
}

int aur__rpc_request_detached(struct aur__rpc *r, const char *method,
                              struct json_object *params, const char *sid,
                              aur_deadline dl, struct aur_error *err)
{
    return request(r, method, params, NULL, 0, sid, true, false, dl, NULL,
                   NULL, err);
}

int aur__rpc_wait(struct aur__rpc *r, struct aur__pending *p,
                  aur_deadline dl, bool keep_on_timeout,
                  struct json_object **reply, struct aur__rpc_end *end,
                  struct aur_error *err)
{
    return aur__rpc_wait_text(r, p, dl, keep_on_timeout, reply, NULL, NULL,
                              end, err);
}

int aur__rpc_wait_text(struct aur__rpc *r, struct aur__pending *p,
                       aur_deadline dl, bool keep_on_timeout,
                       struct json_object **reply, char **text,
                       size_t *text_len, struct aur__rpc_end *end,
                       struct aur_error *err)
{
    int rc = AUR_OK;
    /* A request this thread holds (a batch) must leave before it waits
     * for the answer. */
    aur__rpc_cork(r, AUR_CORK_OFF);
    pthread_mutex_lock(&r->mu);
    while (p->state == P_WAITING) {
        if (aur__cond_wait_until(&p->cv, &r->mu, dl) == ETIMEDOUT &&
            p->state == P_WAITING)
            break;
    }
    if (end)
        *end = p->end;
    switch (p->state) {
    case P_DONE:
        *reply = p->reply;
        p->reply = NULL;
        /* The waiter has it now: uncharged, unless it asked to keep it
         * counted (aur__rpc_keep_reply). */
        if (p->mem && aur__rpc_keep_reply)
            aur__rpc_kept_reply += (int64_t)p->mem;
        else if (p->mem)
            __atomic_sub_fetch(&r->held, (int64_t)p->mem, __ATOMIC_RELAXED);
        p->mem = 0;
        if (text) {
            *text = p->text;
            *text_len = p->text_len;
            p->text = NULL;
        }
        break;
    case P_ENDED:
        rc = aur_fail(err, p->end.code, p->end.http_status, "%s",
                      p->end.msg);
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
        aur__rpc_table_remove(r, p);
        break;
    }
    pthread_mutex_unlock(&r->mu);
    aur__rpc_pending_free(p);
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
    aur__rpc_table_remove(r, p);
    /* A reply that came after all: its tree goes with p. */
    if (p->mem)
        __atomic_sub_fetch(&r->held, (int64_t)p->mem, __ATOMIC_RELAXED);
    p->mem = 0;
    pthread_mutex_unlock(&r->mu);
    if (cancel && was_waiting) {
        if (AUR_HAS(r->ops, cancel)) {
            r->ops->cancel(r->conn, p->id);
        } else {
            struct json_object *params = json_object_new_object();
            json_object_object_add(params, "requestId", aur__json_copy(p->id));
            json_object_object_add(params, "reason",
                                   json_object_new_string("abandoned by host"));
            aur__rpc_notify(r, "notifications/cancelled", params,
                            aur__now_ms() + 1000, NULL);
        }
    }
    aur__rpc_pending_free(p);
}

int aur__rpc_notify(struct aur__rpc *r, const char *method,
                    struct json_object *params, aur_deadline dl,
                    struct aur_error *err)
{
    struct json_object *msg;
    int rc = AUR_OK;
    pthread_mutex_lock(&r->mu);
    bool closed = r->closed;
    if (closed)
        rc = fail_closed(r, err);
    pthread_mutex_unlock(&r->mu);
    if (closed) {
        json_object_put(params);
        return rc;
    }
    AUR_PERTURB("rpc.notify");
    msg = envelope(method, params, NULL);
    rc = r->ops->send(r->conn, msg, dl, err);
    json_object_put(msg);
    return rc;
}

void aur__rpc_cancel_waiters(struct aur__rpc *r)
{
    pthread_mutex_lock(&r->mu);
    r->cancelled = true;
    aur__rpc_fail_all(r, P_CANCELLED);
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
