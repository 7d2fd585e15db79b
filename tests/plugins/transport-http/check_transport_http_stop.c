/*
 * check_transport_http_stop.c - stop (ABI 1.5) through transport-http
 * against the fixture: sends refused after it, queued requests ended as
 * not sent while the ones on the wire keep their outcome, the legacy
 * DELETEs of many connections side by side, none in the modern era.
 * Part of check_transport_http.
 */
#define _GNU_SOURCE
#include "http/http_host.h"
#include "http_int.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void http_stop_tests(Suite *s);

/* The hook under test, when the plugin has it.  A build without it runs
 * these tests on close alone, and they fail on what only stop gives. */
static void stop_if_any(struct aur_conn *c, aur_deadline dl)
{
    if (AUR_HAS(OPS, stop))
        OPS->stop(c, dl);
}

START_TEST(stop_then_send_not_sent)
{
    struct aur_conn *c;
    struct json_object *m;
    struct aur_error err;
    up2(NULL, NULL, NULL, NULL);
    ep_path("/mcp");
    c = open_ok();
    set_proto(c, 1, "2026-07-28");
    send_ok(c, req("a1", "tools/call"));
    m = wait_id("a1", 5000); /* a worker is up and the server answers */
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    stop_if_any(c, t_now() + 2000);
    m = req("a2", "after/stop");
    ck_assert_int_eq(OPS->send(c, m, t_now() + 2000, &err), AUR_E_NOT_SENT);
    json_object_put(m);
    ck_assert_int_eq(err.detail, AUR_E_CLOSED);
    ck_assert_msg(strstr(err.msg, "the connection is closing"), "%s",
                  err.msg);
    m = note("notifications/after_stop");
    ck_assert_int_eq(OPS->send(c, m, t_now() + 2000, &err), AUR_E_NOT_SENT);
    json_object_put(m);
    sleep_ms(300); /* time for a POST that left anyway to arrive */
    OPS->close(c, t_now() + 2000);
    ck_assert_int_eq(fx_count("after/stop"), 0);
    ck_assert_int_eq(fx_count("after_stop"), 0);
    ck_assert_int_eq(fx_count("method=POST"), 1);
    /* a refused send makes no sink call: only a1's answer came */
    ck_assert_int_eq(msg_count(), 1);
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

#define N_STOP 20 /* legacy connections closed together */

/*
 * One thread stops N_STOP legacy connections, then closes them one after
 * the other, as the host's shutdown does with its closing threads.  The
 * fixture answers each session's DELETE del_ms after it arrived.  stop
 * starts every DELETE at once, so the closes together take about one
 * del_ms; close alone sends them one after another: N_STOP * del_ms.
 * The bound below, 5 * del_ms, is a logical one (room for the TLS
 * connections and a loaded machine, far below N_STOP delays), not a
 * tuning number.  del_ms is 1 s, times AUR_TEST_TIME_SCALE (sanitizer
 * runs), so the connections stay small beside it; timeout_ms (the
 * connect bound) is raised so that a slow handshake is not cut short.
 */
START_TEST(stop_many_deletes_side_by_side)
{
    struct aur_conn *c[N_STOP];
    struct json_object *m;
    const char *scale = getenv("AUR_TEST_TIME_SCALE");
    int64_t del_ms = 1000, t0, took;
    char id[16], path[64];
    if (scale && atoi(scale) > 1 && atoi(scale) <= 10)
        del_ms *= atoi(scale);
    up2(NULL, NULL, NULL, NULL);
    snprintf(path, sizeof path, "/legacy?deldelay=%lld", (long long)del_ms);
    ep_path(path);
    cfg_add(&EP, "timeout_ms", "30000"); /* the last one counts */
    for (int i = 0; i < N_STOP; i++) {
        c[i] = open_ok();
        snprintf(id, sizeof id, "i%d", i);
        send_ok(c[i], req(id, "initialize"));
        m = wait_id(id, 5000); /* skips earlier GET streams' pushes */
        ck_assert_ptr_nonnull(m);
        json_object_put(m);
        set_proto(c[i], 0, "2025-11-25"); /* opens the GET stream */
    }
    for (int i = 0; i < 250 && fx_count("method=GET") < N_STOP; i++)
        sleep_ms(20);
    ck_assert_int_eq(fx_count("method=GET"), N_STOP);
    t0 = t_now();
    /* close's deadline: half the N_STOP delays close alone would need */
    for (int i = 0; i < N_STOP; i++)
        stop_if_any(c[i], t0 + N_STOP / 2 * del_ms);
    for (int i = 0; i < N_STOP; i++)
        OPS->close(c[i], t0 + N_STOP / 2 * del_ms);
    took = t_now() - t0;
    ck_assert_msg(took < 5 * del_ms, "%d closes took %lld ms: the DELETEs "
                  "ran one after another", N_STOP, (long long)took);
    ck_assert_int_eq(fx_count("DELETE session=sess-1"), N_STOP);
    /* every close waited for its DELETE's answer (none abandoned) */
    ck_assert_int_ge(took, del_ms - 10);
    ck_assert(!log_has("session DELETE answered"));
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

/* A request already running when stop comes may have reached the server:
 * it keeps its true outcome (here its answer, which comes before dl).  A
 * request still queued behind it never reached a worker: it ends at once
 * as not sent, and never goes out. */
START_TEST(stop_keeps_inflight_outcome)
{
    struct aur_conn *c;
    struct json_object *m, *h1 = NULL, *h2 = NULL;
    int st;
    bool dl;
    int64_t end;
    up2("max_concurrent", "1", NULL, NULL);
    ep_path("/hold?ms=800");
    c = open_ok();
    set_proto(c, 1, "2026-07-28");
    send_ok(c, req("h1", "tools/call"));
    ck_assert(fx_wait("rpc=tools/call", 3000)); /* the one worker holds h1 */
    send_ok(c, req("h2", "tools/call"));        /* queued behind it */
    stop_if_any(c, t_now() + 5000);
    end = t_now() + 5000;
    while ((!h1 || !h2) && t_now() < end) {
        const char *mid;
        if (!(m = next_msg(200)))
            continue;
        mid = str_at(m, "id", NULL);
        if (!h1 && strcmp(mid, "h1") == 0)
            h1 = m;
        else if (!h2 && strcmp(mid, "h2") == 0)
            h2 = m;
        else
            json_object_put(m);
    }
    ck_assert_msg(h1 != NULL, "no outcome for the running request");
    ck_assert_msg(!marker(h1, &st, &dl), "the running request lost its "
                  "answer: %s", json_object_to_json_string(h1));
    ck_assert_str_eq(str_at(h1, "result", "method"), "tools/call");
    ck_assert_msg(h2 != NULL, "no end for the queued request");
    ck_assert_msg(marker(h2, &st, &dl), "the queued request was sent: %s",
                  json_object_to_json_string(h2));
    ck_assert(!dl);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(str_at(h2, "error", "message"),
                                 "never sent"));
    json_object_put(h1);
    json_object_put(h2);
    OPS->close(c, t_now() + 2000);
    ck_assert_int_eq(fx_count("REQ "), 1); /* h2 never went out */
    ck_assert_int_eq(closed_count(), 0);
}
END_TEST

/* stop ends a legacy session at once (its DELETE goes out before any
 * close); a modern connection has no session, so its stop and close send
 * no DELETE, even when an initialize answer once named one. */
START_TEST(stop_modern_sends_no_delete)
{
    struct aur_conn *leg, *mod;
    struct json_object *m;
    up2(NULL, NULL, NULL, NULL);
    ep_path("/legacy?noget=1");
    leg = open_ok();
    send_ok(leg, req("i0", "initialize"));
    m = wait_id("i0", 5000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    set_proto(leg, 0, "2025-11-25");
    ep_path("/legacy-modern?noget=1");
    mod = open_ok();
    send_ok(mod, req("i1", "initialize"));
    m = wait_id("i1", 5000);
    ck_assert_ptr_nonnull(m);
    json_object_put(m);
    set_proto(mod, 1, "2026-07-28");
    /* Roomy bounds: a loaded machine may take seconds for the TLS
     * handshake of the DELETE's connection; what is asserted is that it
     * goes out before any close, not how fast. */
    stop_if_any(mod, t_now() + 15000);
    stop_if_any(leg, t_now() + 15000);
    ck_assert(fx_wait("method=DELETE path=/legacy ", 15000));
    sleep_ms(300); /* time for a DELETE of the modern one to arrive */
    ck_assert_int_eq(fx_count("method=DELETE"), 1);
    OPS->close(mod, t_now() + 2000);
    OPS->close(leg, t_now() + 2000);
    ck_assert_int_eq(fx_count("method=DELETE"), 1); /* not again */
    ck_assert_int_eq(fx_count("method=DELETE path=/legacy-modern"), 0);
}
END_TEST

void http_stop_tests(Suite *s)
{
    TCase *t = tcase_create("stop");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, stop_then_send_not_sent);
    tcase_add_test(t, stop_many_deletes_side_by_side);
    tcase_add_test(t, stop_keeps_inflight_outcome);
    tcase_add_test(t, stop_modern_sends_no_delete);
    suite_add_tcase(s, t);
}
