/*
 * pg_int.h - shared by the PostgreSQL journal module's files only.
 *
 * The files, bottom up (each uses only those before it):
 *   pg_sql.c     every statement's name and text, decimal integers and
 *                the binary arrays rows travel in;
 *   pg_conn.c    connecting (and reconnecting with backoff), each
 *                session's setup, the schema migration, failures turned
 *                into errors, running a prepared statement;
 *   pg_read.c    the head, pages of commits, the count, and waiting for
 *                commits with LISTEN;
 *   pg_append.c  a batch in one transaction;
 *   pg_module.c  open, close, state and the ops table behind the one
 *                exported symbol.
 * The module sees journal_backend.h, aurora/aur_plugin.h, libpq and libc,
 * nothing of the core.
 *
 * Threads: the front holds its mutex around every op on a handle, so a
 * struct pg and its connection are used by one thread at a time and need
 * no lock here; separate handles share nothing (libpq is thread-safe per
 * connection).  Nothing here is global but the const ops table.
 *
 * Ownership: a struct pg owns its PGconn, the copies of the URI and the
 * password (both wiped with explicit_bzero at close: the URI may hold a
 * password too) and its scratch buffers.  Rows, scopes and callbacks
 * passed to an op are borrowed for that call.
 *
 * Secrets: no message built here contains the URI or a password.  Targets
 * are printed as host:port/dbname (libpq's view of the connection), libpq
 * and server messages do not echo passwords, and pg__fail() still blanks
 * any occurrence of either password as a last line of defence.
 */
#ifndef AUR_JOURNAL_PG_INT_H
#define AUR_JOURNAL_PG_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* explicit_bzero, strdup, clock_gettime, poll */
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "journal_backend.h"

/* The prepared statements, made on every new connection. */
enum pg_stmt {
    PG_HEAD,        /* world_head's seq */
    PG_LOCK,        /* the same, FOR UPDATE: the writers' lock */
    PG_LOOKUP,      /* present commits among a text[] of ids, with scopes */
    PG_SCOPE_MAX,   /* each scope of a text[]: its highest sequence */
    PG_INS_COMMITS, /* new commits from arrays, seq = $1 + ordinality */
    PG_INS_SCOPES,  /* scope rows from arrays */
    PG_SET_HEAD,    /* world_head = $1 */
    PG_PAGE,        /* commits in ($1, $2], seq order, LIMIT $3 */
    PG_PAGE_SCOPE,  /* the same, only those touching scope $4 */
    PG_SCOPES,      /* scope rows of a bigint[] of seqs */
    PG_COUNT,       /* count(*) */
    PG_N_STMT
};

/* What a failed statement means for the handle. */
enum pg_err {
    PG_ERR_OTHER, /* the statement failed; the session is fine */
    PG_ERR_RETRY, /* serialization failure or deadlock: run it again */
    PG_ERR_CONN   /* the session is gone: the handle is now down */
};

/* A growable byte buffer for a binary array. */
struct pg_buf {
    char *p;
    size_t len, cap;
    uint32_t n, oid; /* an array's elements so far, their type */
    bool oom;        /* an append failed; len is unreliable */
};

/* Element types of the arrays sent (pg_type.h's OIDs). */
#define PG_OID_INT8 20u
#define PG_OID_TEXT 25u

struct pg {
    /* Set at open, constant after. */
    char *uri;          /* the target as given; may hold a password */
    char *password;     /* opts->password, or NULL */
    char *uri_password; /* the URI's own password, or NULL (redaction) */
    int64_t wait_ms;    /* how long append retries a lost database */
    int64_t connect_ms; /* one connection attempt's limit */
    int (*data_equal)(const char *a, size_t alen, const char *b,
                      size_t blen);

    /* The session: NULL while down.  listening = LISTEN issued on it. */
    PGconn *conn;
    bool listening;
    uint64_t generation; /* bumped by every new session (wait re-checks) */
    char target[256];    /* host:port/dbname, refreshed on connect */

    /* Faults.  down_since is when the session was lost (monotonic ms);
     * no reconnect attempt before next_try, which moves out by backoff_ms
     * (50 ms doubling to 2 s) after each failed attempt. */
    bool down;
    int64_t down_since, next_try, backoff_ms;
    uint64_t reconnects, failures;
    char last_error[256];

    /* Arrays, kept between calls so a steady stream of batches
     * reuses the same memory: append's (B_* in pg_append.c), then one for
     * reads (B_READ in pg_read.c). */
    struct pg_buf scratch[12];
};

/* The name a statement is prepared under and its text (pg_sql.c). */
extern const char *const pg__stmt_name[PG_N_STMT];
extern const char *const pg__stmt_sql[PG_N_STMT];

