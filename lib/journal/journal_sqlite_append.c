/*
 * journal_append.c - validating and writing world commits, idempotently
 * by commit_id (README: The world journal).
 *
 * Every append is one BEGIN IMMEDIATE transaction (a batch shares one):
 * the look-up of the id, the comparison and the insert see one
 * state of the file even when another process writes the same journal.
 * Per new commit: one look-up, one INSERT, one INSERT per scope (a batch
 * reads each scope's max sequence once); cached statements, no snprintf.
 */
#include "aur_setup.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#include <json-c/json.h>

#include "journal_int.h"
#include "rfc3339.h"

/* A validated commit, ready to compare or insert.  Borrows c. */
struct prep {
    const struct aur_commit *c;
    const char **scopes; /* sorted, deduplicated; stack_scopes or heap */
    size_t n_scopes;
    const char *stack_scopes[16];
    char occurred_at[AUR__UTC_SIZE];
    const char *data_text; /* json-c's buffer inside c->data, or "{}" */
    size_t data_len;
};

/* ------------------------------------------------------------------ */
/* Validation                                                         */
/* ------------------------------------------------------------------ */

static bool blank(const char *s)
{
    if (!s)
        return true;
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

/* Big integers kept exact by jsonx are doubles with a serializer of their
 * own (marked by userdata) and may hold inf; only plain non-finite doubles
 * would serialise as invalid JSON. */
static bool data_ok(struct json_object *v, int depth)
{
    size_t i, n;

    switch (json_object_get_type(v)) {
    case json_type_double:
        return json_object_get_userdata(v) ||
               isfinite(json_object_get_double(v));
    case json_type_array:
        if (depth >= AUR__JOURNAL_MAX_DEPTH)
            return false;
        n = json_object_array_length(v);
        for (i = 0; i < n; i++)
            if (!data_ok(json_object_array_get_idx(v, i), depth + 1))
                return false;
        return true;
    case json_type_object:
        if (depth >= AUR__JOURNAL_MAX_DEPTH)
            return false;
        {
            json_object_object_foreach(v, key, val)
            {
                (void)key;
                if (!data_ok(val, depth + 1))
                    return false;
            }
        }
        return true;
    default:
        return true;
    }
}

/* Commit times are UTC ("Z") only: an event's offset is converted by
 * ext-world-events before it gets here.  Up to nine fraction digits. */
static bool parse_time(const char *s, char out[AUR__UTC_SIZE])
{
    return aur__rfc3339_utc(s, strlen(s), false, 9, out);
}

static void now_utc(char out[AUR__UTC_SIZE])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    aur__utc_format(ts.tv_sec, ts.tv_nsec / 1000, out);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void prep_free(struct prep *p)
{
    if (p->scopes != p->stack_scopes)
        free(p->scopes);
}

static int prepare(const struct aur_commit *c, struct prep *p,
                   struct aur_error *err)
{
    size_t i, n;

    memset(p, 0, sizeof *p);
    p->scopes = p->stack_scopes;
    if (!c)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: missing");
    if (blank(c->commit_id))
        return aur_fail(err, AUR_E_INVAL, 0, "commit: blank commit_id");
    if (blank(c->kind))
        return aur_fail(err, AUR_E_INVAL, 0, "commit: blank kind");
    if (blank(c->source))
        return aur_fail(err, AUR_E_INVAL, 0, "commit: blank source");
    if (blank(c->summary))
        return aur_fail(err, AUR_E_INVAL, 0, "commit: blank summary");
    if (c->n_scopes == 0 || !c->scopes)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: no scope");
    if (c->n_scopes > AUR__JOURNAL_MAX_SCOPES)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: more than %d scopes",
                        AUR__JOURNAL_MAX_SCOPES);
    for (i = 0; i < c->n_scopes; i++)
        if (blank(c->scopes[i]))
            return aur_fail(err, AUR_E_INVAL, 0, "commit: blank scope");
    if (c->data && (!json_object_is_type(c->data, json_type_object) ||
                    !data_ok(c->data, 1)))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "commit: data must be a JSON object (finite numbers, "
                        "nesting <= %d)", AUR__JOURNAL_MAX_DEPTH);
    if (!c->occurred_at)
        now_utc(p->occurred_at);
    else if (!parse_time(c->occurred_at, p->occurred_at))
        return aur_fail(err, AUR_E_INVAL, 0,
                        "commit: occurred_at is not an RFC 3339 UTC time");

    if (c->n_scopes > AUR__ARRAY_LEN(p->stack_scopes)) {
        p->scopes = malloc(c->n_scopes * sizeof *p->scopes);
        if (!p->scopes) {
            p->scopes = p->stack_scopes;
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        }
    }
    memcpy(p->scopes, c->scopes, c->n_scopes * sizeof *p->scopes);
    qsort(p->scopes, c->n_scopes, sizeof *p->scopes, cmp_str);
    for (i = 1, n = 1; i < c->n_scopes; i++)
        if (strcmp(p->scopes[i], p->scopes[n - 1]) != 0)
            p->scopes[n++] = p->scopes[i];
    p->n_scopes = n;
    p->c = c;
    return AUR_OK;
}

