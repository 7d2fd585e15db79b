/*
 * pg_append.c - the PostgreSQL journal's writes: a batch of commits in
 * one transaction, idempotent by commit_id.
 *
 * A batch costs the same few statements whatever its size: lock the head,
 * look up every id at once, read the max sequence of each scope once,
 * insert all commits with one statement and all scope rows with another
 * (unnest of array parameters), move the head, NOTIFY, COMMIT.  They go
 * in two round trips (pipelines): the writers' lock is held for the
 * server's work and one turn of this side in between, not for seven
 * waits on a client that may be slow to be scheduled.  Nothing is
 * formatted into SQL: rows travel as binary arrays in parameters.
 */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Retries of a batch the server aborted as a serialization failure or a
 * deadlock (under a stricter default_transaction_isolation). */
#define SERIAL_RETRIES 5

/* The scratch buffers of struct pg, one per array parameter. */
enum {
    B_LOOKUP, /* distinct ids of the batch */
    B_ID, B_KIND, B_SOURCE, B_SUMMARY, B_AT, B_DATA, /* new commits */
    B_SCOPES,                                        /* distinct scopes */
    B_RSEQ, B_RSCOPE, B_RSEQUENCE                    /* new scope rows */
};

/* ------------------------------------------------------------------ */
/* A batch                                                            */
/* ------------------------------------------------------------------ */

/* A string -> index table (open addressing, slots hold index + 1). */
struct smap {
    uint32_t *slot;
    size_t cap; /* a power of two, at least twice the entries */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool smap_init(struct smap *m, size_t entries)
{
    for (m->cap = 16; m->cap < 2 * entries;)
        m->cap *= 2;
    m->slot = calloc(m->cap, sizeof *m->slot);
    return m->slot != NULL;
}

/* The slot holding key (key_of(ud, index) gives an entry's key), or the
 * empty slot where it would go. */
static uint32_t *smap_slot(const struct smap *m, const char *key,
                           const char *(*key_of)(const void *, uint32_t),
                           const void *ud)
{
    size_t i;
    for (i = (size_t)hash_str(key) & (m->cap - 1); m->slot[i];
         i = (i + 1) & (m->cap - 1))
        if (strcmp(key_of(ud, m->slot[i] - 1), key) == 0)
            break;
    return &m->slot[i];
}

/* The index keyed by key, or, when absent, idx after adding it. */
static uint32_t smap_get(struct smap *m, const char *key, uint32_t idx,
                         const char *(*key_of)(const void *, uint32_t),
                         const void *ud)
{
    uint32_t *slot = smap_slot(m, key, key_of, ud);
    if (!*slot)
        *slot = idx + 1;
    return *slot - 1;
}

/* The index keyed by key, or UINT32_MAX. */
static uint32_t smap_find(const struct smap *m, const char *key,
                          const char *(*key_of)(const void *, uint32_t),
                          const void *ud)
{
    uint32_t *slot = smap_slot(m, key, key_of, ud);
    return *slot ? *slot - 1 : UINT32_MAX;
}

/* A commit the look-up found: its rows in the result (one per scope). */
struct found {
    int64_t seq;
    int row, n_scopes;
};

struct batch {
    const struct aur__jrow *rows;
    size_t n;
    uint32_t *first;     /* first row of the batch with the same id */
    int32_t *found;      /* of a first row: its entry in fv, or -1 */
    struct found *fv;    /* the commits the look-up returned */
    struct smap ids;     /* id -> first row */
    const char **scopes; /* distinct scopes of the new rows */
    int64_t *next;       /* their next sequence */
    size_t n_scopes;
    struct smap sc; /* scope -> index in scopes */
};

static const char *row_id(const void *ud, uint32_t i)
{
    return ((const struct aur__jrow *)ud)[i].commit_id;
}

static const char *scope_at(const void *ud, uint32_t i)
{
    return ((const char *const *)ud)[i];
}

static void batch_free(struct batch *bt)
{
    free(bt->first);
    free(bt->found);
    free(bt->fv);
    free(bt->ids.slot);
    free(bt->scopes);
    free(bt->next);
    free(bt->sc.slot);
}

/* What does not depend on the database: which rows repeat an id, the
 * look-up's array of distinct ids and the array of distinct scopes. */
static int batch_init(struct pg *b, struct batch *bt,
                      const struct aur__jrow *rows, size_t n,
                      struct aur_error *err)
{
    size_t i, j, total;
    struct pg_buf *ids = &b->scratch[B_LOOKUP], *sc = &b->scratch[B_SCOPES];

