/*
 * journal_sqlite.c - the SQLite backend of the world journal: opening the
 * file, its schema migrations and the read side (docs/journal.md).
 */
#include "aur_setup.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "journal_sqlite.h"

/* ------------------------------------------------------------------ */
/* Schema                                                             */
/* ------------------------------------------------------------------ */

/*
 * migrations[v] takes a database from version v to v + 1; the supported
 * version is the number of steps.  Append steps, never edit one: a file
 * written by an older host replays only the steps it lacks.  The world
 * tables are created without IF NOT EXISTS so that a foreign database
 * that happens to have a table of that name is refused, not misread.
 */
static const char *const migrations[] = {
    /* v0 -> v1 */
    "CREATE TABLE IF NOT EXISTS schema_meta("
    " singleton INTEGER PRIMARY KEY CHECK(singleton = 1),"
    " version INTEGER NOT NULL);"
    "CREATE TABLE world_commits("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " commit_id TEXT UNIQUE NOT NULL,"
    " kind TEXT NOT NULL,"
    " source TEXT NOT NULL,"
    " summary TEXT NOT NULL,"
    " occurred_at TEXT NOT NULL,"
    " data TEXT NOT NULL);"
    "CREATE TABLE world_commit_scopes("
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"
    " scope TEXT NOT NULL,"
    " sequence INTEGER NOT NULL,"
    " UNIQUE(scope, sequence),"
    " UNIQUE(commit_seq, scope));"
    /* the based-on frontier: always empty for an MCP host, kept so the
     * file has the shape of a full world journal */
    "CREATE TABLE world_commit_bases("
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"
    " scope TEXT NOT NULL,"
    " sequence INTEGER NOT NULL,"
    " UNIQUE(commit_seq, scope));",
    /* v1 -> v2: scope rows keyed by (scope, sequence) with no row id, and
     * a second index on commit_seq alone, as on PostgreSQL: two b-trees
     * a row instead of three.  A commit's scopes are distinct by
     * construction (the front dedups them), and the index's entries end
     * with the key, so a commit's rows still come out ordered by scope. */
    "CREATE TABLE world_commit_scopes_v2("
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"
    " scope TEXT NOT NULL,"
    " sequence INTEGER NOT NULL,"
    " PRIMARY KEY(scope, sequence)) WITHOUT ROWID;"
    "INSERT INTO world_commit_scopes_v2(commit_seq, scope, sequence)"
    " SELECT commit_seq, scope, sequence FROM world_commit_scopes"
    " ORDER BY scope, sequence;"
    "DROP TABLE world_commit_scopes;"
    "ALTER TABLE world_commit_scopes_v2 RENAME TO world_commit_scopes;"
    "CREATE INDEX world_commit_scopes_commit"
    " ON world_commit_scopes(commit_seq);",
    /* v2 -> v3: the same table with its key's columns declared first, in
     * the key's order.  SQLite 3.40.0 to 3.41.0 (Debian 12 has 3.40.1)
     * report a NULL in every row's first column from PRAGMA
     * integrity_check and quick_check when a WITHOUT ROWID table declares
     * a non-key column before its key: the data was sound, but an
     * operator checking the file after a crash was told it was not. */
    "CREATE TABLE world_commit_scopes_v3("
    " scope TEXT NOT NULL,"
    " sequence INTEGER NOT NULL,"
    " commit_seq INTEGER NOT NULL REFERENCES world_commits(seq),"
    " PRIMARY KEY(scope, sequence)) WITHOUT ROWID;"
    "INSERT INTO world_commit_scopes_v3(scope, sequence, commit_seq)"
    " SELECT scope, sequence, commit_seq FROM world_commit_scopes"
    " ORDER BY scope, sequence;"
    "DROP TABLE world_commit_scopes;"
    "ALTER TABLE world_commit_scopes_v3 RENAME TO world_commit_scopes;"
    "CREATE INDEX world_commit_scopes_commit"
    " ON world_commit_scopes(commit_seq);",
};

#define SCHEMA_VERSION ((int64_t)AUR__ARRAY_LEN(migrations))

