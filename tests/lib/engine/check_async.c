/*
 * check_async.c - aur_mcp_call_async (lib/engine/async.c) through the
 * shared library: every accepted call's callback runs exactly once, the
 * pool runs calls side by side, and a shutdown with calls running and
 * queued never reports failed for a call the server got.
 */
#define _GNU_SOURCE 1
#include <aurora/aur_host.h>

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/harness.h"

#define PKG "org.test.async"
#define TOOL "aur.mcp.org.test.async.t0000"

static char *dir, *fixture, *logpath;

static void setup(void) { h_fixture_env(&dir, &fixture, &logpath); }

static void teardown(void) { h_fixture_env_free(&dir, &fixture, &logpath); }

static struct aur_mcp *host_with(const char *ntools, bool create_only)
{
    return h_fixture_host(dir, fixture, logpath, PKG, ntools, create_only);
}

/* Outcomes of asynchronous calls, by call index. */
struct outcomes {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int status[256];
    int times[256]; /* how often each callback ran */
    int n;          /* callbacks so far */
};

struct slot {
    struct outcomes *o;
    int i;
};

static void done(void *ud, const struct aur_tool_output *out)
{
    struct slot *s = ud;

    ck_assert_ptr_nonnull(out->content);
    pthread_mutex_lock(&s->o->mu);
    s->o->status[s->i] = out->status;
    s->o->times[s->i]++;
    s->o->n++;
    pthread_cond_broadcast(&s->o->cv);
    pthread_mutex_unlock(&s->o->mu);
}

static void wait_for(struct outcomes *o, int n)
{
    int64_t until = h_now_ms() + h_slack(60000);

    pthread_mutex_lock(&o->mu);
    while (o->n < n && h_now_ms() < until) {
        pthread_mutex_unlock(&o->mu);
        usleep(5000);
        pthread_mutex_lock(&o->mu);
    }
    ck_assert_int_eq(o->n, n);
    pthread_mutex_unlock(&o->mu);
}

START_TEST(async_calls_each_end_once)
{
    struct aur_mcp *h = host_with(NULL, false);
    struct outcomes o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                         {0}, {0}, 0};
    struct slot slots[200];
    struct aur_error err;
    const char args[] = "{\"text\":\"x\"}";

    for (int i = 0; i < 200; i++) {
        slots[i] = (struct slot){&o, i};
        ck_assert_int_eq(aur_mcp_call_async(h, TOOL, args, strlen(args), -1,
                                            done, &slots[i], &err),
                         AUR_OK);
    }
    wait_for(&o, 200);
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(o.times[i], 1);
        ck_assert_int_eq(o.status[i], AUR_CALL_SUCCEEDED);
    }
    /* Refused calls: nothing sent, no callback. */
    ck_assert_int_eq(aur_mcp_call_async(h, TOOL, "[1]", 3, -1, done,
                                        &slots[0], &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(aur_mcp_call_async(h, TOOL, NULL, 0, -1, NULL, NULL,
                                        NULL),
                     AUR_E_INVAL);
    aur_mcp_shutdown(h);
    ck_assert_int_eq(aur_mcp_call_async(h, TOOL, NULL, 0, -1, done,
                                        &slots[0], &err),
                     AUR_E_STATE);
    aur_mcp_destroy(h);
    ck_assert_int_eq(o.n, 200);
    ck_assert_int_eq(h_count_lines(logpath, "tools/call"), 200);
}
END_TEST

/* Builtins that wait until eight of them run at once: the pool runs
 * calls side by side (no timing: a rendezvous, bounded). */
static pthread_mutex_t meet_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cv = PTHREAD_COND_INITIALIZER;
static int meeting;

static void rendezvous(void *ud, const char *args, size_t len,
                       struct aur_builtin_reply *reply)
{
    struct timespec until;
    bool met;

    (void)ud, (void)args, (void)len;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&meet_mu);
    meeting++;
    pthread_cond_broadcast(&meet_cv);
    while (meeting < 8 &&
           pthread_cond_timedwait(&meet_cv, &meet_mu, &until) == 0)
        ;
    met = meeting >= 8;
    pthread_mutex_unlock(&meet_mu);
    aur_builtin_reply_set(reply, met ? AUR_CALL_SUCCEEDED : AUR_CALL_FAILED,
                          met ? "met" : "alone", met ? 3 : 5);
}

