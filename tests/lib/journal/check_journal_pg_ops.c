/*
 * check_journal_pg_ops.c - the PostgreSQL journal backend through its ops
 * table (lib/journal/journal_backend.h), loaded as the core loads it
 * (dlopen of journal-postgresql.so), against a throwaway server started
 * once by tests/support/pg.sh (TLS on, password required over TCP).
 *
 * Open and migrate (twice, racing, a newer schema, foreign databases),
 * append (new, duplicate, conflict, repeats inside a batch, key order,
 * characters that need escaping, a server error part way), per-scope and
 * global sequences, read pages and filters, wait, four writers on one
 * database, a server restart and a stop under load, TLS and passwords,
 * and the least privileges a role needs.  Each test has a database of its
 * own.  Timings are printed, never asserted (but for generous bounds).
 */
#include "aur_setup.h"

#include "support/check_main.h"
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <json-c/json.h>

#include "pg_ops_fixture.h"

/* ------------------------------------------------------------------ */
/* Open and the schema                                                */
/* ------------------------------------------------------------------ */

START_TEST(open_migrates_once)
{
    struct aur__jstate st;
    struct aur_error err;
    char uri[256], want[128];
    void *h;

    fresh_db("t_open", "", uri, sizeof uri);
    h = open_ok(uri, 1000);
    memset(&st, 0, sizeof st);
    ops->state(h, &st);
    ck_assert_str_eq(st.backend, "postgresql");
    ck_assert_str_eq(st.state, "connected");
    fmt(want, sizeof want, "%s/t_open", g_hostport);
    ck_assert_str_eq(st.target, want);
    ck_assert_str_eq(st.last_error, "");
    ck_assert_int_eq(st.reconnects, 0);
    ck_assert_int_eq(st.down_ms, 0);
    ck_assert_int_eq(head_of(h), 0);
    ck_assert_int_eq(ops->count(h), 0);
    ops->close(h);

    /* again: nothing to do, nothing changed */
    h = open_ok(uri, 1000);
    ck_assert_int_eq(ops->count(h), 0);
    ops->close(h);
    ck_assert_int_eq(psql_int("t_open", "SELECT version FROM aurora_schema"),
                     1);
    ck_assert_int_eq(psql_int("t_open", "SELECT count(*) FROM aurora_schema"),
                     1);
    ck_assert_int_eq(psql_int("t_open", "SELECT seq FROM world_head"), 0);
    ck_assert_int_eq(psql_int("t_open",
                              "SELECT count(*) FROM pg_tables WHERE"
                              " schemaname = 'public' AND tablename IN"
                              " ('aurora_schema', 'world_head',"
                              " 'world_commits', 'world_commit_scopes',"
                              " 'world_commit_bases')"),
                     5);

    /* the URI's options set search_path: the tables go there */
    psql("postgres", NULL, 0, "CREATE DATABASE t_schema OWNER aurora");
    psql("t_schema", NULL, 0, "CREATE SCHEMA journal AUTHORIZATION aurora");
    fmt(uri, sizeof uri, "%s/t_schema?options=-csearch_path%%3Djournal",
        g_base);
    h = open_ok(uri, 1000);
    {
        struct trow t;
        int res;
        int64_t seq;
        mk(&t, "in-schema", "summary", "a", NULL);
        append_ok(h, &t, 1, &res, &seq);
    }
    ops->close(h);
    ck_assert_int_eq(psql_int("t_schema",
                              "SELECT count(*) FROM pg_tables WHERE"
                              " schemaname = 'journal'"),
                     5);
    ck_assert_int_eq(psql_int("t_schema",
                              "SELECT count(*) FROM journal.world_commits"),
                     1);

    /* not a URI; a port nobody listens on (named, never the password) */
    ck_assert_int_eq(open_h("/tmp/x.db", PW, 1000, &h, &err), AUR_E_INVAL);
    snprintf(uri, sizeof uri, "postgresql://aurora@127.0.0.1:1/t_open");
    ck_assert_int_eq(open_h(uri, PW, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(h);
    ck_assert_ptr_nonnull(strstr(err.msg, "127.0.0.1:1/t_open"));
    ck_assert_ptr_null(strstr(err.msg, PW));
}
END_TEST

struct racer {
    const char *uri;
    pthread_barrier_t *go;
    int rc;
    char msg[256];
};

static void *race_open(void *arg)
{
    struct racer *r = arg;
    struct aur_error err;
    void *h;
    pthread_barrier_wait(r->go);
    r->rc = open_h(r->uri, PW, 1000, &h, &err);
    snprintf(r->msg, sizeof r->msg, "%s", err.msg);
    if (r->rc == AUR_OK)
        ops->close(h);
    return NULL;
}

/* Four hosts opening a fresh database at once: one migrates, the others
 * wait on the advisory lock and find it done. */
START_TEST(open_race)
{
    struct racer r[4];
    pthread_t t[4];
    pthread_barrier_t go;
    char uri[256];
    int i;

    fresh_db("t_race", "", uri, sizeof uri);
    pthread_barrier_init(&go, NULL, 4);
    for (i = 0; i < 4; i++) {
        r[i] = (struct racer){uri, &go, -99, ""};
        ck_assert_int_eq(pthread_create(&t[i], NULL, race_open, &r[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(r[i].rc == AUR_OK, "open %d: %s", i, r[i].msg);
    }
    pthread_barrier_destroy(&go);
    ck_assert_int_eq(psql_int("t_race", "SELECT version FROM aurora_schema"),
                     1);
    ck_assert_int_eq(psql_int("t_race", "SELECT count(*) FROM world_head"), 1);
}
END_TEST

START_TEST(newer_schema_refused)
{
    struct aur_error err;
    char uri[256];
    void *h = open_ok((fresh_db("t_newer", "", uri, sizeof uri), uri), 1000);
    ops->close(h);
    psql("t_newer", NULL, 0, "UPDATE aurora_schema SET version = 99");
    ck_assert_int_eq(open_h(uri, PW, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "journal schema version 99 is newer than "
                                  "supported (1)") != NULL,
                  "%s", err.msg);
    ck_assert_ptr_null(h);
    /* and it was left as it was */
    ck_assert_int_eq(psql_int("t_newer", "SELECT version FROM aurora_schema"),
                     99);
}
END_TEST

START_TEST(foreign_refused)
{
    struct aur_error err;
    char uri[256];
    void *h;

    /* world_commits without aurora_schema: someone else's table */
    fresh_db("t_foreign", "", uri, sizeof uri);
    psql("t_foreign", NULL, 0, "CREATE TABLE world_commits(x int)");
    ck_assert_int_eq(open_h(uri, PW, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "not an aurora-mcp journal"), "%s",
                  err.msg);
    ck_assert_int_eq(psql_int("t_foreign", "SELECT count(*) FROM pg_tables"
                                           " WHERE schemaname = 'public'"),
                     1);

    /* not UTF8 */
    psql("postgres", NULL, 0,
         "CREATE DATABASE t_ascii OWNER aurora ENCODING 'SQL_ASCII'"
         " TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'");
    fmt(uri, sizeof uri, "%s/t_ascii", g_base);
    ck_assert_int_eq(open_h(uri, PW, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "not UTF8"), "%s", err.msg);

    /* another of our names taken: the migration fails and is undone */
    fresh_db("t_foreign2", "", uri, sizeof uri);
    psql("t_foreign2", NULL, 0, "CREATE TABLE world_commit_bases(x int)");
    ck_assert_int_eq(open_h(uri, PW, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "already exists"), "%s", err.msg);
    ck_assert_int_eq(psql_int("t_foreign2", "SELECT count(*) FROM pg_tables"
                                            " WHERE schemaname = 'public'"),
                     1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Append                                                             */
/* ------------------------------------------------------------------ */

START_TEST(append_semantics)
{
    struct trow t[12];
    struct coll co = {0};
    int res[12];
    int64_t seqs[12];
    char uri[256];
    void *h = open_ok((fresh_db("t_append", "", uri, sizeof uri), uri), 1000);
    /* everything an array literal must escape */
    static const char weird_id[] = "we\"ird\\,{id} NULL ,\"\\\" \xc3\xa9";
    static const char weird_scope[] = "s\"c\\o,p{e}";
    static const char weird_data[] =
        "{\"k\":\"q\\\"b\\\\s,{}NULL\",\"u\":\"\xe2\x82\xac\"}";

    mk(&t[0], "old", "summary", "a", "{\"v\":1}");
    append_ok(h, t, 1, res, seqs);
    ck_assert_int_eq(res[0], AUR_OK);
    ck_assert_int_eq(seqs[0], 1);

    mk(&t[0], "new1", "summary", "a,b", NULL);
    mk(&t[1], "old", "summary", "a", "{\"v\":1}");
    mk(&t[2], "old", "summary", "a", "{\"v\":2}");
    mk(&t[3], "new2", "summary", "b", NULL);
    mk(&t[4], "new1", "summary", "a,b", NULL);  /* repeat, same */
    mk(&t[5], "new1", "other", "a,b", NULL);    /* repeat, other summary */
    mk(&t[6], "old", "summary", "a", "{ \"v\" : 1 }"); /* same object */
    mk(&t[7], weird_id, "sum \"m\" \\ary", "x", weird_data);
    t[7].sc[0] = weird_scope; /* mk would split it at its comma */
    snprintf(t[7].kind, sizeof t[7].kind, "k{i}nd,\"NULL\"");
    mk(&t[8], "old", "summary", "a,b", "{\"v\":1}"); /* other scopes */
    mk(&t[9], "old", "summary", "a", "{\"v\":1}");
    snprintf(t[9].kind, sizeof t[9].kind, "other.kind");
    mk(&t[10], "new2", "summary", "b", "{\"x\":1}"); /* repeat, other data */
    mk(&t[11], "new3", "summary", "a,c", "{\"a\":1,\"b\":[1,2]}");
    append_ok(h, t, 12, res, seqs);
    {
        const int want[12] = {AUR_OK,         AUR_DECLINE,    AUR_E_CONFLICT,
                              AUR_OK,         AUR_DECLINE,    AUR_E_CONFLICT,
                              AUR_DECLINE,    AUR_OK,         AUR_E_CONFLICT,
                              AUR_E_CONFLICT, AUR_E_CONFLICT, AUR_OK};
        const int64_t wseq[12] = {2, 1, 0, 3, 2, 0, 1, 4, 0, 0, 0, 5};
        int i;
        for (i = 0; i < 12; i++) {
            ck_assert_msg(res[i] == want[i], "row %d: %d", i, res[i]);
            ck_assert_msg(seqs[i] == wseq[i], "row %d: seq %lld", i,
                          (long long)seqs[i]);
        }
    }
    /* the same object with its keys in another order is the same commit */
    mk(&t[0], "new3", "summary", "a,c", "{\"b\":[1,2],\"a\":1}");
    mk(&t[1], "new3", "summary", "a,c", "{\"b\":[2,1],\"a\":1}");
    append_ok(h, t, 2, res, seqs);
    ck_assert_int_eq(res[0], AUR_DECLINE);
    ck_assert_int_eq(seqs[0], 5);
    ck_assert_int_eq(res[1], AUR_E_CONFLICT);

    ck_assert_int_eq(ops->count(h), 5);
    ck_assert_int_eq(head_of(h), 5);
    read_all(h, NULL, &co);
    ck_assert_uint_eq(co.n, 5);
    ck_assert_str_eq(co.v[0].id, "old");
    ck_assert_str_eq(co.v[0].scopes, "a:1");
    ck_assert_str_eq(co.v[0].data, "{\"v\":1}");
    ck_assert_str_eq(co.v[1].id, "new1");
    ck_assert_str_eq(co.v[1].scopes, "a:2,b:1");
    ck_assert_str_eq(co.v[1].data, "{}");
    ck_assert_str_eq(co.v[2].scopes, "b:2");
    /* byte for byte through the array literals and back */
    ck_assert_str_eq(co.v[3].id, weird_id);
    ck_assert_str_eq(co.v[3].kind, "k{i}nd,\"NULL\"");
    ck_assert_str_eq(co.v[3].summary, "sum \"m\" \\ary");
    ck_assert_str_eq(co.v[3].data, weird_data);
    ck_assert_str_eq(co.v[3].source, "test");
    ck_assert_str_eq(co.v[3].at, "2026-01-02T03:04:05Z");
    {
        char want[64];
        snprintf(want, sizeof want, "%s:1", weird_scope);
        ck_assert_str_eq(co.v[3].scopes, want);
    }
    ck_assert_str_eq(co.v[4].scopes, "a:3,c:1");
    coll_free(&co);
    /* nothing of the conflicts was written */
    ck_assert_int_eq(psql_int("t_append", "SELECT count(*) FROM"
                                          " world_commit_scopes"),
                     7);
    ck_assert_int_eq(psql_int("t_append", "SELECT seq FROM world_head"), 5);
    ops->close(h);
}
END_TEST

/* A server error part way (a trigger on one scope) undoes the batch;
 * the session stays and the next batch continues the sequences. */
START_TEST(server_error_undoes_batch)
{
    struct trow t[4];
    struct coll co = {0};
    struct aur__jrow rows[4];
    struct aur__jstate st;
    struct aur_error err;
    int res[4], i;
    int64_t seqs[4];
    char uri[256];
    void *h = open_ok((fresh_db("t_err", "", uri, sizeof uri), uri), 1000);

    mk(&t[0], "before", "summary", "a", NULL);
    append_ok(h, t, 1, res, seqs);
    psql("t_err", NULL, 0,
         "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$"
         " BEGIN IF NEW.scope = 'boom' THEN RAISE EXCEPTION"
         " 'injected failure'; END IF; RETURN NEW; END $$;"
         " CREATE TRIGGER boom BEFORE INSERT ON world_commit_scopes"
         " FOR EACH ROW EXECUTE FUNCTION boom()");
    mk(&t[0], "new1", "summary", "a", NULL);
    mk(&t[1], "before", "summary", "a", NULL);
    mk(&t[2], "new2", "summary", "a,boom", NULL);
    mk(&t[3], "new3", "summary", "b", NULL);
    for (i = 0; i < 4; i++)
        rows[i] = t[i].r;
    ck_assert_int_eq(ops->append(h, rows, 4, res, seqs, &err), AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "injected failure"), "%s", err.msg);
    ops->state(h, &st);
    ck_assert_str_eq(st.state, "connected");
    ck_assert_int_eq(st.failures, 1);
    ck_assert_ptr_nonnull(strstr(st.last_error, "injected failure"));
    ck_assert_int_eq(ops->count(h), 1);
    ck_assert_int_eq(head_of(h), 1);

    psql("t_err", NULL, 0, "DROP TRIGGER boom ON world_commit_scopes");
    append_ok(h, t, 4, res, seqs);
    ck_assert_int_eq(res[0], AUR_OK);
    ck_assert_int_eq(res[1], AUR_DECLINE);
    ck_assert_int_eq(res[2], AUR_OK);
    ck_assert_int_eq(res[3], AUR_OK);
    read_all(h, NULL, &co);
    check_dense(&co, 4);
    ck_assert_str_eq(co.v[1].scopes, "a:2");
    ck_assert_str_eq(co.v[2].scopes, "a:3,boom:1");
    ck_assert_str_eq(co.v[3].scopes, "b:1");
    coll_free(&co);
    ops->close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Read and wait                                                      */
/* ------------------------------------------------------------------ */

START_TEST(read_pages)
{
    static struct trow t[32];
    struct coll co = {0};
    struct aur_error err;
    int res[32], i, k;
    int64_t seqs[32];
    size_t n;
    char uri[256], id[32];
    void *h = open_ok((fresh_db("t_read", "", uri, sizeof uri), uri), 1000);

    /* 640 commits: "all" on each, "even" on even ones */
    for (k = 0; k < 20; k++) {
        for (i = 0; i < 32; i++) {
            int x = k * 32 + i + 1;
            snprintf(id, sizeof id, "c%d", x);
            mk(&t[i], id, "summary", x % 2 ? "all" : "all,even", NULL);
        }
        append_ok(h, t, 32, res, seqs);
    }
    ck_assert_int_eq(head_of(h), 640);

    ck_assert_int_eq(ops->read(h, 0, 640, NULL, 10, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 10);
    ck_assert_int_eq(co.v[0].seq, 1);
    ck_assert_int_eq(co.v[9].seq, 10);
    ck_assert_str_eq(co.v[9].id, "c10");
    ck_assert_str_eq(co.v[9].scopes, "all:10,even:5");
    ck_assert_int_eq(ops->read(h, 10, 640, NULL, 10, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 10);
    ck_assert_int_eq(co.v[10].seq, 11);
    coll_free(&co);

    /* upto bounds the page; more than a page query's chunk at once */
    ck_assert_int_eq(ops->read(h, 0, 600, NULL, 100000, collect, &co, &n,
                               &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 600);
    ck_assert_int_eq(co.v[599].seq, 600);
    coll_free(&co);

    /* a scope */
    ck_assert_int_eq(ops->read(h, 0, 640, "even", 5, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 5);
    for (i = 0; i < 5; i++) {
        char want[32];
        ck_assert_int_eq(co.v[i].seq, 2 * (i + 1));
        snprintf(want, sizeof want, "all:%d,even:%d", 2 * (i + 1), i + 1);
        ck_assert_str_eq(co.v[i].scopes, want);
    }
    coll_free(&co);
    ck_assert_int_eq(ops->read(h, 0, 640, "nope", 5, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 0);
    read_all(h, "even", &co);
    ck_assert_uint_eq(co.n, 320);
    coll_free(&co);

    /* a callback that stops */
    co.stop_at = 3;
    ck_assert_int_eq(ops->read(h, 0, 640, NULL, 10, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(co.n, 3);
    coll_free(&co);

    /* nothing after the head, nothing for max 0 */
    ck_assert_int_eq(ops->read(h, 640, 640, NULL, 10, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(ops->read(h, 0, 640, NULL, 0, collect, &co, &n, &err),
                     AUR_OK);
    ck_assert_uint_eq(n, 0);
    read_all(h, NULL, &co);
    check_dense(&co, 640);
    coll_free(&co);
    ops->close(h);
}
END_TEST

struct later {
    void *h;
    int delay_ms;
};

static void *append_later(void *arg)
{
    struct later *l = arg;
    struct trow t;
    struct aur_error err;
    int res;
    int64_t seq;
    sleep_ms(l->delay_ms);
    mk(&t, "late", "summary", "a", NULL);
    ck_assert_int_eq(ops->append(l->h, &t.r, 1, &res, &seq, &err), AUR_OK);
    return NULL;
}

START_TEST(wait_for_notify)
{
    struct aur_error err;
    struct later l;
    pthread_t th;
    int64_t t0, dt;
    char uri[256];
    void *waiter = open_ok((fresh_db("t_wait", "", uri, sizeof uri), uri),
                           1000);
    void *writer = open_ok(uri, 1000);

    /* nothing happens: back after the timeout */
    t0 = now_ms();
    ck_assert_int_eq(ops->wait(waiter, 0, 300, &err), AUR_OK);
    dt = now_ms() - t0;
    ck_assert_int_ge(dt, 250);
    ck_assert_int_lt(dt, 5000);

    /* a commit by another handle wakes it long before the timeout */
    l = (struct later){writer, 300};
    ck_assert_int_eq(pthread_create(&th, NULL, append_later, &l), 0);
    t0 = now_ms();
    ck_assert_int_eq(ops->wait(waiter, 0, 20000, &err), AUR_OK);
    dt = now_ms() - t0;
    pthread_join(th, NULL);
    ck_assert_int_lt(dt, 15000);
    ck_assert_int_eq(head_of(waiter), 1);

    /* the head is already past: at once */
    t0 = now_ms();
    ck_assert_int_eq(ops->wait(waiter, 0, 20000, &err), AUR_OK);
    ck_assert_int_lt(now_ms() - t0, 5000);
    ops->close(writer);
    ops->close(waiter);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Many writers                                                       */
/* ------------------------------------------------------------------ */

#define N_IDS 10000

/* The rows every writer appends: id-NNNNN, two scopes, data by id. */
static struct aur__jrow corpus[N_IDS];
static char corpus_id[N_IDS][16], corpus_data[N_IDS][48];
static const char *corpus_sc[N_IDS][2];
static const char *const s_names[] = {"s0", "s1", "s2", "s3",
                                      "s4", "s5", "s6", "s7"};
static const char *const t_names[] = {"t0", "t1", "t2", "t3", "t4"};

static void corpus_init(const char *prefix)
{
    size_t i;
    for (i = 0; i < N_IDS; i++) {
        snprintf(corpus_id[i], sizeof corpus_id[i], "%s-%05zu", prefix, i);
        snprintf(corpus_data[i], sizeof corpus_data[i],
                 "{\"i\":%zu,\"text\":\"event number %zu\"}", i, i);
        corpus_sc[i][0] = s_names[i % 8];
        corpus_sc[i][1] = t_names[i % 5];
        corpus[i] = (struct aur__jrow){
            corpus_id[i], "thing.changed", "host",  "summary",
            "2026-01-02T03:04:05.123Z", corpus_data[i],
            strlen(corpus_data[i]), corpus_sc[i], 2};
    }
}

struct writer {
    const char *uri;
    void *h; /* opened by the caller, or NULL: the writer opens its own */
    unsigned seed;
    size_t n_list, max_batch;
    bool fixed; /* every batch max_batch rows (else 1..max_batch) */
    size_t *list; /* indexes into corpus, with repeats */
    int64_t *seq_of;
    size_t ok, other;
    int rc;
    char msg[256];
};

static void *writer_run(void *arg)
{
    struct writer *w = arg;
    struct aur__jrow *rows = malloc(1024 * sizeof *rows);
    int *res = malloc(1024 * sizeof *res);
    int64_t *seqs = malloc(1024 * sizeof *seqs);
    struct aur_error err;
    size_t i = 0, k;
    void *h = NULL;

    if (w->h)
        h = w->h, w->rc = AUR_OK;
    else
        w->rc = open_h(w->uri, PW, 30000, &h, &err);
    while (w->rc == AUR_OK && i < w->n_list) {
        size_t n = w->fixed ? w->max_batch
                            : 1 + (size_t)rand_r(&w->seed) % w->max_batch;
        if (n > w->n_list - i)
            n = w->n_list - i;
        for (k = 0; k < n; k++)
            rows[k] = corpus[w->list[i + k]];
        w->rc = ops->append(h, rows, n, res, seqs, &err);
        for (k = 0; w->rc == AUR_OK && k < n; k++) {
            size_t id = w->list[i + k];
            if (res[k] == AUR_OK)
                w->ok++;
            else if (res[k] != AUR_DECLINE)
                w->other++;
            /* the same id always reports the same seq */
            if (w->seq_of[id] && w->seq_of[id] != seqs[k])
                w->other++;
            w->seq_of[id] = seqs[k];
        }
        i += n;
    }
    snprintf(w->msg, sizeof w->msg, "%s", err.msg);
    if (h && !w->h)
        ops->close(h);
    free(rows), free(res), free(seqs);
    return NULL;
}

/* Four hosts append the same 10 000 ids, each with repeats and in its own
 * shuffled order and batch sizes: each id is committed once, seq and
 * every scope's sequences are dense, and exactly 10 000 appends say
 * AUR_OK over all of them. */
START_TEST(four_hosts_same_ids)
{
    struct writer w[4];
    pthread_t th[4];
    struct coll co = {0};
    char uri[256];
    size_t i, j, ok = 0;
    void *h;

    fresh_db("t_four", "", uri, sizeof uri);
    ops->close(open_ok(uri, 1000));
    corpus_init("id");
    for (i = 0; i < 4; i++) {
        w[i] = (struct writer){.uri = uri, .seed = 1234u + (unsigned)i,
                               .n_list = N_IDS + N_IDS / 4,
                               .max_batch = 1024};
        w[i].list = malloc(w[i].n_list * sizeof *w[i].list);
        w[i].seq_of = calloc(N_IDS, sizeof *w[i].seq_of);
        for (j = 0; j < w[i].n_list; j++)
            w[i].list[j] = j < N_IDS ? j : (size_t)rand_r(&w[i].seed) % N_IDS;
        for (j = w[i].n_list - 1; j > 0; j--) {
            size_t r = (size_t)rand_r(&w[i].seed) % (j + 1), x = w[i].list[j];
            w[i].list[j] = w[i].list[r];
            w[i].list[r] = x;
        }
    }
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, writer_run, &w[i]), 0);
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(w[i].rc == AUR_OK, "writer %zu: %s", i, w[i].msg);
        ck_assert_uint_eq(w[i].other, 0);
        ok += w[i].ok;
    }
    ck_assert_uint_eq(ok, N_IDS);

    h = open_ok(uri, 1000);
    ck_assert_int_eq(ops->count(h), N_IDS);
    read_all(h, NULL, &co);
    check_dense(&co, N_IDS);
    for (i = 0; i < co.n; i++) {
        size_t id = strtoul(co.v[i].id + 3, NULL, 10);
        ck_assert_str_eq(co.v[i].id, corpus_id[id]);
        for (j = 0; j < 4; j++)
            ck_assert_int_eq(w[j].seq_of[id], co.v[i].seq);
    }
    coll_free(&co);
    ops->close(h);
    for (i = 0; i < 4; i++)
        free(w[i].list), free(w[i].seq_of);
}
END_TEST

/* Rows per second with 1024-row batches of new commits with two scopes
 * each: one handle, then four at once (the "four hosts" case).
 * Printed, not asserted. */
static int64_t timed_writers(const char *uri, size_t nw)
{
    struct writer w[4];
    pthread_t th[4];
    size_t i, j, per = N_IDS / nw;
    int64_t t0;

    for (i = 0; i < nw; i++) {
        w[i] = (struct writer){.uri = uri, .h = open_ok(uri, 10000),
                               .n_list = per, .max_batch = 1024,
                               .fixed = true};
        w[i].list = malloc(per * sizeof *w[i].list);
        w[i].seq_of = calloc(N_IDS, sizeof *w[i].seq_of);
        for (j = 0; j < per; j++)
            w[i].list[j] = i * per + j;
    }
    t0 = now_ms();
    for (i = 0; i < nw; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, writer_run, &w[i]), 0);
    for (i = 0; i < nw; i++)
        pthread_join(th[i], NULL);
    t0 = now_ms() - t0;
    for (i = 0; i < nw; i++) {
        ck_assert_msg(w[i].rc == AUR_OK, "writer %zu: %s", i, w[i].msg);
        ck_assert_uint_eq(w[i].ok, per);
        ops->close(w[i].h);
        free(w[i].list), free(w[i].seq_of);
    }
    return t0;
}

START_TEST(throughput)
{
    struct coll co = {0};
    char uri[256];
    int64_t dt;
    size_t nw;
    void *h;

    fresh_db("t_perf", "", uri, sizeof uri);
    ops->close(open_ok(uri, 1000));
    for (nw = 1; nw <= 4; nw += 3) {
        corpus_init(nw == 1 ? "one" : "four");
        dt = timed_writers(uri, nw);
        printf("pg append: %d rows in %lld ms = %.0f rows/s (%zu handle%s at"
               " once, 1024-row batches, 2 scopes a row)\n",
               N_IDS, (long long)dt, N_IDS * 1000.0 / (double)(dt ? dt : 1),
               nw, nw > 1 ? "s" : "");
    }
    h = open_ok(uri, 1000);
    read_all(h, NULL, &co);
    check_dense(&co, 2 * N_IDS);
    coll_free(&co);
    ops->close(h);
}
END_TEST

static Suite *pg_suite(void)
{
    Suite *s = suite_create("journal_pg_ops");
    TCase *tc = tcase_create("pg");

    /* one server for the run, started in the runner's own process */
    tcase_add_unchecked_fixture(tc, server_up, server_down);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, open_migrates_once);
    tcase_add_test(tc, open_race);
    tcase_add_test(tc, newer_schema_refused);
    tcase_add_test(tc, foreign_refused);
    tcase_add_test(tc, append_semantics);
    tcase_add_test(tc, server_error_undoes_batch);
    tcase_add_test(tc, read_pages);
    tcase_add_test(tc, wait_for_notify);
    tcase_add_test(tc, four_hosts_same_ids);
    tcase_add_test(tc, throughput);
    pg_fault_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return aur_check_main(pg_suite(), NULL);
}
