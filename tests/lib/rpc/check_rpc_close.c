/*
 * check_rpc_close.c - deadlines and the end of a connection in the
 * JSON-RPC layer (lib/rpc/rpc.c, rpc_recv.c): a wait's deadline and
 * keep_on_timeout, abandon with and without cancel, and close, clean EOF,
 * cancel_waiters, reopen and the notification budget, each waking every
 * waiter (blocked on other threads) with its own error.
 */
#include "check_rpc_fake.h"

#include <unistd.h>

#include "jsonx.h"
#include "rpc_int.h"
#include "support/slack.h"

/* A waiter on its own thread, so the test can end the connection under
 * it. */
struct waiter {
    struct aur__rpc *r;
    struct aur__pending *p;
    pthread_t t;
    int rc;
    struct aur_error err;
    bool done;
};

static int started;

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    w->rc = fk_wait_rc(w->r, w->p, 10000, NULL, &w->err);
    __atomic_store_n(&w->done, true, __ATOMIC_SEQ_CST);
    return NULL;
}

/* n waiters, each blocked in aur__rpc_wait (as far as one can tell). */
static void start_waiters(struct aur__rpc *r, struct waiter *w, int n)
{
    started = 0;
    for (int i = 0; i < n; i++) {
        w[i] = (struct waiter){.r = r, .p = fk_request(r, "m", NULL)};
        ck_assert_int_eq(pthread_create(&w[i].t, NULL, waiter_main, &w[i]), 0);
    }
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < n)
        usleep(1000);
    usleep(50000);
    for (int i = 0; i < n; i++)
        ck_assert(!__atomic_load_n(&w[i].done, __ATOMIC_SEQ_CST));
}

static void join_waiters(struct waiter *w, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(w[i].t, NULL);
}

/* ---- deadlines, abandon --------------------------------------------- */

START_TEST(wait_times_out_at_deadline)
{
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id, t0, took;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    t0 = aur__now_ms();
    ck_assert_int_eq(fk_wait_rc(r, p, 150, &end, &err), AUR_E_TIMEOUT);
    took = aur__now_ms() - t0;
    ck_assert_int_ge(took, 150);
    ck_assert_int_lt(took, 3000);
    ck_assert(!end.ended);
    /* Released: a late answer is dropped. */
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    ck_assert_uint_eq(fk_dropped(r), 1);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(keep_on_timeout_waits_again)
{
    struct json_object *reply = NULL;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    ck_assert_int_eq(aur__rpc_wait(r, p, fk_in(50), true, &reply, NULL, &err),
                     AUR_E_TIMEOUT);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(2000), true, &reply, NULL, &err), AUR_OK);
    ck_assert_ptr_nonnull(reply);
    json_object_put(reply);
    ck_assert_uint_eq(fk_dropped(r), 0);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* cancel: the transport's hook when it has one, else
 * notifications/cancelled naming the id; a late answer is dropped. */