/* Milliseconds on the monotonic clock. */
int64_t pg__now_ms(void);

/* Fill err (and last_error) with AUR_E_JOURNAL "journal <target>: <what>:
 * <why>", passwords blanked.  Returns AUR_E_JOURNAL. */
int pg__fail(struct pg *b, struct aur_error *err, const char *what,
             const char *why);

/* A statement returned r (NULL allowed) instead of success: record the
 * error as pg__fail does and classify it; PG_ERR_CONN also marks the
 * handle down (the session is closed). */
enum pg_err pg__failed(struct pg *b, const PGresult *r, const char *what,
                       struct aur_error *err);

/* Drop the session after a connection-level failure. */
void pg__down(struct pg *b);

/*
 * Make sure there is a session.  Up: AUR_OK at once.  Down: with hold,
 * retry with backoff until wait_ms after the loss (append); past that, or
 * without hold, make one attempt if the backoff is due and otherwise fail
 * at once with AUR_E_JOURNAL "journal <target> unavailable for N ms:
 * <last error>".
 */
int pg__ready(struct pg *b, bool hold, struct aur_error *err);

/* Down: one reconnect attempt if the backoff allows one (given until
 * end, at least ATTEMPT_MIN_MS), else sleep until it does or end comes.
 * AUR_OK = up again. */
int pg__revive(struct pg *b, int64_t end);

/* The first connection of a handle (open): connect, set the session
 * up and migrate the schema, within the URI's connect_timeout. */
int pg__connect_first(struct pg *b, struct aur_error *err);

/* Run a prepared statement on the session there is (lens: as for
 * pg__formats); *res on success (PQclear it).  Else err set, *kind says what the failure means.  No
 * reconnect here. */
int pg__exec(struct pg *b, enum pg_stmt st, int n, const char *const *vals,
             const int *lens, const char *what, PGresult **res,
             enum pg_err *kind, struct aur_error *err);

/* Run a prepared statement: pg__ready without hold, then the statement;
 * *res on success (PQclear it).  A lost session is reconnected
 * and the statement run once more (for reads only: they are safe to
 * repeat). */
int pg__query(struct pg *b, enum pg_stmt st, int n, const char *const *vals,
              const int *lens, const char *what, PGresult **res,
              struct aur_error *err);

/* The formats libpq wants for vals: lens NULL = all text (NULL), else
 * binary where lens[i] >= 0 (a pg_buf array), text where it is -1.
 * fmts has room for n <= PG_MAX_PARAMS. */
#define PG_MAX_PARAMS 16
const int *pg__formats(const int *lens, int n, int fmts[PG_MAX_PARAMS]);

/* Drop the notifications libpq collected while running statements.  A
 * handle that once waited stays LISTENing, and a host that then only
 * appends would otherwise pile up one per commit of every host; wait
 * needs none of them, as it reads the head before it listens for more. */
void pg__forget_notifies(struct pg *b);

/* Text of a decimal int64 into buf[24]. */
const char *pg__i64(char buf[24], int64_t v);
/* Parse a column known to hold a bigint. */
int64_t pg__col_i64(const PGresult *r, int row, int col);

/* Arrays in the binary format, for $n::text[] and $n::bigint[]: begin
 * with the element type, append elements of that type, end; send the
 * buffer's len bytes as a binary parameter. */
void pg__buf_free(struct pg_buf *buf);
void pg__arr_begin(struct pg_buf *buf, uint32_t elem_oid);
void pg__arr_text(struct pg_buf *buf, const char *s, size_t len);
void pg__arr_i64(struct pg_buf *buf, int64_t v);
/* Finish the array; NULL when an append ran out of memory. */
const char *pg__arr_end(struct pg_buf *buf);

/* The ops of pg_append.c and pg_read.c (pg_module.c has the rest). */
int pg__append(void *h, const struct aur__jrow *rows, size_t n,
               int *results, int64_t *seqs, struct aur_error *err);
int pg__head(void *h, int64_t *seq, struct aur_error *err);
int pg__read(void *h, int64_t after, int64_t upto, const char *scope,
             size_t max, int (*fn)(void *ud, const struct aur__jread *c),
             void *ud, size_t *n, struct aur_error *err);
int64_t pg__count(void *h);
int pg__wait(void *h, int64_t seq, int timeout_ms, struct aur_error *err);

/* The module's entry (AUR__JOURNAL_PG_ENTRY), the one exported symbol. */
__attribute__((visibility("default"))) const struct aur__journal_ops *
aur_journal_pg_ops(void);

#endif
