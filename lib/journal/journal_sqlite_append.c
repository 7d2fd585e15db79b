/*
 * journal_sqlite_append.c - the SQLite backend's writes: rows committed
 * idempotently by commit_id (docs/journal.md).
 *
 * Every call is one BEGIN IMMEDIATE transaction: the look-up of the id,
 * the comparison and the insert see one state of the file even when
 * another process writes the same journal.
 *
 * A statement's own cost (its cursors, its statement journal, the
 * AUTOINCREMENT counter read and written, the halt) was most of a small
 * commit's, so rows go in AUR__JSQ_ROWS at a time with one multi-row
 * INSERT, and scope rows AUR__JSQ_SCOPE_ROWS at a time.  New ids are the
 * common case, so a chunk is inserted without looking its ids up first:
 * the UNIQUE index on commit_id is the look-up.  If any id of the chunk
 * is present (or repeated inside it), the statement fails as a whole,
 * SQLite undoes it (AUTOINCREMENT included, so seq stays dense) and the
 * chunk goes row by row: look-up, comparison, insert.  A chunk's rows
 * get consecutive seqs (one statement under the write lock).
 */
#include "aur_setup.h"

#include "journal_sqlite.h"

/* Column text, "" for NULL (the columns are NOT NULL; NULL means OOM). */
static const char *col_text(sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? s : "";
}

static int step_once(struct aur__jsqlite *j, enum aur__jst id,
                     const char *what, struct aur_error *err)
{
    sqlite3_stmt *st = j->st[id];
    int src = sqlite3_step(st);
    int rc = AUR_OK;
    if (src != SQLITE_DONE)
        rc = aur__jsqlite_fail(j, src, what, err);
    sqlite3_reset(st);
    return rc;
}

static void rollback(struct aur__jsqlite *j)
{
    /* an I/O error may already have ended the transaction */
    if (!sqlite3_get_autocommit(j->db)) {
        sqlite3_step(j->st[AUR__JST_ROLLBACK]);
        sqlite3_reset(j->st[AUR__JST_ROLLBACK]);
    }
}

static int same_scopes(struct aur__jsqlite *j, int64_t seq,
                       const struct aur__jrow *r, bool *same,
                       struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_SCOPES];
    size_t i = 0;
    int src, rc = AUR_OK;

    *same = true;
    sqlite3_bind_int64(st, 1, seq);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (i >= r->n_scopes || strcmp(col_text(st, 0), r->scopes[i]) != 0) {
            *same = false;
            break;
        }
        i++;
    }
    if (*same && src != SQLITE_DONE)
        rc = aur__jsqlite_fail(j, src, "reading scopes", err);
    else if (*same && i != r->n_scopes)
        *same = false;
    sqlite3_reset(st);
    return rc;
}

/*
 * Next sequence of each scope within one call's transaction: the write
 * lock keeps every other writer out until COMMIT, so after one read of a
 * scope's max the batch can count on by itself.  Scopes are borrowed
 * from the rows; the cache dies with the transaction.  Full = the rest
 * ask SQLite each time.
 */
struct seq_cache {
    struct seq_slot {
        const char *scope;
        int64_t next;
    } *v;
    size_t cap, n; /* cap a power of two */
    /* scope rows whose sequence is known, not yet inserted: flushed
     * AUR__JSQ_SCOPE_ROWS at a time, and whole before anything reads
     * scope rows by commit (same_scopes) and before COMMIT */
    struct scope_row {
        int64_t commit_seq, sequence;
        const char *scope;
    } pending[AUR__JSQ_SCOPE_ROWS];
    size_t n_pending;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of scope (found or free), or NULL when the cache is full. */
static struct seq_slot *cache_slot(struct seq_cache *sc, const char *scope)
{
    size_t i;
    if (!sc->v)
        return NULL;
    for (i = (size_t)hash_str(scope) & (sc->cap - 1); sc->v[i].scope;
         i = (i + 1) & (sc->cap - 1))
        if (strcmp(sc->v[i].scope, scope) == 0)
            return &sc->v[i];
    return sc->n * 2 < sc->cap ? &sc->v[i] : NULL;
}

static int scope_max(struct aur__jsqlite *j, const char *scope, int64_t *out,
                     struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_SCOPE_MAX];
    int src, rc = AUR_OK;
    sqlite3_bind_text(st, 1, scope, -1, SQLITE_STATIC);
    src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        rc = aur__jsqlite_fail(j, src, "reading scope sequence", err);
    sqlite3_reset(st);
    return rc;
}

