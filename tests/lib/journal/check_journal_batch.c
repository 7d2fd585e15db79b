/*
 * check_journal_batch.c - the world journal's batches (one transaction:
 * mixed new, duplicate and conflicting commits; a storage failure part way
 * undoes all; dense sequences in a large batch) and concurrent writers.
 * Part of check_journal.
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sqlite3.h>

#include "journal_fixture.h"

Suite *journal_batch_suite(void);

START_TEST(batch_mixed)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    struct tc t[6];
    const struct aur_commit *v[6];
    int res[6], i;
    struct aur_error err;

    append_ok(j, "old", "a", "{\"v\":1}");
    mk(&t[0], "new1", "summary", "a,b", NULL);
    mk(&t[1], "old", "summary", "a", "{\"v\":1}");
    mk(&t[2], "old", "summary", "a", "{\"v\":2}");
    mk(&t[3], "bad", "sum\xff", "a", NULL); /* not UTF-8 */
    mk(&t[4], "new2", "summary", "b", NULL);
    mk(&t[5], "new1", "summary", "b,a", NULL); /* repeated inside the batch */
    for (i = 0; i < 6; i++)
        v[i] = &t[i].c;
    ck_assert_int_eq(aur__journal_append_batch(j, v, 6, res, &err), AUR_OK);
    ck_assert_int_eq(res[0], AUR_OK);
    ck_assert_int_eq(res[1], AUR_DECLINE);
    ck_assert_int_eq(res[2], AUR_E_CONFLICT);
    ck_assert_int_eq(res[3], AUR_E_INVAL);
    ck_assert_int_eq(res[4], AUR_OK);
    ck_assert_int_eq(res[5], AUR_DECLINE);
    for (i = 0; i < 6; i++)
        unmk(&t[i]);
    ck_assert_int_eq(aur__journal_count(j), 3);

    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_ptr_nonnull(strstr(l.v[0], "\"data\":{\"v\":1}"));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"commit_id\":\"new1\""));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"scopes\":{\"a\":2,\"b\":1}"));
    ck_assert_ptr_nonnull(strstr(l.v[2], "\"scopes\":{\"b\":2}"));
    lines_free(&l);

    ck_assert_int_eq(aur__journal_append_batch(j, v, 0, NULL, &err), AUR_OK);
    ck_assert_int_eq(aur__journal_append_batch(j, NULL, 2, res, &err),
                     AUR_E_INVAL);
    aur__journal_close(j);
}
END_TEST

/* A scope row of scope "boom" fails to insert until boom_off.  On SQLite
 * with RAISE(how): ABORT undoes the statement, FAIL keeps the rows the
 * statement wrote before it. */
static void boom_on(const char *how)
{
    char sql[256];

    if (on_pg()) {
        sql_exec("CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql"
                 " AS $$BEGIN IF NEW.scope = 'boom' THEN"
                 " RAISE EXCEPTION 'injected failure'; END IF;"
                 " RETURN NEW; END$$;"
                 " CREATE TRIGGER boom BEFORE INSERT ON world_commit_scopes"
                 " FOR EACH ROW EXECUTE FUNCTION boom()");
        return;
    }
    snprintf(sql, sizeof sql,
             "CREATE TRIGGER boom BEFORE INSERT ON world_commit_scopes"
             " WHEN NEW.scope = 'boom' BEGIN"
             " SELECT RAISE(%s, 'injected failure'); END", how);
    sql_exec(sql);
}

static void boom_off(void)
{
    sql_exec(on_pg() ? "DROP TRIGGER boom ON world_commit_scopes"
                     : "DROP TRIGGER boom");
}

/* A storage failure in the middle of a batch (here: inside the third
 * commit, after its world_commits row was written) undoes the whole
 * transaction: no commit of it, no scope sequence used. */
