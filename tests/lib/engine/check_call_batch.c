/*
 * check_call_batch.c - batches (aur_mcp_batch_begin/end) over
 * aur_mcp_call_start: held requests reach nobody before the end and
 * keep each call's contract after it; what a failed, closed, busy or
 * dying App makes of them; a close during a batch waits for its end
 * however long, and a thread's own shutdown or exit writes it.  Part of
 * check_call_start.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_call_start.h"
#include "support/harness.h"

/* 11. A batch (aur_mcp_batch_begin/end): the requests of calls started
 * inside it reach the server only at the end, all of them, and every
 * call still ends exactly once with its own answer. */
START_TEST(batch_holds_until_end)
{
    char args[32];

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    struct aur_mcp *h = host();
    aur_mcp_batch_begin(h);
    aur_mcp_batch_begin(h); /* nested: only the outer end writes */
    for (int i = 0; i < 40; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, -1, i), AUR_OK);
    }
    aur_mcp_batch_end(h);
    usleep(150000);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
    ck_assert_int_eq(runs(), 0);
    aur_mcp_batch_end(h);
    wait_runs(40, 20000);
    all_succeeded_once(40);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 40);
    /* Ends without a begin, and a NULL host, change nothing. */
    aur_mcp_batch_end(h);
    aur_mcp_batch_begin(NULL);
    aur_mcp_batch_end(NULL);
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k040\"}", -1, 40), AUR_OK);
    wait_runs(41, 10000);
    aur_mcp_destroy(h);
}
END_TEST

/* 12. Two Apps in one batch: each gets its own requests at the end. */
START_TEST(batch_two_apps)
{
    char args[32], *log2;

    ck_assert(asprintf(&log2, "%s/b.log", dir) > 0);
    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    add_app("b.ini", PKG2, log2, 30, NULL, NULL);
    struct aur_mcp *h = host();
    aur_mcp_batch_begin(h);
    for (int i = 0; i < 20; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, i % 2 ? TOOL2 : TOOL, args, -1, i), AUR_OK);
    }
    usleep(100000);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
    ck_assert_int_eq(h_count_lines(log2, "tools/call"), 0);
    aur_mcp_batch_end(h);
    wait_runs(20, 20000);
    all_succeeded_once(20);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 10);
    ck_assert_int_eq(h_count_lines(log2, "tools/call"), 10);
    aur_mcp_destroy(h);
    free(log2);
}
END_TEST

/* 13. Held requests written whole, then the server exits at the first:
 * every call is unknown, never failed (each request reached it). */
START_TEST(batch_written_is_never_failed)
{
    const char *opts[] = {"--exit-at", "call", NULL};
    char args[32];

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    aur_mcp_batch_begin(h);
    for (int i = 0; i < 20; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, 20000, i), AUR_OK);
    }
    aur_mcp_batch_end(h);
    wait_runs(20, 10000); /* the loss ends them, not the deadline */
    pthread_mutex_lock(&o.mu);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(o.times[i], 1);
        ck_assert_msg(o.status[i] == AUR_CALL_UNKNOWN, "slot %d: %d (%s)", i,
                      o.status[i], o.content[i]);
    }
    pthread_mutex_unlock(&o.mu);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
}
END_TEST

/* 14. A server that closed its stdin but lives on: no byte of the held
 * requests can leave, so every call is failed (not sent), on the
 * thread that ends the batch, and the server saw none of them. */
/* A host whose App closed its stdin and lives on, a batch begun, and
 * slots [0, n) held in it. */
static struct aur_mcp *held_for_closed_stdin(int n)
{
    const char *opts[] = {"--close-stdin-at", "list", NULL};
    char args[32];

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    ck_assert_int_eq(wait_lines(logpath, "stdin-closed", 1, 5000), 1);
    aur_mcp_batch_begin(h);
    for (int i = 0; i < n; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, 20000, i), AUR_OK);
    }
    return h;
}

