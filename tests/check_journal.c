/*
 * check_journal.c - the world journal (aurora-semantics §2.5, §8.4, §14;
 * interface.md "journal"): schema, per-scope sequences, idempotency by
 * commit_id, filtering, persistence and concurrent writers.
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

#include "journal.h"

static char tmpdir[64];
static char dbpath[256];

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/aur-journal-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(dbpath, sizeof dbpath, "%s/data/world/world.sqlite3", tmpdir);
}

static void teardown(void)
{
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct aur__journal *open_ok(void)
{
    struct aur__journal *j = NULL;
    struct aur_error err;
    int rc = aur__journal_open(dbpath, &j, &err);
    ck_assert_msg(rc == AUR_OK, "open: %d %s", rc, err.msg);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* A commit built on the stack; data parsed from JSON text (NULL = none). */
struct tc {
    struct aur_commit c;
    const char *scopes[8];
};

static void mk(struct tc *t, const char *id, const char *summary,
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

static void unmk(struct tc *t)
{
    json_object_put(t->c.data);
    t->c.data = NULL;
}

static int append(struct aur__journal *j, struct tc *t, int64_t *seq,
                  int *inserted, struct aur_error *err)
{
    return aur__journal_append(j, &t->c, seq, inserted, err);
}

static void append_ok(struct aur__journal *j, const char *id,
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

/* Collects every visited commit as compact text. */
struct lines {
    char *v[64];
    size_t n;
    size_t stop_after; /* 0 = never */
};

static int collect(void *ud, struct json_object *o)
{
    struct lines *l = ud;
    if (l->n < AUR__ARRAY_LEN(l->v))
        l->v[l->n++] = strdup(json_object_to_json_string_ext(
            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    return l->stop_after && l->n >= l->stop_after;
}

static void lines_free(struct lines *l)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = 0;
}

static void each_ok(struct aur__journal *j, int64_t after, const char *scope,
                    struct lines *l)
{
    struct aur_error err;
    int rc = aur__journal_each(j, after, scope, collect, l, &err);
    ck_assert_msg(rc == AUR_OK, "each: %d %s", rc, err.msg);
}

static int64_t sql_int(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t v = -1;
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK,
                  "%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void sql_exec(const char *sql)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK,
                  "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* ------------------------------------------------------------------ */

START_TEST(open_creates_nested)
{
    struct aur__journal *j = open_ok();
    struct stat sb;
    char dir[300];
    sqlite3 *db;
    sqlite3_stmt *st;

    ck_assert_int_eq(aur__journal_count(j), 0);
    ck_assert_int_eq(stat(dbpath, &sb), 0);
    snprintf(dir, sizeof dir, "%s/data/world", tmpdir);
    ck_assert_int_eq(stat(dir, &sb), 0);
    ck_assert(S_ISDIR(sb.st_mode));
    ck_assert_int_eq(sb.st_mode & 0077, 0);
    aur__journal_close(j);

    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 1);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM sqlite_master WHERE "
                             "type = 'table' AND name IN ('world_commits',"
                             "'world_commit_scopes','world_commit_bases',"
                             "'schema_meta')"),
                     4);
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* reopening an existing journal keeps it */
    j = open_ok();
    ck_assert_int_eq(aur__journal_count(j), 0);
    aur__journal_close(j);
    aur__journal_close(NULL);
}
END_TEST

START_TEST(output_shape)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    struct tc t;
    struct aur_error err;
    int64_t seq = 0;
    int ins = 0;

    mk(&t, "mcp:org.example.qq:event:e-1", "hello", "qq:group:1,aurora:mcp:q",
       "{\"event_id\":\"e-1\",\"url\":\"a/b\",\"n\":[1,2.5,null,true]}");
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(seq, 1);
    ck_assert_int_eq(ins, 1);
    unmk(&t);

    mk(&t, "c2", "second", "x", NULL);
    t.c.occurred_at = "2024-02-29t23:59:59.5z";
    ck_assert_int_eq(append(j, &t, &seq, NULL, &err), AUR_OK);
    ck_assert_int_eq(seq, 2);
    mk(&t, "c3", "third", "x", NULL);
    t.c.occurred_at = "2026-01-01T00:00:00.000000000Z";
    ck_assert_int_eq(append(j, &t, NULL, NULL, &err), AUR_OK);

    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_str_eq(l.v[0],
                     "{\"seq\":1,"
                     "\"commit_id\":\"mcp:org.example.qq:event:e-1\","
                     "\"kind\":\"mcp.event.received\","
                     "\"source\":\"mcp:org.example.qq\",\"summary\":\"hello\","
                     "\"occurred_at\":\"2026-12-02T07:00:00Z\","
                     "\"scopes\":{\"aurora:mcp:q\":1,\"qq:group:1\":1},"
                     "\"data\":{\"event_id\":\"e-1\",\"url\":\"a/b\","
                     "\"n\":[1,2.5,null,true]}}");
    ck_assert_ptr_nonnull(
        strstr(l.v[1], "\"occurred_at\":\"2024-02-29T23:59:59.500000Z\""));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"data\":{}"));
    ck_assert_ptr_nonnull(
        strstr(l.v[2], "\"occurred_at\":\"2026-01-01T00:00:00Z\""));
    lines_free(&l);
    aur__journal_close(j);
}
END_TEST

