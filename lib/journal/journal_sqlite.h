/*
 * journal_sqlite.h - the SQLite backend, shared between journal_sqlite.c
 * (open, schema migrations, reading) and journal_sqlite_append.c
 * (writing).  The front's mutex serialises every call on one handle
 * (journal_backend.h), so the connection is opened SQLITE_OPEN_NOMUTEX
 * and the cached statements need no lock of their own.
 */
#ifndef AUR_JOURNAL_SQLITE_H
#define AUR_JOURNAL_SQLITE_H

#include "aur_setup.h"

#include <sqlite3.h>

#include "journal_backend.h"

/* The cached statements, prepared once at open. */
enum aur__jst {
    AUR__JST_BEGIN,        /* BEGIN IMMEDIATE */
    AUR__JST_COMMIT,       /* COMMIT */
    AUR__JST_ROLLBACK,     /* ROLLBACK */
    AUR__JST_FIND,         /* commit by commit_id */
    AUR__JST_SCOPES,       /* (scope, sequence) of one commit, by scope */
    AUR__JST_INSERT,       /* one world_commits row */
    AUR__JST_INSERT_SCOPE, /* one scope row with sequence = max + 1 */
    AUR__JST_SCOPE_MAX,    /* the highest sequence of one scope */
    AUR__JST_INSERT_AT,    /* one scope row with a given sequence */
    AUR__JST_COUNT,        /* COUNT(*) */
    AUR__JST_MAX_SEQ,      /* MAX(seq) */
    AUR__JST_PAGE,         /* commits in (after, upto], seq order */
    AUR__JST_PAGE_SCOPE,   /* the same, only those touching ?4 */
    AUR__JST_N
};

struct aur__jsqlite {
    sqlite3 *db;
    sqlite3_stmt *st[AUR__JST_N];
    int (*data_equal)(const char *a, size_t alen, const char *b, size_t blen);
    uint64_t failures;
    char path[256];
    char last_error[256];
};

extern const struct aur__journal_ops aur__journal_sqlite_ops;

/* AUR_E_JOURNAL "journal: <what>: <sqlite message>", detail = src, also
 * kept as the state's last error. */
int aur__jsqlite_fail(struct aur__jsqlite *s, int src, const char *what,
                      struct aur_error *err);

/* journal_sqlite_append.c: the ops' append. */
int aur__jsqlite_append(void *b, const struct aur__jrow *rows, size_t n,
                        int *results, int64_t *seqs, struct aur_error *err);

#endif
