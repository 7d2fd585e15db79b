/*
 * journal.c - the world journal's front (docs/journal.md): picks the
 * backend a target names, loads the PostgreSQL module on first use,
 * validates commits into rows, serialises every backend call on a handle
 * and turns rows read back into the JSON objects readers see.
 */
#include "aur_setup.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "journal.h"
#include "journal_commit.h"
#include "journal_sqlite.h"
#include "thread.h"

struct aur__journal {
    pthread_mutex_t mu; /* held around every ops call */
    const struct aur__journal_ops *ops;
    void *b;
    /* aur__journal_prime's and aur__journal_settle's threads, each run
     * once and joined by close */
    pthread_t primer, settler;
    bool priming, settling;
};

/* Commits read per lock hold: the callback runs without the lock, so a
 * slow reader (the CLI writing to a pipe) never stalls writers. */
#define PAGE_SIZE 256
/* The default of journal_wait_ms. */
#define WAIT_MS_DEFAULT 10000

bool aur__journal_is_uri(const char *target)
{
    return target && (strncmp(target, "postgresql://", 13) == 0 ||
                      strncmp(target, "postgres://", 11) == 0);
}

/* ------------------------------------------------------------------ */
/* The PostgreSQL module                                              */
/* ------------------------------------------------------------------ */

/*
 * libpq brings libssl, Kerberos and LDAP with it: dozens of libraries a
 * host with a file journal would map and initialise for nothing.  So the
 * backend is a module of its own, found where this library is: the build
 * tree's when running from it, else <libdir>/aurora-mcp/ beside the
 * installed library (which holds for DESTDIR and relocated prefixes too),
 * else the configured install path.  Loaded once, never unloaded.
 */
static pthread_once_t pg_once = PTHREAD_ONCE_INIT;
static const struct aur__journal_ops *pg_ops;
static char pg_error[PATH_MAX + 256];

static void pg_path(char *buf, size_t size)
{
    Dl_info info;
    char *real = NULL, *slash;
    struct stat sb;

    snprintf(buf, size, "%s", AUR_JOURNAL_PG_INSTALL);
    if (!dladdr((void *)pg_path, &info) || !info.dli_fname ||
        !(real = realpath(info.dli_fname, NULL)))
        return;
    if (strncmp(real, AUR_BUILD_ROOT "/", strlen(AUR_BUILD_ROOT) + 1) == 0) {
        snprintf(buf, size, "%s", AUR_JOURNAL_PG_BUILD);
    } else if ((slash = strrchr(real, '/'))) {
        char local[PATH_MAX];
        if (snprintf(local, sizeof local,
                     "%.*s/aurora-mcp/journal-postgresql.so",
                     (int)(slash - real), real) < (int)sizeof local &&
            stat(local, &sb) == 0)
            snprintf(buf, size, "%s", local);
    }
    free(real);
}

static void pg_load(void)
{
    char path[PATH_MAX];
    void *dl;
    aur__journal_entry_fn entry;
    const struct aur__journal_ops *ops;

    pg_path(path, sizeof path);
    if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        snprintf(pg_error, sizeof pg_error,
                 "the PostgreSQL journal backend cannot be loaded: %s",
                 why ? why : path);
        return;
    }
    *(void **)&entry = dlsym(dl, AUR__JOURNAL_PG_ENTRY);
    ops = entry ? entry() : NULL;
    if (!ops || ops->version != AUR__JOURNAL_BACKEND_VERSION) {
        snprintf(pg_error, sizeof pg_error,
                 "%s is not a journal backend of this version (%u)", path,
                 (unsigned)AUR__JOURNAL_BACKEND_VERSION);
        dlclose(dl);
        return;
    }
    pg_ops = ops;
}

/* ------------------------------------------------------------------ */
/* Open and close                                                     */
/* ------------------------------------------------------------------ */

int aur__journal_open(const char *target, const struct aur__journal_conf *conf,
                      struct aur__journal **out, struct aur_error *err)
{
    const struct aur__journal_ops *ops = &aur__journal_sqlite_ops;
    struct aur__jopts o = {0};
    struct aur__journal *j;
    int rc;

    if (!out)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: no output handle");
    *out = NULL;
    if (!target || !*target)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: empty path");
    if (aur__journal_is_uri(target)) {
        pthread_once(&pg_once, pg_load);
        if (!pg_ops)
            return aur_fail(err, AUR_E_JOURNAL, 0, "journal: %s", pg_error);
        ops = pg_ops;
    }
    o.password = conf ? conf->password : NULL;
    o.wait_ms = conf && conf->wait_ms > 0 ? conf->wait_ms : WAIT_MS_DEFAULT;
    o.data_equal = aur__journal_data_equal;
    j = calloc(1, sizeof *j);
    if (!j)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (pthread_mutex_init(&j->mu, NULL) != 0) {
        free(j);
        return aur_fail(err, AUR_E_NOMEM, 0, "journal: mutex init failed");
    }
    j->ops = ops;
    rc = ops->open(target, &o, &j->b, err);
    if (rc != AUR_OK) {
        pthread_mutex_destroy(&j->mu);
        free(j);
        return rc;
    }
    *out = j;
    return AUR_OK;
}

