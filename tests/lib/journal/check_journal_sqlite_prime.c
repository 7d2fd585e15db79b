/*
 * check_journal_sqlite_prime.c - aur__journal_prime: the SQLite backend
 * restarts an emptied WAL ahead of a run's first write, so that the sync
 * of the new header is not that write's to wait for.  The WAL is read
 * from outside: its size, and its 32-byte header, whose salts change at
 * every restart.  The backend's prime is called directly where a test
 * needs to know it has ended; the front's thread is tested on its own.
 */
#include "aur_setup.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "journal_fixture.h"
#include "journal_sqlite.h"
#include "support/slack.h"

#define WAL_HEADER 32
#define FRAME_HEADER 24

static const struct aur__journal_ops *ops = &aur__journal_sqlite_ops;

static void wal_header(unsigned char h[WAL_HEADER])
{
    char wal[300];
    int fd;

    snprintf(wal, sizeof wal, "%s-wal", dbpath);
    fd = open(wal, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, h, WAL_HEADER), WAL_HEADER);
    close(fd);
}

static void *backend_open(void)
{
    struct aur__jopts o = {.wait_ms = 1000};
    struct aur_error err;
    void *b = NULL;

    ck_assert_msg(ops->open(dbpath, &o, &b, &err) == AUR_OK, "open: %s",
                  err.msg);
    return b;
}

/* A journal with one commit (and sql run on it, if any), closed: its WAL
 * is kept and empty. */
static void closed_journal_with(const char *sql)
{
    struct aur__journal *j = open_ok();
    append_ok(j, "c1", "all", NULL);
    if (sql)
        sql_exec(sql);
    aur__journal_close(j);
    if (!on_pg())
        ck_assert_int_eq(wal_bytes(), 0);
}

static void closed_journal(void)
{
    closed_journal_with(NULL);
}

/* An emptied WAL is restarted by one frame, and the next write appends
 * to it under the same header: it has no restart of its own, so no
 * header sync.  Nothing a reader sees changed. */
START_TEST(prime_restarts_an_emptied_wal)
{
    unsigned char h1[WAL_HEADER], h2[WAL_HEADER];
    int64_t page;
    void *b;

    closed_journal();
    b = backend_open();
    ck_assert_int_eq(wal_bytes(), 0); /* an open writes nothing */
    page = sql_int("PRAGMA page_size");
    ops->prime(b);
    ck_assert_int_eq(wal_bytes(), WAL_HEADER + FRAME_HEADER + page);
    wal_header(h1);
    sql_exec("INSERT INTO world_commits(commit_id, kind, source, summary,"
             " occurred_at, data) VALUES ('c2', 'k', 's', 'after prime',"
             " '2026-12-07T00:00:00Z', '{}')");
    ck_assert_int_gt(wal_bytes(), WAL_HEADER + FRAME_HEADER + page);
    wal_header(h2);
    ck_assert_msg(memcmp(h1, h2, WAL_HEADER) == 0,
                  "the write after the prime restarted the WAL");
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commits"), 2);
    ops->close(b);
    ck_assert_int_eq(wal_bytes(), 0);
}
END_TEST

/* A WAL that has frames needs no restart: prime writes nothing. */
START_TEST(prime_leaves_a_wal_with_frames)
{
    unsigned char h0[WAL_HEADER], h1[WAL_HEADER];
    long long before;
    void *b = backend_open(); /* a new file: the schema is in the WAL */

    before = wal_bytes();
    ck_assert_int_gt(before, 0);
    wal_header(h0);
    ops->prime(b);
    ck_assert_int_eq(wal_bytes(), before);
    wal_header(h1);
    ck_assert(memcmp(h0, h1, WAL_HEADER) == 0);
    ops->close(b);
}
END_TEST

/* Another connection holds the write lock: prime does not wait for it
 * (the journal's busy timeout is 5 s), leaves the WAL as it was, and
 * leaves its connection usable: no transaction left open, so the next
 * prime, with the lock free, restarts the WAL. */
START_TEST(prime_never_waits_for_a_writer)
{
    sqlite3 *other;
    int64_t t0, took;
    void *b;

    closed_journal();
    b = backend_open();
    ck_assert_int_eq(sqlite3_open(dbpath, &other), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL),
                     SQLITE_OK);
    t0 = slack_now_ms();
    ops->prime(b);
    took = slack_now_ms() - t0;
    ck_assert_msg(took < 2500, "prime waited %lld ms for the lock",
                  (long long)took);
    ck_assert_int_eq(wal_bytes(), 0);
    ck_assert_int_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL),
                     SQLITE_OK);
    ops->prime(b);
    ck_assert_int_gt(wal_bytes(), 0);
    ops->close(b);
    sqlite3_close(other);
}
END_TEST

/* A prime whose transaction fails part way (here a trigger refuses the
 * row's way back) rolls it back: the row is as it was, and the journal's
 * connection holds no write lock, so another connection can write. */
START_TEST(prime_that_fails_leaves_no_transaction)
{
    void *b;

    closed_journal_with("CREATE TRIGGER refuse_back BEFORE UPDATE ON"
                        " schema_meta WHEN NEW.version > 0"
                        " BEGIN SELECT RAISE(ABORT, 'no'); END");
    b = backend_open();
    ops->prime(b);
    ck_assert_int_eq(wal_bytes(), 0);
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
    sql_exec("DROP TRIGGER refuse_back"); /* fails while b holds the lock */
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
    ops->close(b);
}
END_TEST

/* The front runs prime on a thread of the journal's own, once; writes go
 * on beside it and close joins it.  (PostgreSQL has nothing to prime: the
 * calls do nothing there.) */
START_TEST(prime_on_the_journals_thread)
{
    struct aur__journal *j;

    closed_journal();
    j = open_ok();
    aur__journal_prime(j);
    aur__journal_prime(j); /* once per handle: a second does nothing */
    if (!on_pg()) {
        H_WAIT_UNTIL(wal_bytes() > 0, 10000, 10);
        ck_assert_msg(wal_bytes() > 0, "the WAL was not primed in 10 s");
    }
    append_ok(j, "c2", "all", NULL);
    aur__journal_close(j);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commits"), 2);
}
END_TEST

TCase *journal_prime_tcase(void);

TCase *journal_prime_tcase(void)
{
    TCase *tc = tcase_create("prime");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    if (!on_pg()) {
        tcase_add_test(tc, prime_restarts_an_emptied_wal);
        tcase_add_test(tc, prime_leaves_a_wal_with_frames);
        tcase_add_test(tc, prime_never_waits_for_a_writer);
        tcase_add_test(tc, prime_that_fails_leaves_no_transaction);
    }
    tcase_add_test(tc, prime_on_the_journals_thread);
    return tc;
}
