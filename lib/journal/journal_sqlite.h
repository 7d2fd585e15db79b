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
    AUR__JST_INSERT_ROWS,  /* AUR__JSQ_ROWS world_commits rows at once */
    AUR__JST_INSERT_AT_ROWS, /* AUR__JSQ_SCOPE_ROWS scope rows at once */
    AUR__JST_N
};

/* Statement groups, prepared on first use (aur__jsqlite_need). */
#define AUR__JST_BIT(i) (1u << (i))
#define AUR__JSQ_WRITE                                                      \
    (AUR__JST_BIT(AUR__JST_BEGIN) | AUR__JST_BIT(AUR__JST_COMMIT) |         \
     AUR__JST_BIT(AUR__JST_ROLLBACK) | AUR__JST_BIT(AUR__JST_FIND) |        \
     AUR__JST_BIT(AUR__JST_SCOPES) | AUR__JST_BIT(AUR__JST_INSERT) |        \
     AUR__JST_BIT(AUR__JST_INSERT_SCOPE) | AUR__JST_BIT(AUR__JST_SCOPE_MAX) | \
     AUR__JST_BIT(AUR__JST_INSERT_AT))
#define AUR__JSQ_BULK                                                       \
    (AUR__JST_BIT(AUR__JST_INSERT_ROWS) | AUR__JST_BIT(AUR__JST_INSERT_AT_ROWS))
#define AUR__JSQ_READ                                                       \
    (AUR__JST_BIT(AUR__JST_COUNT) | AUR__JST_BIT(AUR__JST_MAX_SEQ) |        \
     AUR__JST_BIT(AUR__JST_PAGE) | AUR__JST_BIT(AUR__JST_PAGE_SCOPE) |      \
     AUR__JST_BIT(AUR__JST_SCOPES))

/* Rows per multi-row INSERT (journal_sqlite_append.c says why): 6 and 3
 * parameters a row, far below SQLite's limit of 32766. */
#define AUR__JSQ_ROWS 32
#define AUR__JSQ_SCOPE_ROWS 64

struct aur__jsq_ckpt;

struct aur__jsqlite {
    sqlite3 *db;
    struct aur__jsq_ckpt *ckpt; /* journal_sqlite_ckpt.c; NULL = SQLite's */
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

/* Prepare the statements of mask not prepared yet.  Under the journal's
 * lock.  AUR_E_NOMEM or AUR_E_JOURNAL; what was prepared stays. */
int aur__jsqlite_need(struct aur__jsqlite *j, unsigned mask,
                      struct aur_error *err);

/* journal_sqlite_ckpt.c: checkpoints on a thread of their own, from the
 * WAL size SQLite's automatic checkpoint uses.  start: AUR_E_NOMEM
 * leaves the automatic checkpoint in place (nothing to undo); stop
 * (before the connection closes) joins the thread.  Idempotent. */
int aur__jsqlite_ckpt_start(struct aur__jsqlite *j);
void aur__jsqlite_ckpt_stop(struct aur__jsqlite *j);

/* journal_sqlite_append.c: the ops' append. */
int aur__jsqlite_append(void *b, const struct aur__jrow *rows, size_t n,
                        int *results, int64_t *seqs, struct aur_error *err);

#endif
