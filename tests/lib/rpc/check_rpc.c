/*
 * check_rpc.c - the JSON-RPC layer (lib/rpc/rpc.c, rpc_recv.c,
 * rpc_queue.c) against an in-process fake transport (check_rpc_fake.c):
 * responses matched to requests by id (order, unknown and duplicate ids,
 * id types), the response shapes the layer refuses and what a refusal
 * ends, and what server-initiated messages become on the dispatch thread
 * (notifications, their arrival stamps, server requests, detached
 * requests).  check_rpc_end.c covers request ends and send failures,
 * check_rpc_close.c deadlines and the end of the connection,
 * check_rpc_text.c text frames, ids at the int64 edges and the queue and
 * memory bounds.  This file holds main().
 */
#include "check_rpc_fake.h"

#include <unistd.h>

#include "log.h"
#include "jsonx.h"
#include "support/check_main.h"

/* The "v" member of a reply's result; asserts the shape. */
static int64_t result_v(struct json_object *reply)
{
    struct json_object *res = NULL, *v = NULL;
    ck_assert(json_object_object_get_ex(reply, "result", &res));
    ck_assert(json_object_object_get_ex(res, "v", &v));
    return json_object_get_int64(v);
}

static int64_t wait_v(struct aur__rpc *r, struct aur__pending *p)
{
    struct json_object *reply = NULL;
    struct aur_error err;
    int rc = aur__rpc_wait(r, p, fk_in(2000), false, &reply, NULL, &err);
    int64_t v;

    ck_assert_msg(rc == AUR_OK, "wait: %s", err.msg);
    v = result_v(reply);
    json_object_put(reply);
    return v;
}

/* A notification after everything pushed so far: once the handler has
 * it, every message before it has been dispatched (arrival order). */
static void sync_dispatch(void)
{
    int n = fk_count(&ev.nsync);
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"sync\"}");
    ck_assert(fk_wait_for(&ev.nsync, n + 1, 2000));
}

static void wait_nsent(size_t n)
{
    aur_deadline dl = fk_in(2000);
    while (fk_nsent() < n && aur__now_ms() < dl)
        usleep(1000);
    ck_assert_uint_eq(fk_nsent(), n);
}

/* ---- correlation ------------------------------------------------- */

START_TEST(reply_matches_request_by_id)
{
    struct json_object *params = json_object_new_object(), *m, *v = NULL;
    struct json_object *reply = NULL;
    struct aur__pending *p = NULL;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    json_object_object_add(params, "cursor", json_object_new_string("c1"));
    ck_assert_int_eq(
        aur__rpc_request(r, "tools/list", params, NULL, fk_in(2000), &p, &err),
        AUR_OK);
    m = fk_sent(0);
    ck_assert(json_object_object_get_ex(m, "jsonrpc", &v));
    ck_assert_str_eq(json_object_get_string(v), "2.0");
    ck_assert(json_object_object_get_ex(m, "method", &v));
    ck_assert_str_eq(json_object_get_string(v), "tools/list");
    ck_assert(json_object_object_get_ex(m, "params", &v));
    ck_assert(json_object_object_get_ex(v, "cursor", &v));
    ck_assert_str_eq(json_object_get_string(v), "c1");
    json_object_put(m);
    id = fk_sent_id(0);
    ck_assert_int_eq(json_object_get_int64(aur__rpc_pending_id(p)), id);

    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":42}}",
            (long long)id);
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(2000), false, &reply, &end, &err), AUR_OK);
    ck_assert(json_object_object_get_ex(reply, "id", &v));
    ck_assert_int_eq(json_object_get_int64(v), id);
    ck_assert_int_eq(result_v(reply), 42);
    ck_assert(!end.ended);
    ck_assert_int_eq(end.http_status, 0);
    json_object_put(reply);
    ck_assert_uint_eq(fk_dropped(r), 0);
    aur__rpc_close(r, fk_in(2000));
    ck_assert_int_eq(fk.closes, 1);
}
END_TEST

/* "a per-connection counter that never repeats": an answered id is not
 * handed out again, so a late duplicate cannot complete a newer request. */
