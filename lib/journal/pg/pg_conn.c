/*
 * pg_conn.c - the PostgreSQL journal's session: connecting, each
 * session's settings and prepared statements, the schema migration,
 * errors, losing and regaining the database (backoff, the hold), open,
 * close, state and the ops table with the module's entry.
 */
#include "pg_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The first reconnect is tried at once; each failure doubles the pause
 * up to the cap, so a database that is down costs a few attempts a
 * second, not a busy loop. */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
/* A connection attempt gets at least this long even when the hold ends
 * sooner: a TLS handshake to a remote server takes some hundred ms, and
 * an attempt cut shorter would never succeed. */
#define ATTEMPT_MIN_MS 1000
/* Serialises concurrent first opens of one database (any host). */
#define MIGRATE_LOCK "7022645016940064074" /* "aurora-J" as an int64 */

/* ------------------------------------------------------------------ */
/* Schema and statements                                              */
/* ------------------------------------------------------------------ */

/*
 * migrations[v] takes a database from version v to v + 1; the supported
 * version is the number of steps.  Append steps, never edit one.  No IF
 * NOT EXISTS: a foreign database that happens to have a table of one of
 * these names is refused, not misread.  Tables go to the current schema
 * (the URI's options may set search_path).  world_head is the writers'
 * lock and the commit order (pg_append.c); world_commit_bases keeps the
 * shape of a full world journal and stays empty.  Ids and scopes are
 * COLLATE "C": they compare as strcmp does (journal_backend.h), their
 * unique indexes compare bytes (cheaper than a locale's collation), and
 * an operating system update that changes a locale's collation cannot
 * corrupt those indexes.  world_commit_scopes has no foreign key: its
 * rows are only ever written in the transaction that writes their commit
 * (pg_append.c), and the per-row check cost some 40% of a batch, which
 * every host pays while holding the World's write lock.  For the same
 * reason its second index is on commit_seq alone (a bigint, not a
 * bigint and a text): a commit's scopes are distinct by construction
 * (the front dedups them), and (scope, sequence), the key.
 */
static const char *const migrations[] = {
    /* v0 -> v1 */
    "CREATE TABLE aurora_schema("
    " singleton int PRIMARY KEY CHECK (singleton = 1),"
    " version bigint NOT NULL);"
    "CREATE TABLE world_head("
    " singleton int PRIMARY KEY CHECK (singleton = 1),"
    " seq bigint NOT NULL);"
    "INSERT INTO world_head(singleton, seq) VALUES (1, 0);"
    "CREATE TABLE world_commits("
    " seq bigint PRIMARY KEY,"
    " commit_id text COLLATE \"C\" UNIQUE NOT NULL,"
    " kind text NOT NULL,"
    " source text NOT NULL,"
    " summary text NOT NULL,"
    " occurred_at text NOT NULL,"
    " data text NOT NULL);"
    "CREATE TABLE world_commit_scopes("
    " commit_seq bigint NOT NULL,"
    " scope text COLLATE \"C\" NOT NULL,"
    " sequence bigint NOT NULL,"
    " PRIMARY KEY (scope, sequence));"
    "CREATE INDEX world_commit_scopes_commit"
    " ON world_commit_scopes(commit_seq);"
    "CREATE TABLE world_commit_bases("
    " commit_seq bigint NOT NULL REFERENCES world_commits(seq),"
    " scope text COLLATE \"C\" NOT NULL,"
    " sequence bigint NOT NULL,"
    " UNIQUE (commit_seq, scope));",
};

#define SCHEMA_VERSION ((int64_t)(sizeof migrations / sizeof *migrations))


/* ------------------------------------------------------------------ */
/* Time and errors                                                    */
/* ------------------------------------------------------------------ */

int64_t pg__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts;
    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Blank every occurrence of secret in s.  Too short a secret would blank
 * ordinary text, and no libpq message holds one anyway. */
static void redact(char *s, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    char *p;
    if (n < 4)
        return;
    while ((p = strstr(s, secret)))
        memset(p, '*', n);
}

/* libpq's messages span lines ("...failed: ...\n\tIs the server
 * running..."); an aur_error is one line. */
static void one_line(char *s)
{
    char *w = s, *start = s;
    bool gap = false;
    for (; *s; s++) {
        if (*s == '\n' || *s == '\r' || *s == '\t' || *s == ' ') {
            gap = true;
            continue;
        }
        if (gap && w != start)
            *w++ = ' ';
        gap = false;
        *w++ = *s;
    }
    *w = '\0';
}