START_TEST(batch_unwritten_is_failed)
{
    struct aur_mcp *h = held_for_closed_stdin(10);

    ck_assert_int_eq(runs(), 0);
    aur_mcp_batch_end(h);
    wait_runs(10, 5000);
    pthread_mutex_lock(&o.mu);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(o.times[i], 1);
        ck_assert_msg(o.status[i] == AUR_CALL_FAILED, "slot %d: %d (%s)", i,
                      o.status[i], o.content[i]);
        ck_assert_ptr_nonnull(strstr(o.content[i], "not sent"));
        ck_assert_int_eq(o.on_caller[i], 1);
    }
    pthread_mutex_unlock(&o.mu);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

/* {"text": text and n bytes more}: a request of about n bytes. */
static char *big_args(size_t n, const char *text)
{
    char *s = malloc(n + 64);
    int k;

    ck_assert_ptr_nonnull(s);
    k = sprintf(s, "{\"text\":\"%s", text);
    memset(s + k, 'p', n);
    strcpy(s + k + n, "\"}");
    return s;
}

/* 14b. The same, the held requests written ahead of one too big to hold:
 * their ends run on this thread inside that send, and must not wait for
 * the send's own write token (they did, up to the held deadline). */
START_TEST(batch_unwritten_ahead_of_big_one)
{
    char *big = big_args(70000, "big");
    struct aur_mcp *h = held_for_closed_stdin(3);
    int64_t t0 = h_now_ms();

    ck_assert_int_eq(start(h, TOOL, big, 20000, 3), AUR_OK);
    ck_assert_int_lt(h_now_ms() - t0, h_slack(5000));
    aur_mcp_batch_end(h);
    wait_runs(4, 5000);
    pthread_mutex_lock(&o.mu);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(o.times[i] == 1 && o.status[i] == AUR_CALL_FAILED,
                      "slot %d: %d runs, %d (%s)", i, o.times[i], o.status[i],
                      o.content[i]);
    pthread_mutex_unlock(&o.mu);
    aur_mcp_destroy(h);
    free(big);
}
END_TEST

/* 15. Shutdown while another thread holds a batch: the App's close waits
 * for the batch's end (it counts the App in use), so no connection is
 * freed under held requests (ASan would see that end use it), and each
 * call still ends once, never succeeded, the server having seen none. */
struct holder {
    struct aur_mcp *h;
    pthread_barrier_t *ready;
    int hold_ms; /* between the calls and the end */
};

static void *hold_batch(void *arg)
{
    struct holder *hd = arg;

    aur_mcp_batch_begin(hd->h);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(start(hd->h, TOOL, NULL, 20000, i), AUR_OK);
    pthread_barrier_wait(hd->ready);
    usleep((useconds_t)hd->hold_ms * 1000);
    aur_mcp_batch_end(hd->h);
    return NULL;
}

/* Shutdown while the holder keeps its batch hold_ms: returns after the
 * end, and each call ended once, never succeeded. */
static void shutdown_during_batch(double timeout_s, int hold_ms)
{
    pthread_barrier_t ready;
    struct holder hd = {.hold_ms = hold_ms};
    pthread_t t;
    int64_t t0;

    add_app("a.ini", PKG, logpath, timeout_s, NULL, NULL);
    hd.h = host();
    hd.ready = &ready;
    pthread_barrier_init(&ready, NULL, 2);
    ck_assert_int_eq(pthread_create(&t, NULL, hold_batch, &hd), 0);
    pthread_barrier_wait(&ready);
    t0 = h_now_ms();
    aur_mcp_shutdown(hd.h);
    /* it waited for the end */
    ck_assert_int_ge(h_now_ms() - t0, hold_ms - 100);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&ready);
    ck_assert_int_eq(runs(), 5);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(o.times[i], 1);
        ck_assert_msg(o.status[i] != AUR_CALL_SUCCEEDED, "slot %d: %d (%s)",
                      i, o.status[i], o.content[i]);
    }
    aur_mcp_destroy(hd.h);
}