START_TEST(ids_never_repeat)
{
    struct aur__rpc *r;
    int64_t ids[6];

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    for (int i = 0; i < 6; i++) {
        struct aur__pending *p = fk_request(r, "m", &ids[i]);
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(ids[i], ids[j]);
        fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":%d}}",
                (long long)ids[i], i);
        ck_assert_int_eq(wait_v(r, p), i);
    }
    struct aur__pending *p = fk_request(r, "m", NULL);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":0}}",
            (long long)ids[0]);
    ck_assert_uint_eq(fk_dropped(r), 1);
    ck_assert(fk_still_waiting(r, p));
    aur__rpc_abandon(r, p, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(out_of_order_responses)
{
    struct aur__pending *p[3];
    struct aur__rpc *r;
    int64_t id[3];
    static const int order[3] = {2, 0, 1};

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    for (int i = 0; i < 3; i++)
        p[i] = fk_request(r, "m", &id[i]);
    for (int k = 0; k < 3; k++)
        fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":%d}}",
                (long long)id[order[k]], 100 + order[k]);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(wait_v(r, p[i]), 100 + i);
    ck_assert_uint_eq(fk_dropped(r), 0);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Unknown ids and ids that cannot name a request are dropped and
 * counted; the waiting request is untouched and still gets its reply. */
START_TEST(unknown_ids_dropped)
{
    static const char *const ids[] = {"7",   "-1",  "null",  "true", "{}",
                                      "[0]", "0.0", "\"0\"", "1e0"};
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;
    size_t n = AUR__ARRAY_LEN(ids);

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    ck_assert_int_eq(id, 0); /* so "0.0", "\"0\"", "1e0" are near misses */
    for (size_t i = 0; i < n; i++)
        fk_push("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"v\":1}}",
                ids[i]);
    ck_assert_uint_eq(fk_dropped(r), n);
    ck_assert(fk_still_waiting(r, p));
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"v\":5}}");
    ck_assert_int_eq(wait_v(r, p), 5);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(duplicate_response_dropped)
{
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":1}}",
            (long long)id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":2}}",
            (long long)id);
    ck_assert_uint_eq(fk_dropped(r), 1);
    ck_assert_int_eq(wait_v(r, p), 1);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* "ids are type-sensitive": the string "0" and the integer 0 name
 * different requests, and a string id is compared whole (U+0000). */
START_TEST(ids_are_type_sensitive)
{
    struct aur__pending *pi, *ps = NULL, *px = NULL;
    struct json_object *m, *v = NULL;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    pi = fk_request(r, "m", &id);
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(
        aur__rpc_request(r, "m", NULL, "0", fk_in(2000), &ps, &err), AUR_OK);
    ck_assert_int_eq(
        aur__rpc_request(r, "m", NULL, "x", fk_in(2000), &px, &err), AUR_OK);
    m = fk_sent(1);
    ck_assert(json_object_object_get_ex(m, "id", &v));
    ck_assert(json_object_is_type(v, json_type_string));
    ck_assert_str_eq(json_object_get_string(v), "0");
    ck_assert(!json_object_object_get_ex(m, "params", NULL));
    json_object_put(m);

    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"x\\u0000y\",\"result\":{\"v\":9}}");
    ck_assert_uint_eq(fk_dropped(r), 1);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"result\":{\"v\":10}}");
    ck_assert(fk_still_waiting(r, pi));
    ck_assert_int_eq(wait_v(r, ps), 10);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"v\":20}}");
    ck_assert_int_eq(wait_v(r, pi), 20);
    ck_assert(fk_still_waiting(r, px));
    aur__rpc_abandon(r, px, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

static void reply_inline(struct aur_conn *c, struct json_object *msg)
{
    struct json_object *id = NULL, *reply = json_object_new_object();
    struct json_object *res = json_object_new_object();

    json_object_object_get_ex(msg, "id", &id);
    json_object_object_add(reply, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(reply, "id", aur__json_copy(id));
    json_object_object_add(res, "v", json_object_new_int(77));
    json_object_object_add(reply, "result", res);
    c->sink.on_message(c->sink.ctx, reply);
}

/* "In the table before the bytes leave: the reply may beat send()". */
START_TEST(reply_may_beat_send)
{
    struct aur__pending *p;
    struct aur__rpc *r;

    fk_reset();
    fk.on_send = reply_inline;
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", NULL);
    ck_assert_int_eq(wait_v(r, p), 77);
    ck_assert_uint_eq(fk_dropped(r), 0);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A JSON-RPC error is a response: the waiter gets the whole object. */
START_TEST(error_response_is_the_reply)
{
    struct json_object *reply = NULL, *e = NULL, *c = NULL;
    struct aur__pending *p;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32000,"
            "\"message\":\"boom\"}}",
            (long long)id);
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(2000), false, &reply, &end, &err), AUR_OK);
    ck_assert(!end.ended);
    ck_assert(json_object_object_get_ex(reply, "error", &e));
    ck_assert(!json_object_object_get_ex(reply, "result", NULL));
    ck_assert(json_object_object_get_ex(e, "code", &c));
    ck_assert_int_eq(json_object_get_int(c), -32000);
    json_object_put(reply);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A response refused for its shape that names a waiting request ends it
 * at once (AUR_E_PROTOCOL, delivered): no deadline is spent on it. */
static const char *const refused_shapes[] = {
    "{\"jsonrpc\":\"1.0\",\"id\":%lld,\"result\":{}}",
    "{\"id\":%lld,\"result\":{}}",
    "{\"jsonrpc\":\"2.0\\u0000\",\"id\":%lld,\"result\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{},\"error\":{\"code\":1}}",
    "{\"jsonrpc\":\"2.0\",\"id\":%lld}",
    "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":\"bad\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":null}",
};