int pg__fail(struct pg *b, struct aur_error *err, const char *what,
             const char *why)
{
    size_t k;
    snprintf(b->last_error, sizeof b->last_error, "%s: ", what);
    k = strlen(b->last_error);
    snprintf(b->last_error + k, sizeof b->last_error - k, "%s",
             why ? why : "unknown error");
    one_line(b->last_error + k);
    redact(b->last_error, b->password);
    redact(b->last_error, b->uri_password);
    aur_fail(err, AUR_E_JOURNAL, 0, "journal %s: %s", b->target,
             b->last_error);
    return AUR_E_JOURNAL;
}

void pg__down(struct pg *b)
{
    int64_t now = pg__now_ms();
    PQfinish(b->conn);
    b->conn = NULL;
    b->listening = false;
    if (!b->down) {
        b->down = true;
        b->down_since = now;
        b->next_try = now;
        b->backoff_ms = BACKOFF_MIN_MS;
    }
}

enum pg_err pg__failed(struct pg *b, const PGresult *r, const char *what,
                       struct aur_error *err)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *sev =
        r ? PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED) : NULL;
    const char *msg = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    enum pg_err kind = PG_ERR_OTHER;

    if (!msg && b->conn)
        msg = PQerrorMessage(b->conn);
    if (!msg || !*msg)
        msg = r ? PQresStatus(PQresultStatus(r)) : "out of memory";
    /* A FATAL error ends the session (57P01 admin shutdown and the other
     * 57P0x, 25P03 idle in transaction, ...); class 08 is a connection
     * exception; no SQLSTATE with a bad connection is libpq's own "server
     * closed the connection unexpectedly". */
    if (!b->conn || PQstatus(b->conn) == CONNECTION_BAD ||
        (state && (strncmp(state, "08", 2) == 0 ||
                   strcmp(state, "57P01") == 0 ||
                   strcmp(state, "57P02") == 0 ||
                   strcmp(state, "57P03") == 0)) ||
        (sev && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)))
        kind = PG_ERR_CONN;
    else if (state &&
             (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0))
        kind = PG_ERR_RETRY;
    pg__fail(b, err, what, msg);
    if (kind == PG_ERR_CONN)
        pg__down(b);
    return kind;
}

/* ------------------------------------------------------------------ */
/* Sessions                                                           */
/* ------------------------------------------------------------------ */

/* Notices ("relation exists, skipping") would go to stderr. */
static void no_notice(void *arg, const PGresult *r)
{
    (void)arg;
    (void)r;
}

static void set_target(struct pg *b, PGconn *c)
{
    const char *host = PQhost(c), *port = PQport(c), *db = PQdb(c);
    snprintf(b->target, sizeof b->target, "%s:%s/%s",
             host && *host ? host : "localhost", port && *port ? port : "5432",
             db ? db : "");
}

/* Run sql (one simple query: several statements allowed).  With out,
 * the first column of the last statement's first row goes there (left
 * alone when there is no row). */
static int run(struct pg *b, PGconn *c, const char *sql, const char *what,
               int64_t *out, struct aur_error *err)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(r);
    int rc = AUR_OK;
    if (!r || (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)) {
        const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                          : NULL;
        rc = pg__fail(b, err, what, m ? m : PQerrorMessage(c));
    } else if (out && s == PGRES_TUPLES_OK && PQntuples(r) > 0 &&
               !PQgetisnull(r, 0, 0)) {
        *out = pg__col_i64(r, 0, 0);
    }
    PQclear(r);
    return rc;
}

/*
 * Bring the schema to SCHEMA_VERSION in one transaction under an
 * advisory lock: hosts opening a fresh database at once queue on the
 * lock, and each later one finds the work done.  Names resolve through
 * search_path, as in every statement.
 */
