/*
 * check_journal_pg_faults.c - the PostgreSQL backend on bad days, part of
 * check_journal_pg_ops (its fixture, pg_ops_fixture.h): a server restart
 * under a stream of batches, the server stopped past wait_ms and back,
 * TLS with the right and a wrong CA, passwords right, wrong and never
 * echoed, and the least privileges a role needs.
 */
#include "aur_setup.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "pg_ops_fixture.h"

/* ------------------------------------------------------------------ */
/* Faults                                                             */
/* ------------------------------------------------------------------ */

/* stop, batches and rc cross threads (atomics); the rest is read after
 * the join. */
struct pump {
    void *h;
    atomic_int stop;
    atomic_size_t batches;
    size_t ok, declined, other, rows;
    atomic_int rc;
    char msg[256];
};

/* Batches of 50 new ids until told to stop. */
static void *pump_run(void *arg)
{
    struct pump *p = arg;
    struct trow *t = malloc(50 * sizeof *t);
    struct aur__jrow rows[50];
    struct aur_error err;
    int res[50];
    int64_t seqs[50];
    char id[32];
    size_t k;

    while (!atomic_load(&p->stop)) {
        for (k = 0; k < 50; k++) {
            snprintf(id, sizeof id, "r-%zu", p->rows + k);
            mk(&t[k], id, "summary", k % 2 ? "a,b" : "b", NULL);
            rows[k] = t[k].r;
        }
        int rc = ops->append(p->h, rows, 50, res, seqs, &err);
        if (rc != AUR_OK) {
            snprintf(p->msg, sizeof p->msg, "%s", err.msg);
            atomic_store(&p->rc, rc); /* after msg: readers see both */
            break;
        }
        for (k = 0; k < 50; k++) {
            if (res[k] == AUR_OK)
                p->ok++;
            else if (res[k] == AUR_DECLINE)
                p->declined++;
            else
                p->other++;
        }
        p->rows += 50;
        atomic_fetch_add(&p->batches, 1);
    }
    free(t);
    return NULL;
}

static void wait_batches(struct pump *p, size_t n)
{
    int64_t end = now_ms() + 60000;
    while (atomic_load(&p->batches) < n && atomic_load(&p->rc) == AUR_OK &&
           now_ms() < end)
        sleep_ms(10);
    ck_assert_msg(atomic_load(&p->batches) >= n, "appends stalled: %d %s",
                  atomic_load(&p->rc),
                  atomic_load(&p->rc) != AUR_OK ? p->msg : "");
}

/* A restart (sessions terminated, connections refused for a while) under
 * a stream of batches: they all succeed, the handle reconnected, and no
 * id was committed twice nor lost. */
START_TEST(restart_under_load)
{
    struct pump p = {0};
    struct aur__jstate st;
    struct coll co = {0};
    pthread_t th;
    char uri[256];
    size_t before;

    p.h = open_ok((fresh_db("t_restart", "", uri, sizeof uri), uri), 30000);
    ck_assert_int_eq(pthread_create(&th, NULL, pump_run, &p), 0);
    wait_batches(&p, 20);
    ck_assert_int_eq(pg_sh(NULL, 0, "restart", NULL, NULL), 0);
    before = atomic_load(&p.batches);
    wait_batches(&p, before + 20);
    atomic_store(&p.stop, 1);
    pthread_join(th, NULL);
    ck_assert_msg(p.rc == AUR_OK, "%s", p.msg);
    ck_assert_uint_eq(p.other, 0);
    /* a batch whose COMMIT was lost comes back as AUR_DECLINE */
    ck_assert_uint_eq(p.ok + p.declined, p.rows);
    ck_assert_uint_le(p.declined, 50);
    ops->state(p.h, &st);
    ck_assert_str_eq(st.state, "connected");
    ck_assert_uint_ge(st.reconnects, 1);
    ck_assert_int_eq(st.failures, 0);
    ck_assert_int_eq(ops->count(p.h), (int64_t)p.rows);
    read_all(p.h, NULL, &co);
    check_dense(&co, (int64_t)p.rows);
    coll_free(&co);
    ops->close(p.h);
}
END_TEST

/* The server stops: a batch waits wait_ms for it, then fails, and the
 * next ones fail at once ("unavailable"); wait just times out.  Once the
 * server is back, the journal comes back by itself. */