/* ------------------------------------------------------------------ */
/* Writing (j->mu held)                                               */
/* ------------------------------------------------------------------ */

/* Column text, "" for NULL (the columns are NOT NULL; NULL means OOM). */
static const char *col_text(sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? s : "";
}

static int step_once(struct aur__journal *j, enum aur__jst id,
                     const char *what, struct aur_error *err)
{
    sqlite3_stmt *st = j->st[id];
    int src = sqlite3_step(st);
    int rc = AUR_OK;
    if (src != SQLITE_DONE)
        rc = aur__journal_db_fail(j, src, what, err);
    sqlite3_reset(st);
    return rc;
}

static void rollback(struct aur__journal *j)
{
    /* an I/O error may already have ended the transaction */
    if (!sqlite3_get_autocommit(j->db)) {
        sqlite3_step(j->st[AUR__JST_ROLLBACK]);
        sqlite3_reset(j->st[AUR__JST_ROLLBACK]);
    }
}

static int finish(struct aur__journal *j, int rc, struct aur_error *err)
{
    if (rc == AUR_OK || rc == AUR_E_CONFLICT) {
        int crc = step_once(j, AUR__JST_COMMIT, "commit", err);
        if (crc == AUR_OK)
            return rc;
        rc = crc;
    }
    rollback(j);
    return rc;
}

/* Stored data text st[col] vs p's: equal text is the common case; else the
 * same object with other key order still counts as equal. */
static int same_data(sqlite3_stmt *st, int col, const struct prep *p,
                     bool *same, struct aur_error *err)
{
    const char *text = (const char *)sqlite3_column_text(st, col);
    size_t len = (size_t)sqlite3_column_bytes(st, col);
    struct json_object *old = NULL, *empty = NULL;
    int rc;

    if (text && len == p->data_len && memcmp(text, p->data_text, len) == 0) {
        *same = true;
        return AUR_OK;
    }
    rc = aur__journal_parse_data(text ? text : "", len, &old, err);
    if (rc != AUR_OK)
        return rc;
    if (!p->c->data && !(empty = json_object_new_object())) {
        json_object_put(old);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    *same = json_object_equal(old, p->c->data ? p->c->data : empty) != 0;
    json_object_put(old);
    json_object_put(empty);
    return AUR_OK;
}

static int same_scopes(struct aur__journal *j, int64_t seq,
                       const struct prep *p, bool *same,
                       struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_SCOPES];
    size_t i = 0;
    int src, rc = AUR_OK;

    *same = true;
    sqlite3_bind_int64(st, 1, seq);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (i >= p->n_scopes ||
            strcmp(col_text(st, 0), p->scopes[i]) != 0) {
            *same = false;
            break;
        }
        i++;
    }
    if (*same && src != SQLITE_DONE)
        rc = aur__journal_db_fail(j, src, "reading scopes", err);
    else if (*same && i != p->n_scopes)
        *same = false;
    sqlite3_reset(st);
    return rc;
}

/*
 * Next sequence of each scope within one batch's transaction: the write
 * lock keeps every other writer out until COMMIT, so after one read of a
 * scope's max the batch can count on by itself.  Scopes are borrowed
 * from the batch's commits; the cache dies with the transaction.  Full =
 * the rest ask SQLite each time.
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
    if (!sc || !sc->v)
        return NULL;
    for (i = (size_t)hash_str(scope) & (sc->cap - 1); sc->v[i].scope;
         i = (i + 1) & (sc->cap - 1))
        if (strcmp(sc->v[i].scope, scope) == 0)
            return &sc->v[i];
    return sc->n * 2 < sc->cap ? &sc->v[i] : NULL;
}

static int scope_max(struct aur__journal *j, const char *scope, int64_t *out,
                     struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_SCOPE_MAX];
    int src, rc = AUR_OK;
    sqlite3_bind_text(st, 1, scope, -1, SQLITE_STATIC);
    src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else
        rc = aur__journal_db_fail(j, src, "reading scope sequence", err);
    sqlite3_reset(st);
    return rc;
}

/* One scope row of commit seq: sequence max + 1, from the cache if it
 * can, else by SQLite's subquery. */
static int insert_scope(struct aur__journal *j, int64_t seq,
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
        return aur__journal_db_fail(j, src, "inserting scope", err);
    if (slot) {
        if (!slot->scope) {
            slot->scope = scope;
            sc->n++;
        }
        slot->next = next + 1;
    }
    return AUR_OK;
}

/* Insert p's row, then its scope rows. */
static int insert(struct aur__journal *j, const struct prep *p, int64_t *seq,
                  struct seq_cache *sc, struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_INSERT];
    size_t i;
    int rc;

    sqlite3_bind_text(st, 1, p->c->commit_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->c->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->c->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, p->c->summary, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, p->occurred_at, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, p->data_text, (int)p->data_len, SQLITE_STATIC);
    rc = step_once(j, AUR__JST_INSERT, "inserting commit", err);
    if (rc != AUR_OK)
        return rc;
    *seq = sqlite3_last_insert_rowid(j->db);
    /* sorted order, so concurrent writers of overlapping scope sets take
     * sequences in one order (the transaction already serialises them) */
    for (i = 0; i < p->n_scopes; i++) {
        rc = insert_scope(j, *seq, p->scopes[i], sc, err);
        if (rc != AUR_OK)
            return rc;
    }
    return AUR_OK;
}

