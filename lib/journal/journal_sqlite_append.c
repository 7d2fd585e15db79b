/*
 * journal_sqlite_append.c - the SQLite backend's writes: rows committed
 * idempotently by commit_id (docs/journal.md).
 *
 * Every call is one BEGIN IMMEDIATE transaction: the look-up of the id,
 * the comparison and the insert see one state of the file even when
 * another process writes the same journal.  Per new commit: one look-up,
 * one INSERT, one INSERT per scope (a batch reads each scope's max
 * sequence once); cached statements, no snprintf.
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

/* One scope row of commit seq: sequence max + 1, from the cache if it
 * can, else by SQLite's subquery. */
static int insert_scope(struct aur__jsqlite *j, int64_t seq,
                        const char *scope, struct seq_cache *sc,
                        struct aur_error *err)
{
    struct seq_slot *slot = cache_slot(sc, scope);
    sqlite3_stmt *st;
    int64_t next = 0;
    int src, rc;

    if (slot && !slot->scope) {
        rc = scope_max(j, scope, &next, err);
        if (rc != AUR_OK)
            return rc;
        next++;
    } else if (slot) {
        next = slot->next;
    }
    st = j->st[slot ? AUR__JST_INSERT_AT : AUR__JST_INSERT_SCOPE];
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_text(st, 2, scope, -1, SQLITE_STATIC);
    if (slot)
        sqlite3_bind_int64(st, 3, next);
    src = sqlite3_step(st);
    sqlite3_reset(st);
    if (src != SQLITE_DONE)
        return aur__jsqlite_fail(j, src, "inserting scope", err);
    if (slot) {
        if (!slot->scope) {
            slot->scope = scope;
            sc->n++;
        }
        slot->next = next + 1;
    }
    return AUR_OK;
}

/* Insert r's row, then its scope rows. */
static int insert(struct aur__jsqlite *j, const struct aur__jrow *r,
                  int64_t *seq, struct seq_cache *sc, struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_INSERT];
    size_t i;
    int rc;

    sqlite3_bind_text(st, 1, r->commit_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->summary, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->occurred_at, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, r->data, (int)r->data_len, SQLITE_STATIC);
    rc = step_once(j, AUR__JST_INSERT, "inserting commit", err);
    if (rc != AUR_OK)
        return rc;
    *seq = sqlite3_last_insert_rowid(j->db);
    /* sorted order, so concurrent writers of overlapping scope sets take
     * sequences in one order (the transaction already serialises them) */
    for (i = 0; i < r->n_scopes; i++) {
        rc = insert_scope(j, *seq, r->scopes[i], sc, err);
        if (rc != AUR_OK)
            return rc;
    }
    return AUR_OK;
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
        if (same)
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
    rc = step_once(j, AUR__JST_BEGIN, "begin", err);
    for (i = 0; i < n && rc == AUR_OK; i++)
        rc = append_one(j, &rows[i], &sc, &seqs[i], &results[i], err);
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