START_TEST(stop_then_unavailable)
{
    struct trow t;
    struct aur__jstate st;
    struct aur_error err;
    int res;
    int64_t seq, t0, dt, head;
    char uri[256];
    void *h = open_ok((fresh_db("t_stop", "", uri, sizeof uri), uri), 1000);

    mk(&t, "one", "summary", "a", NULL);
    append_ok(h, &t, 1, &res, &seq);
    ck_assert_int_eq(pg_sh(NULL, 0, "stop", NULL, NULL), 0);

    mk(&t, "two", "summary", "a", NULL);
    t0 = now_ms();
    ck_assert_int_eq(ops->append(h, &t.r, 1, &res, &seq, &err),
                     AUR_E_JOURNAL);
    dt = now_ms() - t0;
    ck_assert_int_ge(dt, 900);
    ck_assert_int_lt(dt, 1000 + 5000);
    ck_assert_msg(strstr(err.msg, "unavailable for"), "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, g_hostport));
    ck_assert_ptr_null(strstr(err.msg, PW));
    ops->state(h, &st);
    ck_assert_str_eq(st.state, "unavailable");
    ck_assert_int_ge(st.down_ms, 1000);
    ck_assert_int_eq(st.failures, 1);
    ck_assert_str_ne(st.last_error, "");

    t0 = now_ms();
    ck_assert_int_eq(ops->append(h, &t.r, 1, &res, &seq, &err),
                     AUR_E_JOURNAL);
    ck_assert_int_lt(now_ms() - t0, 2500);
    ck_assert_int_eq(ops->head(h, &head, &err), AUR_E_JOURNAL);
    t0 = now_ms();
    ck_assert_int_eq(ops->wait(h, 1, 300, &err), AUR_OK);
    ck_assert_int_ge(now_ms() - t0, 250);
    ops->state(h, &st);
    ck_assert_str_eq(st.state, "unavailable");
    ck_assert_int_eq(st.failures, 2);

    ck_assert_int_eq(pg_sh(NULL, 0, "start", NULL, NULL), 0);
    sleep_ms(2200); /* the longest backoff between attempts is 2 s */
    append_ok(h, &t, 1, &res, &seq);
    ck_assert_int_eq(res, AUR_OK);
    ck_assert_int_eq(seq, 2);
    ops->state(h, &st);
    ck_assert_str_eq(st.state, "connected");
    ck_assert_int_eq(st.reconnects, 1);
    ck_assert_int_eq(st.down_ms, 0);
    ops->close(h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* TLS, passwords, privileges                                         */
/* ------------------------------------------------------------------ */

static void pct(char *out, size_t size, const char *s)
{
    size_t k = 0;
    for (; *s && k + 4 < size; s++)
        k += (size_t)snprintf(out + k, size - k, "%%%02X", (unsigned char)*s);
    out[k] = '\0';
}

START_TEST(tls_and_passwords)
{
    struct aur__jstate st;
    struct aur_error err;
    struct trow t;
    int res;
    int64_t seq;
    char uri[512], base[256], other[64], enc[128];
    const char *mkc[] = {"/bin/sh", AUR_MKCERTS, other, NULL};
    void *h;

    fresh_db("t_tls", "", base, sizeof base);

    /* the password over plain TCP */
    snprintf(uri, sizeof uri, "%s?sslmode=disable", base);
    h = open_ok(uri, 1000);
    mk(&t, "plain", "summary", "a", NULL);
    append_ok(h, &t, 1, &res, &seq);
    ops->state(h, &st);
    ck_assert_ptr_null(strstr(st.target, PW));
    ops->close(h);

    /* TLS, server verified by our CA and its name */
    snprintf(uri, sizeof uri, "%s?sslmode=verify-full&sslrootcert=%s/ca.pem",
             base, g_certs);
    h = open_ok(uri, 1000);
    mk(&t, "tls", "summary", "a", NULL);
    append_ok(h, &t, 1, &res, &seq);
    ck_assert_int_eq(seq, 2);
    ck_assert_int_ge(psql_int("postgres",
                              "SELECT count(*) FROM pg_stat_ssl AS s JOIN"
                              " pg_stat_activity AS a USING (pid) WHERE s.ssl"
                              " AND a.application_name = 'aurora-mcp'"
                              " AND a.datname = 't_tls'"),
                     1);
    ops->close(h);

    /* another CA: refused, and the message names no password */
    snprintf(other, sizeof other, "/tmp/aur-pgo-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(other));
    ck_assert_int_eq(run(NULL, 0, mkc), 0);
    snprintf(uri, sizeof uri, "%s?sslmode=verify-full&sslrootcert=%s/ca.pem",
             base, other);
    ck_assert_int_eq(open_h(uri, PW, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "certificate"), "%s", err.msg);
    ck_assert_ptr_null(strstr(err.msg, PW));
    rm_tree(other);

    /* a wrong password */
    ck_assert_int_eq(open_h(base, "wrong-password-123", 1000, &h, &err),
                     AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "password authentication failed"), "%s",
                  err.msg);
    ck_assert_ptr_null(strstr(err.msg, "wrong-password-123"));

    /* the password in the URI instead (percent-encoded) */
    pct(enc, sizeof enc, PW);
    snprintf(uri, sizeof uri, "postgresql://aurora:%s@%s/t_tls", enc,
             g_hostport);
    ck_assert_int_eq(open_h(uri, NULL, 1000, &h, &err), AUR_OK);
    ops->state(h, &st);
    ck_assert_ptr_null(strstr(st.target, PW));
    ck_assert_ptr_null(strstr(st.target, enc));
    ops->close(h);

    /* a URI that does not parse: its text (here a password) is not shown */
    snprintf(uri, sizeof uri,
             "postgresql://aurora:sec%%zzret-abcdef@%s/t_tls", g_hostport);
    ck_assert_int_eq(open_h(uri, NULL, 1000, &h, &err), AUR_E_JOURNAL);
    ck_assert_ptr_null(strstr(err.msg, "zzret"));
}
END_TEST

/* What docs/journal.md says a role needs once the schema exists: CONNECT,
 * USAGE on the schema, SELECT on aurora_schema, SELECT and UPDATE on
 * world_head, SELECT and INSERT on world_commits and world_commit_scopes.
 * Creating the schema needs CREATE on the schema as well. */
START_TEST(least_privileges)
{
    struct trow t[2];
    struct coll co = {0};
    struct aur_error err;
    int res[2];
    int64_t seqs[2];
    char uri[256], app[256];
    void *h;

    fresh_db("t_priv", "", uri, sizeof uri);
    ops->close(open_ok(uri, 1000));
    psql("postgres", NULL, 0,
         "CREATE ROLE aurora_app LOGIN PASSWORD 'app-pw-1234'");
    psql("t_priv", NULL, 0,
         "REVOKE ALL ON DATABASE t_priv FROM PUBLIC;"
         " REVOKE ALL ON SCHEMA public FROM PUBLIC;"
         " GRANT CONNECT ON DATABASE t_priv TO aurora_app;"
         " GRANT USAGE ON SCHEMA public TO aurora_app;"
         " GRANT SELECT ON aurora_schema TO aurora_app;"
         " GRANT SELECT, UPDATE ON world_head TO aurora_app;"
         " GRANT SELECT, INSERT ON world_commits, world_commit_scopes"
         " TO aurora_app");
    fmt(app, sizeof app, "postgresql://aurora_app@%s/t_priv",
             g_hostport);
    ck_assert_int_eq(open_h(app, "app-pw-1234", 1000, &h, &err), AUR_OK);
    mk(&t[0], "p1", "summary", "a,b", "{\"x\":1}");
    mk(&t[1], "p1", "summary", "a,b", "{\"x\":1}");
    append_ok(h, t, 2, res, seqs);
    ck_assert_int_eq(res[0], AUR_OK);
    ck_assert_int_eq(res[1], AUR_DECLINE);
    ck_assert_int_eq(ops->wait(h, 0, 100, &err), AUR_OK);
    read_all(h, "a", &co);
    check_dense(&co, 1);
    coll_free(&co);
    ck_assert_int_eq(ops->count(h), 1);
    ops->close(h);

    /* a fresh database it cannot create tables in (PostgreSQL 15 no
     * longer lets PUBLIC create in schema public) */
    psql("postgres", NULL, 0, "CREATE DATABASE t_priv2");
    fmt(app, sizeof app, "postgresql://aurora_app@%s/t_priv2",
             g_hostport);
    ck_assert_int_eq(open_h(app, "app-pw-1234", 1000, &h, &err),
                     AUR_E_JOURNAL);
    ck_assert_msg(strstr(err.msg, "permission denied"), "%s", err.msg);
}
END_TEST

void pg_fault_tests(TCase *tc)
{
    tcase_add_test(tc, restart_under_load);
    tcase_add_test(tc, stop_then_unavailable);
    tcase_add_test(tc, tls_and_passwords);
    tcase_add_test(tc, least_privileges);
}