START_TEST(refused_shape_ends_request)
{
    struct json_object *reply = NULL;
    struct aur__pending *p;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id, t0;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    fk_push(refused_shapes[_i], (long long)id);
    t0 = aur__now_ms();
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(10000), false, &reply, &end, &err),
        AUR_E_PROTOCOL);
    ck_assert_int_lt(aur__now_ms() - t0, 1000);
    ck_assert_ptr_null(reply);
    ck_assert(end.ended);
    ck_assert(end.delivered);
    ck_assert_int_eq(end.code, AUR_E_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.msg, "refused"));
    ck_assert_uint_eq(fk_dropped(r), 1);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A message with a method is not a response, even with a waiting id:
 * refused for a bad method, it ends nothing and reaches no handler. */
START_TEST(bad_method_ends_nothing)
{
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":5}", (long long)id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"a\\u0000b\"}",
            (long long)id);
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":[]}");
    ck_assert_uint_eq(fk_dropped(r), 3);
    sync_dispatch();
    ck_assert_int_eq(ev.requests, 0);
    ck_assert_int_eq(ev.nnotes, 1); /* the sync one only */
    ck_assert(fk_still_waiting(r, p));
    aur__rpc_abandon(r, p, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(max_pending_bound)
{
    struct aur__rpc_limits lim = {.max_pending = 2, .max_queue = 8};
    struct aur__pending *p0, *p1, *p2 = NULL;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id0;

    fk_reset();
    r = fk_open(&fk_ops_min, &lim);
    p0 = fk_request(r, "m", &id0);
    p1 = fk_request(r, "m", NULL);
    ck_assert_int_eq(
        aur__rpc_request(r, "m", NULL, NULL, fk_in(2000), &p2, &err),
        AUR_E_LIMIT);
    ck_assert_uint_eq(fk_nsent(), 2); /* refused before the transport */
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":0}}",
            (long long)id0);
    ck_assert_int_eq(wait_v(r, p0), 0);
    p2 = fk_request(r, "m", NULL);
    aur__rpc_abandon(r, p1, false);
    aur__rpc_abandon(r, p2, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- server-initiated messages ------------------------------------ */

START_TEST(notification_on_dispatch_thread)
{
    struct json_object *n, *v = NULL;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\","
            "\"params\":{\"a\":1}}");
    ck_assert(fk_wait_for(&ev.nnotes, 1, 2000));
    n = json_object_array_get_idx(ev.notes, 0);
    ck_assert(json_object_object_get_ex(n, "method", &v));
    ck_assert_str_eq(json_object_get_string(v), "notifications/x");
    ck_assert(json_object_object_get_ex(n, "params", &v));
    ck_assert(json_object_object_get_ex(v, "a", &v));
    ck_assert_int_eq(json_object_get_int(v), 1);
    ck_assert(json_object_object_get_ex(n, "stamp", &v));
    ck_assert_int_eq(json_object_get_int(v), 1); /* 1 without ordered */
    ck_assert(ev.off_thread);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ordered runs on the reader, before queueing; its stamp travels with
 * the notification, and AUR__RPC_DROP drops it.  Requests skip it. */
START_TEST(ordered_stamp_and_drop)
{
    struct json_object *v = NULL;
    struct aur__rpc *r;

    fk_reset();
    ev.ordered_stamp = 7;
    r = fk_open(&fk_ops_min, NULL);
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/1\"}");
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"drop/x\"}");
    fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n/2\"}");
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"echo\"}");
    sync_dispatch();
    ck_assert_int_eq(ev.ordered_calls, 4); /* 3 + sync, not the request */
    ck_assert(ev.ordered_on_caller);
    ck_assert_int_eq(ev.nnotes, 3);
    for (int i = 0; i < 3; i++) {
        struct json_object *n = json_object_array_get_idx(ev.notes, (size_t)i);
        static const char *const want[] = {"n/1", "n/2", "sync"};
        ck_assert(json_object_object_get_ex(n, "method", &v));
        ck_assert_str_eq(json_object_get_string(v), want[i]);
        ck_assert(json_object_object_get_ex(n, "stamp", &v));
        ck_assert_int_eq(json_object_get_int(v), 7);
    }
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(notifications_keep_arrival_order)
{
    struct json_object *v = NULL;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    for (int i = 0; i < 50; i++)
        fk_push("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":%d}}",
                i);
    ck_assert(fk_wait_for(&ev.nnotes, 50, 5000));
    for (int i = 0; i < 50; i++) {
        struct json_object *n = json_object_array_get_idx(ev.notes, (size_t)i);
        ck_assert(json_object_object_get_ex(n, "params", &v));
        ck_assert(json_object_object_get_ex(v, "i", &v));
        ck_assert_int_eq(json_object_get_int(v), i);
    }
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A server request is answered with the handler's result, or -32601;
 * its id is echoed as sent, and it completes none of our requests. */