START_TEST(occurred_at_now)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    struct tc t;
    struct aur_error err;
    struct json_object *o;
    char before[32], after[32];
    const char *at;
    struct timespec now;
    struct tm tm;

    /* time() reads a coarse clock that may lag the journal's */
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(before, sizeof before, "%Y-%m-%dT%H:%M:%S", &tm);
    mk(&t, "c1", "s", "x", "{}");
    t.c.occurred_at = NULL;
    ck_assert_int_eq(append(j, &t, NULL, NULL, &err), AUR_OK);
    unmk(&t);
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(after, sizeof after, "%Y-%m-%dT%H:%M:%S", &tm);

    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 1);
    o = json_tokener_parse(l.v[0]);
    at = json_object_get_string(json_object_object_get(o, "occurred_at"));
    ck_assert_uint_ge(strlen(at), 20);
    ck_assert_int_eq(at[strlen(at) - 1], 'Z');
    ck_assert_msg(strncmp(at, before, 19) >= 0 && strncmp(at, after, 19) <= 0,
                  "%s not in [%s, %s]", at, before, after);
    json_object_put(o);
    lines_free(&l);
    aur__journal_close(j);
}
END_TEST

/* The scopes object of visited line i, as text. */
static const char *scopes_of(struct lines *l, size_t i, char *buf,
                             size_t size)
{
    struct json_object *o = json_tokener_parse(l->v[i]);
    snprintf(buf, size, "%s",
             json_object_to_json_string_ext(
                 json_object_object_get(o, "scopes"), JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return buf;
}

START_TEST(per_scope_sequences)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    char b[128];

    append_ok(j, "c1", "A", NULL);
    append_ok(j, "c2", "B", NULL);
    append_ok(j, "c3", "B,A", NULL);
    append_ok(j, "c4", "A", NULL);
    append_ok(j, "c5", "B", NULL);
    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 5);
    ck_assert_str_eq(scopes_of(&l, 0, b, sizeof b), "{\"A\":1}");
    ck_assert_str_eq(scopes_of(&l, 1, b, sizeof b), "{\"B\":1}");
    ck_assert_str_eq(scopes_of(&l, 2, b, sizeof b), "{\"A\":2,\"B\":2}");
    ck_assert_str_eq(scopes_of(&l, 3, b, sizeof b), "{\"A\":3}");
    ck_assert_str_eq(scopes_of(&l, 4, b, sizeof b), "{\"B\":3}");
    ck_assert_ptr_nonnull(strstr(l.v[4], "\"seq\":5,"));
    lines_free(&l);
    aur__journal_close(j);
}
END_TEST