#define PAGE_COLS "seq, commit_id, kind, source, summary, occurred_at, data"

/* The one-row and multi-row commit inserts share their head. */
#define COMMIT_INTO                                                         \
    "INSERT INTO world_commits(commit_id, kind, source, summary,"          \
    " occurred_at, data) VALUES "
#define SCOPE_COLS "world_commit_scopes(commit_seq, scope, sequence) VALUES "
#define SCOPE_INTO "INSERT INTO " SCOPE_COLS
/* The multi-row scope insert is OR FAIL: a failed row leaves the rows
 * before it in place instead of undoing the statement, so SQLite keeps
 * no statement journal for it (a savepoint, copies of the pages it
 * touches, their release: 12 % of the writer thread's instructions).
 * Nothing is kept half: any failure in an append rolls the whole
 * transaction back (check_journal
 * batch_failure_inside_a_scope_insert_undoes_all).  The commits' insert
 * keeps the default (ABORT): a chunk with an id already present must
 * leave nothing, AUTOINCREMENT included, and go row by row. */
#define SCOPE_ROWS_INTO "INSERT OR FAIL INTO " SCOPE_COLS

static const char *const stmt_sql[AUR__JST_N] = {
    [AUR__JST_BEGIN] = "BEGIN IMMEDIATE",
    [AUR__JST_COMMIT] = "COMMIT",
    [AUR__JST_ROLLBACK] = "ROLLBACK",
    [AUR__JST_FIND] = "SELECT seq, kind, source, summary, data"
                      " FROM world_commits WHERE commit_id = ?1",
    [AUR__JST_SCOPES] = "SELECT scope, sequence FROM world_commit_scopes"
                        " WHERE commit_seq = ?1 ORDER BY scope",
    /* Not OR IGNORE (which would save the look-up before it): an ignored
     * insert still uses up an AUTOINCREMENT value, and seq must stay
     * dense. */
    [AUR__JST_INSERT] = COMMIT_INTO "(?1, ?2, ?3, ?4, ?5, ?6)",
    /* VALUES with a scalar subquery, not INSERT ... SELECT: reading the
     * table being inserted into makes SQLite buffer the SELECT in an
     * ephemeral table, which cost more than the rest of the insert */
    [AUR__JST_INSERT_SCOPE] =
        SCOPE_INTO "(?1, ?2, (SELECT COALESCE(MAX(sequence), 0) + 1"
        " FROM world_commit_scopes WHERE scope = ?2))",
    /* a batch reads each scope's max once and counts on from there */
    [AUR__JST_SCOPE_MAX] = "SELECT COALESCE(MAX(sequence), 0)"
                           " FROM world_commit_scopes WHERE scope = ?1",
    [AUR__JST_INSERT_AT] = SCOPE_INTO "(?1, ?2, ?3)",
    [AUR__JST_COUNT] = "SELECT COUNT(*) FROM world_commits",
    [AUR__JST_MAX_SEQ] = "SELECT COALESCE(MAX(seq), 0) FROM world_commits",
    [AUR__JST_PAGE] = "SELECT " PAGE_COLS " FROM world_commits"
                      " WHERE seq > ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3",
    [AUR__JST_PAGE_SCOPE] =
        "SELECT " PAGE_COLS " FROM world_commits AS c"
        " WHERE seq > ?1 AND seq <= ?2 AND EXISTS (SELECT 1"
        " FROM world_commit_scopes AS s WHERE s.commit_seq = c.seq"
        " AND s.scope = ?4) ORDER BY seq LIMIT ?3",
    /* [AUR__JST_INSERT_ROWS], [AUR__JST_INSERT_AT_ROWS]: written by
     * rows_sql when first needed */
};

/* "<head><tuple>,<tuple>,..." with n tuples (malloc'd), or NULL:
 * the multi-row forms of AUR__JST_INSERT and AUR__JST_INSERT_AT. */
static char *rows_sql(const char *head, const char *tuple, size_t n)
{
    size_t hl = strlen(head), tl = strlen(tuple);
    char *sql = malloc(hl + n * (tl + 1) + 1), *at;
    if (!sql)
        return NULL;
    memcpy(sql, head, hl);
    at = sql + hl;
    for (size_t i = 0; i < n; i++) {
        if (i)
            *at++ = ',';
        memcpy(at, tuple, tl);
        at += tl;
    }
    *at = '\0';
    return sql;
}