START_TEST(server_request_answered)
{
    struct json_object *m, *v = NULL, *e = NULL;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"echo\","
            "\"params\":{\"k\":\"v\"}}",
            (long long)id);
    wait_nsent(2);
    m = fk_sent(1);
    ck_assert(json_object_object_get_ex(m, "id", &v));
    ck_assert(json_object_is_type(v, json_type_int));
    ck_assert_int_eq(json_object_get_int64(v), id);
    ck_assert(!json_object_object_get_ex(m, "error", NULL));
    ck_assert(json_object_object_get_ex(m, "result", &v));
    ck_assert(json_object_object_get_ex(v, "params", &v));
    ck_assert(json_object_object_get_ex(v, "k", &v));
    ck_assert_str_eq(json_object_get_string(v), "v");
    json_object_put(m);
    ck_assert(fk_still_waiting(r, p));

    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"nope\"}");
    wait_nsent(3);
    m = fk_sent(2);
    ck_assert(json_object_object_get_ex(m, "id", &v));
    ck_assert_str_eq(json_object_get_string(v), "q");
    ck_assert(!json_object_object_get_ex(m, "result", NULL));
    ck_assert(json_object_object_get_ex(m, "error", &e));
    ck_assert(json_object_object_get_ex(e, "code", &v));
    ck_assert_int_eq(json_object_get_int(v), -32601);
    json_object_put(m);
    ck_assert_int_eq(ev.requests, 2);
    ck_assert(ev.off_thread);
    aur__rpc_abandon(r, p, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Detached requests: the response goes to handlers.response, an end to
 * handlers.ended, both on the dispatch thread; either takes the id out
 * of the table. */
START_TEST(detached_response_and_end)
{
    struct json_object *o, *v = NULL;
    struct aur_request_end e = {sizeof e, AUR_E_IO,       1,
                                0,        "stream broke", NULL};
    struct aur_error err;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    ck_assert_int_eq(aur__rpc_request_detached(r, "subscriptions/listen", NULL,
                                               "l1", fk_in(2000), &err),
                     AUR_OK);
    ck_assert_int_eq(aur__rpc_request_detached(r, "subscriptions/listen", NULL,
                                               "l2", fk_in(2000), &err),
                     AUR_OK);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"l1\",\"result\":{\"v\":1}}");
    ck_assert(fk_wait_for(&ev.nresponses, 1, 2000));
    o = json_object_array_get_idx(ev.responses, 0);
    ck_assert(json_object_object_get_ex(o, "id", &v));
    ck_assert_str_eq(json_object_get_string(v), "l1");
    ck_assert_int_eq(result_v(o), 1);

    struct json_object *id = json_object_new_string("l2");
    fk.sink.on_request_end(fk.sink.ctx, id, &e);
    json_object_put(id);
    ck_assert(fk_wait_for(&ev.nended, 1, 2000));
    o = json_object_array_get_idx(ev.ended, 0);
    ck_assert(json_object_object_get_ex(o, "id", &v));
    ck_assert_str_eq(json_object_get_string(v), "l2");
    ck_assert(json_object_object_get_ex(o, "code", &v));
    ck_assert_int_eq(json_object_get_int(v), AUR_E_IO);
    ck_assert(json_object_object_get_ex(o, "delivered", &v));
    ck_assert(json_object_get_boolean(v));
    ck_assert(json_object_object_get_ex(o, "msg", &v));
    ck_assert_str_eq(json_object_get_string(v), "stream broke");
    ck_assert(ev.off_thread);

    /* Both are out of the table now. */
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"l1\",\"result\":{\"v\":2}}");
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":\"l2\",\"result\":{\"v\":2}}");
    ck_assert_uint_eq(fk_dropped(r), 2);
    aur__rpc_close(r, fk_in(2000));
    ck_assert_int_eq(ev.nresponses, 1);
}
END_TEST

