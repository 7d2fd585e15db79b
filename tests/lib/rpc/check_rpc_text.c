/*
 * check_rpc_text.c - text frames and bounds of the JSON-RPC layer
 * (lib/rpc/rpc_recv.c, rpc_queue.c): on_text (ABI 1.2) with its
 * on_response hook and the text waiter (handlers.reply_scan), frames
 * that do not parse (one that names a waiting request ends it at once,
 * one that does not ends nothing), the lenient id reader
 * aur__rpc_peek_id and ids at the int64 edges, max_app_memory_bytes
 * (max_mem, aur__rpc_mem_adjust), and the inbound queue's byte bound
 * (max_queue_bytes): backpressure, the one message an empty queue always
 * takes, and shedding.
 */
#include "check_rpc_fake.h"

#include <stdio.h>
#include <unistd.h>

#include "log.h"
#include "jsonx.h"

/* What on_response heard, and whether the waiter was still waiting
 * then ("before anyone waiting for it is woken"). */
struct heard {
    struct aur__rpc *r;
    struct aur__pending *p;
    int calls;
    int64_t id;
    bool was_waiting;
};

static void on_response(void *arg, int64_t id)
{
    struct heard *h = arg;
    h->calls++;
    h->id = id;
    if (h->p)
        h->was_waiting = fk_still_waiting(h->r, h->p);
}

static int push_text_heard(const char *text, struct heard *h,
                           struct aur_error *err)
{
    return fk.sink.on_text(fk.sink.ctx, text, strlen(text), on_response, h,
                           err);
}

/* text with every '@' replaced by id. */
static char *with_id(const char *text, const char *id)
{
    size_t n = 1;
    for (const char *c = text; *c; c++)
        n += *c == '@' ? strlen(id) : 1;
    char *out = malloc(n), *o = out;
    for (const char *c = text; *c; c++) {
        if (*c == '@') {
            memcpy(o, id, strlen(id));
            o += strlen(id);
        } else {
            *o++ = *c;
        }
    }
    *o = '\0';
    return out;
}

/* ---- on_text ---------------------------------------------------- */

START_TEST(text_response_heard_before_wake)
{
    struct json_object *reply = NULL;
    struct heard h = {0};
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    char buf[128];
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    h.r = r;
    h.p = p;
    snprintf(buf, sizeof buf,
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"v\":3}}",
             (long long)id);
    ck_assert_int_eq(push_text_heard(buf, &h, &err), AUR_OK);
    ck_assert_int_eq(h.calls, 1);
    ck_assert_int_eq(h.id, id);
    ck_assert(h.was_waiting);
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(2000), false, &reply, NULL, &err), AUR_OK);
    json_object_put(reply);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* on_response hears responses with a non-negative integer id only. */
static const struct {
    const char *text;
    int calls;
    int64_t id;
} heard_rows[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", 1, 5},
    {"{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"result\":{}}", 1,
     INT64_MAX},
    {"{\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":1}}", 1, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":-1,\"result\":{}}", 0, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"5\",\"result\":{}}", 0, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":5.0,\"result\":{}}", 0, 0},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", 0, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"echo\"}", 0, 0},
    {"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":", 0, 0},
};

