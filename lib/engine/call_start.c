/*
 * call_start.c - aur_mcp_call_start: a call that ends on the thread that
 * learns its outcome, so a caller with many calls out parks no thread per
 * call, and no thread is woken only to hand an answer on.
 *
 * The call is sent on the caller's thread by call.c's steps, the same as
 * a blocking call's, with a handle nobody waits on (rpc.h,
 * aur__rpc_pending_new).  Its end comes one of four ways, and the first
 * to win aur__rpc_claim finishes it, exactly once:
 *   - its answer, or its request's end, on the transport's thread (or on
 *     a sender's, when a transport reads a reply while it sends):
 *     finished there, no lock held;
 *   - the connection's close, loss, reopen or cancel, under the rpc
 *     layer's lock: handed to the clock thread's ready list;
 *   - its deadline: the clock thread keeps every call in flight in
 *     deadline order and finishes an expired one as the blocking call
 *     does (unknown, and the server is told to cancel);
 *   - its send failed: the sender finishes it (failed only when nothing
 *     can have left).
 * A call whose send is still under way is never expired: the send is
 * bounded by the same deadline, and what it says decides "not sent".
 *
 * The outcome is mapped by call.c (aur__call_outcome), done runs, and
 * only then does the call stop counting in app->inflight: closing an App
 * cancels its calls and waits for that count, so every callback has run
 * before aur_mcp_shutdown joins the clock thread and returns.
 *
 * Lock order: app->mu, then r->mu, then clock->mu, a leaf: nothing is
 * taken or called under it.
 */
#include "aur_setup.h"

#include "aur_perturb.h"
#include "clock.h"
#include "engine.h"
#include "jsonx.h"
#include "rpc.h"
#include "thread.h"

#include <json-c/json.h>
#include <pthread.h>

struct acall {
    struct aur__call c;
    struct aur__pending *p;
    struct aur_tool_output out; /* the resolved scopes, then the outcome */
    aur_call_done_fn *done;
    void *ud;
    struct aur__clock *clock;
    int refs; /* the sender's and the finisher's (atomic) */
    /* (clock->mu) */
    bool sending; /* not expired while the send is under way */
    bool linked;  /* on the deadline list */
    struct acall *prev, *next; /* deadline list */
    struct acall *rnext;       /* ready list */
};

struct aur__clock {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the thread: a deadline moved, a call is ready */
    pthread_t thread;
    struct acall *head, *tail; /* by deadline, earliest first */
    struct acall *ready;       /* claimed, to finish */
    aur_deadline wake_at; /* when the thread wakes by itself */
    bool closing;
};