static void *locked(struct aur__journal *j, void (*op)(void *b))
{
    pthread_mutex_lock(&j->mu);
    op(j->b);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void *prime_main(void *arg)
{
    struct aur__journal *j = arg;
    return locked(j, j->ops->prime);
}

static void *settle_main(void *arg)
{
    struct aur__journal *j = arg;
    return locked(j, j->ops->settle);
}

void aur__journal_prime(struct aur__journal *j)
{
    if (j && j->ops->prime && !j->priming)
        j->priming = aur__thread_start(&j->primer, prime_main, j) == 0;
}

void aur__journal_settle(struct aur__journal *j)
{
    if (j && j->ops->settle && !j->settling)
        j->settling = aur__thread_start(&j->settler, settle_main, j) == 0;
}

void aur__journal_close(struct aur__journal *j)
{
    if (!j)
        return;
    if (j->priming)
        pthread_join(j->primer, NULL);
    if (j->settling)
        pthread_join(j->settler, NULL);
    j->ops->close(j->b);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

/*
 * Commit the valid ones of p[0..n) (ok[i]) in one backend call.  Under the
 * lock: each row's data text (json-c caches it inside the shared object).
 * results[i] is set for every valid i; seqs[i] likewise.  Returns the
 * backend's answer, or AUR_E_NOMEM before it was asked.
 */
static int commit_rows(struct aur__journal *j, struct aur__jprep *p,
                       const struct aur_commit *const *v, const bool *ok,
                       size_t n, int *results, int64_t *seqs,
                       struct aur_error *err)
{
    /* one allocation: rows, then the backend's results, seqs and the
     * index of each row's commit in v */
    size_t each = sizeof(struct aur__jrow) + sizeof(int) + sizeof(int64_t) +
                  sizeof(size_t);
    char *mem = malloc(n * each);
    struct aur__jrow *rows = (struct aur__jrow *)mem;
    int64_t *sq = (int64_t *)(mem + n * sizeof *rows);
    size_t *idx = (size_t *)(mem + n * (sizeof *rows + sizeof *sq));
    int *res = (int *)(mem + n * (sizeof *rows + sizeof *sq + sizeof *idx));
    size_t i, m = 0;
    int rc = AUR_OK;

    if (!mem)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    pthread_mutex_lock(&j->mu);
    for (i = 0; i < n && rc == AUR_OK; i++) {
        int r;
        if (!ok[i])
            continue;
        r = aur__jprep_data(&p[i], v[i], err);
        if (r == AUR_E_NOMEM) {
            rc = r;
        } else if (r != AUR_OK) {
            results[i] = r;
        } else {
            idx[m] = i;
            rows[m++] = p[i].row;
        }
    }
    if (rc == AUR_OK && m > 0)
        rc = j->ops->append(j->b, rows, m, res, sq, err);
    pthread_mutex_unlock(&j->mu);
    for (i = 0; rc == AUR_OK && i < m; i++) {
        results[idx[i]] = res[i];
        seqs[idx[i]] = sq[i];
    }
    free(mem);
    return rc;
}

int aur__journal_append(struct aur__journal *j, const struct aur_commit *c,
                        int64_t *seq, int *inserted, struct aur_error *err)
{
    struct aur__jprep p;
    const struct aur_commit *v[1] = {c};
    bool ok = true;
    int64_t s = 0;
    int res = AUR_OK, rc;

    if (!j)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: not open");
    rc = aur__jprep_make(c, &p, err);
    if (rc == AUR_OK)
        rc = commit_rows(j, &p, v, &ok, 1, &res, &s, err);
    aur__jprep_free(&p);
    if (rc != AUR_OK)
        return rc;
    if (res == AUR_E_CONFLICT)
        return aur_fail(err, AUR_E_CONFLICT, 0,
                        "commit id already used with different content: %s",
                        c->commit_id);
    if (res != AUR_OK && res != AUR_DECLINE)
        return res; /* the data rules: err says which (aur__jprep_data) */
    if (seq)
        *seq = s;
    if (inserted)
        *inserted = res == AUR_OK;
    return AUR_OK;
}

int aur__journal_append_batch(struct aur__journal *j,
                              const struct aur_commit *const *v, size_t n,
                              int *results, struct aur_error *err)
{
    struct aur__jprep *p;
    int64_t *seqs;
    bool *ok;
    size_t i;
    int rc = AUR_OK;

    if (!j || (n && (!v || !results)))
        return aur_fail(err, AUR_E_INVAL, 0, "journal: bad arguments");
    if (n == 0)
        return AUR_OK;
    p = calloc(n, sizeof *p);
    seqs = calloc(n, sizeof *seqs);
    ok = calloc(n, sizeof *ok);
    if (!p || !seqs || !ok)
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    for (i = 0; i < n && rc == AUR_OK; i++) {
        int r = aur__jprep_make(v[i], &p[i], NULL);
        if (r == AUR_E_NOMEM)
            rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        ok[i] = r == AUR_OK;
        results[i] = r;
    }
    if (rc == AUR_OK)
        rc = commit_rows(j, p, v, ok, n, results, seqs, err);
    for (i = 0; p && i < n; i++)
        aur__jprep_free(&p[i]);
    free(p);
    free(seqs);
    free(ok);
    if (rc != AUR_OK)
        for (i = 0; i < n; i++)
            results[i] = rc;
    else
        aur_error_clear(err);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */
/* ------------------------------------------------------------------ */

int64_t aur__journal_count(struct aur__journal *j)
{
    int64_t n;
    if (!j)
        return -1;
    pthread_mutex_lock(&j->mu);
    n = j->ops->count(j->b);
    pthread_mutex_unlock(&j->mu);
    return n;
}

void aur__journal_state(struct aur__journal *j, struct aur__jstate *st)
{
    memset(st, 0, sizeof *st);
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    j->ops->state(j->b, st);
    pthread_mutex_unlock(&j->mu);
}

struct page {
    struct json_object *v[PAGE_SIZE];
    size_t n;
    int rc;
    struct aur_error *err;
};

static int page_add(void *ud, const struct aur__jread *r)
{
    struct page *pg = ud;
    pg->rc = aur__jread_json(r, &pg->v[pg->n], pg->err);
    if (pg->rc != AUR_OK)
        return 1;
    pg->n++;
    return 0;
}

/* Visit the commits in (after, head at the start], as aur__journal_each;
 * *upto = that head (what the walk covered, visited or filtered out). */
static int walk(struct aur__journal *j, int64_t after, const char *scope,
                int (*fn)(void *ud, struct json_object *commit), void *ud,
                int64_t *upto, bool *stopped, struct aur_error *err)
{
    struct page *pg = malloc(sizeof *pg);
    int64_t cursor = after;
    size_t i, visited;
    int rc;

    *stopped = false;
    *upto = after;
    if (!pg)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    /* Visit what existed at the start: commits appended meanwhile (maybe
     * by the callback itself) are left for the next call, so the loop is
     * bounded by the snapshot's size.  seq order is commit order on every
     * backend, so nothing below the head can appear later. */
    pthread_mutex_lock(&j->mu);
    rc = j->ops->head(j->b, upto, err);
    pthread_mutex_unlock(&j->mu);
    while (rc == AUR_OK && !*stopped && cursor < *upto) {
        pg->n = 0;
        pg->rc = AUR_OK;
        pg->err = err;
        visited = 0;
        pthread_mutex_lock(&j->mu);
        rc = j->ops->read(j->b, cursor, *upto, scope, PAGE_SIZE, page_add, pg,
                          &visited, err);
        pthread_mutex_unlock(&j->mu);
        if (rc == AUR_OK)
            rc = pg->rc;
        for (i = 0; i < pg->n; i++) {
            if (rc == AUR_OK && !*stopped) {
                cursor = json_object_get_int64(
                    json_object_object_get(pg->v[i], "seq"));
                *stopped = fn(ud, pg->v[i]) != 0;
            }
            json_object_put(pg->v[i]);
        }
        if (visited < PAGE_SIZE)
            break;
    }
    free(pg);
    return rc;
}

int aur__journal_each(struct aur__journal *j, int64_t after,
                      const char *scope,
                      int (*fn)(void *ud, struct json_object *commit),
                      void *ud, struct aur_error *err)
{
    int64_t upto;
    bool stopped;
    if (!j || !fn)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: bad arguments");
    return walk(j, after, scope, fn, ud, &upto, &stopped, err);
}

/* A storage error while the database is away is a wait, not the end. */
static bool away(struct aur__journal *j)
{
    struct aur__jstate st;
    aur__journal_state(j, &st);
    return strcmp(st.state, "reconnecting") == 0 ||
           strcmp(st.state, "unavailable") == 0;
}

int aur__journal_follow(struct aur__journal *j, int64_t after,
                        const char *scope, int idle_ms,
                        int (*fn)(void *ud, struct json_object *commit),
                        void *ud, struct aur_error *err)
{
    int64_t cursor = after, upto;
    bool stopped = false;
    int rc;

    if (!j || !fn || idle_ms <= 0)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: bad arguments");
    for (;;) {
        rc = walk(j, cursor, scope, fn, ud, &upto, &stopped, err);
        if (stopped)
            return AUR_OK;
        if (rc != AUR_OK && !away(j))
            return rc;
        if (rc == AUR_OK)
            cursor = upto;
        pthread_mutex_lock(&j->mu);
        rc = j->ops->wait(j->b, cursor, idle_ms, err);
        pthread_mutex_unlock(&j->mu);
        if (rc != AUR_OK && !away(j))
            return rc;
        if (fn(ud, NULL) != 0)
            return AUR_OK;
    }
}
