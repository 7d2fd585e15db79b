/*
 * rpc_recv.c - the sink a transport calls (see rpc_int.h): responses are
 * correlated to waiting requests right here, on the transport's thread,
 * so a call costs no extra thread hop; everything else is queued for the
 * connection's dispatch (rpc_queue.c).
 *
 * A response this layer cannot accept is never silently dropped when it
 * names a request that is waiting: that request ends at once as refused
 * (AUR_E_PROTOCOL, delivered), so a malformed answer costs no deadline.
 * Facts about how a request travelled come only from on_request_end,
 * never from a message's data.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "jsonx.h"
#include "log.h"
#include "rpc_int.h"

#include <json-c/json.h>

/* How long a reader of a faulty connection is parked per message. */
#define PARK_MS 10000

_Thread_local bool aur__rpc_in_send_text;
_Thread_local bool aur__rpc_keep_reply;
_Thread_local int64_t aur__rpc_kept_reply;

/* r->held changes under r->mu; the reader reads it without (atomic). */
static void held_add(struct aur__rpc *r, int64_t delta)
{
    int64_t v = __atomic_add_fetch(&r->held, delta, __ATOMIC_RELAXED);
    if (v > r->stats.held_peak)
        r->stats.held_peak = v;
}

void aur__rpc_mem_adjust(struct aur__rpc *r, int64_t delta)
{
    if (!r || !delta)
        return;
    pthread_mutex_lock(&r->mu);
    held_add(r, delta);
    pthread_mutex_unlock(&r->mu);
}

int64_t aur__rpc_mem_left(struct aur__rpc *r)
{
    if (!r->lim.max_mem)
        return INT64_MAX;
    return (int64_t)r->lim.max_mem - __atomic_load_n(&r->held,
                                                     __ATOMIC_RELAXED);
}