/* Insert the pending scope rows: a full buffer with one statement, a
 * partial one row by row. */
static int flush_scopes(struct aur__jsqlite *j, struct seq_cache *sc,
                        struct aur_error *err)
{
    bool full = sc->n_pending == AUR__JSQ_SCOPE_ROWS;
    sqlite3_stmt *st;
    int src = SQLITE_DONE, rc;

    if (full && (rc = aur__jsqlite_need(j, AUR__JSQ_BULK, err)) != AUR_OK)
        return rc;
    st = j->st[full ? AUR__JST_INSERT_AT_ROWS : AUR__JST_INSERT_AT];

    for (size_t i = 0; i < sc->n_pending && src == SQLITE_DONE; i++) {
        const struct scope_row *r = &sc->pending[i];
        int at = full ? (int)i * 3 : 0;
        sqlite3_bind_int64(st, at + 1, r->commit_seq);
        sqlite3_bind_text(st, at + 2, r->scope, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, at + 3, r->sequence);
        if (!full || i + 1 == sc->n_pending) {
            src = sqlite3_step(st);
            sqlite3_reset(st);
        }
    }
    sc->n_pending = 0;
    if (src != SQLITE_DONE)
        return aur__jsqlite_fail(j, src, "inserting scope", err);
    return AUR_OK;
}

/* One scope row of commit seq: sequence max + 1, from the cache if it
 * can (the row then waits in the buffer), else at once by SQLite's
 * subquery (a scope never cached has no row in the buffer). */
static int insert_scope(struct aur__jsqlite *j, int64_t seq,
                        const char *scope, struct seq_cache *sc,
                        struct aur_error *err)
{
    struct seq_slot *slot = cache_slot(sc, scope);
    sqlite3_stmt *st = j->st[AUR__JST_INSERT_SCOPE];
    int64_t next = 0;
    int src, rc;

    if (!slot) {
        sqlite3_bind_int64(st, 1, seq);
        sqlite3_bind_text(st, 2, scope, -1, SQLITE_STATIC);
        src = sqlite3_step(st);
        sqlite3_reset(st);
        if (src != SQLITE_DONE)
            return aur__jsqlite_fail(j, src, "inserting scope", err);
        return AUR_OK;
    }
    if (!slot->scope) {
        rc = scope_max(j, scope, &next, err);
        if (rc != AUR_OK)
            return rc;
        slot->scope = scope;
        slot->next = next + 1;
        sc->n++;
    }
    sc->pending[sc->n_pending++] = (struct scope_row){seq, slot->next++,
                                                      scope};
    if (sc->n_pending == AUR__JSQ_SCOPE_ROWS)
        return flush_scopes(j, sc, err);
    return AUR_OK;
}

/* r's scope rows, in sorted order, so concurrent writers of overlapping
 * scope sets take sequences in one order (the transaction already
 * serialises them). */
static int insert_scopes(struct aur__jsqlite *j, const struct aur__jrow *r,
                         int64_t seq, struct seq_cache *sc,
                         struct aur_error *err)
{
    int rc = AUR_OK;
    for (size_t i = 0; i < r->n_scopes && rc == AUR_OK; i++)
        rc = insert_scope(j, seq, r->scopes[i], sc, err);
    return rc;
}

static void bind_row(sqlite3_stmt *st, int at, const struct aur__jrow *r)
{
    sqlite3_bind_text(st, at + 1, r->commit_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, at + 2, r->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, at + 3, r->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, at + 4, r->summary, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, at + 5, r->occurred_at, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, at + 6, r->data, (int)r->data_len, SQLITE_STATIC);
}

/* Insert r's row, then its scope rows. */
static int insert(struct aur__jsqlite *j, const struct aur__jrow *r,
                  int64_t *seq, struct seq_cache *sc, struct aur_error *err)
{
    int rc;

    bind_row(j->st[AUR__JST_INSERT], 0, r);
    rc = step_once(j, AUR__JST_INSERT, "inserting commit", err);
    if (rc != AUR_OK)
        return rc;
    *seq = sqlite3_last_insert_rowid(j->db);
    return insert_scopes(j, r, *seq, sc, err);
}

/*
 * Insert rows[0..AUR__JSQ_ROWS) with one statement, all new: *done =
 * true, results and seqs set.  A constraint failure (an id present or
 * repeated) leaves nothing of it and *done = false: the caller goes row
 * by row.
 */
