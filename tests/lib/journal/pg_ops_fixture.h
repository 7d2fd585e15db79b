/*
 * pg_ops_fixture.h - what check_journal_pg_ops.c and
 * check_journal_pg_faults.c share: the server started once for the run
 * (server_up/server_down, an unchecked fixture in the runner's own
 * process), a database of its own per test, handles opened through the
 * module's ops table as the core opens them, rows with their own storage
 * and the commits read back.  Test threads only; a writer thread may use
 * mk, open_h and ops.
 */
#ifndef AUR_TEST_PG_OPS_FIXTURE_H
#define AUR_TEST_PG_OPS_FIXTURE_H

#include "aur_setup.h"

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "journal_backend.h"

/* The role's password: characters that need quoting in SQL and URIs. */
#define PW "t0p'sec\"ret-pw"

extern const struct aur__journal_ops *ops; /* the module's, after server_up */
extern char g_dir[64], g_certs[64];
extern char g_base[256]; /* postgresql://aurora@127.0.0.1:PORT */
extern char g_hostport[256];

/* snprintf that must not truncate */
void fmt(char *buf, size_t size, const char *f, ...)
    __attribute__((format(printf, 3, 4)));
/* Run argv (NULL-terminated) with stdout into out; its exit status. */
int run(char *out, size_t size, const char *const *argv);
/* rm -rf dir */
void rm_tree(const char *dir);
/* tests/support/pg.sh CMD g_dir a1 a2, its stdout into out; its status. */
int pg_sh(char *out, size_t size, const char *cmd, const char *a1,
          const char *a2);
/* psql as the superuser; the first line of the output. */
void psql(const char *db, char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
long psql_int(const char *db, const char *sql);
/* A fresh database owned by the role; its URI (extra = "?..." or ""). */
void fresh_db(const char *name, const char *extra, char *uri, size_t size);
void server_up(void);
void server_down(void);

/* What the front passes: the same object, whatever the key order. */
int data_eq(const char *a, size_t alen, const char *b, size_t blen);
int open_h(const char *uri, const char *pw, int64_t wait_ms, void **h,
           struct aur_error *err);
void *open_ok(const char *uri, int64_t wait_ms);
int64_t now_ms(void);
void sleep_ms(int ms);

/* A row with its own storage; scopes given sorted, comma-separated. */
struct trow {
    struct aur__jrow r;
    const char *sc[8];
    char scopes[128], id[128], data[256], kind[64], summary[64];
};
void mk(struct trow *t, const char *id, const char *summary,
        const char *scopes, const char *data);
/* Append t[0..n) in one call; AUR_OK expected. */
void append_ok(void *h, struct trow *t, size_t n, int *res, int64_t *seqs);
int64_t head_of(void *h);

/* What read gave, one entry per commit. */
struct got {
    int64_t seq;
    char *id, *kind, *source, *summary, *at, *data;
    char scopes[256]; /* "a:1,b:2" */
};

struct coll {
    struct got *v;
    size_t n, cap;
    size_t stop_at; /* fn returns 1 on this visit (1-based); 0 = never */
};
int collect(void *ud, const struct aur__jread *c);
void coll_free(struct coll *co);
/* Every commit (touching scope), in pages of 100 as the front reads. */
void read_all(void *h, const char *scope, struct coll *co);
/* seq 1..n dense, and each scope's sequences 1, 2, ... in seq order. */
void check_dense(const struct coll *co, int64_t n);

/* check_journal_pg_faults.c: the restart, stop, TLS and privilege tests. */
void pg_fault_tests(TCase *tc);

#endif
