/*
 * check_transport_http_resend.c - a request is written once, even when
 * the keep-alive connection it went out on dies unanswered.  Part of
 * check_transport_http.
 *
 * libcurl (7.88) re-sends a request by itself when a reused connection
 * dies before any byte of the response ("Connection died, retrying a
 * fresh connect"), POST included: for a tools/call, a second delivery.
 * http_post.c refuses that re-send twice over (on_prereq allows one
 * attempt per hop; the body cannot be rewound).  The killpoint server
 * cannot tell whether it does: it closes its listener before it dies,
 * so the re-send's connect is refused whatever the host does.  The
 * fixture's /ka route keeps listening and counts every request on every
 * connection.
 */
#define _GNU_SOURCE
#include "http/http_host.h"
#include "http_int.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

void http_resend_tests(Suite *s);

/* The end recorded for a request (plugin_host.c): _end.code. */
static int end_code(struct json_object *m)
{
    struct json_object *end = NULL, *v = NULL;

    json_object_object_get_ex(m, "_end", &end);
    json_object_object_get_ex(end, "code", &v);
    return json_object_get_int(v);
}

/* An open connection to path whose first call ("warm") was answered on a
 * keep-alive connection, now in the pool. */
static struct aur_conn *warm_conn(const char *path)
{
    struct aur_conn *c;
    struct json_object *m;

    up2(NULL, NULL, NULL, NULL);
    ep_path(path);
    c = open_ok();
    set_proto(c, 1, "2026-07-28");
    send_ok(c, req("warm", "tools/call"));
    m = wait_id("warm", 5000);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(json_object_object_get(m, "result"));
    json_object_put(m);
    return c;
}

/*
 * A first call is answered on a keep-alive connection; the second goes
 * out on that connection, which the server drops after reading it whole
 * (end: how).  The server must see the second call once, counted over
 * every connection, and the call must end delivered with no answer from
 * the server: the core's unknown.  Failed would claim it had no effect;
 * a second copy is the duplicate the guards exist to prevent.
 */
static void died_unanswered(const char *how)
{
    char path[32];
    struct aur_conn *c;
    struct json_object *m;
    int st;
    bool dl;

    snprintf(path, sizeof path, "/ka?end=%s", how);
    c = warm_conn(path);
    /* The response reaches the sink just before the warm call's run lets
     * go of its curl handle; the next call must find that handle free,
     * with its connection in its pool. */
    sleep_ms(200);
    send_ok(c, req("die", "tools/call"));
    m = wait_id("die", 8000);
    ck_assert_msg(m != NULL, "no end for the call");
    ck_assert_msg(marker(m, &st, &dl), "answered: %s",
                  json_object_to_json_string(m));
    ck_assert_msg(dl, "reported not sent: %s",
                  str_at(m, "_end", "msg"));
    ck_assert_int_eq(st, 0);          /* nothing came back */
    ck_assert_int_eq(err_code(m), 0); /* no JSON-RPC error: not failed */
    ck_assert_int_eq(end_code(m), AUR_E_IO);
    ck_assert_msg(strstr(str_at(m, "_end", "msg"), "never sent twice"),
                  "%s", str_at(m, "_end", "msg"));
    /* Told why: libcurl's own words here are of the refusal ("seek
     * callback returned error 2"), not of the re-send it refused. */
    ck_assert_msg(strstr(str_at(m, "_end", "msg"),
                         "libcurl's re-send of it was refused"),
                  "%s", str_at(m, "_end", "msg"));
    json_object_put(m);
    OPS->close(c, t_now() + 2000);
    /* Not a vacuous pass: the call went out on the warm call's
     * connection, the only case libcurl re-sends. */
    ck_assert_msg(fx_count("seq=1 id=\"warm\"") == 1 &&
                      fx_count("seq=2 id=\"die\"") == 1,
                  "the call did not reuse the warm connection:\n%s",
                  fx_log());
    /* The server logs a request before it drops the connection, and the
     * end comes after the drop, so any copy is in the log by now. */
    ck_assert_msg(fx_count("id=\"die\"") == 1,
                  "the server received the call %d times:\n%s",
                  fx_count("id=\"die\""), fx_log());
    ck_assert_int_eq(fx_count("rpc=tools/call"), 2);
}

/*
 * The warm call's connection is reset while idle in the pool; the next
 * call finds it dead, goes out on a fresh connection, and that one ends
 * unanswered.  libcurl's words for the dead connection it threw away
 * first (its close_notify could not be written) are not this call's
 * fate, and must not be told as such.
 */
START_TEST(pool_dead_words_not_the_calls)
{
    struct aur_conn *c;
    struct json_object *m;
    const char *msg;

    c = warm_conn("/ka?idle=rst&end=fin");
    sleep_ms(400); /* the reset is in */
    send_ok(c, req("die", "tools/call"));
    m = wait_id("die", 8000);
    ck_assert_msg(m != NULL, "no end for the call");
    msg = str_at(m, "_end", "msg");
    ck_assert_msg(strstr(msg, "never sent twice"), "%s", msg);
    ck_assert_msg(!strstr(msg, "Send failure") && !strstr(msg, "pipe"),
                  "told in the dead pooled connection's words: %s", msg);
    json_object_put(m);
    OPS->close(c, t_now() + 2000);
    /* Not vacuous: the call went out on a second connection. */
    ck_assert_msg(fx_count("conn=2 seq=1 id=\"die\"") == 1, "%s", fx_log());
}
END_TEST

/* The same dead pooled connection, and then nothing listens: the call was
 * never sent, and is told so in the words of its own failed connect. */
START_TEST(pool_dead_then_refused_words_not_the_calls)
{
    struct aur_conn *c;
    struct json_object *m;
    const char *msg;
    int st;
    bool dl;

    c = warm_conn("/ka?idle=rst");
    sleep_ms(400); /* the reset is in */
    fixture_stop();
    send_ok(c, req("after", "tools/call"));
    m = wait_id("after", 8000);
    ck_assert_msg(m != NULL, "no end for the call");
    msg = str_at(m, "_end", "msg");
    ck_assert_msg(marker(m, &st, &dl) && !dl, "not told unsent: %s", msg);
    ck_assert_msg(!strstr(msg, "Send failure") && !strstr(msg, "pipe"),
                  "told in the dead pooled connection's words: %s", msg);
    json_object_put(m);
    OPS->close(c, t_now() + 2000);
}
END_TEST

START_TEST(resend_refused_close_notify) { died_unanswered("notify"); }
END_TEST

START_TEST(resend_refused_fin) { died_unanswered("fin"); }
END_TEST

START_TEST(resend_refused_rst) { died_unanswered("rst"); }
END_TEST

void http_resend_tests(Suite *s)
{
    TCase *t = tcase_create("resend");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 30);
    tcase_add_test(t, resend_refused_close_notify);
    tcase_add_test(t, resend_refused_fin);
    tcase_add_test(t, resend_refused_rst);
    tcase_add_test(t, pool_dead_words_not_the_calls);
    tcase_add_test(t, pool_dead_then_refused_words_not_the_calls);
    suite_add_tcase(s, t);
}
