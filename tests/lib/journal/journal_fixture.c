/*
 * journal_fixture.c - check_journal's fixture (journal_fixture.h).
 */
#include "aur_setup.h"

#include <check.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "journal_fixture.h"

char tmpdir[64];
char dbpath[256];

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

/* PostgreSQL: the server's URI (tests/support/with_pg.sh), and the
 * database of the running test, made afresh by setup. */
static const char *pg_base(void)
{
    const char *u = getenv("AUR_TEST_JOURNAL_URI");
    return u && *u ? u : NULL;
}

bool on_pg(void)
{
    return pg_base() != NULL;
}

const char *schema_table(void)
{
    return on_pg() ? "aurora_schema" : "schema_meta";
}

static char pg_db[64];

/* Run sql on the server's own database (CREATE/DROP DATABASE). */
static void pg_admin(const char *sql)
{
    PGconn *c = PQconnectdb(pg_base());
    PGresult *r;
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "admin: %s",
                  PQerrorMessage(c));
    r = PQexec(c, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", sql,
                  PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

void setup(void)
{
    static int n;
    char sql[128];
    snprintf(tmpdir, sizeof tmpdir, "/tmp/aur-journal-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(dbpath, sizeof dbpath, "%s/data/world/world.sqlite3", tmpdir);
    if (!on_pg())
        return;
    /* base is postgresql://user@host:port/db: swap the database */
    const char *base = pg_base(), *slash = strrchr(base, '/');
    ck_assert_ptr_nonnull(slash);
    snprintf(pg_db, sizeof pg_db, "aurt_%ld_%d", (long)getpid(), n++);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s ENCODING 'UTF8'"
             " TEMPLATE template0", pg_db);
    pg_admin(sql);
    snprintf(dbpath, sizeof dbpath, "%.*s/%s", (int)(slash - base), base,
             pg_db);
}

/*
 * Every world journal file a test leaves must pass SQLite's own
 * integrity_check: an operator's first check after a crash.  A check
 * that reports what is not there (SQLite 3.40.0 to 3.41.0 on the v2
 * scope table) is as bad as one that misses what is.  Files that are
 * not world journals (a test's foreign or damaged file) are skipped:
 * only a file with a world_commits table is checked.
 */
static void integrity_ok(void)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    struct stat sb;

    if (on_pg() || stat(dbpath, &sb) != 0)
        return;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY,
                                     NULL),
                     SQLITE_OK);
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type ="
                               " 'table' AND name = 'world_commits'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        sqlite3_finalize(st);
        ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check",
                                            -1, &st, NULL),
                         SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        ck_assert_msg(strcmp((const char *)sqlite3_column_text(st, 0),
                             "ok") == 0,
                      "integrity_check of %s: %s", dbpath,
                      (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

void teardown(void)
{
    integrity_ok();
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (on_pg()) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", pg_db);
        pg_admin(sql);
    }
}

struct aur__journal *open_ok(void)
{
    struct aur__journal *j = NULL;
    struct aur_error err;
    int rc = aur__journal_open(dbpath, NULL, &j, &err);
    ck_assert_msg(rc == AUR_OK, "open: %d %s", rc, err.msg);
    ck_assert_ptr_nonnull(j);
    return j;
}


void mk(struct tc *t, const char *id, const char *summary,
               const char *scopes_csv, const char *data_json)
{
    static char buf[16][128];
    static size_t next;
    char *s, *tok, *save = NULL;
    size_t n = 0;

    memset(t, 0, sizeof *t);
    t->c.struct_size = sizeof t->c;
    t->c.commit_id = id;
    t->c.kind = "mcp.event.received";
    t->c.source = "mcp:org.example.qq";
    t->c.summary = summary;
    t->c.occurred_at = "2026-12-02T07:00:00Z";
    s = buf[next++ % 16];
    snprintf(s, sizeof buf[0], "%s", scopes_csv);
    for (tok = strtok_r(s, ",", &save); tok && n < 8;
         tok = strtok_r(NULL, ",", &save))
        t->scopes[n++] = tok;
    t->c.scopes = t->scopes;
    t->c.n_scopes = n;
    t->c.data = data_json ? json_tokener_parse(data_json) : NULL;
    if (data_json)
        ck_assert_ptr_nonnull(t->c.data);
}

void unmk(struct tc *t)
{
    json_object_put(t->c.data);
    t->c.data = NULL;
}

int append(struct aur__journal *j, struct tc *t, int64_t *seq,
                  int *inserted, struct aur_error *err)
{
    return aur__journal_append(j, &t->c, seq, inserted, err);
}

void append_ok(struct aur__journal *j, const char *id,
                      const char *scopes, const char *data)
{
    struct tc t;
    struct aur_error err;
    int ins = -1, rc;
    mk(&t, id, "summary", scopes, data);
    rc = append(j, &t, NULL, &ins, &err);
    ck_assert_msg(rc == AUR_OK, "append %s: %d %s", id, rc, err.msg);
    ck_assert_int_eq(ins, 1);
    unmk(&t);
}


int collect(void *ud, struct json_object *o)
{
    struct lines *l = ud;
    if (l->n < AUR__ARRAY_LEN(l->v))
        l->v[l->n++] = strdup(json_object_to_json_string_ext(
            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    return l->stop_after && l->n >= l->stop_after;
}

void lines_free(struct lines *l)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = 0;
}

void each_ok(struct aur__journal *j, int64_t after, const char *scope,
                    struct lines *l)
{
    struct aur_error err;
    int rc = aur__journal_each(j, after, scope, collect, l, &err);
    ck_assert_msg(rc == AUR_OK, "each: %d %s", rc, err.msg);
}

static PGconn *pg_test_db(void)
{
    PGconn *c = PQconnectdb(dbpath);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    return c;
}

long long wal_bytes(void)
{
    char wal[300];
    struct stat sb;

    snprintf(wal, sizeof wal, "%s-wal", dbpath);
    return stat(wal, &sb) == 0 ? (long long)sb.st_size : -1;
}

int64_t sql_int(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t v = -1;
    if (on_pg()) {
        PGconn *c = pg_test_db();
        PGresult *r = PQexec(c, sql);
        ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql,
                      PQerrorMessage(c));
        if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
            v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        PQfinish(c);
        return v;
    }
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
                  "%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

void sql_exec(const char *sql)
{
    sqlite3 *db;
    if (on_pg()) {
        PGconn *c = pg_test_db();
        PGresult *r = PQexec(c, sql);
        ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", sql,
                      PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        return;
    }
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK,
                  "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* The scopes object of visited line i, as text. */
const char *scopes_of(struct lines *l, size_t i, char *buf, size_t size)
{
    struct json_object *o = json_tokener_parse(l->v[i]);
    snprintf(buf, size, "%s",
             json_object_to_json_string_ext(
                 json_object_object_get(o, "scopes"), JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return buf;
}