START_TEST(batch_storage_failure_undoes_all)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    struct tc t[4];
    const struct aur_commit *v[4];
    int res[4], i;
    struct aur_error err;

    append_ok(j, "before", "a", NULL);
    boom_on("ABORT");
    mk(&t[0], "new1", "summary", "a", NULL);
    mk(&t[1], "before", "summary", "a", NULL); /* present */
    mk(&t[2], "new2", "summary", "a,boom", NULL);
    mk(&t[3], "new3", "summary", "b", NULL);
    for (i = 0; i < 4; i++)
        v[i] = &t[i].c;
    ck_assert_int_eq(aur__journal_append_batch(j, v, 4, res, &err),
                     AUR_E_JOURNAL);
    ck_assert_int_eq(err.code, AUR_E_JOURNAL);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(res[i], AUR_E_JOURNAL);
    ck_assert_int_eq(aur__journal_count(j), 1);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"), 1);

    /* the journal is usable at once, and the sequences continue as if the
     * failed batch had never been tried */
    boom_off();
    ck_assert_int_eq(aur__journal_append_batch(j, v, 4, res, &err), AUR_OK);
    ck_assert_int_eq(res[0], AUR_OK);
    ck_assert_int_eq(res[1], AUR_DECLINE);
    ck_assert_int_eq(res[2], AUR_OK);
    ck_assert_int_eq(res[3], AUR_OK);
    for (i = 0; i < 4; i++)
        unmk(&t[i]);
    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"commit_id\":\"new1\""));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"scopes\":{\"a\":2}"));
    ck_assert_ptr_nonnull(strstr(l.v[2], "\"scopes\":{\"a\":3,\"boom\":1}"));
    ck_assert_ptr_nonnull(strstr(l.v[3], "\"scopes\":{\"b\":1}"));
    lines_free(&l);
    aur__journal_close(j);
}
END_TEST

/* Many commits on one scope in one transaction: sequences stay dense
 * (the per-scope max is read inside the transaction, item by item). */
START_TEST(batch_large_sequences_dense)
{
    struct aur__journal *j = open_ok();
    enum { N = 600 };
    static const char *const even[] = {"all"}, *const odd[] = {"odd", "all"};
    static struct aur_commit c[N];
    static const struct aur_commit *v[N];
    static int res[N];
    static char ids[N][16];
    struct aur_error err;
    int i;

    for (i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "c%d", i);
        c[i] = (struct aur_commit){
            .struct_size = sizeof c[i],
            .commit_id = ids[i],
            .kind = "mcp.event.received",
            .source = "mcp:org.example.qq",
            .summary = "summary",
            .scopes = i % 2 ? odd : even,
            .n_scopes = i % 2 ? 2 : 1,
        };
        v[i] = &c[i];
    }
    ck_assert_int_eq(aur__journal_append_batch(j, v, N, res, &err), AUR_OK);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(res[i], AUR_OK);
    ck_assert_int_eq(aur__journal_count(j), N);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'all'"),
                     N);
    ck_assert_int_eq(sql_int("SELECT COUNT(DISTINCT sequence) FROM"
                             " world_commit_scopes WHERE scope = 'odd'"),
                     N / 2);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'odd'"),
                     N / 2);
    aur__journal_close(j);
}
END_TEST

/* c[0..n): ids "<prefix>c<i>" (into ids), kind "k", source "s", the
 * one scope "all"; v[i] points at c[i]. */
static void plain_batch(struct aur_commit *c, const struct aur_commit **v,
                        char (*ids)[24], int n, const char *prefix,
                        const char *summary)
{
    static const char *const all[] = {"all"};

    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "%sc%d", prefix, i);
        c[i] = (struct aur_commit){
            .struct_size = sizeof c[i],
            .commit_id = ids[i],
            .kind = "k",
            .source = "s",
            .summary = summary,
            .scopes = all,
            .n_scopes = 1,
        };
        v[i] = &c[i];
    }
}

/* A storage failure inside one multi-row INSERT of scope rows (a batch
 * buffers 64 and writes them with one statement, which keeps the rows
 * before a failed one: RAISE(FAIL)) undoes the whole batch too. */
START_TEST(batch_failure_inside_a_scope_insert_undoes_all)
{
    struct aur__journal *j = open_ok();
    enum { N = 100, BOOM = 50 };
    static const char *const boom[] = {"all", "boom"};
    static struct aur_commit c[N];
    static const struct aur_commit *v[N];
    static int res[N];
    static char ids[N][24];
    struct aur_error err;
    int i;

    append_ok(j, "before", "all", NULL);
    boom_on("FAIL");
    plain_batch(c, v, ids, N, "", "summary");
    c[BOOM].scopes = boom; /* the 52nd scope row of the first 64 */
    c[BOOM].n_scopes = 2;
    ck_assert_int_eq(aur__journal_append_batch(j, v, N, res, &err),
                     AUR_E_JOURNAL);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(res[i], AUR_E_JOURNAL);
    ck_assert_int_eq(aur__journal_count(j), 1);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"), 1);

    boom_off();
    ck_assert_int_eq(aur__journal_append_batch(j, v, N, res, &err), AUR_OK);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(res[i], AUR_OK);
    ck_assert_int_eq(aur__journal_count(j), N + 1);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'all'"),
                     N + 1);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"),
                     N + 2);
    aur__journal_close(j);
}
END_TEST