START_TEST(batch_shutdown_waits_for_end)
{
    shutdown_during_batch(30, 300);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 0);
}
END_TEST

/* 16. The same with a batch kept past the App's timeout and its second
 * of grace: the close waits for the end all the same.  (It used to stop
 * waiting there and free the connection the end then uncorked.)  The
 * calls themselves end at their deadline, unknown. */
START_TEST(batch_outlives_app_timeout)
{
    shutdown_during_batch(1, 2600);
}
END_TEST

/* 17. Shutdown on the thread that holds a batch writes the batch first
 * instead of waiting for an end that cannot come. */
START_TEST(batch_shutdown_on_own_thread)
{
    char args[32];
    int64_t t0;

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    struct aur_mcp *h = host();
    aur_mcp_batch_begin(h);
    for (int i = 0; i < 3; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(h, TOOL, args, -1, i), AUR_OK);
    }
    t0 = h_now_ms();
    aur_mcp_shutdown(h);
    ck_assert_int_lt(h_now_ms() - t0, h_slack(10000));
    aur_mcp_batch_end(h); /* nothing left to write */
    ck_assert_int_eq(runs(), 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(o.times[i], 1);
    aur_mcp_destroy(h);
    ck_assert_int_le(h_count_lines(logpath, "tools/call"), 3);
}
END_TEST

static void *leave_batch_open(void *arg)
{
    char args[32];

    aur_mcp_batch_begin(arg);
    for (int i = 0; i < 3; i++) {
        args_of(i, args, sizeof args);
        ck_assert_int_eq(start(arg, TOOL, args, -1, i), AUR_OK);
    }
    return NULL; /* no aur_mcp_batch_end */
}

/* 17b. A thread that ends with its batch open writes it as it ends: the
 * calls are answered, and a later shutdown does not wait for an end
 * that cannot come. */
START_TEST(batch_thread_exits_open)
{
    pthread_t t;
    int64_t t0;

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    struct aur_mcp *h = host();
    ck_assert_int_eq(pthread_create(&t, NULL, leave_batch_open, h), 0);
    pthread_join(t, NULL);
    wait_runs(3, 10000);
    all_succeeded_once(3);
    t0 = h_now_ms();
    aur_mcp_shutdown(h);
    ck_assert_int_lt(h_now_ms() - t0, h_slack(10000));
    aur_mcp_destroy(h);
}
END_TEST

/* 18. A call that waits for its answer on the batch's thread writes
 * what the batch holds for that App first: neither waits for the other
 * (the blocking call's own request used to be held until its deadline). */
START_TEST(batch_blocking_call_inside)
{
    struct aur_tool_output out = {.struct_size = sizeof out};

    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    struct aur_mcp *h = host();
    aur_mcp_batch_begin(h);
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k000\"}", -1, 0), AUR_OK);
    ck_assert_int_eq(aur_mcp_call(h, TOOL, "{\"text\":\"blk\"}", 14, 5000,
                                  &out),
                     AUR_OK);
    ck_assert_msg(out.status == AUR_CALL_SUCCEEDED, "%d: %s", out.status,
                  out.content);
    ck_assert_str_eq(out.content, "blk");
    aur_tool_output_clear(&out);
    wait_runs(1, 5000); /* before the end: the held request left */
    aur_mcp_batch_end(h);
    all_succeeded_once(1);
    aur_mcp_destroy(h);
}
END_TEST


/* 19. The end of a batch over two Apps, one of which does not read (busy
 * in a call, its stdin pipe 40 KB full) while 40 KB are held for it:
 * the other App's held request is written first, and answered while the
 * end still waits for the busy one (it used to be written only after). */