static int migrate(struct pg *b, PGconn *c, struct aur_error *err)
{
    char sql[160];
    int64_t have = 0, v = -1, from;
    int rc;

    rc = run(b, c, "BEGIN; SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ");"
                   " SELECT (to_regclass('aurora_schema') IS NOT NULL)::int"
                   " + 2 * (to_regclass('world_commits') IS NOT NULL)::int",
             "schema", &have, err);
    if (rc == AUR_OK && (have & 1))
        rc = run(b, c, "SELECT version FROM aurora_schema WHERE singleton = 1",
                 "schema", &v, err);
    else if (rc == AUR_OK)
        v = have ? -2 : 0;
    if (rc != AUR_OK) {
        /* reported */
    } else if (v == -2) {
        rc = pg__fail(b, err, "schema",
                      "the database has world_commits but no aurora_schema:"
                      " not an aurora-mcp journal, refused");
    } else if (v < 0) {
        rc = pg__fail(b, err, "schema", "aurora_schema holds no valid "
                                        "version: not an aurora-mcp journal");
    } else if (v > SCHEMA_VERSION) {
        /* the SQLite backend's words, then which database */
        snprintf(sql, sizeof sql,
                 "journal schema version %lld is newer than supported (%lld)",
                 (long long)v, (long long)SCHEMA_VERSION);
        pg__fail(b, err, "schema", sql);
        rc = aur_fail(err, AUR_E_JOURNAL, 0, "%s: %s", sql, b->target);
    }
    for (from = v; rc == AUR_OK && v < SCHEMA_VERSION; v++)
        rc = run(b, c, migrations[v], "schema", NULL, err);
    if (rc == AUR_OK && from == SCHEMA_VERSION)
        return run(b, c, "COMMIT", "schema", NULL, err);
    if (rc == AUR_OK) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO aurora_schema(singleton, version) VALUES (1, %lld)"
                 " ON CONFLICT (singleton) DO UPDATE SET version = %lld;"
                 " COMMIT", (long long)v, (long long)v);
        return run(b, c, sql, "schema", NULL, err);
    }
    PQclear(PQexec(c, "ROLLBACK"));
    return rc;
}

/* The settings and statements every session needs; migrate first on the
 * first one. */
static int setup(struct pg *b, PGconn *c, bool first, struct aur_error *err)
{
    const char *enc = PQparameterStatus(c, "server_encoding");
    char why[128];
    int rc, i;

    if (PQserverVersion(c) < 90600)
        return pg__fail(b, err, "connect", "PostgreSQL 9.6 or newer needed");
    if (!enc || strcmp(enc, "UTF8") != 0) {
        snprintf(why, sizeof why, "server_encoding is %s, not UTF8",
                 enc ? enc : "unknown");
        return pg__fail(b, err, "connect", why);
    }
    /* A stopped or wedged host must not hold the writers' row lock for
     * ever, nor a statement run unbounded. */
    rc = run(b, c, "SET idle_in_transaction_session_timeout = '30s';"
                   " SET statement_timeout = '60s'",
             "session", NULL, err);
    if (rc == AUR_OK && first)
        rc = migrate(b, c, err);
    for (i = 0; rc == AUR_OK && i < PG_N_STMT; i++) {
        PGresult *r = PQprepare(c, pg__stmt_name[i], pg__stmt_sql[i], 0,
                                NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                              : NULL;
            rc = pg__fail(b, err, "prepare", m ? m : PQerrorMessage(c));
        }
        PQclear(r);
    }
    return rc;
}

/*
 * One connection attempt, finished by deadline.  Non-blocking, so the
 * caller's deadline holds (libpq's own connect_timeout applies only to
 * blocking connects); the URI's connect_timeout is honoured through
 * connect_ms.  Name resolution still blocks in libpq.
 */
static int connect_once(struct pg *b, int64_t deadline, bool first,
                        struct aur_error *err)
{
    const char *kw[12], *val[12];
    int k = 0, rc;
    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    PGconn *c;

    /* defaults first: the URI (expanded from dbname) overrides them;
     * the password and encoding after it override the URI */
    kw[k] = "connect_timeout", val[k++] = "5";
    kw[k] = "keepalives", val[k++] = "1";
    kw[k] = "keepalives_idle", val[k++] = "10";
    kw[k] = "keepalives_interval", val[k++] = "5";
    kw[k] = "keepalives_count", val[k++] = "3";
    kw[k] = "tcp_user_timeout", val[k++] = "15000";
    kw[k] = "application_name", val[k++] = "aurora-mcp";
    kw[k] = "dbname", val[k++] = b->uri;
    if (b->password)
        kw[k] = "password", val[k++] = b->password;
    kw[k] = "client_encoding", val[k++] = "UTF8";
    kw[k] = NULL, val[k] = NULL;

