/*
 * check_rpc_end.c - how a request ends without a response of its own
 * (lib/rpc/rpc.c, rpc_recv.c): the ABI 1.3 on_request_end path
 * (delivered 0 vs 1, HTTP status, the server's error sent with a non-2xx
 * status, at most once), send failures (AUR_E_NOT_SENT vs maybe sent)
 * with the text send path, and the optional listen and set_protocol
 * hooks.
 */
#include "check_rpc_fake.h"

#include "jsonx.h"

static void push_end(int64_t id, int code, int delivered, int status,
                     const char *msg, struct json_object *error)
{
    struct aur_request_end e = {sizeof e, code, delivered, status, msg, error};
    struct json_object *jid = json_object_new_int64(id);
    fk.sink.on_request_end(fk.sink.ctx, jid, &e);
    json_object_put(jid);
}

/* ---- request ends (ABI 1.3) ----------------------------------------- */

START_TEST(end_not_delivered)
{
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    push_end(id, AUR_E_IO, 0, 0, "connection refused", NULL);
    ck_assert_int_eq(fk_wait_rc(r, p, 5000, &end, &err), AUR_E_IO);
    ck_assert(end.ended);
    ck_assert(!end.delivered);
    ck_assert_int_eq(end.code, AUR_E_IO);
    ck_assert_int_eq(end.http_status, 0);
    ck_assert_str_eq(end.msg, "connection refused");
    ck_assert_str_eq(err.msg, "connection refused");
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(end_delivered_with_status)
{
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    push_end(id, AUR_E_TIMEOUT, 1, 504, "gateway timeout", NULL);
    ck_assert_int_eq(fk_wait_rc(r, p, 5000, &end, &err), AUR_E_TIMEOUT);
    ck_assert(end.ended);
    ck_assert(end.delivered);
    ck_assert_int_eq(end.http_status, 504);
    ck_assert_int_eq(err.detail, 504);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* The code the waiter sees: never a success, and AUR_E_RPC only with
 * the server's error object. */
static const struct {
    int in, want;
} end_codes[] = {
    {5, AUR_E_IO},
    {AUR_OK, AUR_E_IO},
    {AUR_DECLINE, AUR_E_IO},
    {AUR_E_RPC, AUR_E_PROTOCOL},
    {AUR_E_LIMIT, AUR_E_LIMIT},
    {AUR_E_PROTOCOL, AUR_E_PROTOCOL},
};

START_TEST(end_codes_normalised)
{
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    push_end(id, end_codes[_i].in, 1, 0, NULL, NULL);
    ck_assert_int_eq(fk_wait_rc(r, p, 5000, &end, &err), end_codes[_i].want);
    ck_assert_int_eq(end.code, end_codes[_i].want);
    ck_assert_str_eq(end.msg, ""); /* msg NULL allowed */
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* The server's own error with a non-2xx status is a response in its
 * words: the waiter gets it as a reply, with the status beside it. */
START_TEST(end_with_server_error_is_reply)
{
    struct json_object *e =
        json_tokener_parse("{\"code\":-32603,\"message\":\"internal\"}");
    struct json_object *reply = NULL, *v = NULL;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    push_end(id, AUR_E_RPC, 1, 500, "HTTP 500", e);
    json_object_put(e); /* borrowed for the call only */
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(5000), false, &reply, &end, &err), AUR_OK);
    ck_assert(!end.ended);
    ck_assert_int_eq(end.http_status, 500);
    ck_assert(json_object_object_get_ex(reply, "id", &v));
    ck_assert_int_eq(json_object_get_int64(v), id);
    ck_assert(json_object_object_get_ex(reply, "error", &v));
    ck_assert(json_object_object_get_ex(v, "code", &v));
    ck_assert_int_eq(json_object_get_int(v), -32603);
    json_object_put(reply);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* AUR_E_RPC with an "error" that is not an object (a transport breaking
 * the ABI) is no server answer: the waiter sees AUR_E_PROTOCOL, never
 * AUR_E_RPC without the error it promises. */
START_TEST(end_rpc_without_error_object)
{
    struct json_object *e = json_object_new_string("not an object");
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    push_end(id, AUR_E_RPC, 1, 500, "HTTP 500", e);
    json_object_put(e);
    ck_assert_int_eq(fk_wait_rc(r, p, 5000, &end, &err), AUR_E_PROTOCOL);
    ck_assert(end.ended);
    ck_assert_int_eq(end.code, AUR_E_PROTOCOL);
    ck_assert_int_eq(end.http_status, 500);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* At most once per request, never after its response; an end for an id
 * nobody waits for changes nothing. */
START_TEST(end_only_for_waiting_request)
{
    struct aur__pending *p, *q;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id, qid;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    q = fk_request(r, "m", &qid);
    push_end(12345, AUR_E_IO, 0, 0, "other", NULL);
    struct json_object *fid = json_object_new_double((double)id);
    struct aur_request_end fe = {sizeof fe, AUR_E_IO, 0, 0, "float", NULL};
    fk.sink.on_request_end(fk.sink.ctx, fid, &fe);
    json_object_put(fid);
    fid = json_object_new_int64(id);
    fk.sink.on_request_end(fk.sink.ctx, fid, NULL); /* no end: ignored */
    json_object_put(fid);
    ck_assert(fk_still_waiting(r, p));

    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    push_end(id, AUR_E_IO, 0, 0, "late", NULL);
    ck_assert_int_eq(fk_wait_rc(r, p, 2000, &end, &err), AUR_OK);
    ck_assert(!end.ended);

    push_end(qid, AUR_E_IO, 1, 0, "first", NULL);
    push_end(qid, AUR_E_TIMEOUT, 0, 0, "second", NULL);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)qid);
    ck_assert_int_eq(fk_wait_rc(r, q, 2000, &end, &err), AUR_E_IO);
    ck_assert_str_eq(end.msg, "first");
    ck_assert(end.delivered);
    ck_assert_uint_eq(fk_dropped(r), 1); /* the response after the end */
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- send failures ------------------------------------------------- */

static const struct {
    int send_rc;
    bool maybe_sent;
    bool text_hook;
} send_rows[] = {
    {AUR_E_NOT_SENT, false, true}, {AUR_E_NOT_SENT, false, false},
    {AUR_E_IO, true, true},        {AUR_E_IO, true, false},
    {AUR_E_TIMEOUT, true, true},   {AUR_E_CLOSED, true, false},
};

/* *maybe_sent is false only for AUR_E_NOT_SENT; the failed request
 * leaves the table (its slot is free, a late answer names nothing). */
START_TEST(send_failure_outcome)
{
    struct aur__rpc_limits lim = {.max_pending = 1, .max_queue = 8};
    struct aur__pending *p = NULL;
    struct aur_error err;
    struct aur__rpc *r;
    bool maybe = !send_rows[_i].maybe_sent;
    int64_t id;

    fk_reset();
    fk.send_rc = send_rows[_i].send_rc;
    fk.send_fail_left = 1;
    r = fk_open(send_rows[_i].text_hook ? &fk_ops_full : &fk_ops_min, &lim);
    ck_assert_int_eq(aur__rpc_request_text(r, "tools/call", "{}", 2, false,
                                           fk_in(2000), &p, &maybe, &err),
                     send_rows[_i].send_rc);
    ck_assert_int_eq(maybe, send_rows[_i].maybe_sent);
    ck_assert_int_eq(err.code, send_rows[_i].send_rc);
    id = fk_sent_id(0);
    fk_push("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    ck_assert_uint_eq(fk_dropped(r), 1);
    p = fk_request(r, "m", NULL); /* max_pending 1: the slot is free */
    aur__rpc_abandon(r, p, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

START_TEST(send_text_envelope)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    struct json_object *m, *v = NULL;
    struct aur__pending *p = NULL;
    char method[200], want[64];
    struct aur_error err;
    struct aur__rpc *r;
    bool maybe = true;

    fk_reset();
    r = fk_open(&fk_ops_full, NULL);
    ck_assert_int_eq(aur__rpc_request_text(r, "tools/call", "{\"name\":\"t\"}",
                                           12, false, fk_in(2000), &p, &maybe,
                                           &err),
                     AUR_OK);
    ck_assert_uint_eq(fk.send_text_calls, 1);
    ck_assert_uint_eq(fk.send_calls, 0);
    snprintf(want, sizeof want, "%s%lld,\"method\":\"", head,
             (long long)fk_sent_id(0));
    ck_assert_int_eq(strncmp(fk.sent[0], want, strlen(want)), 0);
    m = fk_sent(0);
    ck_assert(json_object_object_get_ex(m, "params", &v));
    ck_assert(json_object_object_get_ex(v, "name", &v));
    ck_assert_str_eq(json_object_get_string(v), "t");
    json_object_put(m);
    aur__rpc_abandon(r, p, false);

    /* A method name that cannot fit is refused before the transport. */
    memset(method, 'm', sizeof method - 1);
    method[sizeof method - 1] = '\0';
    maybe = true;
    ck_assert_int_eq(aur__rpc_request_text(r, method, "{}", 2, false,
                                           fk_in(2000), &p, &maybe, &err),
                     AUR_E_NOT_SENT);
    ck_assert(!maybe);
    ck_assert_uint_eq(fk_nsent(), 1);
    aur__rpc_close(r, fk_in(2000));

    /* Without send_text the text is parsed and sent as an object; text
     * that does not parse is refused, not sent. */
    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    ck_assert_int_eq(aur__rpc_request_text(r, "tools/call", "{\"a\":1}", 7,
                                           false, fk_in(2000), &p, &maybe,
                                           &err),
                     AUR_OK);
    ck_assert_uint_eq(fk.send_calls, 1);
    aur__rpc_abandon(r, p, false);
    maybe = true;
    ck_assert_int_eq(aur__rpc_request_text(r, "tools/call", "{\"a\":", 5,
                                           false, fk_in(2000), &p, &maybe,
                                           &err),
                     AUR_E_NOT_SENT);
    ck_assert(!maybe);
    ck_assert_uint_eq(fk_nsent(), 1);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* The optional hooks: without them listen and set_protocol succeed and
 * nothing is called; with them the transport hears and decides. */
START_TEST(optional_hooks)
{
    struct aur_error err;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    ck_assert_int_eq(aur__rpc_listen(r, fk_in(1000), &err), AUR_OK);
    ck_assert_int_eq(aur__rpc_set_protocol(r, 1, "2026-07-28", &err), AUR_OK);
    ck_assert_int_eq(fk.listens, 0);
    ck_assert_int_eq(fk.proto_modern, -1);
    aur__rpc_close(r, fk_in(2000));

    fk_reset();
    r = fk_open(&fk_ops_full, NULL);
    fk.listen_rc = AUR_DECLINE;
    ck_assert_int_eq(aur__rpc_listen(r, fk_in(1000), &err), AUR_DECLINE);
    fk.listen_rc = AUR_E_IO;
    ck_assert_int_eq(aur__rpc_listen(r, fk_in(1000), &err), AUR_E_IO);
    ck_assert_int_eq(fk.listens, 2);
    ck_assert_int_eq(aur__rpc_set_protocol(r, 0, "2025-06-18", &err), AUR_OK);
    ck_assert_int_eq(fk.proto_modern, 0);
    ck_assert_str_eq(fk.proto_version, "2025-06-18");
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

void rpc_add_end(Suite *s)
{
    TCase *t = tcase_create("ends");
    tcase_add_test(t, end_not_delivered);
    tcase_add_test(t, end_delivered_with_status);
    tcase_add_loop_test(t, end_codes_normalised, 0,
                        (int)AUR__ARRAY_LEN(end_codes));
    tcase_add_test(t, end_with_server_error_is_reply);
    tcase_add_test(t, end_rpc_without_error_object);
    tcase_add_test(t, end_only_for_waiting_request);
    tcase_add_loop_test(t, send_failure_outcome, 0,
                        (int)AUR__ARRAY_LEN(send_rows));
    tcase_add_test(t, send_text_envelope);
    tcase_add_test(t, optional_hooks);
    suite_add_tcase(s, t);
}
