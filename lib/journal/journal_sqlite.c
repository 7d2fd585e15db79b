/*
 * journal.c - opening the world journal, its schema migrations and the
 * read side (README: The world journal; the objects `aurora-mcp journal`
 * prints, docs/aurora-mcp.1).
 */
#include "aur_setup.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "journal_int.h"
#include "jsonx.h"

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
};

#define SCHEMA_VERSION ((int64_t)AUR__ARRAY_LEN(migrations))

#define PAGE_COLS "seq, commit_id, kind, source, summary, occurred_at, data"

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
    [AUR__JST_INSERT] = "INSERT INTO world_commits(commit_id, kind, source,"
                        " summary, occurred_at, data)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    /* VALUES with a scalar subquery, not INSERT ... SELECT: reading the
     * table being inserted into makes SQLite buffer the SELECT in an
     * ephemeral table, which cost more than the rest of the insert */
    [AUR__JST_INSERT_SCOPE] =
        "INSERT INTO world_commit_scopes(commit_seq, scope, sequence)"
        " VALUES (?1, ?2, (SELECT COALESCE(MAX(sequence), 0) + 1"
        " FROM world_commit_scopes WHERE scope = ?2))",
    /* a batch reads each scope's max once and counts on from there */
    [AUR__JST_SCOPE_MAX] = "SELECT COALESCE(MAX(sequence), 0)"
                           " FROM world_commit_scopes WHERE scope = ?1",
    [AUR__JST_INSERT_AT] =
        "INSERT INTO world_commit_scopes(commit_seq, scope, sequence)"
        " VALUES (?1, ?2, ?3)",
    [AUR__JST_COUNT] = "SELECT COUNT(*) FROM world_commits",
    [AUR__JST_MAX_SEQ] = "SELECT COALESCE(MAX(seq), 0) FROM world_commits",
    [AUR__JST_PAGE] = "SELECT " PAGE_COLS " FROM world_commits"
                      " WHERE seq > ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3",
    [AUR__JST_PAGE_SCOPE] =
        "SELECT " PAGE_COLS " FROM world_commits AS c"
        " WHERE seq > ?1 AND seq <= ?2 AND EXISTS (SELECT 1"
        " FROM world_commit_scopes AS s WHERE s.commit_seq = c.seq"
        " AND s.scope = ?4) ORDER BY seq LIMIT ?3",
};

/* Commits read per lock hold: the callback runs without the lock, so a
 * slow reader (the CLI writing to a pipe) never stalls writers. */
#define PAGE_SIZE 256

int aur__journal_db_fail(struct aur__journal *j, int src, const char *what,
                         struct aur_error *err)
{
    return aur_fail(err, AUR_E_JOURNAL, src, "journal: %s: %s", what,
                    sqlite3_errmsg(j->db));
}

int aur__journal_parse_data(const char *text, size_t len,
                            struct json_object **out, struct aur_error *err)
{
    struct json_object *v = NULL;