/*
 * Statements are prepared on first use, a group at a time (the masks in
 * journal_sqlite.h): a one-off run such as discover writes a few
 * lifecycle commits and reads nothing, and preparing all of them at
 * open, the two multi-row INSERTs among them, was 1.5 M of the 5.3 M
 * instructions of a discover of one small App.  Under the journal's
 * lock, as every use of the connection.
 */
int aur__jsqlite_need(struct aur__jsqlite *j, unsigned mask,
                      struct aur_error *err)
{
    for (size_t i = 0; i < AUR__JST_N; i++) {
        char *own = NULL;
        const char *sql = stmt_sql[i];
        int src;

        if (!(mask & AUR__JST_BIT(i)) || j->st[i])
            continue;
        if (i == AUR__JST_INSERT_ROWS)
            sql = own = rows_sql(COMMIT_INTO, "(?,?,?,?,?,?)", AUR__JSQ_ROWS);
        else if (i == AUR__JST_INSERT_AT_ROWS)
            sql = own = rows_sql(SCOPE_ROWS_INTO, "(?,?,?)",
                                 AUR__JSQ_SCOPE_ROWS);
        if (!sql)
            return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
        src = sqlite3_prepare_v3(j->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                 &j->st[i], NULL);
        free(own);
        if (src != SQLITE_OK)
            return aur__jsqlite_fail(j, src, "preparing a statement", err);
    }
    return AUR_OK;
}

int aur__jsqlite_fail(struct aur__jsqlite *s, int src, const char *what,
                      struct aur_error *err)
{
    s->failures++;
    snprintf(s->last_error, sizeof s->last_error, "%s: %s", what,
             sqlite3_errmsg(s->db));
    return aur_fail(err, AUR_E_JOURNAL, src, "journal: %s: %s", what,
                    sqlite3_errmsg(s->db));
}

/* ------------------------------------------------------------------ */
/* Open and close                                                     */
/* ------------------------------------------------------------------ */

/* mkdir -p of the directory part of path.  The journal may hold event
 * data, so directories we create are private to the user. */
static int make_parents(const char *path, struct aur_error *err)
{
    char buf[PATH_MAX];
    size_t n = strlen(path), i;
    struct stat stb;

    if (n >= sizeof buf)
        return aur_fail(err, AUR_E_INVAL, 0, "journal path too long");
    memcpy(buf, path, n + 1);
    for (i = 1; i < n; i++) {
        if (buf[i] != '/' || buf[i - 1] == '/')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            return aur_fail(err, AUR_E_JOURNAL, e,
                            "journal: cannot create directory %s: %s", buf,
                            strerror(e));
        }
        if (stat(buf, &stb) != 0 || !S_ISDIR(stb.st_mode))
            return aur_fail(err, AUR_E_JOURNAL, ENOTDIR,
                            "journal: %s is not a directory", buf);
        buf[i] = '/';
    }
    return AUR_OK;
}

static int exec(struct aur__jsqlite *j, const char *sql, const char *path,
                struct aur_error *err)
{
    int src = sqlite3_exec(j->db, sql, NULL, NULL, NULL);
    if (src != SQLITE_OK)
        return aur_fail(err, AUR_E_JOURNAL, src, "journal %s: %s", path,
                        sqlite3_errmsg(j->db));
    return AUR_OK;
}

