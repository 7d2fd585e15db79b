/*
 * pg_ops_fixture.c - check_journal_pg_ops's fixture (pg_ops_fixture.h):
 * one throwaway server for the run (tests/support/pg.sh, TLS on,
 * password over TCP), a database per test, handles through the module's
 * ops table, rows with their own storage and what read gave back.
 */
#include "aur_setup.h"

#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "journal_backend.h"

#include "pg_ops_fixture.h"

const struct aur__journal_ops *ops;
char g_dir[64], g_certs[64];
char g_base[256]; /* postgresql://aurora@127.0.0.1:PORT */
char g_hostport[256];

/* snprintf that must not truncate */
void fmt(char *buf, size_t size, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vsnprintf(buf, size, f, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "string too long: %s\n", f);
        abort();
    }
}

/* ------------------------------------------------------------------ */
/* The server                                                         */
/* ------------------------------------------------------------------ */

/* Run argv (NULL-terminated) with stdout into out; its exit status.
 * Nothing of ours but stdout is inherited: the server pg_ctl starts
 * must not hold a descriptor of this process. */
int run(char *out, size_t size, const char *const *argv)
{
    int fds[2], st = 0;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        int fd;
        dup2(fds[1], 1);
        for (fd = 3; fd < 1024; fd++)
            close(fd);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    for (;;) { /* all of it: a closed pipe would kill the writer */
        char sink[512];
        if (out && got + 1 < size)
            n = read(fds[0], out + got, size - 1 - got);
        else
            n = read(fds[0], sink, sizeof sink);
        if (n <= 0)
            break;
        if (out && got + 1 < size)
            got += (size_t)n;
    }
    if (out) {
        out[got] = '\0';
        while (got && out[got - 1] == '\n')
            out[--got] = '\0';
    }
    close(fds[0]);
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int pg_sh(char *out, size_t size, const char *cmd, const char *a1,
                 const char *a2)
{
    const char *argv[] = {"/bin/sh", AUR_PG_SH, cmd, g_dir, a1, a2, NULL};
    return run(out, size, argv);
}

/* psql as the superuser; the first line of the output. */
void psql(const char *db, char *out, size_t size, const char *fmt,
                 ...)
{
    char sql[2048], buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    ck_assert_msg(pg_sh(buf, sizeof buf, "psql", sql, db) == 0, "psql: %s",
                  sql);
    if (out)
        snprintf(out, size, "%.*s", (int)strcspn(buf, "\n"), buf);
}

long psql_int(const char *db, const char *sql)
{
    char out[64];
    psql(db, out, sizeof out, "%s", sql);
    return strtol(out, NULL, 10);
}

/* A fresh database owned by the role; its URI (extra = "?..." or ""). */
void fresh_db(const char *name, const char *extra, char *uri,
                     size_t size)
{
    psql("postgres", NULL, 0, "CREATE DATABASE %s OWNER aurora", name);
    fmt(uri, size, "%s/%s%s", g_base, name, extra);
}

static int rm_cb(const char *p, const struct stat *sb, int flag,
                 struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

void rm_tree(const char *dir)
{
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

void server_up(void)
{
    char uri[256], *p;
    const char *argv[8];
    void *dl;
    aur__journal_entry_fn entry;
    char owner[32];
    int rc;

    dl = dlopen(AUR_PG_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (!dl || !(*(void **)&entry = dlsym(dl, AUR__JOURNAL_PG_ENTRY)) ||
        !(ops = entry()) || ops->version != AUR__JOURNAL_BACKEND_VERSION) {
        fprintf(stderr, "cannot load %s: %s\n", AUR_PG_MODULE, dlerror());
        exit(EXIT_FAILURE);
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/aur-pg-XXXXXX");
    snprintf(g_certs, sizeof g_certs, "/tmp/aur-pgc-XXXXXX");
    if (!mkdtemp(g_dir) || !mkdtemp(g_certs)) {
        perror("mkdtemp");
        exit(EXIT_FAILURE);
    }
    /* a killed test leaves no server behind */
    snprintf(owner, sizeof owner, "%ld", (long)getpid());
    setenv("AUR_PG_OWNER", owner, 1);
    argv[0] = "/bin/sh", argv[1] = AUR_PG_SH, argv[2] = "start";
    argv[3] = g_dir, argv[4] = "--tls", argv[5] = g_certs;
    argv[6] = "--password", argv[7] = PW;
    {
        const char *full[] = {argv[0], argv[1], argv[2], argv[3], argv[4],
                              argv[5], argv[6], argv[7], NULL};
        rc = run(uri, sizeof uri, full);
    }
    if (rc == 77) {
        fprintf(stderr, "no PostgreSQL server binaries: skipped\n");
        exit(77);
    }
    if (rc != 0 || strncmp(uri, "postgresql://aurora@127.0.0.1:", 30) != 0 ||
        !(p = strrchr(uri, '/'))) {
        fprintf(stderr, "pg.sh start failed (%d): %s\n", rc, uri);
        exit(EXIT_FAILURE);
    }
    *p = '\0';
    fmt(g_base, sizeof g_base, "%s", uri);
    fmt(g_hostport, sizeof g_hostport, "%s", uri + 20);
}

void server_down(void)
{
    pg_sh(NULL, 0, "stop", NULL, NULL);
    rm_tree(g_dir);
    rm_tree(g_certs);
}

/* ------------------------------------------------------------------ */
/* Handles, rows, reading back                                        */
/* ------------------------------------------------------------------ */

static struct json_object *parse(const char *s, size_t n)
{
    struct json_tokener *t = json_tokener_new();
    struct json_object *o = json_tokener_parse_ex(t, s, (int)n);
    if (json_tokener_get_error(t) != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(t);
    return o;
}

/* What the front passes: the same object, whatever the key order. */
int data_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    struct json_object *x = parse(a, alen), *y = parse(b, blen);
    int same = x && y && json_object_equal(x, y);
    json_object_put(x);
    json_object_put(y);
    return same;
}

int open_h(const char *uri, const char *pw, int64_t wait_ms,
                  void **h, struct aur_error *err)
{
    struct aur__jopts o = {pw, wait_ms, data_eq};
    *h = NULL;
    memset(err, 0, sizeof *err);
    return ops->open(uri, &o, h, err);
}

void *open_ok(const char *uri, int64_t wait_ms)
{
    struct aur_error err;
    void *h;
    int rc = open_h(uri, PW, wait_ms, &h, &err);
    ck_assert_msg(rc == AUR_OK, "open: %d %s", rc, err.msg);
    ck_assert_ptr_nonnull(h);
    return h;
}

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}


void mk(struct trow *t, const char *id, const char *summary,
               const char *scopes, const char *data)
{
    char *s, *save = NULL;
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "%s", id);
    snprintf(t->summary, sizeof t->summary, "%s", summary);
    snprintf(t->kind, sizeof t->kind, "thing.changed");
    snprintf(t->data, sizeof t->data, "%s", data ? data : "{}");
    snprintf(t->scopes, sizeof t->scopes, "%s", scopes);
    for (s = strtok_r(t->scopes, ",", &save); s && t->r.n_scopes < 8;
         s = strtok_r(NULL, ",", &save))
        t->sc[t->r.n_scopes++] = s;
    t->r.commit_id = t->id;
    t->r.kind = t->kind;
    t->r.source = "test";
    t->r.summary = t->summary;
    t->r.occurred_at = "2026-01-02T03:04:05Z";
    t->r.data = t->data;
    t->r.data_len = strlen(t->data);
    t->r.scopes = t->sc;
}

/* Append t[0..n) in one call; AUR_OK expected. */
void append_ok(void *h, struct trow *t, size_t n, int *res,
                      int64_t *seqs)
{
    struct aur__jrow rows[32];
    struct aur_error err;
    size_t i;
    int rc;
    ck_assert_uint_le(n, 32);
    for (i = 0; i < n; i++)
        rows[i] = t[i].r;
    rc = ops->append(h, rows, n, res, seqs, &err);
    ck_assert_msg(rc == AUR_OK, "append: %d %s", rc, err.msg);
}

int64_t head_of(void *h)
{
    struct aur_error err;
    int64_t seq = -1;
    ck_assert_int_eq(ops->head(h, &seq, &err), AUR_OK);
    return seq;
}



int collect(void *ud, const struct aur__jread *c)
{
    struct coll *co = ud;
    struct got *g;
    size_t i, k = 0;
    if (co->n == co->cap) {
        co->cap = co->cap ? 2 * co->cap : 64;
        co->v = realloc(co->v, co->cap * sizeof *co->v);
        ck_assert_ptr_nonnull(co->v);
    }
    g = &co->v[co->n++];
    memset(g, 0, sizeof *g);
    g->seq = c->seq;
    g->id = strdup(c->row.commit_id);
    g->kind = strdup(c->row.kind);
    g->source = strdup(c->row.source);
    g->summary = strdup(c->row.summary);
    g->at = strdup(c->row.occurred_at);
    g->data = strndup(c->row.data, c->row.data_len);
    for (i = 0; i < c->row.n_scopes; i++)
        k += (size_t)snprintf(g->scopes + k, sizeof g->scopes - k, "%s%s:%lld",
                              i ? "," : "", c->row.scopes[i],
                              (long long)c->sequences[i]);
    return co->stop_at && co->n == co->stop_at;
}

void coll_free(struct coll *co)
{
    size_t i;
    for (i = 0; i < co->n; i++) {
        free(co->v[i].id), free(co->v[i].kind), free(co->v[i].source);
        free(co->v[i].summary), free(co->v[i].at), free(co->v[i].data);
    }
    free(co->v);
    memset(co, 0, sizeof *co);
}

/* Every commit (touching scope), in pages of 100 as the front reads. */
void read_all(void *h, const char *scope, struct coll *co)
{
    struct aur_error err;
    int64_t upto = head_of(h), after = 0;
    size_t n;
    for (;;) {
        ck_assert_int_eq(ops->read(h, after, upto, scope, 100, collect, co,
                                   &n, &err),
                         AUR_OK);
        if (n < 100)
            break;
        after = co->v[co->n - 1].seq;
    }
}

/* seq 1..n dense, and each scope's sequences 1, 2, ... in seq order. */
void check_dense(const struct coll *co, int64_t n)
{
    char names[64][32];
    int64_t next[64];
    size_t i, k, nn = 0;
    ck_assert_int_eq((int64_t)co->n, n);
    for (i = 0; i < co->n; i++) {
        char buf[256], *s, *save = NULL;
        ck_assert_int_eq(co->v[i].seq, (int64_t)i + 1);
        snprintf(buf, sizeof buf, "%s", co->v[i].scopes);
        for (s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            char *colon = strrchr(s, ':');
            ck_assert_ptr_nonnull(colon);
            *colon = '\0';
            for (k = 0; k < nn && strcmp(names[k], s) != 0; k++)
                ;
            if (k == nn) {
                ck_assert_uint_lt(nn, 64);
                snprintf(names[nn], sizeof names[nn], "%s", s);
                next[nn++] = 1;
            }
            ck_assert_int_eq(strtoll(colon + 1, NULL, 10), next[k]);
            next[k]++;
        }
    }
}