START_TEST(on_response_only_for_responses)
{
    struct heard h = {0};
    struct aur_error err;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    push_text_heard(heard_rows[_i].text, &h, &err);
    ck_assert_int_eq(h.calls, heard_rows[_i].calls);
    ck_assert_int_eq(h.id, heard_rows[_i].id);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A text waiter gets what the handlers' reply_scan makes of its reply,
 * and no tree; the scanner runs only while such a waiter exists, and
 * a reply it declines, or no scanner at all, gives a tree.  Either way
 * on_response hears the id first. */
static const char *const scan_replies[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{\"t\":\"hi\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{\"u\":1}}",
};
static const struct {
    bool scanner, text_ok;
    int reply;
    bool as_text;
    int scans;
} scan_rows[] = {
    {true, true, 0, true, 1},
    {true, false, 0, false, 0},
    {true, true, 1, false, 1},
    {false, true, 0, false, 0},
};

START_TEST(text_waiter_takes_scanned_text)
{
    struct json_object *reply = NULL;
    struct aur__pending *p = NULL;
    struct heard h = {0};
    struct aur_error err;
    struct aur__rpc *r;
    char *text = NULL, id[24];
    size_t tlen = 99;
    bool maybe;

    fk_reset();
    ev.scanner = scan_rows[_i].scanner;
    r = fk_open(&fk_ops_full, NULL);
    ck_assert_int_eq(aur__rpc_request_text(r, "tools/call", "{}", 2,
                                           scan_rows[_i].text_ok, fk_in(2000),
                                           &p, &maybe, &err),
                     AUR_OK);
    snprintf(id, sizeof id, "%lld", (long long)fk_sent_id(0));
    char *frame = with_id(scan_replies[scan_rows[_i].reply], id);
    h.r = r;
    h.p = p;
    ck_assert_int_eq(push_text_heard(frame, &h, &err), AUR_OK);
    free(frame);
    ck_assert_int_eq(h.calls, 1);
    ck_assert_int_eq(h.id, fk_sent_id(0));
    ck_assert(h.was_waiting);
    ck_assert_int_eq(ev.scans, scan_rows[_i].scans);
    ck_assert_int_eq(aur__rpc_wait_text(r, p, fk_in(2000), false, &reply,
                                        &text, &tlen, NULL, &err),
                     AUR_OK);
    if (scan_rows[_i].as_text) {
        ck_assert_ptr_null(reply);
        ck_assert_ptr_nonnull(text);
        ck_assert_str_eq(text, "hi");
        ck_assert_uint_eq(tlen, 2);
    } else {
        ck_assert_ptr_nonnull(reply);
        ck_assert(json_object_object_get_ex(reply, "result", NULL));
        ck_assert_ptr_null(text);
    }
    free(text);
    json_object_put(reply);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Frames that do not parse but name a waiting request ('@' = its id):
 * on_text fails, and the request ends at once as refused. */
static const char *const unparsable_named[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{",
    "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{\"a\":01}}",
    "{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":@,}",
    "{\"id\" : @ ,\"jsonrpc\":\"2.0\",\"result\":{\"t\":\"\xff\"}}",
    "{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{}} trailing",
};

START_TEST(unparsable_frame_ends_named_request)
{
    struct json_object *reply = NULL;
    struct aur__pending *p[2] = {NULL, NULL};
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__rpc *r;
    char id[24];

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p[0] = fk_request(r, "m", NULL);
    snprintf(id, sizeof id, "%lld", (long long)fk_sent_id(0));
    ck_assert_int_eq(
        aur__rpc_request(r, "m", NULL, "sid-1", fk_in(2000), &p[1], &err),
        AUR_OK);
    /* Once by the integer id, once by the string id. */
    for (int k = 0; k < 2; k++) {
        char *frame = with_id(unparsable_named[_i], k ? "\"sid-1\"" : id);
        int64_t t0 = aur__now_ms();
        ck_assert_int_ne(fk_push_text(frame, &err), AUR_OK);
        free(frame);
        ck_assert_int_eq(
            aur__rpc_wait(r, p[k], fk_in(10000), false, &reply, &end, &err),
            AUR_E_PROTOCOL);
        ck_assert_int_lt(aur__now_ms() - t0, 1000);
        ck_assert(end.ended);
        ck_assert(end.delivered);
        ck_assert_ptr_nonnull(strstr(end.msg, "refused"));
    }
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Frames from which no top-level id can be read end nothing. */
static const char *const unparsable_anonymous[] = {
    "{\"jsonrpc\":\"2.0\",\"result\":{\"id\":0},",
    "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}]",
    "{\"jsonrpc\":\"2.0\",\"id\":0.0,\"result\":",
    "{\"jsonrpc\":\"2.0\",\"id\":0e0,\"result\":",
    "{\"jsonrpc\":\"2.0\",\"i\\u0064\":0,\"result\":",
    "{\"jsonrpc\":\"2.0\",\"x\":\"id\",\"result\":",
    "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"result\":",
    "not json",
    "",
};

START_TEST(unparsable_frame_without_id_ends_nothing)
{
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p = fk_request(r, "m", &id);
    ck_assert_int_eq(id, 0);
    ck_assert_int_ne(fk_push_text(unparsable_anonymous[_i], &err), AUR_OK);
    ck_assert_int_ne(err.code, AUR_OK);
    ck_assert(fk_still_waiting(r, p));
    aur__rpc_abandon(r, p, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- batches (docs/protocol.md, Batches) --------------------------- */

/* On a session that allows them, each element is a message of its own,
 * in order: notifications pass the ordered hook on the reader, the
 * response reaches its waiter; by text and by parsed message alike. */
START_TEST(batch_taken_in_order_when_allowed)
{
    struct json_object *reply = NULL;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;
    char *frame;

    fk_reset();
    ev.ordered_stamp = 1;
    r = fk_open(&fk_ops_min, NULL);
    aur__rpc_allow_batches(r);
    p = fk_request(r, "m", &id);
    ck_assert(asprintf(&frame, "[{\"jsonrpc\":\"2.0\",\"method\":\"n1\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"n2\"}]",
                       (long long)id) > 0);
    if (_i == 0)
        ck_assert_int_eq(fk_push_text(frame, &err), AUR_OK);
    else
        fk_push("%s", frame);
    free(frame);
    ck_assert_int_eq(fk_count(&ev.ordered_calls), 2);
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(2000), false, &reply, &end, &err), AUR_OK);
    json_object_put(reply);
    ck_assert(fk_wait_for(&ev.nnotes, 2, 2000));
    pthread_mutex_lock(&ev.mu);
    ck_assert_str_eq(json_object_get_string(json_object_object_get(
                         json_object_array_get_idx(ev.notes, 0), "method")),
                     "n1");
    ck_assert_str_eq(json_object_get_string(json_object_object_get(
                         json_object_array_get_idx(ev.notes, 1), "method")),
                     "n2");
    pthread_mutex_unlock(&ev.mu);
    ck_assert_int_eq(fk_count(&ev.batch_refused), 0);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Refused as a whole, before any element is taken, and said so:
 * without allow_batches any array; with it an empty one or one with an
 * element that is not an object. */
static const struct {
    bool allowed;
    const char *frame;
} refused_batches[] = {
    {false, "[{\"jsonrpc\":\"2.0\",\"method\":\"n1\"}]"},
    {true, "[]"},
    {true, "[{\"jsonrpc\":\"2.0\",\"method\":\"n1\"},1]"},
    {true, "[{\"jsonrpc\":\"2.0\",\"method\":\"n1\"},[]]"},
};

START_TEST(batch_refused_whole)
{
    struct aur_error err;
    struct aur__rpc *r;

    fk_reset();
    ev.ordered_stamp = 1;
    r = fk_open(&fk_ops_min, NULL);
    if (refused_batches[_i].allowed)
        aur__rpc_allow_batches(r);
    ck_assert_int_eq(fk_push_text(refused_batches[_i].frame, &err),
                     AUR_E_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.msg, "batch"));
    fk_push("%s", refused_batches[_i].frame);
    ck_assert_int_eq(fk_count(&ev.batch_refused), 2);
    ck_assert_int_eq(fk_count(&ev.ordered_calls), 0);
    ck_assert(!fk_wait_for(&ev.nnotes, 1, 100));
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- ids at the edges ---------------------------------------------- */

static const struct {
    const char *in;
    int kind;
    int64_t num;
    const char *sid;
} peek_rows[] = {
    {"{\"id\":0}", 1, 0, NULL},
    {" { \"id\" : -7 , \"x\":1}", 1, -7, NULL},
    {"{\"id\":9223372036854775807", 1, INT64_MAX, NULL},
    {"{\"id\":-9223372036854775808,", 1, INT64_MIN, NULL},
    {"{\"id\":1000000000000000000}", 1, 1000000000000000000, NULL},
    {"{\"x\":\"id\",\"id\":4}", 1, 4, NULL},
    {"{\"x\":[{\"id\":1}],\"id\":2}", 1, 2, NULL},
    {"{\"id\":\"abc\"}", 2, 0, "abc"},
    {"{\"id\":\"\"}", 2, 0, ""},
    {"{\"id\":9223372036854775808}", 0, 0, NULL},
    {"{\"id\":-9223372036854775809}", 0, 0, NULL},
    {"{\"id\":12345678901234567890}", 0, 0, NULL},
    {"{\"id\":1.5}", 0, 0, NULL},
    {"{\"id\":1e3}", 0, 0, NULL},
    {"{\"id\":-}", 0, 0, NULL},
    {"{\"id\":}", 0, 0, NULL},
    {"{\"id\":\"a\\\"b\"}", 0, 0, NULL},
    {"{\"id\":\"a\x01\"}", 0, 0, NULL},
    {"{\"id\":\"0123456789012345678901234567890123456789012345678901234567"
     "890123456789\"}",
     0, 0, NULL},
    {"{\"x\":{\"id\":1}}", 0, 0, NULL},
    {"[{\"id\":1}]", 0, 0, NULL},
    {"{\"i\\u0064\":1}", 0, 0, NULL},
    {"{\"id\"", 0, 0, NULL},
};

START_TEST(peek_id_table)
{
    char sid[64] = "untouched";
    int64_t num = -99;
    const char *in = peek_rows[_i].in;
    int kind = aur__rpc_peek_id(in, strlen(in), &num, sid, sizeof sid);

    ck_assert_msg(kind == peek_rows[_i].kind, "row %d (%s): kind %d", _i, in,
                  kind);
    if (kind == 1)
        ck_assert_int_eq(num, peek_rows[_i].num);
    if (kind == 2)
        ck_assert_str_eq(sid, peek_rows[_i].sid);
}
END_TEST

/* Ids beyond int64 must not wrap or saturate onto a waiting request;
 * as messages and as text. */
START_TEST(int64_edge_ids_name_no_request)
{
    static const char *const ids[] = {
        "9223372036854775807",  "-9223372036854775808",
        "9223372036854775808",  "18446744073709551615",
        "18446744073709551616", "18446744073709551617",
        "-9223372036854775809", "100000000000000000000000000001"};
    struct aur__pending *p0, *p1;
    struct aur_error err;
    struct aur__rpc *r;
    int64_t id0, id1;
    size_t n = AUR__ARRAY_LEN(ids);

    fk_reset();
    r = fk_open(&fk_ops_min, NULL);
    p0 = fk_request(r, "m", &id0);
    p1 = fk_request(r, "m", &id1);
    ck_assert(id0 == 0 && id1 == 1);
    for (size_t i = 0; i < n; i++) {
        char *frame =
            with_id("{\"jsonrpc\":\"2.0\",\"id\":@,\"result\":{}}", ids[i]);
        fk_push("%s", frame);
        ck_assert_int_eq(fk_push_text(frame, &err), AUR_OK);
        free(frame);
    }
    ck_assert_uint_eq(fk_dropped(r), 2 * n);
    ck_assert(fk_still_waiting(r, p0));
    ck_assert(fk_still_waiting(r, p1));
    aur__rpc_abandon(r, p0, false);
    aur__rpc_abandon(r, p1, false);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- max_mem (max_app_memory_bytes) -------------------------------- */

/* A response over what is left of max_mem ends its request with
 * AUR_E_LIMIT naming the key, as text and as a parsed message; what the
 * owner charges lowers what is left, and releasing it restores it. */
START_TEST(max_mem_refuses_and_adjusts)
{
    struct aur__rpc_limits lim = {
        .max_pending = 8, .max_queue = 8, .max_mem = 16384};
    char big[32768], small[128];
    struct aur__rpc_stats st;
    struct aur__rpc_end end;
    struct aur_error err;
    struct aur__pending *p;
    struct aur__rpc *r;
    int64_t id;

    fk_reset();
    r = fk_open(&fk_ops_min, &lim);
    for (int k = 0; k < 3; k++) {
        p = fk_request(r, "m", &id);
        int n =
            snprintf(big, sizeof big,
                     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"s\":\"",
                     (long long)id);
        memset(big + n, 'x', 20000);
        strcpy(big + n + 20000, "\"}}");
        if (k == 0)
            ck_assert_int_eq(fk_push_text(big, &err), AUR_E_LIMIT);
        else if (k == 1)
            fk_push("%s", big);
        else {
            /* A small reply fits until the owner holds everything. */
            aur__rpc_mem_adjust(r, 16384);
            snprintf(small, sizeof small,
                     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
                     (long long)id);
            fk_push_text(small, &err);
        }
        struct json_object *reply = NULL;
        ck_assert_int_eq(
            aur__rpc_wait(r, p, fk_in(5000), false, &reply, &end, &err),
            AUR_E_LIMIT);
        ck_assert(end.ended);
        ck_assert_ptr_nonnull(strstr(err.msg, "max_app_memory_bytes"));
    }
    aur__rpc_get_stats(r, &st);
    ck_assert_uint_eq(st.refused_memory, 3);

    aur__rpc_mem_adjust(r, -16384);
    p = fk_request(r, "m", &id);
    snprintf(small, sizeof small,
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}", (long long)id);
    ck_assert_int_eq(fk_push_text(small, &err), AUR_OK);
    struct json_object *reply = NULL;
    ck_assert_int_eq(
        aur__rpc_wait(r, p, fk_in(2000), false, &reply, NULL, &err), AUR_OK);
    json_object_put(reply);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* ---- the queue's byte bound ---------------------------------------- */

static const char note_a[] = "{\"jsonrpc\":\"2.0\",\"method\":\"a\","
                             "\"params\":{\"pad\":\"aaaaaaaaaaaaaaaa\"}}";
static const char req_b[] = "{\"jsonrpc\":\"2.0\",\"id\":\"b\","
                            "\"method\":\"echo\",\"params\":{\"x\":1}}";

/* As sink_message measures it: the host parser's tree (json-c's own
 * parser sizes its tables differently). */
static size_t mem_of(const char *text)
{
    struct json_object *v = NULL;
    struct aur_error err;
    ck_assert_int_eq(
        aur__json_parse(text, strlen(text), AUR__JSON_MAX_DEPTH, &v, &err),
        AUR_OK);
    size_t m = aur__json_mem(v);
    json_object_put(v);
    ck_assert_uint_gt(m, 0);
    return m;
}

static void *push_b(void *arg)
{
    fk_push("%s", req_b);
    __atomic_store_n((bool *)arg, true, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *close_rpc(void *arg)
{
    aur__rpc_close(arg, fk_in(5000));
    return NULL;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 65536);
    ck_assert_ptr_nonnull(f);
    buf[fread(buf, 1, 65535, f)] = 0;
    fclose(f);
    return buf;
}

static void open_gate(void)
{
    pthread_mutex_lock(&ev.mu);
    ev.gate_closed = false;
    pthread_cond_broadcast(&ev.cv);
    pthread_mutex_unlock(&ev.mu);
}

/* "A message bigger than the whole budget still enters an empty
 * queue": at once (a wait would be 10 s, past this test's timeout). */
START_TEST(oversized_message_enters_empty_queue)
{
    struct aur__rpc_limits lim = {
        .max_pending = 8, .max_queue = 8, .max_queue_bytes = 1};
    struct aur__rpc_stats st;
    struct aur__rpc *r;

    fk_reset();
    r = fk_open(&fk_ops_min, &lim);
    fk_push("%s", note_a);
    ck_assert(fk_wait_for(&ev.nnotes, 1, 2000));
    aur__rpc_get_stats(r, &st);
    ck_assert_uint_eq(st.dropped_notifications, 0);
    ck_assert_uint_eq(st.queue_bytes_peak, mem_of(note_a));
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* Over max_queue_bytes the reader waits (backpressure, not loss) while
 * the dispatcher is busy, for server requests as for notifications; the
 * bytes of the message being handled still count. */
START_TEST(byte_bound_backpressure)
{
    size_t ma = mem_of(note_a), mb = mem_of(req_b);
    struct aur__rpc_limits lim = {
        .max_pending = 8, .max_queue = 8, .max_queue_bytes = ma + mb - 1};
    struct aur__rpc_stats st;
    struct aur__rpc *r;
    bool done = false;
    pthread_t t;

    fk_reset();
    ev.gate_closed = true;
    r = fk_open(&fk_ops_min, &lim);
    fk_push("%s", note_a);
    ck_assert(fk_wait_for(&ev.in_handler, 1, 2000));
    ck_assert_int_eq(pthread_create(&t, NULL, push_b, &done), 0);
    usleep(200000);
    ck_assert(!__atomic_load_n(&done, __ATOMIC_SEQ_CST));
    open_gate();
    pthread_join(t, NULL);
    ck_assert(fk_wait_for(&ev.requests, 1, 2000));
    aur__rpc_get_stats(r, &st);
    ck_assert_uint_eq(st.dropped_notifications, 0);
    ck_assert_uint_le(st.queue_bytes_peak, lim.max_queue_bytes);
    aur__rpc_close(r, fk_in(2000));
}
END_TEST

/* A reader still waiting for room when close begins sheds its message
 * (counted, logged naming max_queued_bytes): it is never handled. */
START_TEST(byte_bound_sheds_at_close)
{
    size_t ma = mem_of(note_a), mb = mem_of(req_b);
    struct aur__rpc_limits lim = {
        .max_pending = 8, .max_queue = 8, .max_queue_bytes = ma + mb - 1};
    char logpath[] = "/tmp/check_rpc_log.XXXXXX";
    struct aur_error err;
    struct aur__rpc *r;
    bool done = false;
    pthread_t closer;
    int fd = mkstemp(logpath);

    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(aur__log_setup(AUR_LOG_WARN, logpath, &err), AUR_OK);
    fk_reset();
    ev.gate_closed = true;
    r = fk_open(&fk_ops_min, &lim);
    fk_push("%s", note_a);
    ck_assert(fk_wait_for(&ev.in_handler, 1, 2000));
    ck_assert_int_eq(pthread_create(&fk.reader, NULL, push_b, &done), 0);
    fk.has_reader = true; /* fk_close joins it */
    usleep(100000);
    ck_assert(!__atomic_load_n(&done, __ATOMIC_SEQ_CST));
    /* Close begins: the reader stops waiting and sheds what it holds. */
    ck_assert_int_eq(pthread_create(&closer, NULL, close_rpc, r), 0);
    aur_deadline dl = fk_in(3000);
    while (!__atomic_load_n(&done, __ATOMIC_SEQ_CST) && aur__now_ms() < dl)
        usleep(1000);
    ck_assert(__atomic_load_n(&done, __ATOMIC_SEQ_CST));
    open_gate();
    pthread_join(closer, NULL);
    ck_assert_int_eq(ev.requests, 0);
    ck_assert_int_eq(ev.nnotes, 1);
    aur__log_teardown();
    char *log = slurp(logpath);
    unlink(logpath);
    ck_assert_ptr_nonnull(strstr(log, "max_queued_bytes"));
    free(log);
}
END_TEST

void rpc_add_text(Suite *s)
{
    TCase *t = tcase_create("text");
    tcase_add_test(t, text_response_heard_before_wake);
    tcase_add_loop_test(t, on_response_only_for_responses, 0,
                        (int)AUR__ARRAY_LEN(heard_rows));
    tcase_add_loop_test(t, text_waiter_takes_scanned_text, 0,
                        (int)AUR__ARRAY_LEN(scan_rows));
    tcase_add_loop_test(t, unparsable_frame_ends_named_request, 0,
                        (int)AUR__ARRAY_LEN(unparsable_named));
    tcase_add_loop_test(t, unparsable_frame_without_id_ends_nothing, 0,
                        (int)AUR__ARRAY_LEN(unparsable_anonymous));
    tcase_add_loop_test(t, peek_id_table, 0, (int)AUR__ARRAY_LEN(peek_rows));
    tcase_add_loop_test(t, batch_taken_in_order_when_allowed, 0, 2);
    tcase_add_loop_test(t, batch_refused_whole, 0,
                        (int)AUR__ARRAY_LEN(refused_batches));
    tcase_add_test(t, int64_edge_ids_name_no_request);
    tcase_add_test(t, max_mem_refuses_and_adjusts);
    suite_add_tcase(s, t);

    t = tcase_create("queue");
    tcase_add_test(t, oversized_message_enters_empty_queue);
    tcase_add_test(t, byte_bound_backpressure);
    tcase_add_test(t, byte_bound_sheds_at_close);
    suite_add_tcase(s, t);
}
