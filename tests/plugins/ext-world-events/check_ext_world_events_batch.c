/*
 * check_ext_world_events_batch.c - the ext-world-events writer thread:
 * events grouped into world_write_batch transactions, duplicates inside
 * a batch, a failing batch, flushes at end_session and fini, and one
 * world_write per event against an ABI 1.0 host.
 */
#define _GNU_SOURCE 1

#include "we_host.h"
#include "support/check_main.h"
#include "support/slack.h"

#include <check.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Suite *we_batch_suite(void);

/* ---------------------------------------------------------------- */
/* Batching (the writer thread)                                     */
/* ---------------------------------------------------------------- */

#define EVN(id, summary) EV("\"" id "\"", D_SC, D_KI, D_AT, summary, "")

/* A lone event is committed without any further event or a shutdown. */
START_TEST(single_event_committed_promptly)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify_async(s, EV_METHOD, VALID, 1, &err), AUR_OK);
    H_WAIT_UNTIL(count_of(s, "committed") >= 1, 5000, 1);
    ck_assert_int_eq(count_of(s, "committed"), 1);
    ck_assert_int_eq(count_of(s, "queued"), 0);
    pthread_mutex_lock(&hmu);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_str_eq(commits[0].commit_id, "mcp:" PKG ":event:ev-1");
    pthread_mutex_unlock(&hmu);
    ck_assert_int_eq(batch_calls, 1);
    ck_assert_int_eq(write_calls, 0);
}
END_TEST

/* Events queued while a transaction runs form the next one; a repeat
 * inside it is a duplicate and a same-id-other-content a conflict, each
 * counted once. */
START_TEST(batch_with_duplicates_inside)
{
    void *s = world_session(PKG);
    struct aur_error err;
    gate_closed = true;
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("a", D_SU), 1, &err),
                     AUR_OK);
    wait_batch_calls(1); /* the writer now waits inside batch 1 */
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("x", D_SU), 1, &err),
                     AUR_OK);
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("x", D_SU), 1, &err),
                     AUR_OK);
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("y", D_SU), 1, &err),
                     AUR_OK);
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("x", "\"other\""), 1,
                                  &err),
                     AUR_OK);
    ck_assert_int_eq(count_of(s, "queued"), 5);
    ck_assert_int_eq(count_of(s, "committed"), 0);
    open_gate();
    settle(s);
    ck_assert_int_eq(batch_calls, 2);
    ck_assert_uint_eq(batch_sizes[0], 1);
    ck_assert_uint_eq(batch_sizes[1], 4);
    ck_assert_uint_eq(ncommits, 3);
    ck_assert_str_eq(commits[1].commit_id, "mcp:" PKG ":event:x");
    ck_assert_str_eq(commits[1].summary, "SECRET summary");
    ck_assert_int_eq(count_of(s, "committed"), 3);
    ck_assert_int_eq(count_of(s, "duplicates"), 1);
    ck_assert_int_eq(count_of(s, "rejected"), 1);
    ck_assert_int_eq(count_of(s, "commit_conflict"), 1);
}
END_TEST

/* A journal failure undoes the whole batch: each of its events counts as
 * journal_error, none is written, and later events are committed. */
START_TEST(journal_error_fails_whole_batch)
{
    void *s = world_session(PKG);
    struct aur_error err;
    gate_closed = true;
    fail_summary = "boom";
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("a", D_SU), 1, &err),
                     AUR_OK);
    wait_batch_calls(1);
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("b", D_SU), 1, &err),
                     AUR_OK);
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("c", "\"boom\""), 1,
                                  &err),
                     AUR_OK);
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("d", D_SU), 1, &err),
                     AUR_OK);
    open_gate();
    settle(s);
    ck_assert_int_eq(batch_calls, 2);
    ck_assert_uint_eq(ncommits, 1);
    ck_assert_str_eq(commits[0].commit_id, "mcp:" PKG ":event:a");
    ck_assert_int_eq(count_of(s, "committed"), 1);
    ck_assert_int_eq(count_of(s, "rejected"), 3);
    ck_assert_int_eq(count_of(s, "journal_error"), 3);
    ck_assert_int_eq(count_of(s, "commit_conflict"), 0);
    ck_assert_ptr_nonnull(strstr(logbuf, "3 rejected: journal_error"));
    ck_assert_ptr_null(strstr(logbuf, "SECRET"));
    /* the App goes on: b is not lost for good, a retry commits it */
    ck_assert_int_eq(notify(s, EV_METHOD, EVN("b", D_SU), 1, &err), AUR_OK);
    ck_assert_uint_eq(ncommits, 2);
    ck_assert_int_eq(count_of(s, "committed"), 2);
}
END_TEST

