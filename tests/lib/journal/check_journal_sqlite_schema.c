/*
 * check_journal_sqlite_schema.c - SQLite only: a file written by an older
 * host (schema v1: scope rows with a row id and two UNIQUE indexes; v2:
 * keyed by (scope, sequence) with commit_seq declared first) is migrated
 * to v3 (the key's columns declared first, an index on commit_seq) in one
 * transaction: the commits, their scopes, sequences and idempotency are
 * as before, the file passes integrity_check (the fixture's teardown), a
 * step that fails leaves the file as it was, and hosts that open the file
 * together migrate it once.
 */
#include "aur_setup.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "journal_fixture.h"

/* The tables every version shares, word for word as the first migration
 * wrote them. */
#define COMMIT_TABLES                                                       \
    "CREATE TABLE schema_meta("                                            \
    " singleton INTEGER PRIMARY KEY CHECK(singleton = 1),"                 \
    " version INTEGER NOT NULL);"                                          \
    "CREATE TABLE world_commits("                                          \
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"                              \
    " commit_id TEXT UNIQUE NOT NULL,"                                     \
    " kind TEXT NOT NULL,"                                                 \
    " source TEXT NOT NULL,"                                               \
    " summary TEXT NOT NULL,"                                              \
    " occurred_at TEXT NOT NULL,"                                          \
    " data TEXT NOT NULL);"
#define BASES_TABLE                                                         \
    "CREATE TABLE world_commit_bases("                                     \
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"          \
    " scope TEXT NOT NULL,"                                                \
    " sequence INTEGER NOT NULL,"                                          \
    " UNIQUE(commit_seq, scope));"

/* The file as a v1 host created it: its schema, word for word, and three
 * commits, ids c1 to c3, scopes {a}, {a, b} and {b}.  A copy of the first
 * migration on purpose: that is the shipped format, and the test must
 * keep reading it if the step were ever edited (which its rule forbids). */
static const char v1_schema[] =
    COMMIT_TABLES
    "CREATE TABLE world_commit_scopes("
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"
    " scope TEXT NOT NULL,"
    " sequence INTEGER NOT NULL,"
    " UNIQUE(scope, sequence),"
    " UNIQUE(commit_seq, scope));"
    BASES_TABLE
    "INSERT INTO schema_meta VALUES (1, 1);";

/* What the v1 -> v2 step left, word for word as sqlite_master keeps it
 * after the rename (the v2 shape, commit_seq declared first). */
static const char v2_schema[] =
    COMMIT_TABLES
    BASES_TABLE
    "CREATE TABLE \"world_commit_scopes\"("
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"
    " scope TEXT NOT NULL,"
    " sequence INTEGER NOT NULL,"
    " PRIMARY KEY(scope, sequence)) WITHOUT ROWID;"
    "CREATE INDEX world_commit_scopes_commit"
    " ON world_commit_scopes(commit_seq);"
    "INSERT INTO schema_meta VALUES (1, 2);";

static void make_file(const char *schema, const char *extra_sql)
{
    static const char rows[] =
        "INSERT INTO world_commits(commit_id, kind, source, summary,"
        " occurred_at, data) VALUES"
        " ('c1', 'k', 'src', 's1', '2026-01-01T00:00:00Z', '{\"n\":1}'),"
        " ('c2', 'k', 'src', 's2', '2026-01-01T00:00:01Z', '{\"n\":2}'),"
        " ('c3', 'k', 'src', 's3', '2026-01-01T00:00:02Z', '{\"n\":3}');"
        "INSERT INTO world_commit_scopes(commit_seq, scope, sequence) VALUES"
        " (1, 'a', 1), (2, 'a', 2), (2, 'b', 1), (3, 'b', 2);";
    char dir[300];
    sqlite3 *db;
    char *msg = NULL;

    snprintf(dir, sizeof dir, "%s/data", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof dir, "%s/data/world", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, "PRAGMA journal_mode=WAL;", NULL, NULL,
                               &msg) == SQLITE_OK &&
                      sqlite3_exec(db, schema, NULL, NULL, &msg) ==
                          SQLITE_OK &&
                      sqlite3_exec(db, rows, NULL, NULL, &msg) == SQLITE_OK &&
                      sqlite3_exec(db, extra_sql ? extra_sql : "", NULL,
                                   NULL, &msg) == SQLITE_OK,
                  "%s", msg ? msg : "");
    sqlite3_close(db);
}