START_TEST(duplicate_scopes_collapse)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    char b[128];

    append_ok(j, "c1", "x,y,x,x", NULL);
    append_ok(j, "c2", "y", NULL);
    each_ok(j, 0, NULL, &l);
    ck_assert_str_eq(scopes_of(&l, 0, b, sizeof b), "{\"x\":1,\"y\":1}");
    ck_assert_str_eq(scopes_of(&l, 1, b, sizeof b), "{\"y\":2}");
    lines_free(&l);
    aur__journal_close(j);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"), 3);
}
END_TEST

START_TEST(idempotent_same_content)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    struct tc t;
    struct aur_error err;
    int64_t seq = 0;
    int ins = -1;

    append_ok(j, "c0", "s", NULL);
    mk(&t, "c1", "summary", "b,a", "{\"x\":1,\"y\":{\"z\":[1,2]}}");
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(seq, 2);
    unmk(&t);

    /* other time, other scope order with a duplicate, other key order */
    mk(&t, "c1", "summary", "a,b,a", "{\"y\":{\"z\":[1,2]},\"x\":1}");
    t.c.occurred_at = "2030-01-01T00:00:00Z";
    seq = 0;
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(ins, 0);
    ck_assert_int_eq(seq, 2);
    unmk(&t);
    ck_assert_int_eq(aur__journal_count(j), 2);

    /* NULL data is the same as {} */
    mk(&t, "c0", "summary", "s", "{}");
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(ins, 0);
    ck_assert_int_eq(seq, 1);
    unmk(&t);

    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_ptr_nonnull(
        strstr(l.v[1], "\"occurred_at\":\"2026-12-02T07:00:00Z\""));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"scopes\":{\"a\":1,\"b\":1}"));
    lines_free(&l);
    aur__journal_close(j);
}
END_TEST

START_TEST(conflict_writes_nothing)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};
    struct tc t;
    struct aur_error err;
    int ins = 7, i;
    char *before;

    mk(&t, "mcp:p:event:e1", "summary", "a,b", "{\"v\":1}");
    ck_assert_int_eq(append(j, &t, NULL, NULL, &err), AUR_OK);
    unmk(&t);
    each_ok(j, 0, NULL, &l);
    before = strdup(l.v[0]);
    lines_free(&l);

    for (i = 0; i < 7; i++) {
        mk(&t, "mcp:p:event:e1", "summary", "a,b", "{\"v\":1}");
        switch (i) {
        case 0: t.c.summary = "other summary"; break;
        case 1: unmk(&t); t.c.data = json_tokener_parse("{\"v\":2}"); break;
        case 2: unmk(&t); t.c.data = json_tokener_parse("{\"v\":\"1\"}"); break;
        case 3: t.c.n_scopes = 1; break;
        case 4: t.scopes[2] = "c"; t.c.n_scopes = 3; break;
        case 5: t.c.kind = "mcp.other"; break;
        case 6: t.c.source = "mcp:q"; break;
        }
        ck_assert_int_eq(append(j, &t, NULL, &ins, &err), AUR_E_CONFLICT);
        ck_assert_int_eq(err.code, AUR_E_CONFLICT);
        ck_assert_ptr_nonnull(strstr(err.msg, "mcp:p:event:e1"));
        ck_assert_int_eq(ins, 7); /* untouched on failure */
        unmk(&t);
    }
    ck_assert_int_eq(aur__journal_count(j), 1);
    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.v[0], before);
    lines_free(&l);
    free(before);
    aur__journal_close(j);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes"), 2);
    ck_assert_int_eq(sql_int("SELECT COUNT(*) FROM world_commit_scopes "
                             "WHERE scope = 'c'"),
                     0);
}
END_TEST