/* end_session commits everything still queued before it returns; what
 * arrives after it is dropped, never committed. */
START_TEST(end_session_flushes_queue)
{
    void *s = world_session(PKG);
    struct aur_error err;
    char buf[512];
    batch_delay_ms = 20; /* events pile up behind a slow journal */
    for (int i = 0; i < 50; i++) {
        snprintf(buf, sizeof buf, EV("\"e%d\"", D_SC, D_KI, D_AT, D_SU, ""),
                 i);
        ck_assert_int_eq(notify_async(s, EV_METHOD, buf, 1, &err), AUR_OK);
    }
    OPS->end_session(ST, s);
    ck_assert_uint_eq(ncommits, 50);
    ck_assert_int_eq(count_of(s, "committed"), 50);
    ck_assert_int_eq(count_of(s, "queued"), 0);
    ck_assert_int_lt(batch_calls, 50); /* they were batched */
    ck_assert_ptr_nonnull(strstr(logbuf, "events: 50 received, 50 accepted"));
    ck_assert_int_eq(notify_async(s, EV_METHOD, EVN("late", D_SU), 1, &err),
                     AUR_DECLINE);
    ck_assert_int_eq(count_of(s, "dropped_inactive"), 1);
    ck_assert_uint_eq(ncommits, 50);
}
END_TEST

/* fini (host shutdown without end_session) commits the queue too. */
START_TEST(fini_flushes_queue)
{
    void *s = world_session(PKG);
    struct aur_error err;
    char buf[512];
    batch_delay_ms = 20;
    for (int i = 0; i < 30; i++) {
        snprintf(buf, sizeof buf, EV("\"f%d\"", D_SC, D_KI, D_AT, D_SU, ""),
                 i);
        ck_assert_int_eq(notify_async(s, EV_METHOD, buf, 1, &err), AUR_OK);
    }
    D->fini(ST);
    ST = NULL;
    ck_assert_uint_eq(ncommits, 30);
}
END_TEST

/* An ABI 1.0 host (no world_write_batch): one world_write per event, and
 * repeats told apart by the session's own memory of ids. */
START_TEST(abi10_host_one_write_per_event)
{
    void *s = world_session(PKG);
    struct aur_error err;
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_OK);
    ck_assert_int_eq(notify(s, EV_METHOD, VALID, 1, &err), AUR_OK);
    ck_assert_int_eq(notify(s, EV_METHOD, EVN("ev-2", D_SU), 1, &err),
                     AUR_OK);
    ck_assert_int_eq(notify(s, EV_METHOD,
                            EV(D_ID, D_SC, "\"qq.message.group\"", D_AT,
                               "\"SECRET other\"", ""),
                            1, &err),
                     AUR_OK);
    ck_assert_int_eq(write_calls, 4);
    ck_assert_int_eq(batch_calls, 0);
    ck_assert_uint_eq(ncommits, 2);
    ck_assert_int_eq(count_of(s, "committed"), 2);
    ck_assert_int_eq(count_of(s, "duplicates"), 1);
    ck_assert_int_eq(count_of(s, "commit_conflict"), 1);
    OPS->end_session(ST, s);
    ck_assert_ptr_nonnull(
        strstr(logbuf, "2 accepted, 1 duplicates, 1 rejected"));
}
END_TEST

Suite *we_batch_suite(void)
{
    Suite *su = suite_create("ext_world_events_batch");
    TCase *tc;

    tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, single_event_committed_promptly);
    tcase_add_test(tc, batch_with_duplicates_inside);
    tcase_add_test(tc, journal_error_fails_whole_batch);
    tcase_add_test(tc, end_session_flushes_queue);
    tcase_add_test(tc, fini_flushes_queue);
    suite_add_tcase(su, tc);

    tc = tcase_create("abi10_host");
    tcase_add_checked_fixture(tc, setup_abi10, teardown);
    tcase_add_test(tc, abi10_host_one_write_per_event);
    suite_add_tcase(su, tc);
    return su;
}