static void make_v1(const char *extra_sql)
{
    make_file(v1_schema, extra_sql);
}

/* A file of an older version, opened by this host: version 3, the scope
 * table with its key's columns first, nothing left of a step, and the
 * commits, idempotency and sequences as the older host left them. */
static void migrated_file_reads_and_writes(void)
{
    struct aur__journal *j;
    struct lines l = {0};
    struct tc t;
    struct aur_error err;
    int64_t seq = 0;
    int ins = -1;
    char b[128];

    j = open_ok();
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM sqlite_master WHERE name ="
                             " 'world_commit_scopes' AND sql LIKE"
                             " '%( scope TEXT NOT NULL, sequence INTEGER NOT"
                             " NULL, commit_seq %WITHOUT ROWID'"),
                     1);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM sqlite_master WHERE name ="
                             " 'world_commit_scopes_commit'"),
                     1);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM sqlite_master WHERE name"
                             " IN ('world_commit_scopes_v2',"
                             " 'world_commit_scopes_v3')"),
                     0);

    /* the commits read back as the older host wrote them */
    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_str_eq(scopes_of(&l, 0, b, sizeof b), "{\"a\":1}");
    ck_assert_str_eq(scopes_of(&l, 1, b, sizeof b), "{\"a\":2,\"b\":1}");
    ck_assert_str_eq(scopes_of(&l, 2, b, sizeof b), "{\"b\":2}");
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"commit_id\":\"c2\""));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"data\":{\"n\":2}"));
    lines_free(&l);
    each_ok(j, 0, "b", &l);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_ptr_nonnull(strstr(l.v[0], "\"seq\":2,"));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"seq\":3,"));
    lines_free(&l);

    /* still idempotent by id: the same content is already present, other
     * content is a conflict */
    mk(&t, "c2", "s2", "a,b", "{\"n\":2}");
    t.c.kind = "k";
    t.c.source = "src";
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(ins, 0);
    ck_assert_int_eq(seq, 2);
    unmk(&t);
    mk(&t, "c2", "s2", "a", "{\"n\":2}");
    t.c.kind = "k";
    t.c.source = "src";
    ck_assert_int_eq(append(j, &t, NULL, NULL, &err), AUR_E_CONFLICT);
    unmk(&t);

    /* new commits count on from the migrated sequences */
    append_ok(j, "c4", "b,c,a", NULL);
    each_ok(j, 3, NULL, &l);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(scopes_of(&l, 0, b, sizeof b),
                     "{\"a\":3,\"b\":3,\"c\":1}");
    ck_assert_ptr_nonnull(strstr(l.v[0], "\"seq\":4,"));
    lines_free(&l);
    aur__journal_close(j);

    /* and a second open finds nothing to do */
    j = open_ok();
    ck_assert_int_eq(aur__journal_count(j), 4);
    aur__journal_close(j);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"), 7);
}

START_TEST(v1_file_migrates_to_v3)
{
    make_v1(NULL);
    migrated_file_reads_and_writes();
}
END_TEST

START_TEST(v2_file_migrates_to_v3)
{
    make_file(v2_schema, NULL);
    migrated_file_reads_and_writes();
}
END_TEST

/* A step that fails (here: the table obstacle, of the name the step
 * creates, is already there) is refused, naming the file and the table,
 * and undone whole: the file is still at version, with its four scope
 * rows and the scope table whose sql is LIKE shape. */
static void refused_whole(const char *obstacle, int version,
                          const char *shape)
{
    struct aur__journal *j = (struct aur__journal *)&j;
    struct aur_error err;
    char sql[256];

    ck_assert_int_eq(aur__journal_open(dbpath, NULL, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);
    ck_assert_msg(strstr(err.msg, dbpath) && strstr(err.msg, obstacle), "%s",
                  err.msg);
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), version);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"), 4);
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM sqlite_master WHERE name"
             " = 'world_commit_scopes' AND sql LIKE '%s'", shape);
    ck_assert_int_eq(sql_int(sql), 1);
}

/* Once the obstacle is gone, the same file migrates. */
static void migrates_once_cleared(const char *obstacle)
{
    struct aur__journal *j;
    char sql[128];

    snprintf(sql, sizeof sql, "DROP TABLE %s", obstacle);
    sql_exec(sql);
    j = open_ok();
    ck_assert_int_eq(aur__journal_count(j), 3);
    aur__journal_close(j);
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
}