/* One int64 from a one-row query; *found = 0 if it returned no row. */
static int query_int(struct aur__jsqlite *j, const char *sql, int64_t *out,
                     int *found)
{
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(j->db, sql, -1, &st, NULL);
    *found = 0;
    if (src == SQLITE_OK) {
        src = sqlite3_step(st);
        if (src == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            *found = 1;
            src = SQLITE_OK;
        } else if (src == SQLITE_DONE) {
            src = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return src;
}

/* How long a statement waits for another connection's lock. */
#define BUSY_MS 5000
#define BUSY_STEP_MS 5

/*
 * Turning a new file to WAL takes an exclusive lock, and when another
 * connection is doing the same at that moment (hosts, or a host and a
 * journal reader, opening a new file together) SQLite answers BUSY at
 * once: it skips the busy handler so that two connections that each
 * hold a shared lock cannot wait for each other forever.  The statement
 * ends and lets its lock go, so trying again, for as long as the busy
 * timeout, cannot deadlock (check_journal
 * hosts_opening_a_new_file_together).
 */
static int set_wal(struct aur__jsqlite *j, const char *path,
                   struct aur_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = AUR_OK, src;

    for (int waited = 0;; waited += BUSY_STEP_MS) {
        src = sqlite3_prepare_v2(j->db, "PRAGMA journal_mode=WAL", -1, &st,
                                 NULL);
        if (src == SQLITE_OK)
            src = sqlite3_step(st);
        if (src != SQLITE_BUSY || waited >= BUSY_MS)
            break;
        sqlite3_finalize(st);
        st = NULL;
        sqlite3_sleep(BUSY_STEP_MS);
    }
    if (src != SQLITE_ROW)
        rc = aur_fail(err, AUR_E_JOURNAL, src, "journal %s: %s", path,
                      sqlite3_errmsg(j->db));
    else if (sqlite3_stricmp((const char *)sqlite3_column_text(st, 0),
                             "wal") != 0)
        rc = aur_fail(err, AUR_E_JOURNAL, 0,
                      "journal %s: write-ahead logging unavailable", path);
    sqlite3_finalize(st);
    return rc;
}

/* Bring the schema to SCHEMA_VERSION under a write lock, so two processes
 * opening a fresh file do not both run a step. */
static int migrate(struct aur__jsqlite *j, const char *path,
                   struct aur_error *err)
{
    int64_t v = 0, have = 0;
    int found, src, rc;
    char sql[128];

    rc = exec(j, "BEGIN IMMEDIATE", path, err);
    if (rc != AUR_OK)
        return rc;
    src = query_int(j, "SELECT COUNT(*) FROM sqlite_master WHERE"
                       " type = 'table' AND name = 'schema_meta'",
                    &have, &found);
    if (src == SQLITE_OK && have)
        src = query_int(j, "SELECT version FROM schema_meta"
                           " WHERE singleton = 1", &v, &found);
    if (src != SQLITE_OK) {
        rc = aur_fail(err, AUR_E_JOURNAL, src, "journal %s: %s", path,
                      sqlite3_errmsg(j->db));
        goto out;
    }
    if (v > SCHEMA_VERSION) {
        rc = aur_fail(err, AUR_E_JOURNAL, 0,
                      "journal schema version %lld is newer than supported "
                      "(%lld)", (long long)v, (long long)SCHEMA_VERSION);
        goto out;
    }
    if (v < 0) {
        rc = aur_fail(err, AUR_E_JOURNAL, 0,
                      "journal %s: invalid schema version %lld", path,
                      (long long)v);
        goto out;
    }
    if (v == SCHEMA_VERSION)
        goto out;
    for (; v < SCHEMA_VERSION; v++) {
        rc = exec(j, migrations[v], path, err);
        if (rc != AUR_OK)
            goto out;
    }
    snprintf(sql, sizeof sql,
             "INSERT INTO schema_meta(singleton, version) VALUES (1, %lld)"
             " ON CONFLICT(singleton) DO UPDATE SET version = excluded.version",
             (long long)SCHEMA_VERSION);
    rc = exec(j, sql, path, err);
out:
    if (rc == AUR_OK)
        return exec(j, "COMMIT", path, err);
    sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static void sq_close(void *b)
{
    struct aur__jsqlite *j = b;
    size_t i;
    if (!j)
        return;
    aur__jsqlite_ckpt_stop(j);
    for (i = 0; i < AUR__JST_N; i++)
        sqlite3_finalize(j->st[i]);
    /* A limit makes the last close truncate the kept WAL to 0 bytes,
     * once its checkpoint has completed and synced.  Left full, the next
     * open would read and checksum every frame to rebuild its index and
     * count them as not copied, so the next close would copy them all
     * again.  Set here, not at open: during the run a limit would also
     * shrink the WAL at every restart. */
    (void)sqlite3_exec(j->db, "PRAGMA journal_size_limit=0", NULL, NULL,
                       NULL);
    /* A clean close leaves every commit in the file, synced.  SQLite's
     * close checkpoints only as the last connection on the file: with
     * another one open (another host, a follower, an operator's shell)
     * the last commits stayed in a WAL that was never synced, and an OS
     * crash after a clean close lost them.  FULL waits (the busy timeout)
     * for another connection's write to end, copies every frame and syncs
     * the WAL and the file; with nothing left to copy (the settle did it)
     * it writes and syncs nothing, and the close below only empties the
     * WAL, as the last connection. */
    if (j->db)
        (void)sqlite3_wal_checkpoint_v2(j->db, NULL, SQLITE_CHECKPOINT_FULL,
                                        NULL, NULL);
    sqlite3_close(j->db);
    free(j);
}

static int sq_open(const char *path, const struct aur__jopts *o, void **out,
                   struct aur_error *err)
{
    struct aur__jsqlite *j;
    int rc, src;

    rc = make_parents(path, err);
    if (rc != AUR_OK)
        return rc;
    j = calloc(1, sizeof *j);
    if (!j)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    j->data_equal = o->data_equal;
    snprintf(j->path, sizeof j->path, "%s", path);
    /* Created by us, readable by its owner only (it holds event data),
     * and never through a symlink; SQLite gives its -wal and -shm files
     * the same mode. */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        rc = aur_fail(err, AUR_E_JOURNAL, e, "journal %s: %s%s", path,
                      strerror(e), e == ELOOP ? " (a symlink is refused)" : "");
        goto fail;
    }
    close(fd);
    src = sqlite3_open_v2(path, &j->db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                              SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                          NULL);
    if (src != SQLITE_OK) {
        rc = aur_fail(err, AUR_E_JOURNAL, src, "journal %s: %s", path,
                      j->db ? sqlite3_errmsg(j->db) : sqlite3_errstr(src));
        goto fail;
    }
    sqlite3_busy_timeout(j->db, BUSY_MS);
    {
        /* Keep the WAL file across runs: a short run (discover, call)
         * does not create and delete it each time.  sq_close empties
         * it after the last checkpoint (docs/journal.md says why). */
        int on = 1;
        (void)sqlite3_file_control(j->db, "main", SQLITE_FCNTL_PERSIST_WAL,
                                   &on);
    }
    /* the first statement reads the header: a foreign file fails here */
    rc = set_wal(j, path, err);
    /* WAL with synchronous=NORMAL: a commit is appended to the WAL
     * without fsync; the WAL is synced at each checkpoint.  SQLite
     * documents this as safe for WAL: no crash or power loss corrupts the
     * file, and a process crash loses nothing committed; only a power
     * loss or OS crash may roll back the commits since the last
     * checkpoint, which fits best-effort events (no ack, no replay).
     * Foreign keys are not enforced (foreign_keys stays off, SQLite's
     * default): scope rows are only ever written by
     * journal_sqlite_append.c, in their commit's transaction, with the
     * seq its insert just returned, so the check could never fail; it
     * was a rowid look-up and a counter per scope row, about a tenth of
     * an event's cost (the PostgreSQL backend dropped its foreign key
     * for the same reason).  The REFERENCES clauses stay in the schema.
     * temp_store=MEMORY keeps the statement journal of the multi-row
     * commit INSERT (journal_sqlite_append.c) in memory: on disk it spilled to
     * a temporary file past 64 KiB, three writes per event.  It holds
     * only what undoes one failed statement inside an open transaction,
     * so it has no bearing on durability; its size is bounded by the
     * pages one statement of AUR__JSQ_ROWS rows touches. */
    if (rc == AUR_OK)
        rc = exec(j, "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY",
                  path, err);
    if (rc == AUR_OK)
        rc = migrate(j, path, err);
    if (rc != AUR_OK)
        goto fail;
    (void)aur__jsqlite_ckpt_start(j); /* else SQLite checkpoints inline */
    *out = j;
    return AUR_OK;
fail:
    sq_close(j);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */
/* ------------------------------------------------------------------ */

static int64_t sq_count(void *b)
{
    struct aur__jsqlite *j = b;
    sqlite3_stmt *st;
    int64_t n = -1;
    if (aur__jsqlite_need(j, AUR__JSQ_READ, NULL) != AUR_OK)
        return -1;
    st = j->st[AUR__JST_COUNT];
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return n;
}

static int sq_head(void *b, int64_t *seq, struct aur_error *err)
{
    struct aur__jsqlite *j = b;
    sqlite3_stmt *st;
    int rc = aur__jsqlite_need(j, AUR__JSQ_READ, err), src;
    if (rc != AUR_OK)
        return rc;
    st = j->st[AUR__JST_MAX_SEQ];
    src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        *seq = sqlite3_column_int64(st, 0);
    else
        rc = aur__jsqlite_fail(j, src, "reading commits", err);
    sqlite3_reset(st);
    return rc;
}

static const char *col(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

/* The scope rows of commit seq, sorted, into v/seqs (room for
 * AUR__JOURNAL_MAX_SCOPES); the strings are copied into *buf. */
struct scope_buf {
    const char *v[256];
    int64_t seqs[256];
    char *text;
};

static int read_scopes(struct aur__jsqlite *j, int64_t seq,
                       struct scope_buf *sb, size_t *n,
                       struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_SCOPES];
    size_t used = 0, cap = 0, k = 0, i;
    int src, rc = AUR_OK;
    size_t offs[256];

    sqlite3_bind_int64(st, 1, seq);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        size_t len = (size_t)sqlite3_column_bytes(st, 0) + 1;
        if (k == AUR__ARRAY_LEN(sb->v))
            break; /* the front never writes more */
        if (used + len > cap) {
            size_t ncap = cap ? cap * 2 : 256;
            char *t;
            while (ncap < used + len)
                ncap *= 2;
            if (!(t = realloc(sb->text, ncap))) {
                rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
                break;
            }
            sb->text = t;
            cap = ncap;
        }
        memcpy(sb->text + used, col(st, 0), len);
        offs[k] = used;
        sb->seqs[k++] = sqlite3_column_int64(st, 1);
        used += len;
    }
    if (rc == AUR_OK && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = aur__jsqlite_fail(j, src, "reading scopes", err);
    sqlite3_reset(st);
    for (i = 0; i < k; i++)
        sb->v[i] = sb->text + offs[i];
    *n = k;
    return rc;
}

static int sq_read(void *b, int64_t after, int64_t upto, const char *scope,
                   size_t max, int (*fn)(void *ud, const struct aur__jread *c),
                   void *ud, size_t *n, struct aur_error *err)
{
    struct aur__jsqlite *j = b;
    sqlite3_stmt *st;
    struct scope_buf *sb;
    int src = SQLITE_DONE, rc = aur__jsqlite_need(j, AUR__JSQ_READ, err);

    *n = 0;
    if (rc != AUR_OK)
        return rc;
    st = j->st[scope ? AUR__JST_PAGE_SCOPE : AUR__JST_PAGE];
    if (!(sb = calloc(1, sizeof *sb)))
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int64(st, 2, upto);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)max);
    if (scope)
        sqlite3_bind_text(st, 4, scope, -1, SQLITE_STATIC);
    while (*n < max && (src = sqlite3_step(st)) == SQLITE_ROW) {
        struct aur__jread r;
        size_t ns = 0;
        memset(&r, 0, sizeof r);
        r.seq = sqlite3_column_int64(st, 0);
        rc = read_scopes(j, r.seq, sb, &ns, err);
        if (rc != AUR_OK)
            break;
        r.row.commit_id = col(st, 1);
        r.row.kind = col(st, 2);
        r.row.source = col(st, 3);
        r.row.summary = col(st, 4);
        r.row.occurred_at = col(st, 5);
        r.row.data = col(st, 6);
        r.row.data_len = (size_t)sqlite3_column_bytes(st, 6);
        r.row.scopes = sb->v;
        r.row.n_scopes = ns;
        r.sequences = sb->seqs;
        (*n)++;
        if (fn(ud, &r) != 0)
            break;
    }
    if (rc == AUR_OK && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = aur__jsqlite_fail(j, src, "reading commits", err);
    sqlite3_reset(st);
    free(sb->text);
    free(sb);
    return rc;
}

/* Followers poll: SQLite has no way to wake a reader in another process,
 * and a MAX(seq) on the rowid is one b-tree descent. */
static int sq_wait(void *b, int64_t seq, int timeout_ms,
                   struct aur_error *err)
{
    int64_t head = 0;
    int slept = 0, rc;
    (void)err;
    while (slept < timeout_ms) {
        rc = sq_head(b, &head, NULL);
        if (rc != AUR_OK || head > seq)
            return AUR_OK;
        int step = timeout_ms - slept < 50 ? timeout_ms - slept : 50;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        slept += step;
    }
    return AUR_OK;
}

static void sq_state(void *b, struct aur__jstate *st)
{
    struct aur__jsqlite *j = b;
    st->backend = "sqlite";
    snprintf(st->target, sizeof st->target, "%s", j->path);
    st->state = "open";
    st->failures = j->failures;
    snprintf(st->last_error, sizeof st->last_error, "%s", j->last_error);
}

/* A checkpoint that never waits for a lock (a busy timeout of 0) and
 * copies what no reader still needs, as the thread's and the close's.
 * TRUNCATE also empties the WAL once all of it is copied and synced,
 * which the close did before on the closing thread (an ftruncate, about
 * 0.3 ms at the end of every run); with a lock taken elsewhere it goes
 * on as PASSIVE, and the close empties the WAL as before.  A commit
 * after it restarts the WAL, as after any checkpoint that copied all. */
static void sq_settle(void *b)
{
    struct aur__jsqlite *j = b;
    sqlite3_busy_timeout(j->db, 0);
    (void)sqlite3_wal_checkpoint_v2(j->db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
                                    NULL, NULL);
    sqlite3_busy_timeout(j->db, BUSY_MS);
}

/*
 * The close empties the WAL (sq_close), so a run's first write restarts
 * it, and SQLite syncs the new header before any frame follows it (else
 * a frame written after a restart could be read against the old header).
 * That sync, about 1 to 2 ms, was the largest single wait of a short run
 * such as `discover` (docs/benchmarks.md).  Here a transaction that
 * changes nothing restarts the WAL on the journal's thread while the
 * host starts its Apps, so that the lifecycle commits append to it.  It
 * writes the schema_meta row away and back (SQLite skips a write of the
 * same bytes, which would leave the WAL empty), so one page is committed
 * as it was; no reader can see the row in between.  The header gets the
 * same sync, earlier; a commit gets the same durability.  Only an empty
 * WAL is primed: a WAL with frames needs no restart, and one that another
 * connection is writing is not ours to wait for (a busy timeout of 0:
 * SQLITE_BUSY at once, and the first write pays as before).
 */
static void sq_prime(void *b)
{
    struct aur__jsqlite *j = b;
    const char *wal = sqlite3_filename_wal(sqlite3_db_filename(j->db, "main"));
    struct stat sb;

    if (!wal || stat(wal, &sb) != 0 || sb.st_size != 0)
        return;
    sqlite3_busy_timeout(j->db, 0);
    if (sqlite3_exec(j->db,
                     "BEGIN IMMEDIATE;"
                     "UPDATE schema_meta SET version = -version;"
                     "UPDATE schema_meta SET version = -version;"
                     "COMMIT",
                     NULL, NULL, NULL) != SQLITE_OK &&
        !sqlite3_get_autocommit(j->db))
        (void)sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_busy_timeout(j->db, BUSY_MS);
}

const struct aur__journal_ops aur__journal_sqlite_ops = {
    .version = AUR__JOURNAL_BACKEND_VERSION,
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .append = aur__jsqlite_append,
    .head = sq_head,
    .read = sq_read,
    .count = sq_count,
    .wait = sq_wait,
    .state = sq_state,
    .settle = sq_settle,
    .prime = sq_prime,
};