START_TEST(filter_after_and_scope)
{
    struct aur__journal *j = open_ok();
    struct lines l = {0};

    append_ok(j, "c1", "A", NULL);
    append_ok(j, "c2", "B", NULL);
    append_ok(j, "c3", "A,B", NULL);
    append_ok(j, "c4", "A", NULL);
    append_ok(j, "c5", "B", NULL);

    each_ok(j, 2, NULL, &l);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_ptr_nonnull(strstr(l.v[0], "\"commit_id\":\"c3\""));
    ck_assert_ptr_nonnull(strstr(l.v[2], "\"commit_id\":\"c5\""));
    lines_free(&l);

    each_ok(j, 0, "B", &l);
    ck_assert_uint_eq(l.n, 3);
    ck_assert_ptr_nonnull(strstr(l.v[0], "\"commit_id\":\"c2\""));
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"commit_id\":\"c3\""));
    ck_assert_ptr_nonnull(strstr(l.v[2], "\"commit_id\":\"c5\""));
    /* the scope filter selects commits, not scopes: c3 shows both */
    ck_assert_ptr_nonnull(strstr(l.v[1], "\"scopes\":{\"A\":2,\"B\":2}"));
    lines_free(&l);

    each_ok(j, 3, "A", &l);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_ptr_nonnull(strstr(l.v[0], "\"commit_id\":\"c4\""));
    lines_free(&l);

    each_ok(j, 0, "nope", &l);
    ck_assert_uint_eq(l.n, 0);
    each_ok(j, 5, NULL, &l);
    ck_assert_uint_eq(l.n, 0);

    /* a non-zero return stops the walk */
    l.stop_after = 2;
    each_ok(j, 0, NULL, &l);
    ck_assert_uint_eq(l.n, 2);
    lines_free(&l);
    aur__journal_close(j);
}
END_TEST

struct appender {
    struct aur__journal *j;
    int calls;
};

static int append_during_walk(void *ud, struct json_object *o)
{
    struct appender *a = ud;
    char id[32];
    (void)o;
    snprintf(id, sizeof id, "late-%d", a->calls++);
    append_ok(a->j, id, "A", NULL);
    return 0;
}

START_TEST(walk_pages_and_callback_may_append)
{
    struct aur__journal *j = open_ok();
    struct aur_error err;
    struct appender a = {j, 0};
    char id[32];
    int i;

    /* more than one page */
    for (i = 0; i < 600; i++) {
        snprintf(id, sizeof id, "c%d", i);
        append_ok(j, id, i % 2 ? "A" : "B", NULL);
    }
    ck_assert_int_eq(aur__journal_each(j, 0, NULL, append_during_walk, &a,
                                       &err),
                     AUR_OK);
    ck_assert_int_eq(a.calls, 600);
    ck_assert_int_eq(aur__journal_count(j), 1200);
    aur__journal_close(j);
}
END_TEST

START_TEST(persists_across_reopen)
{
    struct aur__journal *j = open_ok();
    struct tc t;
    struct aur_error err;
    int64_t seq = 0;
    int ins = -1;

    append_ok(j, "mcp:p:event:e1", "a,b", "{\"k\":[1]}");
    append_ok(j, "mcp:p:event:e2", "a", NULL);
    aur__journal_close(j);

    j = open_ok();
    ck_assert_int_eq(aur__journal_count(j), 2);
    mk(&t, "mcp:p:event:e1", "summary", "b,a", "{\"k\":[1]}");
    t.c.occurred_at = "2027-01-01T00:00:00Z";
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(ins, 0);
    ck_assert_int_eq(seq, 1);
    unmk(&t);
    mk(&t, "mcp:p:event:e1", "summary", "b,a", "{\"k\":[2]}");
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_E_CONFLICT);
    unmk(&t);
    /* sequences continue after a restart */
    mk(&t, "mcp:p:event:e3", "summary", "a", NULL);
    ck_assert_int_eq(append(j, &t, &seq, &ins, &err), AUR_OK);
    ck_assert_int_eq(ins, 1);
    ck_assert_int_eq(seq, 3);
    ck_assert_int_eq(aur__journal_count(j), 3);
    aur__journal_close(j);
    ck_assert_int_eq(sql_int("SELECT sequence FROM world_commit_scopes "
                             "WHERE commit_seq = 3 AND scope = 'a'"),
                     3);
}
END_TEST