/* Batches long enough for the multi-row inserts (journal_sqlite_append.c
 * inserts whole chunks and, when one holds an id already present or
 * repeated, goes row by row): every answer is what the row-by-row path
 * gives, seq stays dense and in commit order, and a repeat whose first
 * copy is still waiting to have its scope rows written compares equal. */
START_TEST(batch_chunks_with_repeats)
{
    struct aur__journal *j = open_ok();
    enum { N = 100 };
    static struct aur_commit c[N];
    static const struct aur_commit *v[N];
    static int res[N];
    static char ids[N][24];
    struct aur_error err;
    int i;

    append_ok(j, "c40", "all", NULL);
    plain_batch(c, v, ids, N, "", "summary");
    /* c40 is present (its chunk fails); c70 comes again at 75 (same
     * content) and c10 at 80 (other content) */
    c[40].kind = "mcp.event.received";
    c[40].source = "mcp:org.example.qq";
    c[75].commit_id = "c70";
    c[80].commit_id = "c10";
    c[80].summary = "other";
    ck_assert_int_eq(aur__journal_append_batch(j, v, N, res, &err), AUR_OK);
    for (i = 0; i < N; i++) {
        int want = i == 40 || i == 75 ? AUR_DECLINE
                   : i == 80          ? AUR_E_CONFLICT
                                      : AUR_OK;
        ck_assert_int_eq(res[i], want);
    }
    ck_assert_int_eq(aur__journal_count(j), N - 2);
    ck_assert_int_eq(sql_int("SELECT MAX(seq) FROM world_commits"), N - 2);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'all'"),
                     N - 2);
    /* every commit's 'all' sequence is its seq: one order for both */
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commits c JOIN"
                             " world_commit_scopes s ON s.commit_seq = c.seq"
                             " WHERE s.scope = 'all' AND s.sequence = c.seq"),
                     N - 2);
    /* in commit order: c0 .. c99 after c40, the repeats skipped */
    ck_assert_int_eq(sql_int("SELECT seq FROM world_commits"
                             " WHERE commit_id = 'c41'"),
                     42);
    ck_assert_int_eq(sql_int("SELECT seq FROM world_commits"
                             " WHERE commit_id = 'c99'"),
                     N - 2);
    /* the batch again: every row present, nothing written */
    ck_assert_int_eq(aur__journal_append_batch(j, v, N, res, &err), AUR_OK);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(res[i], i == 80 ? AUR_E_CONFLICT : AUR_DECLINE);
    ck_assert_int_eq(aur__journal_count(j), N - 2);
    aur__journal_close(j);
}
END_TEST

/* SQLite: checkpoints run on a thread of their own (journal_sqlite_ckpt.c)
 * once the WAL passes 1000 frames, and the writer finishes one itself
 * past 4000, so under a steady stream of batches the WAL stays bounded
 * (SQLite only restarts it after a checkpoint that copied all of it),
 * nothing is lost, and close joins the thread. */
START_TEST(sqlite_wal_stays_bounded)
{
    struct aur__journal *j = open_ok();
    /* about 1200 WAL pages a batch: the fourth passes 4000 */
    enum { BATCHES = 16, N = 500, SUMMARY = 8000 };
    static struct aur_commit c[N];
    static const struct aur_commit *v[N];
    static int res[N];
    static char ids[N][24], wal[300], summary[SUMMARY + 1];
    struct aur_error err;
    struct stat st;
    off_t biggest = 0;

    memset(summary, 's', SUMMARY);
    snprintf(wal, sizeof wal, "%s-wal", dbpath);
    for (int b = 0; b < BATCHES; b++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "b%d:", b);
        plain_batch(c, v, ids, N, prefix, summary);
        ck_assert_int_eq(aur__journal_append_batch(j, v, N, res, &err),
                         AUR_OK);
        if (stat(wal, &st) == 0 && st.st_size > biggest)
            biggest = st.st_size;
    }
    ck_assert_int_eq(aur__journal_count(j), BATCHES * N);
    /* 4000 pages and the batch that passed them (17 MB), with room to
     * spare; a WAL never restarted held all 64 MB of the journal */
    ck_assert_msg(biggest < 32 * 1024 * 1024, "WAL grew to %lld bytes",
                  (long long)biggest);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'all'"),
                     BATCHES * N);
    aur__journal_close(j);
    /* the last close checkpoints; the WAL file stays (persistent WAL:
     * the next open need not create it and sync a new header), no
     * bigger than it ever was */
    ck_assert_int_eq(stat(wal, &st), 0);
    ck_assert_int_le(st.st_size, biggest);
}
END_TEST