static size_t bucket_of(int64_t num, const char *sid)
{
    uint64_t h = (uint64_t)num;
    if (sid) {
        h = 1469598103934665603ull;
        for (const char *p = sid; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return (size_t)(h % AUR__RPC_BUCKETS);
}

void aur__rpc_table_add(struct aur__rpc *r, struct aur__pending *p)
{
    size_t b = bucket_of(p->num, p->sid);
    p->next = r->table[b];
    r->table[b] = p;
    p->in_table = true;
    r->npending++;
    if (p->text_ok)
        __atomic_store_n(&r->text_waiters, r->text_waiters + 1,
                         __ATOMIC_RELEASE);
}

void aur__rpc_table_remove(struct aur__rpc *r, struct aur__pending *p)
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

struct aur__pending *aur__rpc_table_find(struct aur__rpc *r, int64_t num,
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

void aur__rpc_pending_free(struct aur__pending *p)
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

void aur__rpc_fail_all(struct aur__rpc *r, enum aur__pstate s)
{
    for (size_t b = 0; b < AUR__RPC_BUCKETS; b++) {
        struct aur__pending *p = r->table[b], *next;
        for (; p; p = next) {
            next = p->next;
            p->state = s;
            p->in_table = false;
            p->next = NULL;
            if (p->on_done)
                p->on_done(p->ud, p, true);
            else
                pthread_cond_signal(&p->cv);
        }
        r->table[b] = NULL;
    }
    r->npending = 0;
    __atomic_store_n(&r->text_waiters, 0, __ATOMIC_RELAXED);
}

/* p got its reply, text or end: wake its waiter.  r->mu held; released. */
static void complete(struct aur__rpc *r, struct aur__pending *p,
                     enum aur__pstate s)
{
    aur__rpc_table_remove(r, p);
    p->state = s;
    /* Signal after unlocking, so the woken waiter does not block at once
     * on r->mu (two more futex calls and a context switch per call); the
     * extra reference keeps p alive until then. */
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->mu);
    AUR_PERTURB("rpc.complete");
    if (p->on_done)
        p->on_done(p->ud, p, false); /* the call ends on this thread */
    else
        pthread_cond_signal(&p->cv);
    aur__rpc_pending_free(p);
}

static void count_drop(struct aur__rpc *r)
{
    pthread_mutex_lock(&r->mu);
    r->stats.dropped_frames++;
    pthread_mutex_unlock(&r->mu);
}

/* The table key of a response id, false when it cannot name a request. */
static bool key_of(struct json_object *id, int64_t *num, const char **sid)
{
    *num = 0;
    *sid = NULL;
    if (json_object_is_type(id, json_type_string)) {
        *sid = json_object_get_string(id);
        /* Our string ids hold no U+0000: such an id names none of ours. */
        return strlen(*sid) == (size_t)json_object_get_string_len(id);
    }
    if (json_object_is_type(id, json_type_int)) {
        *num = json_object_get_int64(id);
        return true;
    }
    return false;
}

/*
 * End the request (num, sid) without a response: its waiter, or for a
 * detached request the connection's dispatch, hears end.  reply (transfer, may
 * be NULL) completes it as a response instead (an error the server sent
 * with a non-2xx status).  false: no such request is waiting.
 */
static bool end_request(struct aur__rpc *r, int64_t num, const char *sid,
                        const struct aur__rpc_end *end,
                        struct json_object *reply)
{
    struct aur__pending *p;

    pthread_mutex_lock(&r->mu);
    p = aur__rpc_table_find(r, num, sid);
    if (!p) {
        pthread_mutex_unlock(&r->mu);
        json_object_put(reply);
        return false;
    }
    if (p->detached) {
        struct aur__qitem *q = calloc(1, sizeof *q);
        aur__rpc_table_remove(r, p);
        pthread_mutex_unlock(&r->mu);
        if (q && !reply && !(q->end_id = aur__json_copy(p->id))) {
            free(q);
            q = NULL;
        }
        if (!q) {
            json_object_put(reply);
            aur__rpc_lost(r, 0);
            return true;
        }
        q->msg = reply;
        if (!reply)
            q->end = *end;
        aur__rpc_enqueue(r, q, false, false);
        return true;
    }
    p->end = *end;
    if (reply) {
        p->reply = reply;
        p->end.ended = false;
        complete(r, p, P_DONE);
    } else {
        complete(r, p, P_ENDED);
    }
    return true;
}

/* A response we refuse for its shape: end what it names, if anything. */
static void refuse(struct aur__rpc *r, bool have_key, int64_t num,
                   const char *sid, const char *why)
{
    struct aur__rpc_end end = {.ended = true, .code = AUR_E_PROTOCOL,
                               .delivered = true};
    snprintf(end.msg, sizeof end.msg,
             "the server's response was refused: %.160s", why);
    count_drop(r);
    if (have_key && end_request(r, num, sid, &end, NULL)) {
        aur__log(r->h.log, AUR_LOG_WARN, r->tag, "refused a response (%s); its "
                 "request ended", why);
        return;
    }
    aur__log(r->h.log, AUR_LOG_WARN, r->tag, "dropped a message: %s", why);
}

static void deliver_response(struct aur__rpc *r, struct json_object *msg,
                             size_t mem, int64_t num, const char *sid)
{
    struct aur__pending *p;

    pthread_mutex_lock(&r->mu);
    p = aur__rpc_table_find(r, num, sid);
    if (p && p->detached) {
        aur__rpc_table_remove(r, p);
        pthread_mutex_unlock(&r->mu);
        if (!aur__rpc_enqueue_msg(r, msg, mem, 1, false))
            aur__rpc_lost(r, mem);
        return;
    }
    if (p) {
        /* Charged until its waiter takes it (rpc.c). */
        p->reply = msg;
        p->mem = mem;
        held_add(r, (int64_t)mem);
        complete(r, p, P_DONE);
        return;
    }
    r->stats.dropped_frames++;
    pthread_mutex_unlock(&r->mu);
    aur__log(r->h.log, AUR_LOG_DEBUG, r->tag,
             "dropped a response nobody waits for");
    json_object_put(msg);
}

/*
 * A faulty connection is not read any further: the reader is parked here
 * (PARK_MS per message at most) until close or reopen, so a flooding
 * server stalls on its full pipe instead of costing us a core.  r->mu
 * held.
 */
static void park_faulty(struct aur__rpc *r)
{
    unsigned gen = r->gen;
    aur_deadline dl = aur__now_ms() + PARK_MS;
    if (aur__rpc_in_send_text)
        return;
    while (r->faulty && r->gen == gen && !r->stopping)
        if (aur__cond_wait_until(&r->fcv, &r->mu, dl) == ETIMEDOUT)
            break;
}

/* The item that reports this gen's close, once (NULL after the first
 * time): the one made in advance, else a new one.  r->mu held. */
static struct aur__qitem *close_report(struct aur__rpc *r)
{
    struct aur__qitem *q = r->close_item;

    if (r->close_reported)
        return NULL;
    r->close_reported = true;
    r->close_item = NULL;
    return q ? q : calloc(1, sizeof *q);
}

/*
 * The connection cannot be trusted any more: everything waiting ends
 * with why, the App is marked unavailable at once (not after what it
 * already sent is handled), and the reader is parked from here on.
 * r->mu held; released.
 */
static void go_faulty(struct aur__rpc *r, const struct aur_error *why)
{
    struct aur__qitem *q;

    __atomic_store_n(&r->faulty, true, __ATOMIC_RELEASE);
    r->stats.faulty = true;
    r->closed = true;
    r->close_err = *why;
    aur__rpc_fail_all(r, P_CLOSED);
    q = close_report(r);
    pthread_mutex_unlock(&r->mu);
    aur__log(r->h.log, AUR_LOG_WARN, r->tag, "%s", why->msg);
    if (q) {
        q->has_err = true;
        q->err = *why;
        aur__rpc_enqueue(r, q, false, true);
    }
}

/* A message lost for want of memory may have been anything (a reply, a
 * change notice): nothing waiting can be trusted to hear its end, so the
 * connection ends here for everyone. */
void aur__rpc_lost(struct aur__rpc *r, size_t len)
{
    struct aur_error why;

    if (len)
        aur_fail(&why, AUR_E_NOMEM, ENOMEM, "%s: out of memory for a "
                 "message of %zu bytes, which is lost; the App is treated "
                 "as faulty", r->tag, len);
    else
        aur_fail(&why, AUR_E_NOMEM, ENOMEM, "%s: out of memory for the end "
                 "of a request, which is lost; the App is treated as faulty",
                 r->tag);
    pthread_mutex_lock(&r->mu);
    if (r->faulty)
        pthread_mutex_unlock(&r->mu);
    else
        go_faulty(r, &why);
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
    go_faulty(r, &why);
    return false;
}

/* Every inbound message, parsed; mem its memory (aur__json_mem). */
static void take_message(struct aur__rpc *r, struct json_object *msg,
                         size_t mem)
{
    static const char *const keys[] = {"jsonrpc", "method", "id", "result",
                                       "error"};
    struct json_object *m[5], *method, *id;
    const char *sid = NULL, *why;
    bool has[5], have_key = false;
    int64_t num = 0;

    AUR_PERTURB("rpc.sink");
    if (__atomic_load_n(&r->faulty, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&r->mu);
        park_faulty(r);
        pthread_mutex_unlock(&r->mu);
        json_object_put(msg);
        return;
    }
    aur__json_pick(msg, keys, m, has, 5);
    method = m[1];
    id = m[2];
    if (has[2] && !has[1])
        have_key = key_of(id, &num, &sid);
    if (!aur__json_str_is(m[0], "2.0")) {
        why = "not JSON-RPC 2.0";
        goto refused;
    }
    if (has[1]) {
        const char *mt = aur__json_name(method);
        if (!mt) {
            why = "a method that is not a name";
            goto refused;
        }
        /* Counted before anything else sees it: a flood is detected
         * here, on the reader, without being queued. */
        if (!spend_token(r)) {
            json_object_put(msg);
            return;
        }
        unsigned stamp = 1;
        if (!has[2] && r->h.ordered) {
            struct json_object *params = NULL;
            json_object_object_get_ex(msg, "params", &params);
            stamp = r->h.ordered(r->h.ud, mt, params);
            if (stamp == AUR__RPC_DROP) {
                json_object_put(msg);
                return;
            }
        }
        /* Requests and notifications go to the dispatch queue, both
         * under the queue bound: a server that sends requests and never
         * reads our answers would otherwise grow the queue for ever.
         * One shed after the wait simply gets no answer. */
        if (!aur__rpc_enqueue_msg(r, msg, mem, stamp, true))
            aur__rpc_lost(r, mem);
        return;
    }
    if (!has[2]) {
        why = "a response without an id";
        goto refused;
    }
    if (has[3] == has[4]) {
        why = has[3] ? "a response with both result and error"
                     : "a response with neither result nor error";
        goto refused;
    }
    if (has[4] && !json_object_is_type(m[4], json_type_object)) {
        why = "an error member that is not an object";
        goto refused;
    }
    if (!have_key) {
        count_drop(r);
        aur__log(r->h.log, AUR_LOG_WARN, r->tag,
                 "dropped a response with an unusable id");
        json_object_put(msg);
        return;
    }
    deliver_response(r, msg, mem, num, sid);
    return;
refused:
    refuse(r, have_key, num, sid, why);
    json_object_put(msg);
}

void aur__rpc_allow_batches(struct aur__rpc *r)
{
    __atomic_store_n(&r->batches, true, __ATOMIC_RELEASE);
}

/* Why a top-level array is refused as a whole, or NULL to take it. */
static const char *batch_refusal(struct aur__rpc *r, struct json_object *arr)
{
    size_t n = json_object_array_length(arr);

    if (!__atomic_load_n(&r->batches, __ATOMIC_ACQUIRE))
        return "a JSON-RPC batch, which this session's protocol version "
               "does not allow";
    if (n == 0)
        return "an empty JSON-RPC batch";
    for (size_t i = 0; i < n; i++)
        if (!json_object_is_type(json_object_array_get_idx(arr, i),
                                 json_type_object))
            return "a JSON-RPC batch with an element that is not an object";
    return NULL;
}

/*
 * A top-level array (docs/protocol.md, Batches).  On a session that
 * allows batches each element is taken in order, here on the reader, as
 * a frame of its own would be: the ordered hook sees a notification
 * before a later element's response is delivered, responses go to their
 * waiters.  The elements share the frame's budgets: its size and nesting
 * were bounded as one frame while it parsed, and each element spends its
 * own notification token.  Anything else is a malformed frame, refused
 * as a whole before any of it is taken.  arr: transfer.
 */
static int take_batch(struct aur__rpc *r, struct json_object *arr,
                      void (*take)(struct aur__rpc *r, struct json_object *m),
                      void (*on_response)(void *arg, int64_t id), void *arg,
                      struct aur_error *err)
{
    const char *why = batch_refusal(r, arr);

    if (why) {
        json_object_put(arr);
        if (r->h.batch_refused)
            r->h.batch_refused(r->h.ud);
        return aur_fail(err, AUR_E_PROTOCOL, 0, "%s", why);
    }
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        /* The array lets go of the element before anyone else may hold
         * it: json-c's reference counts are not atomic. */
        struct json_object *m = json_object_get(
            json_object_array_get_idx(arr, i)), *id, *meth;
        json_object_array_put_idx(arr, i, NULL);
        if (on_response && json_object_object_get_ex(m, "id", &id) &&
            json_object_is_type(id, json_type_int) &&
            !json_object_object_get_ex(m, "method", &meth) &&
            json_object_get_int64(id) >= 0)
            on_response(arg, json_object_get_int64(id));
        take(r, m);
    }
    json_object_put(arr);
    return AUR_OK;
}

/* A batch element of a frame parsed here (sink_text): the whole frame
 * was bounded by what was left of max_mem while it parsed. */
static void take_parsed(struct aur__rpc *r, struct json_object *m)
{
    take_message(r, m, aur__json_mem(m));
}

/* The sink for transports that parse themselves (the host's json_parse,
 * whose trees are bounded by AUR__JSON_MAX_MEM each): the tree is
 * measured here, after the fact.  A response that would not fit in what
 * is left of max_mem is refused as sink_text would have refused it;
 * server messages count against the queue's byte bound instead. */
static void take_measured(struct aur__rpc *r, struct json_object *msg)
{
    struct json_object *id = NULL;
    const char *sid;
    int64_t num;
    size_t mem = 0;

    if (r->lim.max_mem || r->lim.max_queue_bytes)
        mem = aur__json_mem(msg);
    int64_t held = __atomic_load_n(&r->held, __ATOMIC_RELAXED);
    if (r->lim.max_mem && (int64_t)mem > (int64_t)r->lim.max_mem - held &&
        !json_object_object_get_ex(msg, "method", NULL)) {
        struct aur__rpc_end end = {.ended = true, .code = AUR_E_LIMIT,
                                   .delivered = true};
        snprintf(end.msg, sizeof end.msg,
                 "%.100s: a message that takes %zu bytes of memory is over "
                 "what is left of max_app_memory_bytes = %zu (%lld bytes "
                 "held by the catalog and replies)",
                 r->tag, mem, r->lim.max_mem, (long long)held);
        pthread_mutex_lock(&r->mu);
        r->stats.refused_memory++;
        pthread_mutex_unlock(&r->mu);
        if (!json_object_object_get_ex(msg, "id", &id) ||
            !key_of(id, &num, &sid) || !end_request(r, num, sid, &end, NULL))
            aur__log(r->h.log, AUR_LOG_WARN, r->tag, "dropped a message: %s",
                     end.msg);
        json_object_put(msg);
        return;
    }
    take_message(r, msg, mem);
}

/* A batch's elements are measured one by one, each as a message of its
 * own would be. */
static void sink_message(void *ctx, struct json_object *msg)
{
    struct aur__rpc *r = ctx;
    struct aur_error err;

    if (!json_object_is_type(msg, json_type_array)) {
        take_measured(r, msg);
        return;
    }
    if (take_batch(r, msg, take_measured, NULL, NULL, &err) != AUR_OK)
        aur__log(r->h.log, AUR_LOG_WARN, r->tag, "dropped a message: %s",
                 err.msg);
}

int aur__rpc_peek_id(const char *buf, size_t len, int64_t *num, char *sid,
                     size_t sid_size)
{
    size_t i = 0;
    int depth = 0;

    while (i < len) {
        char c = buf[i];
        if (c == '"') {
            size_t s = ++i;
            bool esc = false;
            while (i < len && buf[i] != '"') {
                if (buf[i] == '\\') {
                    esc = true;
                    i++;
                }
                i++;
            }
            if (i >= len)
                return 0;
            size_t e = i++;
            if (depth != 1 || esc || e - s != 2 || memcmp(buf + s, "id", 2))
                continue;
            /* A member name "id" right inside the outer object. */
            while (i < len && strchr(" \t\r\n", buf[i]))
                i++;
            if (i >= len || buf[i] != ':')
                continue;
            i++;
            while (i < len && strchr(" \t\r\n", buf[i]))
                i++;
            if (i < len && buf[i] == '"') {
                size_t a = ++i;
                while (i < len && buf[i] != '"' && buf[i] != '\\' &&
                       (unsigned char)buf[i] >= 0x20)
                    i++;
                if (i >= len || buf[i] != '"' || i - a >= sid_size)
                    return 0;
                memcpy(sid, buf + a, i - a);
                sid[i - a] = '\0';
                return 2;
            }
            bool neg = i < len && buf[i] == '-';
            size_t d = i + neg, k = d;
            uint64_t v = 0;
            while (k < len && buf[k] >= '0' && buf[k] <= '9' && k - d < 19)
                v = v * 10 + (uint64_t)(buf[k++] - '0');
            if (k == d || (k < len && strchr(".eE0123456789", buf[k])) ||
                v > (uint64_t)INT64_MAX + neg)
                return 0;
            *num = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
            return 1;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
        i++;
    }
    return 0;
}

/*
 * The sink for text (ABI 1.2).  The reply to a request whose waiter takes
 * text is read without a tree when the handlers' reply_scan recognises
 * it; everything else is parsed as host json_parse does and
 * goes through take_message.  on_response hears a response's integer id
 * before its waiter is woken.  A frame that does not parse but names a
 * waiting request ends that request as refused.
 */
static int sink_text(void *ctx, const char *buf, size_t len,
                     void (*on_response)(void *arg, int64_t id), void *arg,
                     struct aur_error *err)
{
    struct aur__rpc *r = ctx;
    struct json_object *msg = NULL, *id, *m;
    struct aur__pending *p;
    int64_t num;
    size_t tlen;
    char *text, sid[64];
    int rc, kind;

    AUR_PERTURB("rpc.sink_text");
    /* Only while a call waits for text: a tools/list page would be
     * scanned to its end for nothing.  The count is read without mu; a
     * stale zero only sends a reply down the general path. */
    if (r->h.reply_scan &&
        __atomic_load_n(&r->text_waiters, __ATOMIC_ACQUIRE) &&
        !__atomic_load_n(&r->faulty, __ATOMIC_ACQUIRE) &&
        r->h.reply_scan(buf, len, &num, &text, &tlen)) {
        if (on_response)
            on_response(arg, num);
        on_response = NULL;
        pthread_mutex_lock(&r->mu);
        p = aur__rpc_table_find(r, num, NULL);
        if (p && p->text_ok) {
            p->text = text;
            p->text_len = tlen;
            complete(r, p, P_DONE);
            return AUR_OK;
        }
        pthread_mutex_unlock(&r->mu);
        free(text);
    }
    /* max_mem: what is left of the account bounds this tree while it
     * grows, so an expensive message costs no more before it is refused. */
    size_t cap = AUR__JSON_MAX_MEM, mem = 0;
    int64_t held = __atomic_load_n(&r->held, __ATOMIC_RELAXED);
    if (r->lim.max_mem)
        cap = held < (int64_t)r->lim.max_mem
                  ? r->lim.max_mem - (size_t)held
                  : 1;
    rc = aur__json_parse_mem(buf, len, AUR__JSON_MAX_DEPTH, cap, &msg, &mem,
                             err);
    if (rc == AUR_OK && json_object_is_type(msg, json_type_array))
        return take_batch(r, msg, take_parsed, on_response, arg, err);
    if (rc == AUR_OK && !json_object_is_type(msg, json_type_object))
        rc = aur_fail(err, AUR_E_PROTOCOL, 0, "not a JSON object");
    if (rc == AUR_E_LIMIT && r->lim.max_mem) {
        pthread_mutex_lock(&r->mu);
        r->stats.refused_memory++;
        pthread_mutex_unlock(&r->mu);
        aur_fail(err, AUR_E_LIMIT, 0,
                 "%s: a message of %zu bytes needs more memory than is left "
                 "of max_app_memory_bytes = %zu (%lld bytes held by the "
                 "catalog and replies)",
                 r->tag, len, r->lim.max_mem, (long long)held);
    }
    if (rc == AUR_E_NOMEM) {
        aur__rpc_lost(r, len);
        return rc;
    }
    if (rc != AUR_OK) {
        json_object_put(msg);
        kind = aur__rpc_peek_id(buf, len, &num, sid, sizeof sid);
        if (kind) {
            struct aur__rpc_end end = {.ended = true, .code = AUR_E_PROTOCOL,
                                       .delivered = true};
            if (rc == AUR_E_LIMIT) {
                end.code = AUR_E_LIMIT;
                snprintf(end.msg, sizeof end.msg, "%s", err->msg);
            } else {
                snprintf(end.msg, sizeof end.msg,
                         "the server's response was refused: %.160s",
                         err->msg);
            }
            if (end_request(r, num, kind == 2 ? sid : NULL, &end, NULL))
                aur__log(r->h.log, AUR_LOG_WARN, r->tag,
                         "%s frame named a waiting request; it ended",
                         rc == AUR_E_LIMIT ? "a refused (max_app_memory_bytes)"
                                           : "an unparsable");
        }
        return rc;
    }
    if (on_response && json_object_object_get_ex(msg, "id", &id) &&
        json_object_is_type(id, json_type_int) &&
        !json_object_object_get_ex(msg, "method", &m) &&
        json_object_get_int64(id) >= 0)
        on_response(arg, json_object_get_int64(id));
    take_message(r, msg, mem);
    return AUR_OK;
}

static void sink_request_end(void *ctx, struct json_object *id,
                             const struct aur_request_end *e)
{
    struct aur__rpc *r = ctx;
    struct aur__rpc_end end = {.ended = true};
    struct json_object *reply = NULL;
    const char *sid;
    int64_t num;

    AUR_PERTURB("rpc.request_end");
    if (!e || !key_of(id, &num, &sid))
        return;
    /* AUR_E_RPC only with the server's error object; without one (or
     * with anything but an object) the answer was unusable. */
    end.code = e->code >= 0 ? AUR_E_IO
               : e->code == AUR_E_RPC &&
                       !(e->error &&
                         json_object_is_type(e->error, json_type_object))
                   ? AUR_E_PROTOCOL
                   : e->code;
    end.delivered = e->delivered != 0;
    end.http_status = e->http_status;
    snprintf(end.msg, sizeof end.msg, "%s", e->msg ? e->msg : "");
    if (e->error && json_object_is_type(e->error, json_type_object)) {
        /* The server's own error, sent with a non-2xx status: a response
         * in the server's words.  A copy: e->error belongs to the
         * transport's thread. */
        reply = json_object_new_object();
        json_object_object_add(reply, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(reply, "id", aur__json_copy(id));
        json_object_object_add(reply, "error", aur__json_copy(e->error));
    }
    if (!end_request(r, num, sid, &end, reply))
        aur__log(r->h.log, AUR_LOG_DEBUG, r->tag,
                 "an ended request nobody waits for");
}

static void sink_closed(void *ctx, const struct aur_error *why)
{
    struct aur__rpc *r = ctx;
    struct aur__qitem *q;

    AUR_PERTURB("rpc.closed");
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    /* A faulty connection already told everyone why it ended. */
    if (why && why->code != AUR_OK && !r->faulty)
        r->close_err = *why;
    aur__rpc_fail_all(r, P_CLOSED);
    q = close_report(r);
    pthread_mutex_unlock(&r->mu);
    if (q) {
        if (why) {
            q->has_err = true;
            q->err = *why;
        }
        aur__rpc_enqueue(r, q, false, false);
    }
}

void aur__rpc_sink_init(struct aur__rpc *r)
{
    r->sink.struct_size = sizeof r->sink;
    r->sink.ctx = r;
    r->sink.on_message = sink_message;
    r->sink.on_closed = sink_closed;
    r->sink.on_text = sink_text;
    r->sink.on_request_end = sink_request_end;
}