START_TEST(async_calls_run_side_by_side)
{
    struct aur_mcp *h = host_with(NULL, true);
    struct outcomes o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                         {0}, {0}, 0};
    struct slot slots[8];
    struct aur_error err;

    ck_assert_int_eq(aur_mcp_add_builtin(h, "aur.core.meet", "meet", NULL, 0,
                                         rendezvous, NULL, &err),
                     AUR_OK);
    ck_assert_int_eq(aur_mcp_call_async(h, "aur.core.meet", NULL, 0, -1,
                                        done, &slots[0], &err),
                     AUR_E_STATE); /* not started */
    ck_assert_int_eq(aur_mcp_start(h, NULL, &err), AUR_OK);
    for (int i = 0; i < 8; i++) {
        slots[i] = (struct slot){&o, i};
        ck_assert_int_eq(aur_mcp_call_async(h, "aur.core.meet", NULL, 0, -1,
                                            done, &slots[i], &err),
                         AUR_OK);
    }
    wait_for(&o, 8);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(o.status[i], AUR_CALL_SUCCEEDED);
    aur_mcp_destroy(h);
}
END_TEST

/* Shutdown with calls in flight and queued: those the server got end
 * unknown, those it never got end failed, each callback once, all
 * before shutdown returns. */
START_TEST(async_shutdown_tells_sent_from_unsent)
{
    const char *opts[] = {"--era", "modern", "--hang-at", "call", NULL};
    struct outcomes o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                         {0}, {0}, 0};
    struct slot slots[40];
    struct aur_error err;
    struct aur_mcp *h = NULL;
    int unknown = 0, failed = 0;

    h_add_logged_app(dir, "a.ini", PKG, 30, NULL, fixture, NULL, logpath,
                     opts);
    ck_assert_int_eq(aur_mcp_create(dir, NULL, &h, NULL, NULL), AUR_OK);
    ck_assert_int_eq(aur_mcp_start(h, NULL, NULL), AUR_OK);
    for (int i = 0; i < 40; i++) {
        slots[i] = (struct slot){&o, i};
        ck_assert_int_eq(aur_mcp_call_async(h, TOOL, NULL, 0, -1, done,
                                            &slots[i], &err),
                         AUR_OK);
    }
    /* Wait (bounded) until the server holds some calls. */
    H_WAIT_UNTIL(h_count_lines(logpath, "tools/call") >= 4, 10000, 5);
    aur_mcp_shutdown(h);
    ck_assert_int_eq(o.n, 40); /* all ran before shutdown returned */
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(o.times[i], 1);
        unknown += o.status[i] == AUR_CALL_UNKNOWN;
        failed += o.status[i] == AUR_CALL_FAILED;
    }
    ck_assert_int_eq(unknown + failed, 40);
    ck_assert_int_ge(unknown, 4);
    ck_assert_int_ge(failed, 40 - 16); /* at most 16 ran */
    /* No failed one reached the server: what it logged is at most the
     * unknown ones (one written but not yet read when it was stopped is
     * unknown and unlogged, rightly). */
    ck_assert_int_le(h_count_lines(logpath, "tools/call"), unknown);
    aur_mcp_destroy(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("async");
    TCase *t = tcase_create("async");

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, async_calls_each_end_once);
    tcase_add_test(t, async_calls_run_side_by_side);
    tcase_add_test(t, async_shutdown_tells_sent_from_unsent);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return aur_check_main(suite(), NULL); }