/* The commits in the SQLite file at path, read with SQLite itself. */
static long long count_commits(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long n;

    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM"
                                            " world_commits", -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* The commits the database file holds by itself: a copy of it without
 * its -wal and -shm, read with SQLite. */
static long long commits_in_file_alone(void)
{
    char copy[300], buf[65536];
    FILE *in, *out;
    size_t n;
    long long count;

    snprintf(copy, sizeof copy, "%s.copy", dbpath);
    ck_assert_ptr_nonnull(in = fopen(dbpath, "rb"));
    ck_assert_ptr_nonnull(out = fopen(copy, "wb"));
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
    count = count_commits(copy);
    unlink(copy);
    return count;
}

/* The WAL file stays between runs (persistent WAL), so the last close
 * must still copy every commit into the database file itself: the file
 * alone, without its -wal and -shm, holds them all. */
START_TEST(sqlite_close_checkpoints_into_the_file)
{
    struct aur__journal *j = open_ok();
    char id[16];

    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof id, "c%d", i);
        append_ok(j, id, "all", NULL);
    }
    aur__journal_close(j);
    ck_assert_int_eq(commits_in_file_alone(), 20);
}
END_TEST

/* The same with another connection open on the file (another host, a
 * `journal --follow`, an operator's sqlite3 shell): SQLite's own close
 * checkpoints only as the last connection, so the close must do it
 * itself, or the last commits stay in a WAL that was never synced and an
 * OS crash or power loss after a clean close loses them.  The other
 * connection stays open, so the WAL is not emptied; it must hold nothing
 * that is not in the file. */
START_TEST(sqlite_close_checkpoints_beside_another_connection)
{
    struct aur__journal *j = open_ok();
    sqlite3 *other;
    char id[16];
    int log = -1, done = -1;

    ck_assert_int_eq(sqlite3_open_v2(dbpath, &other, SQLITE_OPEN_READONLY,
                                     NULL),
                     SQLITE_OK);
    /* opened and reading: it holds the shared lock a follower holds */
    ck_assert_int_eq(sqlite3_exec(other, "SELECT COUNT(*) FROM world_commits",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof id, "c%d", i);
        append_ok(j, id, "all", NULL);
    }
    aur__journal_close(j);
    ck_assert_int_eq(commits_in_file_alone(), 20);
    ck_assert_int_eq(sqlite3_wal_checkpoint_v2(other, NULL,
                                               SQLITE_CHECKPOINT_PASSIVE,
                                               &log, &done),
                     SQLITE_OK);
    ck_assert_int_eq(log, done); /* every frame already copied */
    sqlite3_close(other);
}
END_TEST

/* The kept WAL file is emptied by a clean close, after the last
 * checkpoint: an open then has no frames to recover (SQLite checksums
 * every frame of a WAL it finds, and the close copied them all into the
 * file again), so a journal used run after run does not get slower to
 * open or close as its WAL fills up. */
static long long wal_size(void)
{
    long long n = wal_bytes();

    ck_assert_int_ge(n, 0); /* kept, not deleted */
    return n;
}

START_TEST(sqlite_close_empties_the_wal)
{
    char id[16];

    for (int run = 0; run < 3; run++) {
        struct aur__journal *j = open_ok();
        for (int i = 0; i < 20; i++) {
            snprintf(id, sizeof id, "r%dc%d", run, i);
            append_ok(j, id, "all", NULL);
        }
        ck_assert_int_gt(wal_size(), 0); /* the commits are in it */
        aur__journal_close(j);
        ck_assert_int_eq(wal_size(), 0);
    }
    ck_assert_int_eq(count_commits(dbpath), 60);
}
END_TEST

/* aur__journal_settle (the host calls it as its shutdown begins): the
 * checkpoint runs on a thread of the journal's own while writers go on,
 * from this thread and another; close joins it and copies the rest.
 * Every commit is then in the file alone, numbered in order, and the
 * WAL is emptied as by any close. */
struct settle_writer {
    struct aur__journal *j;
    int failures; /* counted here, asserted on the test's thread */
};

static void *append_after_settle(void *arg)
{
    struct settle_writer *w = arg;
    const char *scopes[] = {"all"};
    struct aur_error err;
    char id[16];
    /* its own commits: the fixture's mk is for the test thread alone */
    for (int i = 0; i < 40; i++) {
        struct aur_commit c = {.struct_size = sizeof c, .commit_id = id,
                               .kind = "k", .source = "s",
                               .summary = "after settle", .scopes = scopes,
                               .n_scopes = 1};
        snprintf(id, sizeof id, "other%d", i);
        if (aur__journal_append(w->j, &c, NULL, NULL, &err) != AUR_OK)
            w->failures++;
    }
    return NULL;
}