    memset(bt, 0, sizeof *bt);
    bt->rows = rows;
    bt->n = n;
    for (i = 0, total = 1; i < n; i++)
        total += rows[i].n_scopes;
    bt->first = malloc(n * sizeof *bt->first);
    bt->found = malloc(n * sizeof *bt->found);
    bt->fv = malloc(n * sizeof *bt->fv);
    bt->scopes = malloc(total * sizeof *bt->scopes);
    bt->next = malloc(total * sizeof *bt->next);
    if (!bt->first || !bt->found || !bt->fv || !bt->scopes || !bt->next ||
        n > UINT32_MAX / 4 || !smap_init(&bt->ids, n) ||
        !smap_init(&bt->sc, total))
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    pg__arr_begin(ids, PG_OID_TEXT);
    pg__arr_begin(sc, PG_OID_TEXT);
    for (i = 0; i < n; i++) {
        bt->first[i] = smap_get(&bt->ids, rows[i].commit_id, (uint32_t)i,
                                row_id, rows);
        if (bt->first[i] != i)
            continue;
        pg__arr_text(ids, rows[i].commit_id, strlen(rows[i].commit_id));
        for (j = 0; j < rows[i].n_scopes; j++) {
            const char *s = rows[i].scopes[j];
            if (smap_get(&bt->sc, s, (uint32_t)bt->n_scopes, scope_at,
                         bt->scopes) != bt->n_scopes)
                continue;
            bt->scopes[bt->n_scopes++] = s;
            pg__arr_text(sc, s, strlen(s));
        }
    }
    if (!pg__arr_end(ids) || !pg__arr_end(sc))
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    return AUR_OK;
}

static bool same_data(const struct pg *b, const char *a, size_t alen,
                      const struct aur__jrow *r)
{
    if (alen == r->data_len && memcmp(a, r->data, alen) == 0)
        return true;
    return b->data_equal && b->data_equal(a, alen, r->data, r->data_len);
}

/* r against the commit f of the look-up's result l. */
static bool same_stored(const struct pg *b, const PGresult *l,
                        const struct found *f, const struct aur__jrow *r)
{
    int i;
    if (strcmp(PQgetvalue(l, f->row, 2), r->kind) != 0 ||
        strcmp(PQgetvalue(l, f->row, 3), r->source) != 0 ||
        strcmp(PQgetvalue(l, f->row, 4), r->summary) != 0 ||
        (size_t)f->n_scopes != r->n_scopes)
        return false;
    for (i = 0; i < f->n_scopes; i++)
        if (strcmp(PQgetvalue(l, f->row + i, 6), r->scopes[i]) != 0)
            return false;
    return same_data(b, PQgetvalue(l, f->row, 5),
                     (size_t)PQgetlength(l, f->row, 5), r);
}

/* r against an earlier row e of the same call. */
static bool same_row(const struct pg *b, const struct aur__jrow *e,
                     const struct aur__jrow *r)
{
    size_t i;
    if (strcmp(e->kind, r->kind) != 0 || strcmp(e->source, r->source) != 0 ||
        strcmp(e->summary, r->summary) != 0 || e->n_scopes != r->n_scopes)
        return false;
    for (i = 0; i < r->n_scopes; i++)
        if (strcmp(e->scopes[i], r->scopes[i]) != 0)
            return false;
    return same_data(b, e->data, e->data_len, r);
}

/* Index the look-up's result l (rows by seq, then scope) by first row. */
static void index_found(struct batch *bt, const PGresult *l)
{
    int i, rows = PQntuples(l), nf = -1;
    int64_t cur = 0;
    bool keep = false;
    size_t k;

    for (k = 0; k < bt->n; k++)
        bt->found[k] = -1;
    for (i = 0; i < rows; i++) {
        int64_t seq = pg__col_i64(l, i, 0);
        if (i == 0 || seq != cur) {
            uint32_t f = smap_find(&bt->ids, PQgetvalue(l, i, 1), row_id,
                                   bt->rows);
            cur = seq;
            /* every id returned is one the batch asked for */
            keep = f != UINT32_MAX && bt->found[f] < 0;
            if (keep) {
                bt->fv[++nf] = (struct found){seq, i, 0};
                bt->found[f] = nf;
            }
        }
        if (keep && !PQgetisnull(l, i, 6))
            bt->fv[nf].n_scopes++;
    }
}

/* ------------------------------------------------------------------ */
/* The transaction                                                    */
/* ------------------------------------------------------------------ */

/* One statement of a pipeline: prepared (sql NULL) or plain text. */
struct step {
    enum pg_stmt st;
    const char *sql, *what;
    int n;
    const char *const *vals;
    const int *lens; /* as for pg__formats (NULL: all text) */
    PGresult *res;   /* on success */
};

/* The session no longer matches what we sent: drop it (a new one is
 * always in a known state, and the batch is safe to run again). */
static int out_of_step(struct pg *b, const char *what, enum pg_err *kind,
                       struct aur_error *err)
{
    pg__fail(b, err, what, PQstatus(b->conn) == CONNECTION_BAD
                               ? PQerrorMessage(b->conn)
                               : "protocol out of step");
    pg__down(b);
    *kind = PG_ERR_CONN;
    return AUR_E_JOURNAL;
}

/*
 * Send p[0..n) at once and then read their results: one round trip for
 * all (libpq's pipeline mode).  The server still runs them one after the
 * other, each with its own snapshot; after a failure it skips the rest.
 * Safe from a write/write deadlock: what is sent before the results are
 * read is either small or answered by small results.
 */
static int pipeline(struct pg *b, struct step *p, int n, enum pg_err *kind,
                    struct aur_error *err)
{
    PGconn *c = b->conn;
    PGresult *r;
    int i, rc = AUR_OK;