static int insert_chunk(struct aur__jsqlite *j, const struct aur__jrow *rows,
                        struct seq_cache *sc, int64_t *seqs, int *results,
                        bool *done, struct aur_error *err)
{
    sqlite3_stmt *st;
    int64_t first;
    int src, rc = aur__jsqlite_need(j, AUR__JSQ_BULK, err);

    *done = false;
    if (rc != AUR_OK)
        return rc;
    st = j->st[AUR__JST_INSERT_ROWS];
    for (size_t i = 0; i < AUR__JSQ_ROWS; i++)
        bind_row(st, (int)i * 6, &rows[i]);
    src = sqlite3_step(st);
    sqlite3_reset(st);
    if ((src & 0xff) == SQLITE_CONSTRAINT)
        return AUR_OK;
    if (src != SQLITE_DONE)
        return aur__jsqlite_fail(j, src, "inserting commits", err);
    *done = true;
    first = sqlite3_last_insert_rowid(j->db) - (AUR__JSQ_ROWS - 1);
    for (size_t i = 0; i < AUR__JSQ_ROWS && rc == AUR_OK; i++) {
        seqs[i] = first + (int64_t)i;
        results[i] = AUR_OK;
        rc = insert_scopes(j, &rows[i], seqs[i], sc, err);
    }
    return rc;
}

/* Append r inside the open transaction: *result AUR_OK (inserted),
 * AUR_DECLINE (present, same) or AUR_E_CONFLICT. */
static int append_one(struct aur__jsqlite *j, const struct aur__jrow *r,
                      struct seq_cache *sc, int64_t *seq, int *result,
                      struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_FIND];
    int64_t old_seq = 0;
    bool same = false;
    int src, rc = AUR_OK;

    sqlite3_bind_text(st, 1, r->commit_id, -1, SQLITE_STATIC);
    src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        old_seq = sqlite3_column_int64(st, 0);
        same = strcmp(col_text(st, 1), r->kind) == 0 &&
               strcmp(col_text(st, 2), r->source) == 0 &&
               strcmp(col_text(st, 3), r->summary) == 0 &&
               j->data_equal(col_text(st, 4),
                             (size_t)sqlite3_column_bytes(st, 4), r->data,
                             r->data_len);
    } else if (src != SQLITE_DONE) {
        rc = aur__jsqlite_fail(j, src, "looking up commit", err);
    }
    sqlite3_reset(st);
    if (rc != AUR_OK)
        return rc;
    if (src == SQLITE_ROW) {
        /* the present commit may be one of this call's, its scope rows
         * still in the buffer */
        if (same && sc->n_pending)
            rc = flush_scopes(j, sc, err);
        if (same && rc == AUR_OK)
            rc = same_scopes(j, old_seq, r, &same, err);
        if (rc != AUR_OK)
            return rc;
        *seq = same ? old_seq : 0;
        *result = same ? AUR_DECLINE : AUR_E_CONFLICT;
        return AUR_OK;
    }
    rc = insert(j, r, seq, sc, err);
    *result = AUR_OK;
    return rc;
}

int aur__jsqlite_append(void *b, const struct aur__jrow *rows, size_t n,
                        int *results, int64_t *seqs, struct aur_error *err)
{
    struct aur__jsqlite *j = b;
    struct seq_cache sc = {0};
    size_t i;
    int rc;

    /* one row needs no cache; else room for two scopes a row at half
     * load (no memory = no cache) */
    if (n > 1) {
        for (sc.cap = 16; sc.cap < 4 * n && sc.cap < (1u << 20);)
            sc.cap *= 2;
        sc.v = calloc(sc.cap, sizeof *sc.v);
    }
    rc = aur__jsqlite_need(j, AUR__JSQ_WRITE, err);
    if (rc == AUR_OK)
        rc = step_once(j, AUR__JST_BEGIN, "begin", err);
    for (i = 0; i < n && rc == AUR_OK;) {
        size_t end = i + 1;
        bool done = false;
        if (n - i >= AUR__JSQ_ROWS) {
            end = i + AUR__JSQ_ROWS;
            rc = insert_chunk(j, &rows[i], &sc, &seqs[i], &results[i],
                              &done, err);
        }
        for (; !done && rc == AUR_OK && i < end; i++)
            rc = append_one(j, &rows[i], &sc, &seqs[i], &results[i], err);
        i = end;
    }
    if (rc == AUR_OK && sc.n_pending)
        rc = flush_scopes(j, &sc, err);
    if (rc == AUR_OK) {
        rc = step_once(j, AUR__JST_COMMIT, "commit", err);
        if (rc != AUR_OK)
            rollback(j);
    } else {
        rollback(j);
    }
    free(sc.v);
    return rc;
}