static void acall_put(struct acall *ac)
{
    if (__atomic_sub_fetch(&ac->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(ac);
}

/* Off the deadline list, if on it.  clock->mu held. */
static void unlink_locked(struct aur__clock *k, struct acall *ac)
{
    if (!ac->linked)
        return;
    if (ac->prev)
        ac->prev->next = ac->next;
    else
        k->head = ac->next;
    if (ac->next)
        ac->next->prev = ac->prev;
    else
        k->tail = ac->prev;
    ac->prev = ac->next = NULL;
    ac->linked = false;
}

/* The outcome is in ac->out: tell, stop counting, let go. */
static void deliver(struct acall *ac)
{
    ac->done(ac->ud, &ac->out);
    aur__call_leave(&ac->c, NULL, &ac->out);
    aur_tool_output_clear(&ac->out);
    acall_put(ac);
}

/* The caller won the claim: map, tell, stop counting, free. */
static void finish(struct acall *ac)
{
    struct aur__clock *k = ac->clock;
    bool keep = aur__rpc_keep_reply;

    AUR_PERTURB("call_start.finish");
    pthread_mutex_lock(&k->mu);
    unlink_locked(k, ac);
    pthread_mutex_unlock(&k->mu);
    /* This thread may be a discovery's (a reply read inside its send):
     * a call's reply is never kept charged. */
    aur__rpc_keep_reply = false;
    aur__call_outcome(&ac->c, ac->p, &ac->out);
    aur__rpc_keep_reply = keep;
    deliver(ac);
}

/* rpc.h's on_done: whoever claims first ends the call. */
static void on_end(void *ud, struct aur__pending *p, bool locked)
{
    struct acall *ac = ud; /* only touched once the claim is won */
    struct aur__clock *k;

    if (!aur__rpc_claim(p))
        return;
    if (!locked) {
        finish(ac);
        return;
    }
    k = ac->clock;
    pthread_mutex_lock(&k->mu);
    ac->rnext = k->ready;
    k->ready = ac;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* The first call on the list whose deadline has passed and whose send is
 * over (NULL: none), and when the next one is due (*next). */
static struct acall *expired_locked(struct aur__clock *k, aur_deadline *next)
{
    int64_t now = aur__now_ms();

    *next = AUR_NO_DEADLINE;
    for (struct acall *ac = k->head; ac; ac = ac->next) {
        if (ac->sending)
            continue; /* its sender says how it ends, or pokes */
        if (ac->c.dl <= now)
            return ac;
        *next = ac->c.dl;
        break;
    }
    return NULL;
}

static void *clock_main(void *arg)
{
    struct aur__clock *k = arg;
    aur_deadline next;

    pthread_mutex_lock(&k->mu);
    for (;;) {
        struct acall *ac = k->ready;

        if (ac) {
            k->ready = ac->rnext;
            pthread_mutex_unlock(&k->mu);
            finish(ac);
            pthread_mutex_lock(&k->mu);
            continue;
        }
        if ((ac = expired_locked(k, &next))) {
            /* Linked, so its finisher has not freed it: p is alive. */
            struct aur__pending *p = ac->p;
            unlink_locked(k, ac);
            aur__rpc_pending_ref(p);
            pthread_mutex_unlock(&k->mu);
            if (aur__rpc_claim(p))
                finish(ac);
            aur__rpc_pending_put(p);
            pthread_mutex_lock(&k->mu);
            continue;
        }
        if (k->closing && !k->head)
            break;
        k->wake_at = next;
        aur__cond_wait_until(&k->cv, &k->mu, next);
        k->wake_at = 0; /* awake: it looks at the list before sleeping */
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* h's clock, started on the first call; NULL once shutdown began or
 * without memory or a thread (*closed says which). */
static struct aur__clock *clock_of(struct aur_mcp *h, bool *closed)
{
    struct aur__clock *k = __atomic_load_n(&h->clock, __ATOMIC_ACQUIRE);

    if (k)
        return k;
    pthread_mutex_lock(&h->mu);
    *closed = h->async_closed;
    if (!*closed && !(k = h->clock) && (k = calloc(1, sizeof *k))) {
        pthread_mutex_init(&k->mu, NULL);
        aur__mono_cond_init(&k->cv);
        int e = aur__thread_start(&k->thread, clock_main, k);
        if (e != 0) {
            pthread_cond_destroy(&k->cv);
            pthread_mutex_destroy(&k->mu);
            free(k);
            k = NULL;
        } else {
            __atomic_store_n(&h->clock, k, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return k;
}

/* On the deadline list, in order (calls mostly share one timeout, so the
 * place is at or near the end). */
static void link_locked(struct aur__clock *k, struct acall *ac)
{
    struct acall *at = k->tail;

    while (at && at->c.dl > ac->c.dl)
        at = at->prev;
    ac->prev = at;
    ac->next = at ? at->next : k->head;
    if (ac->next)
        ac->next->prev = ac;
    else
        k->tail = ac;
    if (at)
        at->next = ac;
    else
        k->head = ac;
    ac->linked = true;
}

/* The outcome is known on the caller's thread, before anything is sent. */
static void end_here(struct acall *ac)
{
    ac->done(ac->ud, &ac->out);
    aur_tool_output_clear(&ac->out);
    free(ac);
}

/* Sent, or ended by the send: from here the claim decides who ends it. */
static void send_and_let_go(struct acall *ac, struct json_object *args)
{
    struct aur__clock *k = ac->clock;
    struct aur_tool_output sent = {.struct_size = sizeof sent};
    struct aur__pending *p = ac->p;
    bool mine;
    int rc;

    ac->refs = 2;
    aur__rpc_pending_ref(p); /* the sender's, for the claim below */
    pthread_mutex_lock(&k->mu);
    ac->sending = true;
    link_locked(k, ac);
    pthread_mutex_unlock(&k->mu);
    rc = aur__call_send(&ac->c, args, p, &p, &sent);
    AUR_PERTURB("call_start.sent");
    /* Claimed while still "sending", so the clock cannot take it first
     * and call a call that never left unknown. */
    mine = rc != AUR_OK && aur__rpc_claim(p);
    pthread_mutex_lock(&k->mu);
    ac->sending = false;
    if (mine)
        unlink_locked(k, ac);
    else if (ac->linked && ac->c.dl < k->wake_at)
        pthread_cond_signal(&k->cv); /* due before the clock looks again */
    pthread_mutex_unlock(&k->mu);
    if (mine) {
        /* Nothing else can end it now: what the send said stands. */
        ac->out.status = sent.status;
        ac->out.content = sent.content;
        ac->out.content_len = sent.content_len;
        sent.content = NULL;
        aur__rpc_abandon(ac->c.rpc, p, false);
        deliver(ac);
    }
    aur_tool_output_clear(&sent);
    aur__rpc_pending_put(p);
    acall_put(ac);
}

/* For the pool: a copy of args it owns (never {} for want of memory). */
static int to_pool(struct aur_mcp *h, const char *tool_id,
                   struct json_object *args, int64_t timeout_ms,
                   aur_call_done_fn *done, void *ud, struct aur_error *err)
{
    struct json_object *copy = NULL;

    if (args && !(copy = aur__json_copy(args)))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    return aur__async_submit(h, tool_id, copy, timeout_ms, done, ud, err);
}

int aur__call_start(struct aur_mcp *h, const char *tool_id,
                    struct json_object *args, int64_t timeout_ms,
                    aur_call_done_fn *done, void *ud, struct aur_error *err)
{
    struct aur__clock *k;
    struct aur__tool *t;
    struct acall *ac;
    bool closed = false;
    int rc;

    t = aur__call_lookup(h, tool_id, NULL);
    if (t && (!t->app || !aur__call_fast_ok(t->app)))
        return to_pool(h, tool_id, args, timeout_ms, done, ud, err);
    if (!(k = clock_of(h, &closed)))
        return closed ? aur_fail(err, AUR_E_STATE, 0, "host is shutting down")
                      : aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    /* Not calloc, which skips the thread's cache (rpc.c says so too). */
    if (!(ac = malloc(sizeof *ac)))
        return aur_fail(err, AUR_E_NOMEM, ENOMEM, "out of memory");
    *ac = (struct acall){.done = done, .ud = ud, .clock = k};
    ac->out.struct_size = sizeof ac->out;
    if (!t) {
        aur__call_lookup(h, tool_id, &ac->out); /* says why */
        end_here(ac);
        return AUR_OK;
    }
    if (!aur__call_prepare(t, args, &ac->out)) {
        end_here(ac);
        return AUR_OK;
    }
    rc = aur__call_enter(t, args, timeout_ms, false, &ac->c, &ac->out);
    if (rc == 0) {
        end_here(ac);
        return AUR_OK;
    }
    if (rc < 0) {
        /* max_in_flight calls are out: a call thread waits for a slot. */
        aur_tool_output_clear(&ac->out);
        free(ac);
        return to_pool(h, tool_id, args, timeout_ms, done, ud, err);
    }
    if (aur__rpc_pending_new(true, on_end, ac, &ac->p, err) != AUR_OK) {
        aur__out_nomem(&ac->out, AUR_CALL_FAILED);
        ac->refs = 1;
        deliver(ac);
        return AUR_OK;
    }
    aur__batch_join(h, &ac->c);
    send_and_let_go(ac, args);
    return AUR_OK;
}

void aur__clock_join(struct aur_mcp *h)
{
    struct aur__clock *k = h->clock;

    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->closing = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
    h->clock = NULL;
}

/* The public entry points: what aur_mcp_call_async checks, then the call. */
int aur_mcp_call_start_jsonc(struct aur_mcp *h, const char *tool_id,
                             struct json_object *arguments,
                             int64_t timeout_ms, aur_call_done_fn *done,
                             void *ud, struct aur_error *err)
{
    int rc = aur__async_accept(h, tool_id, done, err);

    if (rc != AUR_OK)
        return rc;
    if (arguments && !json_object_is_type(arguments, json_type_object))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "tool arguments must be a JSON object (not sent)");
    return aur__call_start(h, tool_id, arguments, timeout_ms, done, ud, err);
}

int aur_mcp_call_start(struct aur_mcp *h, const char *tool_id,
                       const char *args_json, size_t args_len,
                       int64_t timeout_ms, aur_call_done_fn *done, void *ud,
                       struct aur_error *err)
{
    struct json_object *args;
    int rc;

    if ((rc = aur__call_args(args_json, args_len, &args, err)) != AUR_OK)
        return rc;
    rc = aur_mcp_call_start_jsonc(h, tool_id, args, timeout_ms, done, ud, err);
    json_object_put(args);
    return rc;
}