    if (!PQenterPipelineMode(c))
        return out_of_step(b, p[0].what, kind, err);
    for (i = 0; i < n; i++) {
        int fmts[PG_MAX_PARAMS];
        if (!(p[i].sql ? PQsendQueryParams(c, p[i].sql, 0, NULL, NULL, NULL,
                                           NULL, 0)
                       : PQsendQueryPrepared(
                             c, pg__stmt_name[p[i].st], p[i].n, p[i].vals,
                             p[i].lens, pg__formats(p[i].lens, p[i].n, fmts),
                             0)))
            return out_of_step(b, p[i].what, kind, err);
    }
    if (!PQpipelineSync(c))
        return out_of_step(b, p[0].what, kind, err);
    for (i = 0; i < n; i++) {
        ExecStatusType s;
        if (!(r = PQgetResult(c)))
            return out_of_step(b, p[i].what, kind, err);
        s = PQresultStatus(r);
        if (rc == AUR_OK && (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)) {
            p[i].res = r;
        } else {
            if (rc == AUR_OK) {
                rc = AUR_E_JOURNAL;
                *kind = pg__failed(b, r, p[i].what, err);
            }
            PQclear(r);
            if (!b->conn) /* gone: pg__failed closed it */
                return rc;
        }
        if ((r = PQgetResult(c))) { /* each statement ends with a NULL */
            PQclear(r);
            return out_of_step(b, p[i].what, kind, err);
        }
    }
    r = PQgetResult(c);
    if (PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
        PQclear(r);
        return out_of_step(b, p[0].what, kind, err);
    }
    PQclear(r);
    if (!PQexitPipelineMode(c))
        return out_of_step(b, p[0].what, kind, err);
    return rc;
}

/* End what is left of a failed transaction, if the session lives. */
static void rollback(struct pg *b)
{
    PGresult *r;
    if (!b->conn || PQtransactionStatus(b->conn) == PQTRANS_IDLE)
        return;
    r = PQexec(b->conn, "ROLLBACK");
    if (PQstatus(b->conn) == CONNECTION_BAD)
        pg__down(b);
    PQclear(r);
}

/* The arrays of the new rows (commits, then scope rows in row order and
 * within a row in scope order, each scope counting on from its max) and
 * the statements that write them, the head, NOTIFY and COMMIT. */
static int write_steps(struct pg *b, struct batch *bt, const int *results,
                       const int64_t *seqs, int64_t head, int64_t k,
                       const char **v, int *lens, char nums[2][24],
                       struct step *p, struct aur_error *err)
{
    struct pg_buf *s = b->scratch;
    size_t i, j;