START_TEST(abandon_cancels)
{
    struct json_object *m, *v = NULL;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_full, NULL);
    p = fk_request(r, "m", &id);
    aur__rpc_abandon(r, p, true);
    ck_assert_uint_eq(json_object_array_length(fk.cancelled), 1);
    ck_assert_int_eq(
        json_object_get_int64(json_object_array_get_idx(fk.cancelled, 0)), id);
    ck_assert_uint_eq(fk_nsent(), 1);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    ck_assert_uint_eq(fk_dropped(r), 1);
    aur__rpc_close(r, fk_in(2000));

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    aur__rpc_abandon(r, p, true);
    ck_assert_uint_eq(fk_nsent(), 2);
    m = fk_sent(1);
    ck_assert(!json_object_object_get_ex(m, "id", NULL));
    ck_assert(json_object_object_get_ex(m, "method", &v));
    ck_assert_str_eq(json_object_get_string(v), "notifications/cancelled");
    ck_assert(json_object_object_get_ex(m, "params", &v));
    ck_assert(json_object_object_get_ex(v, "requestId", &v));
    ck_assert(json_object_is_type(v, json_type_int));
    ck_assert_int_eq(json_object_get_int64(v), id);
    json_object_put(m);

    /* Nothing to cancel: not asked, already answered, or closed. */
    p = fk_request(r, "m", NULL);
    aur__rpc_abandon(r, p, false);
    p = fk_request(r, "m", &id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    aur__rpc_abandon(r, p, true);
    p = fk_request(r, "m", NULL);
    fk.sink.on_closed(fk.sink.ctx, NULL);
    aur__rpc_abandon(r, p, true);
    ck_assert_uint_eq(fk_nsent(), 5); /* 3 requests, no cancel */
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- the end of the connection --------------------------------------- */

START_TEST(closed_wakes_every_waiter)
{
    struct aur_error why, err;
    struct waiter w[4];
    struct aur__pending *p = NULL;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    start_waiters(r, w, 4);
    aur_fail(&why, AUR_E_IO, 32, "pipe broke");
    fk.sink.on_closed(fk.sink.ctx, &why);
    join_waiters(w, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(w[i].rc, AUR_E_CLOSED);
        ck_assert_int_eq(w[i].err.detail, AUR_E_IO);
        ck_assert_ptr_nonnull(strstr(w[i].err.msg, "pipe broke"));
    }
    ck_assert(aur__rpc_is_closed(r));
    ck_assert(fk_wait_for(&ev.closed, 1, 2000));
    ck_assert(ev.closed_why);
    ck_assert_int_eq(ev.closed_err.code, AUR_E_IO);
    /* Nothing new is sent on a closed connection. */
    size_t n = fk_nsent();
    ck_assert_int_eq(
        aur__rpc_request(r, "m", NULL, NULL, fk_in(1000), &p, &err),
        AUR_E_CLOSED);
    ck_assert_ptr_nonnull(strstr(err.msg, "pipe broke"));
    ck_assert_int_eq(aur__rpc_notify(r, "n", NULL, fk_in(1000), &err),
                     AUR_E_CLOSED);
    ck_assert_uint_eq(fk_nsent(), n);
    /* Reported once, and a second on_closed changes nothing. */
    fk.sink.on_closed(fk.sink.ctx, NULL);
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"sync\"}");
    ck_assert(fk_wait_for(&ev.nnotes, 1, 2000));
    ck_assert_int_eq(fk_count(&ev.closed), 1);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(clean_eof)
{
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", NULL);
    fk.sink.on_closed(fk.sink.ctx, NULL);
    ck_assert_int_eq(fk_wait_rc(r, p, 5000, NULL, &err), AUR_E_CLOSED);
    ck_assert_int_eq(err.detail, 0);
    ck_assert(fk_wait_for(&ev.closed, 1, 2000));
    ck_assert(!ev.closed_why);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(cancel_waiters)
{
    struct aur__pending *p = NULL;
    struct aur_error err;
    struct waiter w[2];
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    start_waiters(r, w, 2);
    aur__rpc_cancel_waiters(r);
    join_waiters(w, 2);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(w[i].rc, AUR_E_CANCELLED);
    ck_assert_int_eq(
        aur__rpc_request(r, "m", NULL, NULL, fk_in(1000), &p, &err),
        AUR_E_CANCELLED);
    ck_assert_uint_eq(fk_nsent(), 2);
    ck_assert(!aur__rpc_is_closed(r));
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* reopen fails current waiters, restarts the transport and clears a
 * close; without the hook it is refused and changes nothing. */
START_TEST(reopen_restarts)
{
    struct aur_error err;
    struct waiter w[1];
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", NULL);
    ck_assert_int_eq(aur__rpc_reopen(r, fk_in(1000), &err), AUR_E_STATE);
    ck_assert(fk_still_waiting(r, p));
    aur__rpc_abandon(r, p, false);
    aur__rpc_close(r, fk_in(2000));

    fk_reset();
    r = fk_open(&fk_ops_full, NULL);
    start_waiters(r, w, 1);
    ck_assert_int_eq(aur__rpc_reopen(r, fk_in(1000), &err), AUR_OK);
    join_waiters(w, 1);
    ck_assert_int_eq(w[0].rc, AUR_E_CLOSED);
    ck_assert_int_eq(fk.reopens, 1);

    fk.sink.on_closed(fk.sink.ctx, NULL);
    ck_assert(aur__rpc_is_closed(r));
    ck_assert_int_eq(aur__rpc_reopen(r, fk_in(1000), &err), AUR_OK);
    ck_assert(!aur__rpc_is_closed(r));
    p = fk_request(r, "m", &id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    ck_assert_int_eq(fk_wait_rc(r, p, 2000, NULL, &err), AUR_OK);

    fk.reopen_rc = AUR_E_SPAWN;
    ck_assert_int_eq(aur__rpc_reopen(r, fk_in(1000), &err), AUR_E_SPAWN);
    ck_assert(aur__rpc_is_closed(r));
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A cancelled connection is not reopened: a fresh process would only be
 * closed again, and the cancel's answer would wait for its start. */
START_TEST(reopen_after_cancel_refused)
{
    struct aur_error err;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_full, NULL);
    aur__rpc_cancel_waiters(r);
    ck_assert_int_eq(aur__rpc_reopen(r, fk_in(1000), &err), AUR_E_CANCELLED);
    ck_assert_int_eq(fk.reopens, 0);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Batches are a negotiated version's (2025-03-26): the fresh process a
 * reopen starts has negotiated nothing, so its array is refused until
 * its own handshake allows batches again. */
START_TEST(reopen_takes_batches_back)
{
    struct aur_error err;
    struct aur__rpc *r;

    fk_reset();
    ev.ordered_stamp = 1;
    r = fk_open(&fk_ops_full, NULL);
    aur__rpc_allow_batches(r);
    ck_assert_int_eq(aur__rpc_reopen(r, fk_in(1000), &err), AUR_OK);
    fk_push("[{\"jsonrpc\":\"2.0\",\"method\":\"n1\"}]");
    ck_assert_int_eq(fk_count(&ev.batch_refused), 1);
    ck_assert(!fk_wait_for(&ev.nnotes, 1, 100));
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A reopen on its own thread, as negotiation does it. */
struct reopener {
    struct aur__rpc *r;
    int64_t ms;
    pthread_t t;
    int rc;
    bool done;
    bool handler_busy_after; /* a handler was still in progress at return */
};

static void *reopen_main(void *arg)
{
    struct reopener *o = arg;
    struct aur_error err;

    o->rc = aur__rpc_reopen(o->r, fk_in(o->ms), &err);
    o->handler_busy_after = fk_count(&ev.in_handler) > 0;
    __atomic_store_n(&o->done, true, __ATOMIC_SEQ_CST);
    return NULL;
}

static void open_gate(void)
{
    pthread_mutex_lock(&ev.mu);
    ev.gate_closed = false;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
}

/* When reopen returns, no handler of the old connection is still running:
 * the old process's end (or anything it said) can never land on the
 * state the owner sets up for the new one.  The old connection's
 * notification is held inside its handler; reopen waits for it, and a
 * handler that outlives the deadline makes reopen fail, restarting
 * nothing. */
START_TEST(reopen_waits_for_old_handlers)
{
    struct reopener o;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_full, NULL);
    ev.gate_closed = true;
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/old\"}");
    ck_assert(fk_wait_for(&ev.in_handler, 1, 5000));
    o = (struct reopener){.r = r, .ms = 10000};
    ck_assert_int_eq(pthread_create(&o.t, NULL, reopen_main, &o), 0);
    usleep(200000);
    ck_assert_msg(!__atomic_load_n(&o.done, __ATOMIC_SEQ_CST),
                  "reopen returned while the old handler ran");
    ck_assert_int_eq(fk.reopens, 0);
    open_gate();
    pthread_join(o.t, NULL);
    ck_assert_int_eq(o.rc, AUR_OK);
    ck_assert(!o.handler_busy_after);
    ck_assert_int_eq(fk.reopens, 1);

    /* Bounded: a handler that outlives the deadline. */
    ev.gate_closed = true;
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/old2\"}");
    ck_assert(fk_wait_for(&ev.in_handler, 1, 5000));
    o = (struct reopener){.r = r, .ms = 300};
    ck_assert_int_eq(pthread_create(&o.t, NULL, reopen_main, &o), 0);
    pthread_join(o.t, NULL);
    ck_assert_int_eq(o.rc, AUR_E_TIMEOUT);
    ck_assert_int_eq(fk.reopens, 1);
    open_gate();
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

struct closer {
    struct aur__rpc *r;
    pthread_t t;
};

static void *close_main(void *arg)
{
    struct closer *c = arg;
    aur__rpc_close(c->r, fk_in(10000));
    return NULL;
}

/* When close began on r, or -1 before that. */
static int64_t close_began_ms(struct aur__rpc *r)
{
    int64_t ms;
    pthread_mutex_lock(&r->mu);
    ms = r->stopping ? r->stop_ms : -1;
    pthread_mutex_unlock(&r->mu);
    return ms;
}

/* Returns once close began on r and its drain time has passed. */
static void until_past_drain(struct aur__rpc *r)
{
    int64_t began;

    H_WAIT_UNTIL((began = close_began_ms(r)) >= 0, 5000, 1);
    ck_assert_msg(began >= 0, "close did not begin");
    while (aur__now_ms() < began + AUR__RPC_DRAIN_MS + 100)
        usleep(10000);
}

/* Close drains what arrived before it for 2 s; what is still queued then
 * is handed over AUR__RPC_OVERDUE (to be counted, not acted on: an event
 * becomes a counted drop), never freed unseen, and a server request
 * among it is not answered. */
START_TEST(close_hands_over_overdue_items)
{
    struct closer c;

    fk_reset();
    ev.ordered_stamp = 5;
    c.r = fk_open(&fk_ops_full, NULL);
    ev.gate_closed = true;
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/first\"}");
    ck_assert(fk_wait_for(&ev.in_handler, 1, 5000));
    for (int i = 0; i < 10; i++)
        fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/queued\"}");
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"q/queued\"}");
    ck_assert_int_eq(pthread_create(&c.t, NULL, close_main, &c), 0);
    /* Past the drain time, the first still handled: counted from when
     * close began, not from the thread's creation, which a slow run
     * (valgrind) may start late. */
    until_past_drain(c.r);
    open_gate();
    pthread_join(c.t, NULL);
    ck_assert_int_eq(fk_count(&ev.nnotes), 11);
    pthread_mutex_lock(&ev.mu);
    for (int i = 0; i < 11; i++) {
        struct json_object *n = json_object_array_get_idx(ev.notes, i), *v;
        ck_assert(json_object_object_get_ex(n, "stamp", &v));
        unsigned stamp = (unsigned)json_object_get_int64(v);
        ck_assert_uint_eq(stamp & ~AUR__RPC_OVERDUE, 5);
        ck_assert_msg((i > 0) == ((stamp & AUR__RPC_OVERDUE) != 0),
                      "item %d: stamp %#x", i, stamp);
    }
    ck_assert_int_eq(ev.requests, 0);
    pthread_mutex_unlock(&ev.mu);
}
END_TEST

static void *push_one(void *arg)
{
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/late\"}");
    __atomic_store_n((bool *)arg, true, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Over notification_burst the connection is faulty: closed with
 * AUR_E_LIMIT for every waiter, reported before the notifications still
 * queued, and its reader is parked (nothing more read) until close. */
START_TEST(notification_budget_makes_faulty)
{
    struct aur__rpc_limits lim = {
        .max_pending = 8, .max_queue = 8, .notify_rate = 1, .notify_burst = 2};
    struct aur__rpc_stats st;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    bool late_done = false;

    fk_reset();
    r = fk_open(&fk_ops_min, &lim);
    p = fk_request(r, "m", NULL);
    ev.gate_closed = true;
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/1\"}");
    ck_assert(fk_wait_for(&ev.in_handler, 1, 2000));
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/2\"}");
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/3\"}"); /* over burst */
    ck_assert_int_eq(fk_wait_rc(r, p, 5000, NULL, &err), AUR_E_CLOSED);
    ck_assert_int_eq(err.detail, AUR_E_LIMIT);
    ck_assert_ptr_nonnull(strstr(err.msg, "notification budget exceeded"));
    aur__rpc_get_stats(r, &st);
    ck_assert(st.faulty);
    ck_assert(aur__rpc_is_closed(r));

    pthread_mutex_lock(&ev.mu);
    ev.gate_closed = false;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
    ck_assert(fk_wait_for(&ev.nnotes, 2, 2000));
    ck_assert(fk_wait_for(&ev.closed, 1, 2000));
    ck_assert_int_eq(ev.closed_err.code, AUR_E_LIMIT);
    pthread_mutex_lock(&ev.mu);
    ck_assert_str_eq(ev.order, "ncn");
    pthread_mutex_unlock(&ev.mu);

    ck_assert_int_eq(pthread_create(&fk.reader, NULL, push_one, &late_done),
                     0);
    fk.has_reader = true;
    usleep(200000);
    ck_assert(!__atomic_load_n(&late_done, __ATOMIC_SEQ_CST));
    aur__rpc_close(r, fk_in(2000)); /* unparks it; fk_close joins it */
    ck_assert(late_done);
    ck_assert_int_eq(ev.nnotes, 2);
}
END_TEST