START_TEST(settle_runs_beside_writers_and_close_keeps_all)
{
    struct aur__journal *j = open_ok();
    struct settle_writer w = {j, 0};
    char id[16];
    pthread_t th;

    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof id, "before%d", i);
        append_ok(j, id, "all", NULL);
    }
    aur__journal_settle(j);
    aur__journal_settle(j); /* once per handle: a second does nothing */
    ck_assert_int_eq(pthread_create(&th, NULL, append_after_settle, &w), 0);
    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof id, "after%d", i);
        append_ok(j, id, "all", NULL);
    }
    pthread_join(th, NULL);
    ck_assert_int_eq(w.failures, 0);
    aur__journal_close(j);
    if (!on_pg()) { /* PostgreSQL has nothing to settle */
        /* first: the last connection to close (sql_int's) deletes it */
        ck_assert_int_eq(wal_size(), 0);
        ck_assert_int_eq(commits_in_file_alone(), 120);
    }
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commits"), 120);
    ck_assert_int_eq(sql_int("SELECT MAX(seq) FROM world_commits"), 120);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'all'"),
                     120);
}
END_TEST

#define THREADS 8
#define PER_THREAD 500

struct worker {
    struct aur__journal *j;
    int id;
    int failures;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    char id[64], own[32];
    const char *scopes[3];
    struct aur_commit c;
    struct aur_error err;
    int i;

    snprintf(own, sizeof own, "own:%d", w->id);
    for (i = 0; i < PER_THREAD; i++) {
        snprintf(id, sizeof id, "t%d:c%d", w->id, i);
        scopes[0] = "shared:all";
        scopes[1] = (i + w->id) % 2 ? "shared:odd" : "shared:even";
        scopes[2] = own;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        c.commit_id = id;
        c.kind = "k";
        c.source = "s";
        c.summary = "concurrent";
        c.scopes = scopes;
        c.n_scopes = 3;
        if (aur__journal_append(w->j, &c, NULL, NULL, &err) != AUR_OK)
            w->failures++;
    }
    return NULL;
}

START_TEST(concurrent_writers)
{
    struct aur__journal *j = open_ok();
    pthread_t th[THREADS];
    struct worker w[THREADS];
    int i;

    for (i = 0; i < THREADS; i++) {
        w[i] = (struct worker){j, i, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(w[i].failures, 0);
    }
    ck_assert_int_eq(aur__journal_count(j), THREADS * PER_THREAD);
    aur__journal_close(j);

    /* every scope's sequences are exactly 1..N, in commit order */
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"),
                     3 * THREADS * PER_THREAD);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM (SELECT scope, COUNT(*) n,"
                             " COUNT(DISTINCT sequence) d, MIN(sequence) lo,"
                             " MAX(sequence) hi FROM world_commit_scopes"
                             " GROUP BY scope) AS t WHERE n = d AND lo = 1"
                             " AND hi = n"),
                     3 + THREADS);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'shared:all'"),
                     THREADS * PER_THREAD);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'own:3'"),
                     PER_THREAD);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes a"
                             " JOIN world_commit_scopes b ON a.scope = b.scope"
                             " AND a.commit_seq < b.commit_seq"
                             " AND a.sequence > b.sequence"
                             " WHERE a.scope = 'shared:odd'"),
                     0);
}
END_TEST

Suite *journal_batch_suite(void)
{
    Suite *s = suite_create("journal_batch");
    TCase *tc;

    tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, batch_mixed);
    tcase_add_test(tc, batch_storage_failure_undoes_all);
    tcase_add_test(tc, batch_failure_inside_a_scope_insert_undoes_all);
    tcase_add_test(tc, batch_large_sequences_dense);
    tcase_add_test(tc, batch_chunks_with_repeats);
    if (!on_pg()) {
        tcase_add_test(tc, sqlite_wal_stays_bounded);
        tcase_add_test(tc, sqlite_close_checkpoints_into_the_file);
        tcase_add_test(tc, sqlite_close_checkpoints_beside_another_connection);
        tcase_add_test(tc, sqlite_close_empties_the_wal);
    }
    suite_add_tcase(s, tc);

    tc = tcase_create("concurrency");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, concurrent_writers);
    tcase_add_test(tc, settle_runs_beside_writers_and_close_keeps_all);
    suite_add_tcase(s, tc);
    return s;
}