/* Append p inside the open transaction. */
static int append_in_txn(struct aur__journal *j, struct prep *p,
                         struct seq_cache *sc, int64_t *seq, int *inserted,
                         struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_FIND];
    const struct aur_commit *c = p->c;
    int64_t old_seq = 0;
    bool same = false;
    int src, rc = AUR_OK;

    *inserted = 0;
    /* serialised under the lock: json-c caches the text inside the object,
     * so two appends of one shared object must not race */
    if (c->data) {
        size_t len = 0;
        p->data_text = json_object_to_json_string_length(
            c->data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
            &len);
        if (!p->data_text)
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        p->data_len = len;
    } else {
        p->data_text = "{}";
        p->data_len = 2;
    }
    if (p->data_len > INT32_MAX)
        return aur_fail(err, AUR_E_INVAL, 0, "commit: data too large");

    sqlite3_bind_text(st, 1, c->commit_id, -1, SQLITE_STATIC);
    src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        old_seq = sqlite3_column_int64(st, 0);
        same = strcmp(col_text(st, 1), c->kind) == 0 &&
               strcmp(col_text(st, 2), c->source) == 0 &&
               strcmp(col_text(st, 3), c->summary) == 0;
        if (same)
            rc = same_data(st, 4, p, &same, err);
    } else if (src != SQLITE_DONE) {
        rc = aur__journal_db_fail(j, src, "looking up commit", err);
    }
    sqlite3_reset(st);
    if (rc != AUR_OK)
        return rc;
    if (src == SQLITE_ROW) {
        if (same)
            rc = same_scopes(j, old_seq, p, &same, err);
        if (rc != AUR_OK)
            return rc;
        if (!same)
            return aur_fail(err, AUR_E_CONFLICT, 0,
                            "commit id already used with different content: "
                            "%s", c->commit_id);
        *seq = old_seq;
        return AUR_OK;
    }
    rc = insert(j, p, seq, sc, err);
    if (rc == AUR_OK)
        *inserted = 1;
    return rc;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                       */
/* ------------------------------------------------------------------ */

int aur__journal_append(struct aur__journal *j, const struct aur_commit *c,
                        int64_t *seq, int *inserted, struct aur_error *err)
{
    struct prep p;
    int64_t s = 0;
    int ins = 0, rc;

    if (!j)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: not open");
    rc = prepare(c, &p, err);
    if (rc != AUR_OK)
        return rc;
    pthread_mutex_lock(&j->mu);
    rc = step_once(j, AUR__JST_BEGIN, "begin", err);
    if (rc == AUR_OK)
        rc = finish(j, append_in_txn(j, &p, NULL, &s, &ins, err), err);
    pthread_mutex_unlock(&j->mu);
    prep_free(&p);
    if (rc == AUR_OK) {
        if (seq)
            *seq = s;
        if (inserted)
            *inserted = ins;
    }
    return rc;
}

int aur__journal_append_batch(struct aur__journal *j,
                              const struct aur_commit *const *v, size_t n,
                              int *results, struct aur_error *err)
{
    struct seq_cache sc = {0};
    size_t i;
    int rc;

    if (!j || (n && (!v || !results)))
        return aur_fail(err, AUR_E_INVAL, 0, "journal: bad arguments");
    if (n == 0)
        return AUR_OK;
    /* room for two scopes a commit at half load; no memory = no cache */
    for (sc.cap = 16; sc.cap < 4 * n && sc.cap < (1u << 20);)
        sc.cap *= 2;
    sc.v = calloc(sc.cap, sizeof *sc.v);
    pthread_mutex_lock(&j->mu);
    rc = step_once(j, AUR__JST_BEGIN, "begin", err);
    for (i = 0; i < n && rc == AUR_OK; i++) {
        struct prep p;
        int64_t s;
        int ins = 0, r = prepare(v[i], &p, NULL);
        if (r == AUR_OK)
            r = append_in_txn(j, &p, &sc, &s, &ins, err);
        prep_free(&p);
        /* conflicts are detected before anything of the item is written,
         * so only a storage failure needs the whole batch undone */
        if (r == AUR_E_JOURNAL || r == AUR_E_NOMEM)
            rc = r;
        else
            results[i] = r != AUR_OK ? r : ins ? AUR_OK : AUR_DECLINE;
    }
    if (rc == AUR_OK) {
        rc = step_once(j, AUR__JST_COMMIT, "commit", err);
        if (rc != AUR_OK)
            rollback(j);
    } else {
        rollback(j);
    }
    pthread_mutex_unlock(&j->mu);
    free(sc.v);
    if (rc != AUR_OK)
        for (i = 0; i < n; i++)
            results[i] = rc;
    else
        aur_error_clear(err);
    return rc;
}