/* The v1 -> v2 step failing: the file stays a v1 file. */
START_TEST(failed_migration_leaves_v1)
{
    make_v1("CREATE TABLE world_commit_scopes_v2(x);");
    refused_whole("world_commit_scopes_v2", 1, "%UNIQUE(commit_seq, scope))");
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM sqlite_master WHERE name ="
                             " 'world_commit_scopes_commit'"),
                     0);
    migrates_once_cleared("world_commit_scopes_v2");
}
END_TEST

/* The v2 -> v3 step failing on its own: the file stays a v2 file. */
START_TEST(failed_migration_leaves_v2)
{
    make_file(v2_schema, "CREATE TABLE world_commit_scopes_v3(x);");
    refused_whole("world_commit_scopes_v3", 2, "%( commit_seq INTEGER%");
    migrates_once_cleared("world_commit_scopes_v3");
}
END_TEST

/* HOSTS processes open dbpath at the same moment and each appends one
 * commit (ids h0, h1, ...; scopes a and h); all must succeed. */
enum { HOSTS = 4 };

static void hosts_together(void)
{
    pid_t pid[HOSTS];
    int go[2], status;

    ck_assert_int_eq(pipe(go), 0);
    for (int i = 0; i < HOSTS; i++) {
        ck_assert_int_ge(pid[i] = fork(), 0);
        if (pid[i] == 0) {
            struct aur__journal *j = NULL;
            struct aur_error err;
            struct tc t;
            char id[16], b;
            int ok;

            close(go[1]);
            (void)!read(go[0], &b, 1); /* EOF: all of them go */
            snprintf(id, sizeof id, "h%d", i);
            mk(&t, id, "s", "a,h", NULL);
            ok = aur__journal_open(dbpath, NULL, &j, &err) == AUR_OK &&
                 append(j, &t, NULL, NULL, &err) == AUR_OK;
            if (!ok)
                fprintf(stderr, "host %d: %s\n", i, err.msg);
            aur__journal_close(j);
            _exit(ok ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < HOSTS; i++) {
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "host %d failed", i);
    }
}

/* Hosts that open a v1 file at the same moment: one migrates, the others
 * wait for its write lock and find v3; all of them then write. */
START_TEST(hosts_opening_a_v1_file_together)
{
    make_v1(NULL);
    hosts_together();
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commits"), 3 + HOSTS);
    /* every scope dense from 1: the migrated rows and the new ones */
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM (SELECT scope, COUNT(*) n,"
                             " MIN(sequence) lo, MAX(sequence) hi FROM"
                             " world_commit_scopes GROUP BY scope) WHERE"
                             " lo = 1 AND hi = n"),
                     3);
    ck_assert_int_eq(sql_int("SELECT MAX(sequence) FROM world_commit_scopes"
                             " WHERE scope = 'a'"),
                     2 + HOSTS);
}
END_TEST

/* The same on a file that does not exist yet, many times over: one
 * creates it, and every step of creating it (the header, WAL mode, the
 * schema) waits for the others instead of failing "database is locked". */
START_TEST(hosts_opening_a_new_file_together)
{
    for (int round = 0; round < 30; round++) {
        char p[300];
        hosts_together();
        ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commits"), HOSTS);
        ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
        ck_assert_int_eq(unlink(dbpath), 0);
        snprintf(p, sizeof p, "%s-wal", dbpath);
        (void)unlink(p);
        snprintf(p, sizeof p, "%s-shm", dbpath);
        (void)unlink(p);
    }
}
END_TEST

TCase *journal_migrate_tcase(void);

TCase *journal_migrate_tcase(void)
{
    TCase *tc = tcase_create("migrate");

    tcase_add_checked_fixture(tc, setup, teardown);
    /* 30 rounds of 4 processes: 1 s here, 27 s under valgrind */
    tcase_set_timeout(tc, 20);
    if (!on_pg()) {
        tcase_add_test(tc, v1_file_migrates_to_v3);
        tcase_add_test(tc, v2_file_migrates_to_v3);
        tcase_add_test(tc, failed_migration_leaves_v1);
        tcase_add_test(tc, failed_migration_leaves_v2);
        tcase_add_test(tc, hosts_opening_a_v1_file_together);
        tcase_add_test(tc, hosts_opening_a_new_file_together);
    }
    return tc;
}