START_TEST(batch_busy_app_holds_up_no_other)
{
    const char *busy[] = {"--call-delay-ms", "6000", NULL};
    char *log2, *fill = big_args(40000, "f");
    int64_t t_end;

    ck_assert(asprintf(&log2, "%s/b.log", dir) > 0);
    add_app("a.ini", PKG, logpath, 30, NULL, NULL);
    add_app("b.ini", PKG2, log2, 3, NULL, busy);
    struct aur_mcp *h = host();
    ck_assert_int_eq(start(h, TOOL2, "{\"text\":\"y\"}", -1, 0), AUR_OK);
    ck_assert_int_eq(wait_lines(log2, "tools/call", 1, 5000), 1);
    ck_assert_int_eq(start(h, TOOL2, fill, -1, 1), AUR_OK); /* unread */
    aur_mcp_batch_begin(h);
    /* Either order of the two Apps in the batch must do. */
    if (_i == 0) {
        ck_assert_int_eq(start(h, TOOL2, fill, -1, 2), AUR_OK);
        ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k003\"}", -1, 3),
                         AUR_OK);
    } else {
        ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k003\"}", -1, 3),
                         AUR_OK);
        ck_assert_int_eq(start(h, TOOL2, fill, -1, 2), AUR_OK);
    }
    aur_mcp_batch_end(h); /* waits for the busy App, up to 3 s */
    t_end = h_now_ms();
    pthread_mutex_lock(&o.mu);
    ck_assert_msg(o.times[3] == 1 && o.status[3] == AUR_CALL_SUCCEEDED,
                  "the other App's call: %d runs, %d (%s)", o.times[3],
                  o.status[3], o.content[3]);
    ck_assert_int_lt(o.at[3], t_end);
    ck_assert_str_eq(o.content[3], "k003");
    pthread_mutex_unlock(&o.mu);
    wait_runs(4, 10000);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(o.times[i] == 1 && o.status[i] != AUR_CALL_SUCCEEDED,
                      "busy App slot %d: %d runs, %d (%s)", i, o.times[i],
                      o.status[i], o.content[i]);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
    free(fill);
    free(log2);
}
END_TEST

/* 20. A server that answers a request the batch still holds (it guessed
 * the id): that answer ends nothing.  Taken, it would end the call
 * failed ("not sent"), and the batch's end would then write the
 * request all the same. */
START_TEST(batch_answer_to_held_is_dropped)
{
    const char *opts[] = {"--forge-next", "--call-delay-ms", "300", NULL};

    add_app("a.ini", PKG, logpath, 30, NULL, opts);
    struct aur_mcp *h = host();
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k000\"}", -1, 0), AUR_OK);
    aur_mcp_batch_begin(h);
    /* The next id: held, and answered (forged) right after slot 0's. */
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k001\"}", -1, 1), AUR_OK);
    for (int64_t until = h_now_ms() + h_slack(5000);
         runs() == 0 && h_now_ms() < until;)
        usleep(10000);
    usleep(300000); /* the forged answer is read */
    pthread_mutex_lock(&o.mu);
    ck_assert_msg(o.times[0] == 1 && o.times[1] == 0,
                  "a held call ended by an answer to its unwritten request: "
                  "%d runs, %d (%s)", o.times[1], o.status[1],
                  o.content[1] ? o.content[1] : "");
    pthread_mutex_unlock(&o.mu);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 1);
    aur_mcp_batch_end(h);
    wait_runs(2, 5000);
    all_succeeded_once(2);
    aur_mcp_destroy(h);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 2);
}
END_TEST

/* 21. A blocking call on the batch's thread to an App whose
 * max_in_flight slots are taken by this thread's held requests: it
 * writes them before it waits for a slot, so neither waits for the
 * other (it used to wait out its whole timeout, then fail). */