    c = PQconnectStartParams(kw, val, 1);
    if (!c)
        return aur_fail(err, AUR_E_NOMEM, 0, "out of memory");
    set_target(b, c);
    while (PQstatus(c) != CONNECTION_BAD && ps != PGRES_POLLING_OK &&
           ps != PGRES_POLLING_FAILED) {
        struct pollfd pfd = {PQsocket(c), 0, 0};
        int64_t left = deadline - pg__now_ms();
        int n;
        if (left <= 0) {
            PQfinish(c);
            return pg__fail(b, err, "connect", "timed out");
        }
        pfd.events = ps == PGRES_POLLING_READING ? POLLIN : POLLOUT;
        n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR) {
            PQfinish(c);
            return pg__fail(b, err, "connect", strerror(errno));
        }
        if (n > 0)
            ps = PQconnectPoll(c);
    }
    if (PQstatus(c) != CONNECTION_OK) {
        rc = pg__fail(b, err, "connect", PQerrorMessage(c));
        PQfinish(c);
        return rc;
    }
    set_target(b, c);
    PQsetNoticeReceiver(c, no_notice, NULL);
    rc = setup(b, c, first, err);
    if (rc != AUR_OK) {
        PQfinish(c);
        return rc;
    }
    b->conn = c;
    b->listening = false;
    b->generation++;
    return AUR_OK;
}

/* One reconnect attempt now; on failure the next waits out the backoff. */
static int reconnect(struct pg *b, int64_t deadline, struct aur_error *err)
{
    int rc = connect_once(b, deadline, false, err);
    if (rc == AUR_OK) {
        b->reconnects++;
        b->down = false;
        b->down_since = 0;
        return AUR_OK;
    }
    /* counted from the end of the attempt: a slow one (a timeout) is
     * not followed by another at once */
    b->next_try = pg__now_ms() + b->backoff_ms;
    b->backoff_ms = b->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                       : b->backoff_ms * 2;
    return rc;
}

int pg__revive(struct pg *b, int64_t end)
{
    int64_t now = pg__now_ms(), left = end - now;
    if (b->conn)
        return AUR_OK;
    if (now < b->next_try) {
        sleep_ms((b->next_try < end ? b->next_try : end) - now);
        return AUR_E_JOURNAL;
    }
    if (left < ATTEMPT_MIN_MS)
        left = ATTEMPT_MIN_MS;
    return reconnect(b, now + (left < b->connect_ms ? left : b->connect_ms),
                     NULL);
}

int pg__ready(struct pg *b, bool hold, struct aur_error *err)
{
    while (!b->conn) {
        int64_t now = pg__now_ms(), end = b->down_since + b->wait_ms;
        if (hold && now < end) {
            pg__revive(b, end);
            continue;
        }
        /* unavailable: fail at once, but let the journal come back by
         * itself when an attempt is due */
        if (now >= b->next_try &&
            reconnect(b, now + (b->connect_ms < ATTEMPT_MIN_MS
                                    ? b->connect_ms
                                    : ATTEMPT_MIN_MS),
                      NULL) == AUR_OK)
            break;
        return aur_fail(err, AUR_E_JOURNAL, 0,
                        "journal %s unavailable for %lld ms: %s", b->target,
                        (long long)(now - b->down_since), b->last_error);
    }
    return AUR_OK;
}

int pg__connect_first(struct pg *b, struct aur_error *err)
{
    return connect_once(b, pg__now_ms() + b->connect_ms, true, err);
}

/* ------------------------------------------------------------------ */
/* Statements                                                         */
/* ------------------------------------------------------------------ */

int pg__exec(struct pg *b, enum pg_stmt st, int n, const char *const *vals,
             const int *lens, const char *what, PGresult **res,
             enum pg_err *kind, struct aur_error *err)
{
    int fmts[PG_MAX_PARAMS];
    PGresult *r = PQexecPrepared(b->conn, pg__stmt_name[st], n, vals, lens,
                                 pg__formats(lens, n, fmts), 0);
    ExecStatusType s = PQresultStatus(r);
    *res = NULL;
    *kind = PG_ERR_OTHER;
    if (r && (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)) {
        *res = r;
        return AUR_OK;
    }
    *kind = pg__failed(b, r, what, err);
    PQclear(r);
    return AUR_E_JOURNAL;
}

void pg__forget_notifies(struct pg *b)
{
    PGnotify *nf;
    while (b->listening && b->conn && (nf = PQnotifies(b->conn)))
        PQfreemem(nf);
}

int pg__query(struct pg *b, enum pg_stmt st, int n, const char *const *vals,
              const int *lens, const char *what, PGresult **res,
              struct aur_error *err)
{
    enum pg_err kind;
    int rc, tries;
    for (tries = 0;; tries++) {
        rc = pg__ready(b, false, err);
        if (rc != AUR_OK)
            return rc;
        rc = pg__exec(b, st, n, vals, lens, what, res, &kind, err);
        pg__forget_notifies(b);
        if (rc == AUR_OK || kind != PG_ERR_CONN || tries > 0)
            return rc;
    }
}
