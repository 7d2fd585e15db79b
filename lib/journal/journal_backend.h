/*
 * journal_backend.h - what a world journal backend implements: the SQLite
 * file (journal_sqlite*.c, in the core) and PostgreSQL (lib/journal/pg/,
 * a module of its own that the core loads on first use, so a host with a
 * file journal never maps libpq and what it pulls in).
 *
 * The front (journal.c) validates every commit, turns it into a row of
 * plain text and builds the JSON objects readers see, so a backend deals
 * in C strings and integers only, and the rules of what a commit is live
 * in one place.  It includes only this header and aurora/aur_plugin.h
 * (aur_fail, enum aur_rc); the module links libpq and libc, nothing of
 * the core.
 *
 * Threads: the front serialises every call on one handle (its mutex is
 * held around each op), so a backend needs no lock of its own.
 * Ownership: everything passed in is borrowed for the call; what a
 * callback receives is borrowed until it returns.
 */
#ifndef AUR_JOURNAL_BACKEND_H
#define AUR_JOURNAL_BACKEND_H

#include <aurora/aur_plugin.h>

#include <stddef.h>
#include <stdint.h>

/* Bumped when ops or the structs below change; the front refuses a module
 * built for another version. */
#define AUR__JOURNAL_BACKEND_VERSION 3

/* One validated commit as stored.  Strings are NUL-terminated UTF-8 with
 * no NUL inside; scopes sorted by strcmp and distinct, n_scopes >= 1;
 * occurred_at canonical RFC 3339 UTC; data the text of one JSON object,
 * data_len bytes (not NUL-terminated). */
struct aur__jrow {
    const char *commit_id, *kind, *source, *summary, *occurred_at;
    const char *data;
    size_t data_len;
    const char *const *scopes;
    size_t n_scopes;
};

/* One commit read back: its row (scopes sorted) and the sequence each
 * scope gave it, sequences[i] for row.scopes[i]. */
struct aur__jread {
    int64_t seq;
    struct aur__jrow row;
    const int64_t *sequences;
};

/* What status shows of a journal (docs/status.md: "journal"). */
struct aur__jstate {
    const char *backend; /* "sqlite", "postgresql"; static */
    /* the file's path, or host:port/dbname; never a password */
    char target[256];
    /* "open": SQLite.  PostgreSQL: "connected", "reconnecting" (down for
     * less than the hold), "unavailable" (down for longer: batches fail
     * at once until a reconnect succeeds) */
    const char *state;
    uint64_t reconnects;  /* connections made after the first */
    uint64_t failures;    /* batches that ended AUR_E_JOURNAL */
    int64_t down_ms;      /* how long it has been down; 0 when up */
    char last_error[256]; /* the last storage error, "" if none */
};

/* What the front tells a backend at open. */
struct aur__jopts {
    /* PostgreSQL: the password (from the variable journal_password_env
     * names), or NULL; wiped by the front after open returns */
    const char *password;
    /* PostgreSQL: how long a batch waits for the database to come back
     * before it fails (journal_wait_ms) */
    int64_t wait_ms;
    /* Two JSON object texts that differ byte for byte may still be the
     * same object (key order): the front's comparison.  1 = same. */
    int (*data_equal)(const char *a, size_t alen, const char *b, size_t blen);
};

struct aur__journal_ops {
    uint32_t version; /* AUR__JOURNAL_BACKEND_VERSION */
    const char *name; /* as in aur__jstate.backend */

    /* Open target (a path; a postgresql:// URI), creating or migrating
     * its schema.  A schema newer than supported, a foreign database or
     * an unreachable one: AUR_E_JOURNAL naming target (without its
     * password).  *out transfer. */
    int (*open)(const char *target, const struct aur__jopts *o, void **out,
                struct aur_error *err);
    void (*close)(void *b);

    /*
     * Commit rows[0..n) in one transaction, n >= 1.  results[i]: AUR_OK =
     * inserted; AUR_DECLINE = already present with the same kind, source,
     * summary, scopes and data (also when an earlier row of this call
     * wrote it); AUR_E_CONFLICT = the id is taken by other content,
     * nothing of the row written.  seqs[i] = the commit's seq (new or
     * present; 0 on conflict).  Per-scope sequences are max + 1, taken in
     * row order and, within a row, in scope order.  Returns AUR_OK once
     * the transaction committed; a storage failure undoes all of it and
     * returns AUR_E_JOURNAL (results and seqs then unspecified).  A
     * backend that retries after a lost connection must only report what
     * its final, committed attempt did.
     */
    int (*append)(void *b, const struct aur__jrow *rows, size_t n,
                  int *results, int64_t *seqs, struct aur_error *err);

    /* The highest committed seq (0 for none).  seq order is commit order:
     * a reader that saw head H never later finds a new commit <= H. */
    int (*head)(void *b, int64_t *seq, struct aur_error *err);

    /* Visit, in seq order, at most max commits with after < seq <= upto
     * that touch scope (NULL = all); *n = how many were visited.  A
     * non-zero return from fn stops the page (not an error). */
    int (*read)(void *b, int64_t after, int64_t upto, const char *scope,
                size_t max, int (*fn)(void *ud, const struct aur__jread *c),
                void *ud, size_t *n, struct aur_error *err);

    /* Number of commits; -1 on error (tests). */
    int64_t (*count)(void *b);

    /* Return when head may have passed seq, or after at most timeout_ms.
     * SQLite polls; PostgreSQL listens.  AUR_OK either way, or a storage
     * error. */
    int (*wait)(void *b, int64_t seq, int timeout_ms, struct aur_error *err);

    void (*state)(void *b, struct aur__jstate *st);

    /* Copy what is committed into the backend's own store now, so that
     * close has little or nothing left to do (SQLite: a checkpoint of the
     * WAL, synced as every checkpoint is).  Best effort: a failure leaves
     * the store as it was, and close does the whole of it.  NULL: the
     * backend has nothing to settle (PostgreSQL).  (Version 2.) */
    void (*settle)(void *b);

    /* The first write of a run is about to come: do now, while the caller
     * does other work, what would make it wait (SQLite: restart an
     * emptied WAL, whose new header is synced before any frame follows
     * it).  Changes no commit, and no durability: the same sync, earlier.
     * Best effort and never waits for another connection's lock.  NULL:
     * nothing to do (PostgreSQL).  (Version 3.) */
    void (*prime)(void *b);
};

/* The one symbol the PostgreSQL module exports. */
#define AUR__JOURNAL_PG_ENTRY "aur_journal_pg_ops"
typedef const struct aur__journal_ops *(*aur__journal_entry_fn)(void);

#endif