START_TEST(batch_blocking_call_gate_full)
{
    struct aur_tool_output out = {.struct_size = sizeof out};
    int64_t t0, took;

    add_app("a.ini", PKG, logpath, 30, "max_in_flight = 1", NULL);
    struct aur_mcp *h = host();
    aur_mcp_batch_begin(h);
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k000\"}", -1, 0), AUR_OK);
    t0 = h_now_ms();
    ck_assert_int_eq(aur_mcp_call(h, TOOL, "{\"text\":\"blk\"}", 14, 3000,
                                  &out),
                     AUR_OK);
    took = h_now_ms() - t0;
    ck_assert_msg(out.status == AUR_CALL_SUCCEEDED && took < h_slack(1500),
                  "blocking call: %d (%s) after %lld ms", out.status,
                  out.content, (long long)took);
    ck_assert_str_eq(out.content, "blk");
    aur_tool_output_clear(&out);
    ck_assert_int_eq(runs(), 1); /* before the end: the held one ran */
    aur_mcp_batch_end(h);
    all_succeeded_once(1);
    aur_mcp_destroy(h);
}
END_TEST

/* 22. A healthy App's held request, then a request too big to hold for
 * a busy App whose stdin is full: the healthy App's request is written
 * before the big send waits, and answered while it still waits (it used
 * to stay held until that send returned, past its own deadline). */
START_TEST(batch_other_app_not_behind_blocked_send)
{
    const char *busy[] = {"--call-delay-ms", "6000", NULL};
    char *log2, *fill = big_args(40000, "f"), *big = big_args(70000, "b");
    int64_t t_sent;

    ck_assert(asprintf(&log2, "%s/b.log", dir) > 0);
    add_app("a.ini", PKG, logpath, 2, NULL, NULL);
    add_app("b.ini", PKG2, log2, 30, NULL, busy);
    struct aur_mcp *h = host();
    ck_assert_int_eq(start(h, TOOL2, "{\"text\":\"y\"}", -1, 0), AUR_OK);
    ck_assert_int_eq(wait_lines(log2, "tools/call", 1, 5000), 1);
    ck_assert_int_eq(start(h, TOOL2, fill, -1, 1), AUR_OK); /* unread */
    aur_mcp_batch_begin(h);
    ck_assert_int_eq(start(h, TOOL, "{\"text\":\"k003\"}", -1, 3), AUR_OK);
    ck_assert_int_eq(start(h, TOOL2, big, -1, 2), AUR_OK); /* waits */
    t_sent = h_now_ms();
    aur_mcp_batch_end(h);
    wait_runs(4, 40000);
    pthread_mutex_lock(&o.mu);
    ck_assert_msg(o.times[3] == 1 && o.status[3] == AUR_CALL_SUCCEEDED,
                  "the healthy App's call: %d runs, %d (%s)", o.times[3],
                  o.status[3], o.content[3]);
    ck_assert_int_lt(o.at[3], t_sent);
    ck_assert_str_eq(o.content[3], "k003");
    pthread_mutex_unlock(&o.mu);
    aur_mcp_destroy(h);
    free(fill);
    free(big);
    free(log2);
}
END_TEST

void call_batch_tests(TCase *t)
{
    tcase_add_test(t, batch_holds_until_end);
    tcase_add_test(t, batch_two_apps);
    tcase_add_test(t, batch_written_is_never_failed);
    tcase_add_test(t, batch_unwritten_is_failed);
    tcase_add_test(t, batch_unwritten_ahead_of_big_one);
    tcase_add_test(t, batch_shutdown_waits_for_end);
    tcase_add_test(t, batch_outlives_app_timeout);
    tcase_add_test(t, batch_shutdown_on_own_thread);
    tcase_add_test(t, batch_thread_exits_open);
    tcase_add_test(t, batch_blocking_call_inside);
    tcase_add_loop_test(t, batch_busy_app_holds_up_no_other, 0, 2);
    tcase_add_test(t, batch_answer_to_held_is_dropped);
    tcase_add_test(t, batch_blocking_call_gate_full);
    tcase_add_test(t, batch_other_app_not_behind_blocked_send);
}