START_TEST(open_failure_leaves_nothing)
{
    struct aur__rpc_handlers h = {0};
    struct aur__rpc_limits lim = {.max_pending = 1, .max_queue = 1};
    struct aur__rpc *r = NULL;
    struct aur_error err;

    fk_reset();
    fk.open_rc = AUR_E_SPAWN;
    ck_assert_int_eq(aur__rpc_open(&fk_ops_min, NULL, NULL, &h, &lim, "t",
                                   fk_in(1000), &r, &err),
                     AUR_E_SPAWN);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(err.msg, "fake open refused");
    ck_assert_int_eq(fk.closes, 0); /* a failed open needs no close */
}
END_TEST

void rpc_add_close(Suite *s)
{
    TCase *t = tcase_create("deadlines");
    tcase_add_test(t, wait_times_out_at_deadline);
    tcase_add_test(t, keep_on_timeout_waits_again);
    tcase_add_test(t, abandon_cancels);
    suite_add_tcase(s, t);

    t = tcase_create("close");
    tcase_add_test(t, closed_wakes_every_waiter);
    tcase_add_test(t, clean_eof);
    tcase_add_test(t, cancel_waiters);
    tcase_add_test(t, reopen_restarts);
    tcase_add_test(t, reopen_takes_batches_back);
    tcase_add_test(t, reopen_after_cancel_refused);
    tcase_add_test(t, reopen_waits_for_old_handlers);
    tcase_add_test(t, close_hands_over_overdue_items);
    tcase_add_test(t, notification_budget_makes_faulty);
    tcase_add_test(t, open_failure_leaves_nothing);
    suite_add_tcase(s, t);
}