START_TEST(newer_schema_refused)
{
    struct aur__journal *j = open_ok();
    struct aur_error err;
    aur__journal_close(j);
    sql_exec("UPDATE schema_meta SET version = 99");
    j = (struct aur__journal *)&err; /* must be reset to NULL */
    ck_assert_int_eq(aur__journal_open(dbpath, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(err.code, AUR_E_JOURNAL);
    ck_assert_str_eq(err.msg, "journal schema version 99 is newer than "
                              "supported (1)");
    /* the file is left as it was */
    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 99);
}
END_TEST

START_TEST(foreign_files_refused)
{
    struct aur__journal *j = NULL;
    struct aur_error err;
    char p[300];
    FILE *f;
    sqlite3 *db;

    /* not SQLite at all */
    snprintf(p, sizeof p, "%s/garbage.sqlite3", tmpdir);
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not a database file. ", f);
    fclose(f);
    ck_assert_int_eq(aur__journal_open(p, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);
    ck_assert_ptr_nonnull(strstr(err.msg, p));

    /* SQLite, but with a world_commits table of another shape */
    snprintf(p, sizeof p, "%s/other.sqlite3", tmpdir);
    ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE world_commits(x)", NULL,
                                  NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(aur__journal_open(p, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, p));

    /* a parent that is a file */
    snprintf(p, sizeof p, "%s/garbage.sqlite3/sub/world.sqlite3", tmpdir);
    ck_assert_int_eq(aur__journal_open(p, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);

    ck_assert_int_eq(aur__journal_open("", &j, &err), AUR_E_INVAL);
    ck_assert_int_eq(aur__journal_open(NULL, &j, &err), AUR_E_INVAL);
}
END_TEST

START_TEST(invalid_commits_rejected)
{
    struct aur__journal *j = open_ok();
    struct tc t;
    struct aur_error err;
    struct json_object *deep, *cur;
    int i, n = 0;
    static const char *const bad_times[] = {
        "2026-12-02T07:00:00",       "2026-12-02T07:00:00+08:00",
        "2026-12-02 07:00:00Z",      "2026-02-30T00:00:00Z",
        "2025-02-29T00:00:00Z",      "2026-13-01T00:00:00Z",
        "2026-12-02T24:00:00Z",      "2026-12-02T07:60:00Z",
        "2026-12-02T07:00:60Z",      "2026-12-02T07:00:00.Z",
        "2026-12-02T07:00:00.1234567891Z", "0000-01-01T00:00:00Z",
        "2026-12-02T07:00:00Zjunk",  "1764658800",
        "",                          "26-12-02T07:00:00Z",
    };

    for (i = 0;; i++) {
        mk(&t, "c1", "summary", "a", "{}");
        switch (i) {
        case 0: t.c.commit_id = ""; break;
        case 1: t.c.commit_id = " \t"; break;
        case 2: t.c.commit_id = NULL; break;
        case 3: t.c.kind = ""; break;
        case 4: t.c.kind = NULL; break;
        case 5: t.c.source = "  "; break;
        case 6: t.c.summary = "\n"; break;
        case 7: t.c.summary = NULL; break;
        case 8: t.c.n_scopes = 0; break;
        case 9: t.c.scopes = NULL; break;
        case 10: t.scopes[1] = " "; t.c.n_scopes = 2; break;
        case 11: t.scopes[0] = NULL; break;
        case 12: unmk(&t); t.c.data = json_tokener_parse("[1]"); break;
        case 13: unmk(&t); t.c.data = json_object_new_string("x"); break;
        case 14:
            json_object_object_add(t.c.data, "nan",
                                   json_object_new_double(NAN));
            break;
        case 15:
            json_object_object_add(t.c.data, "inf",
                                   json_object_new_double(INFINITY));
            break;
        case 16:
            cur = t.c.data;
            for (int d = 0; d < 200; d++) {
                deep = json_object_new_array();
                json_object_array_add(deep, NULL);
                json_object_object_add(cur, "d", deep);
                cur = json_object_new_object();
                json_object_array_put_idx(deep, 0, cur);
            }
            break;
        default:
            if ((size_t)(i - 17) >= AUR__ARRAY_LEN(bad_times))
                goto done;
            t.c.occurred_at = bad_times[i - 17];
        }
        ck_assert_msg(append(j, &t, NULL, NULL, &err) == AUR_E_INVAL,
                      "case %d accepted", i);
        ck_assert_int_eq(err.code, AUR_E_INVAL);
        unmk(&t);
        n++;
    }
done:
    unmk(&t);
    ck_assert_int_eq(n, 17 + (int)AUR__ARRAY_LEN(bad_times));
    ck_assert_int_eq(aur__journal_count(j), 0);
    ck_assert_int_eq(aur__journal_append(j, NULL, NULL, NULL, &err),
                     AUR_E_INVAL);
    ck_assert_int_eq(aur__journal_append(NULL, &t.c, NULL, NULL, &err),
                     AUR_E_INVAL);

    /* the limits themselves are fine: 9 fraction digits, deep-ish data */
    mk(&t, "ok", "summary", "a", "{\"a\":[[[[{\"b\":[]}]]]]}");
    t.c.occurred_at = "2026-12-02T07:00:00.123456789Z";
    ck_assert_int_eq(append(j, &t, NULL, NULL, &err), AUR_OK);
    unmk(&t);
    ck_assert_int_eq(aur__journal_count(j), 1);
    aur__journal_close(j);
}
END_TEST

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
    mk(&t[3], "bad", "", "a", NULL);
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
    sql_exec("CREATE TRIGGER boom BEFORE INSERT ON world_commit_scopes"
             " WHEN NEW.scope = 'boom' BEGIN"
             " SELECT RAISE(ABORT, 'injected failure'); END");
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
    sql_exec("DROP TRIGGER boom");
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
                             " GROUP BY scope) WHERE n = d AND lo = 1"
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

/* A loose floor that catches a lost statement cache or a per-call fsync,
 * low enough for sanitizer builds. */

static Suite *journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc;

    tc = tcase_create("open");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, open_creates_nested);
    tcase_add_test(tc, newer_schema_refused);
    tcase_add_test(tc, foreign_files_refused);
    tcase_add_test(tc, persists_across_reopen);
    suite_add_tcase(s, tc);

    tc = tcase_create("append");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, output_shape);
    tcase_add_test(tc, occurred_at_now);
    tcase_add_test(tc, per_scope_sequences);
    tcase_add_test(tc, duplicate_scopes_collapse);
    tcase_add_test(tc, invalid_commits_rejected);
    suite_add_tcase(s, tc);

    tc = tcase_create("idempotency");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, idempotent_same_content);
    tcase_add_test(tc, conflict_writes_nothing);
    tcase_add_test(tc, batch_mixed);
    tcase_add_test(tc, batch_storage_failure_undoes_all);
    tcase_add_test(tc, batch_large_sequences_dense);
    suite_add_tcase(s, tc);

    tc = tcase_create("read");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, filter_after_and_scope);
    tcase_add_test(tc, walk_pages_and_callback_may_append);
    suite_add_tcase(s, tc);

    tc = tcase_create("concurrency");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, concurrent_writers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return aur_check_main(journal_suite(), NULL); }