static void rpc_add_here(Suite *s)
{
    TCase *t = tcase_create("correlation");
    tcase_add_test(t, reply_matches_request_by_id);
    tcase_add_test(t, ids_never_repeat);
    tcase_add_test(t, out_of_order_responses);
    tcase_add_test(t, unknown_ids_dropped);
    tcase_add_test(t, duplicate_response_dropped);
    tcase_add_test(t, ids_are_type_sensitive);
    tcase_add_test(t, reply_may_beat_send);
    tcase_add_test(t, error_response_is_the_reply);
    tcase_add_loop_test(t, refused_shape_ends_request, 0,
                        (int)AUR__ARRAY_LEN(refused_shapes));
    tcase_add_test(t, bad_method_ends_nothing);
    tcase_add_test(t, max_pending_bound);
    suite_add_tcase(s, t);

    t = tcase_create("server");
    tcase_add_test(t, notification_on_dispatch_thread);
    tcase_add_test(t, ordered_stamp_and_drop);
    tcase_add_test(t, notifications_keep_arrival_order);
    tcase_add_test(t, server_request_answered);
    tcase_add_test(t, detached_response_and_end);
    suite_add_tcase(s, t);
}

int main(void)
{
    Suite *s = suite_create("rpc");

    /* Refusals log warnings by design; keep the test output readable. */
    aur__log_set_level(NULL, AUR_LOG_ERROR);
    rpc_add_here(s);
    rpc_add_end(s);
    rpc_add_close(s);
    rpc_add_text(s);
    return aur_check_main(s, NULL);
}