    *out = NULL;
    /* The core's parser keeps integers past 64 bits exact. */
    if (aur__json_parse(text, len, AUR__JOURNAL_TOKENER_DEPTH, &v, NULL) !=
            AUR_OK ||
        !json_object_is_type(v, json_type_object)) {
        json_object_put(v);
        return aur_fail(err, AUR_E_JOURNAL, 0,
                        "journal: stored commit data is not a JSON object");
    }
    *out = v;
    return AUR_OK;
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

static int exec(struct aur__journal *j, const char *sql, const char *path,
                struct aur_error *err)
{
    int src = sqlite3_exec(j->db, sql, NULL, NULL, NULL);
    if (src != SQLITE_OK)
        return aur_fail(err, AUR_E_JOURNAL, src, "journal %s: %s", path,
                        sqlite3_errmsg(j->db));
    return AUR_OK;
}

/* One int64 from a one-row query; *found = 0 if it returned no row. */
static int query_int(struct aur__journal *j, const char *sql, int64_t *out,
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

static int set_wal(struct aur__journal *j, const char *path,
                   struct aur_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = AUR_OK;
    int src = sqlite3_prepare_v2(j->db, "PRAGMA journal_mode=WAL", -1, &st,
                                 NULL);
    if (src == SQLITE_OK)
        src = sqlite3_step(st);
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
static int migrate(struct aur__journal *j, const char *path,
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

int aur__journal_open(const char *path, struct aur__journal **out,
                      struct aur_error *err)
{
    struct aur__journal *j;
    int rc, src;
    size_t i;

    if (!out)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: no output handle");
    *out = NULL;
    if (!path || !*path)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: empty path");
    rc = make_parents(path, err);
    if (rc != AUR_OK)
        return rc;
    j = calloc(1, sizeof *j);
    if (!j)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (pthread_mutex_init(&j->mu, NULL) != 0) {
        free(j);
        return aur_fail(err, AUR_E_NOMEM, 0, "journal: mutex init failed");
    }
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
    sqlite3_busy_timeout(j->db, 5000);
    /* the first statement reads the header: a foreign file fails here */
    rc = set_wal(j, path, err);
    /* WAL with synchronous=NORMAL: a commit is appended to the WAL
     * without fsync; the WAL is synced at each checkpoint.  SQLite
     * documents this as safe for WAL: no crash or power loss corrupts the
     * file, and a process crash loses nothing committed; only a power
     * loss or OS crash may roll back the commits since the last
     * checkpoint, which fits best-effort events (no ack, no replay).
     * Foreign keys stay on: a rowid look-up per scope row is what it
     * costs to make a scope row without its commit impossible. */
    if (rc == AUR_OK)
        rc = exec(j, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON",
                  path, err);
    if (rc == AUR_OK)
        rc = migrate(j, path, err);
    if (rc != AUR_OK)
        goto fail;
    for (i = 0; i < AUR__JST_N; i++) {
        src = sqlite3_prepare_v3(j->db, stmt_sql[i], -1,
                                 SQLITE_PREPARE_PERSISTENT, &j->st[i], NULL);
        if (src != SQLITE_OK) {
            rc = aur_fail(err, AUR_E_JOURNAL, src, "journal %s: %s", path,
                          sqlite3_errmsg(j->db));
            goto fail;
        }
    }
    *out = j;
    return AUR_OK;
fail:
    aur__journal_close(j);
    return rc;
}

void aur__journal_close(struct aur__journal *j)
{
    size_t i;
    if (!j)
        return;
    for (i = 0; i < AUR__JST_N; i++)
        sqlite3_finalize(j->st[i]);
    sqlite3_close(j->db);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */
/* ------------------------------------------------------------------ */

int64_t aur__journal_count(struct aur__journal *j)
{
    int64_t n = -1;
    sqlite3_stmt *st;
    if (!j)
        return -1;
    pthread_mutex_lock(&j->mu);
    st = j->st[AUR__JST_COUNT];
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    pthread_mutex_unlock(&j->mu);
    return n;
}

static struct json_object *col_string(sqlite3_stmt *st, int col)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return json_object_new_string_len(s ? s : "",
                                      sqlite3_column_bytes(st, col));
}

static int add(struct json_object *o, const char *key, struct json_object *v)
{
    if (!v || json_object_object_add_ex(o, key, v,
                                        JSON_C_OBJECT_ADD_KEY_IS_NEW |
                                            JSON_C_OBJECT_KEY_IS_CONSTANT)) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* The scopes object {scope: sequence} of commit seq, keys sorted. */
static int read_scopes(struct aur__journal *j, int64_t seq,
                       struct json_object **out, struct aur_error *err)
{
    sqlite3_stmt *st = j->st[AUR__JST_SCOPES];
    struct json_object *o = json_object_new_object(), *v;
    int src, rc = AUR_OK;

    *out = NULL;
    if (!o)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    sqlite3_bind_int64(st, 1, seq);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *scope = (const char *)sqlite3_column_text(st, 0);
        v = json_object_new_int64(sqlite3_column_int64(st, 1));
        if (!v || !scope || json_object_object_add(o, scope, v)) {
            json_object_put(v);
            rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
            break;
        }
    }
    if (rc == AUR_OK && src != SQLITE_DONE)
        rc = aur__journal_db_fail(j, src, "reading scopes", err);
    sqlite3_reset(st);
    if (rc != AUR_OK)
        json_object_put(o);
    else
        *out = o;
    return rc;
}

/* The journal object (docs/aurora-mcp.1) of the current row of a page. */
static int build_commit(struct aur__journal *j, sqlite3_stmt *st,
                        struct json_object **out, struct aur_error *err)
{
    int64_t seq = sqlite3_column_int64(st, 0);
    struct json_object *o = json_object_new_object(), *scopes, *data;
    int rc;

    *out = NULL;
    if (!o)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (add(o, "seq", json_object_new_int64(seq)) ||
        add(o, "commit_id", col_string(st, 1)) ||
        add(o, "kind", col_string(st, 2)) ||
        add(o, "source", col_string(st, 3)) ||
        add(o, "summary", col_string(st, 4)) ||
        add(o, "occurred_at", col_string(st, 5))) {
        json_object_put(o);
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    rc = read_scopes(j, seq, &scopes, err);
    if (rc == AUR_OK && add(o, "scopes", scopes))
        rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    if (rc == AUR_OK) {
        const char *text = (const char *)sqlite3_column_text(st, 6);
        rc = aur__journal_parse_data(text ? text : "",
                                     (size_t)sqlite3_column_bytes(st, 6),
                                     &data, err);
        if (rc == AUR_OK && add(o, "data", data))
            rc = aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    }
    if (rc != AUR_OK) {
        json_object_put(o);
        return rc;
    }
    *out = o;
    return AUR_OK;
}

/* Read up to PAGE_SIZE commits in (after, upto] into page[]; j->mu held. */
static int read_page(struct aur__journal *j, int64_t after, int64_t upto,
                     const char *scope, struct json_object **page,
                     size_t *n, struct aur_error *err)
{
    sqlite3_stmt *st = j->st[scope ? AUR__JST_PAGE_SCOPE : AUR__JST_PAGE];
    int src = SQLITE_DONE, rc = AUR_OK;

    *n = 0;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int64(st, 2, upto);
    sqlite3_bind_int(st, 3, PAGE_SIZE);
    if (scope)
        sqlite3_bind_text(st, 4, scope, -1, SQLITE_STATIC);
    while (*n < PAGE_SIZE && (src = sqlite3_step(st)) == SQLITE_ROW) {
        rc = build_commit(j, st, &page[*n], err);
        if (rc != AUR_OK)
            break;
        (*n)++;
    }
    if (rc == AUR_OK && *n < PAGE_SIZE && src != SQLITE_DONE)
        rc = aur__journal_db_fail(j, src, "reading commits", err);
    sqlite3_reset(st);
    return rc;
}

int aur__journal_each(struct aur__journal *j, int64_t after,
                      const char *scope,
                      int (*fn)(void *ud, struct json_object *commit),
                      void *ud, struct aur_error *err)
{
    struct json_object *page[PAGE_SIZE];
    int64_t upto = 0, cursor = after;
    size_t n = 0, i;
    int rc = AUR_OK, src, stop = 0;
    sqlite3_stmt *st;

    if (!j || !fn)
        return aur_fail(err, AUR_E_INVAL, 0, "journal: bad arguments");
    /* Visit what existed at the start: commits appended meanwhile (maybe
     * by the callback itself) are left for the next call, so the loop is
     * bounded by the snapshot's size. */
    pthread_mutex_lock(&j->mu);
    st = j->st[AUR__JST_MAX_SEQ];
    src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        upto = sqlite3_column_int64(st, 0);
    else
        rc = aur__journal_db_fail(j, src, "reading commits", err);
    sqlite3_reset(st);
    pthread_mutex_unlock(&j->mu);

    while (rc == AUR_OK && !stop && cursor < upto) {
        pthread_mutex_lock(&j->mu);
        rc = read_page(j, cursor, upto, scope, page, &n, err);
        pthread_mutex_unlock(&j->mu);
        for (i = 0; i < n; i++) {
            if (rc == AUR_OK && !stop) {
                cursor = json_object_get_int64(
                    json_object_object_get(page[i], "seq"));
                stop = fn(ud, page[i]) != 0;
            }
            json_object_put(page[i]);
        }
        if (n < PAGE_SIZE)
            break;
    }
    return rc;
}