    for (i = B_ID; i <= B_RSEQUENCE; i++)
        if (i != B_SCOPES)
            pg__arr_begin(&s[i], i == B_RSEQ || i == B_RSEQUENCE
                                     ? PG_OID_INT8
                                     : PG_OID_TEXT);
    for (i = 0; i < bt->n; i++) {
        const struct aur__jrow *w = &bt->rows[i];
        if (bt->first[i] != i || results[i] != AUR_OK)
            continue;
        pg__arr_text(&s[B_ID], w->commit_id, strlen(w->commit_id));
        pg__arr_text(&s[B_KIND], w->kind, strlen(w->kind));
        pg__arr_text(&s[B_SOURCE], w->source, strlen(w->source));
        pg__arr_text(&s[B_SUMMARY], w->summary, strlen(w->summary));
        pg__arr_text(&s[B_AT], w->occurred_at, strlen(w->occurred_at));
        pg__arr_text(&s[B_DATA], w->data, w->data_len);
        for (j = 0; j < w->n_scopes; j++) {
            uint32_t x = smap_find(&bt->sc, w->scopes[j], scope_at,
                                   bt->scopes);
            pg__arr_i64(&s[B_RSEQ], seqs[i]);
            pg__arr_text(&s[B_RSCOPE], w->scopes[j], strlen(w->scopes[j]));
            pg__arr_i64(&s[B_RSEQUENCE], bt->next[x]++);
        }
    }
    v[0] = pg__i64(nums[0], head);
    lens[0] = -1;
    for (i = B_ID; i <= B_DATA; i++) {
        v[1 + i - B_ID] = pg__arr_end(&s[i]);
        lens[1 + i - B_ID] = (int)s[i].len;
    }
    for (i = B_RSEQ; i <= B_RSEQUENCE; i++) {
        v[7 + i - B_RSEQ] = pg__arr_end(&s[i]);
        lens[7 + i - B_RSEQ] = (int)s[i].len;
    }
    v[10] = pg__i64(nums[1], head + k);
    lens[10] = -1;
    for (i = 0; i < 11; i++)
        if (!v[i])
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    p[0] = (struct step){PG_INS_COMMITS, NULL, "inserting commits", 7, v,
                         lens, NULL};
    p[1] = (struct step){PG_INS_SCOPES, NULL, "inserting scopes", 3, v + 7,
                         lens + 7, NULL};
    p[2] = (struct step){PG_SET_HEAD, NULL, "moving the head", 1, v + 10,
                         NULL, NULL};
    /* transactional: listeners hear it once the commit is visible, and
     * never of a batch that rolled back */
    p[3] = (struct step){0, "NOTIFY aurora_world", "notify", 0, NULL, NULL,
                         NULL};
    return AUR_OK;
}

/*
 * One try of the batch, in two round trips.  Every writer, on every host,
 * first locks world_head's one row, so writers run one at a time: seq
 * order is then commit order (a reader that saw head H never later finds
 * a commit <= H, which a sequence or max(seq) + 1 without the lock would
 * not give), and a scope's max read under the lock can be counted on from
 * by this writer alone.  Under READ COMMITTED each statement after the
 * lock sees what the writer before committed (the lock's own row is
 * re-read after the wait); under a stricter isolation the lock fails
 * with a serialization failure and the batch is retried.
 */
static int attempt(struct pg *b, struct batch *bt, int *results,
                   int64_t *seqs, enum pg_err *kind, struct aur_error *err)
{
    const char *v[11], *lv[2] = {b->scratch[B_LOOKUP].p,
                                 b->scratch[B_SCOPES].p};
    int lens[11], llens[2] = {(int)b->scratch[B_LOOKUP].len,
                              (int)b->scratch[B_SCOPES].len};
    char nums[2][24];
    struct step p1[4] = {
        {0, "BEGIN", "begin", 0, NULL, NULL, NULL},
        {PG_LOCK, NULL, "locking the head", 0, NULL, NULL, NULL},
        {PG_LOOKUP, NULL, "looking up ids", 1, lv, llens, NULL},
        {PG_SCOPE_MAX, NULL, "scope sequences", 1, lv + 1, llens + 1, NULL},
    };
    struct step p2[5];
    int64_t head, k = 0;
    size_t i;
    int rc, n2 = 0, row;

    memset(p2, 0, sizeof p2);
    *kind = PG_ERR_OTHER;
    rc = pipeline(b, p1, 4, kind, err);
    if (rc == AUR_OK && PQntuples(p1[1].res) != 1)
        rc = pg__fail(b, err, "locking the head", "world_head has no row");
    if (rc != AUR_OK)
        goto out;
    head = pg__col_i64(p1[1].res, 0, 0);
    index_found(bt, p1[2].res);
    for (i = 0; i < bt->n; i++) {
        uint32_t f = bt->first[i];
        bool same;
        if (bt->found[f] >= 0) {
            const struct found *fd = &bt->fv[bt->found[f]];
            same = same_stored(b, p1[2].res, fd, &bt->rows[i]);
            seqs[i] = same ? fd->seq : 0;
        } else if (f == i) {
            results[i] = AUR_OK;
            seqs[i] = head + ++k;
            continue;
        } else { /* a repeat of a row this call writes */
            same = same_row(b, &bt->rows[f], &bt->rows[i]);
            seqs[i] = same ? seqs[f] : 0;
        }
        results[i] = same ? AUR_DECLINE : AUR_E_CONFLICT;
    }
    for (i = 0; i < bt->n_scopes; i++)
        bt->next[i] = 1;
    for (row = 0; row < PQntuples(p1[3].res); row++) {
        int64_t ord = pg__col_i64(p1[3].res, row, 0);
        if (ord >= 1 && (size_t)ord <= bt->n_scopes)
            bt->next[ord - 1] = pg__col_i64(p1[3].res, row, 1) + 1;
    }
    if (k > 0) {
        rc = write_steps(b, bt, results, seqs, head, k, v, lens, nums, p2,
                         err);
        n2 = 4;
    }
    p2[n2++] = (struct step){0, "COMMIT", "commit", 0, NULL, NULL, NULL};
    if (rc == AUR_OK)
        rc = pipeline(b, p2, n2, kind, err);
    /* COMMIT of a transaction the server had aborted answers ROLLBACK */
    if (rc == AUR_OK && strcmp(PQcmdStatus(p2[n2 - 1].res), "COMMIT") != 0)
        rc = pg__fail(b, err, "commit", PQcmdStatus(p2[n2 - 1].res));
out:
    for (i = 0; i < 4; i++)
        PQclear(p1[i].res);
    for (i = 0; i < 5; i++)
        PQclear(p2[i].res);
    if (rc != AUR_OK)
        rollback(b);
    return rc;
}

int pg__append(void *h, const struct aur__jrow *rows, size_t n,
               int *results, int64_t *seqs, struct aur_error *err)
{
    struct pg *b = h;
    struct batch bt;
    enum pg_err kind = PG_ERR_OTHER;
    int64_t lost = 0; /* when this call first lost the session */
    int rc, serial = 0, relost = 0;

    if (n == 0)
        return AUR_OK;
    rc = batch_init(b, &bt, rows, n, err);
    while (rc == AUR_OK) {
        rc = pg__ready(b, true, err);
        if (rc != AUR_OK)
            break;
        rc = attempt(b, &bt, results, seqs, &kind, err);
        if (rc == AUR_OK || rc == AUR_E_NOMEM)
            break;
        /*
         * The session is gone (the handle is down; pg__ready reconnects
         * within the hold).  The whole batch is tried again, also after
         * a COMMIT whose answer was lost: commits are idempotent by id,
         * so rows the lost attempt did commit come back AUR_DECLINE with
         * their seq, and nothing is written twice.  The results are the
         * final attempt's, as journal_backend.h asks.  A session that is
         * lost again and again ends the call after wait_ms.
         */
        if (kind == PG_ERR_CONN) {
            int64_t now = pg__now_ms();
            if (!lost)
                lost = now;
            if (relost++ == 0 || now - lost < b->wait_ms) {
                rc = AUR_OK;
                continue;
            }
        } else if (kind == PG_ERR_RETRY && serial++ < SERIAL_RETRIES) {
            rc = AUR_OK;
            continue;
        }
    }
    batch_free(&bt);
    pg__forget_notifies(b);
    if (rc == AUR_E_JOURNAL)
        b->failures++;
    else if (rc == AUR_OK)
        aur_error_clear(err);
    return rc;
}
