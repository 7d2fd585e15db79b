/*
 * check_journal.c - the world journal (README: The world journal; the
 * objects of docs/aurora-mcp.1): schema, per-scope sequences, idempotency by
 * commit_id, filtering and persistence.  Batches and concurrent writers
 * are in check_journal_batch.c, the fixture in journal_fixture.c (one
 * binary).
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

#include "journal_commit.h" /* AUR__JOURNAL_MAX_DEPTH */
#include "journal_fixture.h"

Suite *journal_batch_suite(void);
TCase *journal_migrate_tcase(void); /* check_journal_sqlite_schema.c */
TCase *journal_prime_tcase(void);   /* check_journal_sqlite_prime.c */

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

    ck_assert_int_eq(sql_int("SELECT version FROM schema_meta"), 3);
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

    /* the file and its WAL are its owner's alone */
    ck_assert_int_eq(stat(dbpath, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0077, 0);

    /* reopening an existing journal keeps it */
    j = open_ok();
    ck_assert_int_eq(aur__journal_count(j), 0);
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", dbpath);
    if (stat(wal, &sb) == 0)
        ck_assert_int_eq(sb.st_mode & 0077, 0);
    aur__journal_close(j);
    aur__journal_close(NULL);
}
END_TEST

/* A journal path that is a symlink is refused, not followed. */
START_TEST(symlinked_journal_refused)
{
    struct aur__journal *j = NULL;
    struct aur_error err;
    char target[300];

    j = open_ok();
    aur__journal_close(j);
    snprintf(target, sizeof target, "%s.real", dbpath);
    ck_assert_int_eq(rename(dbpath, target), 0);
    ck_assert_int_eq(symlink(target, dbpath), 0);
    ck_assert_int_eq(aur__journal_open(dbpath, NULL, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);
    ck_assert_msg(strstr(err.msg, "symlink"), "%s", err.msg);
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
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE %s SET version = 99", schema_table());
    sql_exec(sql);
    j = (struct aur__journal *)&err; /* must be reset to NULL */
    ck_assert_int_eq(aur__journal_open(dbpath, NULL, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(err.code, AUR_E_JOURNAL);
    /* (PostgreSQL adds which database); the SQLite file is at v3 */
    snprintf(sql, sizeof sql,
             "journal schema version 99 is newer than supported (%d)",
             on_pg() ? 1 : 3);
    ck_assert_msg(strncmp(err.msg, sql, strlen(sql)) == 0, "%s", err.msg);
    /* the database is left as it was */
    snprintf(sql, sizeof sql, "SELECT version FROM %s", schema_table());
    ck_assert_int_eq(sql_int(sql), 99);
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
    ck_assert_int_eq(aur__journal_open(p, NULL, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);
    ck_assert_ptr_nonnull(strstr(err.msg, p));

    /* SQLite, but with a world_commits table of another shape */
    snprintf(p, sizeof p, "%s/other.sqlite3", tmpdir);
    ck_assert_int_eq(sqlite3_open(p, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE world_commits(x)", NULL,
                                  NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(aur__journal_open(p, NULL, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, p));

    /* a parent that is a file */
    snprintf(p, sizeof p, "%s/garbage.sqlite3/sub/world.sqlite3", tmpdir);
    ck_assert_int_eq(aur__journal_open(p, NULL, &j, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(j);

    ck_assert_int_eq(aur__journal_open("", NULL, &j, &err), AUR_E_INVAL);
    ck_assert_int_eq(aur__journal_open(NULL, NULL, &j, &err), AUR_E_INVAL);
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
        /* not UTF-8: PostgreSQL would refuse the whole batch, so the
         * front refuses the one commit, on every backend */
        case 17: t.c.commit_id = "id\xff"; break;
        case 18: t.c.kind = "k\xc3("; break;
        case 19: t.c.source = "s\xed\xa0\x80"; break; /* a surrogate */
        case 20: t.c.summary = "\xc0\xaf"; break;     /* overlong */
        case 21: t.scopes[0] = "scope\xf4\x90\x80\x80"; break;
        /* first in a word after a word of ASCII; a lone 0x80 at the end */
        case 22: t.c.summary = "eight ok\xff" "1234567"; break;
        case 23: t.c.kind = "kind\x80"; break;
        default:
            if ((size_t)(i - 24) >= AUR__ARRAY_LEN(bad_times))
                goto done;
            t.c.occurred_at = bad_times[i - 24];
        }
        ck_assert_msg(append(j, &t, NULL, NULL, &err) == AUR_E_INVAL,
                      "case %d accepted", i);
        ck_assert_int_eq(err.code, AUR_E_INVAL);
        unmk(&t);
        n++;
    }
done:
    unmk(&t);
    ck_assert_int_eq(n, 24 + (int)AUR__ARRAY_LEN(bad_times));
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

    /* nesting to the limit and one past it (the top object is level 1;
     * the limit is what the docs and the refusal say, "nesting <= 128");
     * brackets, NaN and Infinity inside strings are only text */
    for (int levels = AUR__JOURNAL_MAX_DEPTH;
         levels <= AUR__JOURNAL_MAX_DEPTH + 1; levels++) {
        mk(&t, levels <= AUR__JOURNAL_MAX_DEPTH ? "deep" : "deeper",
           "summary", "a",
           "{\"s\":\"[[{{ NaN Infinity \\\" ]]\",\"u\":\"\\\\\","
           "\"v\":\"\xc3\xa9[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\n\",\"NaN\":-1e308}");
        cur = json_object_new_array();
        json_object_object_add(t.c.data, "d", cur);
        for (int d = 3; d <= levels; d++) {
            deep = json_object_new_array();
            json_object_array_add(cur, deep);
            cur = deep;
        }
        ck_assert_int_eq(append(j, &t, NULL, NULL, &err),
                         levels <= AUR__JOURNAL_MAX_DEPTH ? AUR_OK
                                                          : AUR_E_INVAL);
        unmk(&t);
    }
    ck_assert_int_eq(aur__journal_count(j), 2);
    aur__journal_close(j);
}
END_TEST

static Suite *journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc;

    tc = tcase_create("open");
    tcase_add_checked_fixture(tc, setup, teardown);
    if (!on_pg()) { /* the file's own rules; journal_pg.c has the server's */
        tcase_add_test(tc, open_creates_nested);
        tcase_add_test(tc, symlinked_journal_refused);
        tcase_add_test(tc, foreign_files_refused);
    }
    tcase_add_test(tc, newer_schema_refused);
    tcase_add_test(tc, persists_across_reopen);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, journal_migrate_tcase());
    suite_add_tcase(s, journal_prime_tcase());

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
    suite_add_tcase(s, tc);

    tc = tcase_create("read");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, filter_after_and_scope);
    tcase_add_test(tc, walk_pages_and_callback_may_append);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return aur_check_main(journal_suite(), journal_batch_suite());
}
